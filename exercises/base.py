"""What an exercise is: named graphs built from a `Value` class, plus grading metadata.

This module and every exercise module are standard-library only: the same builders run
with the reference `Value` outside the sandbox and with the student's `Value` inside it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

Inputs = dict[str, Any]
Tag = Callable[[Any, str], Any]
#: build(Value, inputs, tag) -> output node; ``tag(node, name)`` names a node and returns it.
Builder = Callable[[type, Inputs, Tag], Any]


@dataclass(frozen=True)
class Graph:
    """One computational graph of an exercise, run and backpropagated on its own."""

    name: str
    build: Builder
    ops: tuple[str, ...]
    description: str = ""


@dataclass(frozen=True)
class Exercise:
    """An exercise: graphs, canonical inputs, a random-instance generator and metadata."""

    name: str
    title: str
    summary: str
    points: float
    graphs: tuple[Graph, ...]
    canonical: Inputs
    random_inputs: Callable[[random.Random], Inputs]
    hints: Mapping[str, str] = field(default_factory=dict)
    feedback_only: bool = False
    #: learning rate of the SGD step after backward (mlp_step); None means no step
    lr: float | None = None
    #: names of tagged nodes that are parameters: zeroed before backward, updated after
    params: Callable[[Inputs], list[str]] | None = None
    #: per-graph verdicts shown as a table instead of one verdict (operators)
    per_graph_table: bool = False

    @property
    def ops(self) -> tuple[str, ...]:
        """Every operation any graph of the exercise needs, in first-use order."""
        seen: dict[str, None] = {}
        for g in self.graphs:
            for op in g.ops:
                seen.setdefault(op, None)
        return tuple(seen)

    def graph(self, name: str) -> Graph:
        """The graph called `name`."""
        for g in self.graphs:
            if g.name == name:
                return g
        raise KeyError(name)


def instance_seed(seed: int, exercise: str, index: int) -> int:
    """The seed of random instance `index` of `exercise` for submission seed `seed`."""
    return random.Random(f"{seed}:{exercise}:{index}").randrange(2**31)


def instances(ex: Exercise, seed: int, k: int) -> list[tuple[int | None, Inputs]]:
    """The canonical instance (seed None) followed by `k` seeded random instances."""
    out: list[tuple[int | None, Inputs]] = [(None, dict(ex.canonical))]
    for i in range(k):
        s = instance_seed(seed, ex.name, i)
        out.append((s, ex.random_inputs(random.Random(s))))
    return out


def nice(rng: random.Random, lo: float = -4.0, hi: float = 4.0) -> float:
    """A random input rounded to two decimals and kept away from zero."""
    while True:
        x = round(rng.uniform(lo, hi), 2)
        if abs(x) >= 0.25:
            return x
