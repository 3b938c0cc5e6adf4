"""Exercises: seeded instances, declared operations, SPEC §4's shapes, and why random
instances exist (a submission that hard-codes the canonical answers fails)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from exercises import EXERCISES, instances
from exercises.mlp_step import param_names
from grader.grading.pipeline import grade
from reference import Value
from worker.harness import capture

NAMES = list(EXERCISES)


@pytest.mark.parametrize("name", NAMES)
def test_instances_are_deterministic_per_seed(name: str) -> None:
    ex = EXERCISES[name]
    assert instances(ex, 1234, 3) == instances(ex, 1234, 3)
    assert instances(ex, 1234, 3) != instances(ex, 1235, 3)


@pytest.mark.parametrize("name", NAMES)
def test_canonical_comes_first_and_random_instances_differ_from_it(name: str) -> None:
    ex = EXERCISES[name]
    insts = instances(ex, 99, 3)
    assert insts[0] == (None, dict(ex.canonical))
    randoms = [x for _, x in insts[1:]]
    assert len(randoms) == 3
    assert all(x != ex.canonical for x in randoms)
    assert len({repr(x) for x in randoms}) == 3
    assert len({s for s, _ in insts[1:]}) == 3


@pytest.mark.parametrize("name", NAMES)
def test_random_instances_change_the_expected_numbers(name: str) -> None:
    """Not only the inputs differ: the reference's answers do, on every graph."""
    ex = EXERCISES[name]
    (_, canon), (_, other) = instances(ex, 7, 1)
    params = ex.params(canon) if ex.params else None
    for g in ex.graphs:
        a = capture(Value, g.build, canon, ex.lr, params)
        b = capture(Value, g.build, other, ex.lr, params)
        assert (a["data"], a["grad"]) != (b["data"], b["grad"]), g.name


def test_mlp_step_has_41_parameters() -> None:
    names = param_names()
    assert len(names) == len(set(names)) == 41  # (3+1)*4 + (4+1)*4 + (4+1)*1
    ex = EXERCISES["mlp_step"]
    assert ex.params(ex.canonical) == names
    assert len(ex.canonical["params"]) == 41
    for _, inputs in instances(ex, 5, 2):
        assert len(inputs["params"]) == 41


class Recorder(Value):
    """The reference Value, noting which operation (as the probes name them) the builder
    calls directly; operations a reference op makes internally are not counted."""

    __slots__ = ()
    used: set[str] = set()
    depth = [0]


def _recording(op: str, method: str, number_op: str | None = None) -> Callable[..., Any]:
    base = getattr(Value, method)

    def call(self: Value, *args: Any) -> Any:
        if Recorder.depth[0] == 0:
            is_number = bool(args) and not isinstance(args[0], Value)
            Recorder.used.add(number_op if number_op and is_number else op)
        Recorder.depth[0] += 1
        try:
            out = base(self, *args)
        finally:
            Recorder.depth[0] -= 1
        if isinstance(out, Value) and not isinstance(out, Recorder):
            out.__class__ = Recorder
        return out

    return call


for _op, _method, _number in (
        ("add", "__add__", "add_number"), ("radd", "__radd__", None),
        ("mul", "__mul__", "mul_number"), ("rmul", "__rmul__", None),
        ("sub", "__sub__", "sub_number"), ("rsub", "__rsub__", None),
        ("neg", "__neg__", None), ("pow", "__pow__", None),
        ("truediv", "__truediv__", "truediv_number"), ("rtruediv", "__rtruediv__", None),
        ("tanh", "tanh", None), ("exp", "exp", None), ("relu", "relu", None),
        ("backward", "backward", None)):
    setattr(Recorder, _method, _recording(_op, _method, _number))


@pytest.mark.parametrize("name", NAMES)
def test_every_graph_declares_the_operations_it_uses(name: str) -> None:
    """A graph's `ops` decide `missing_feature`: an undeclared operation a submission
    lacks would surface as an `error` instead."""
    ex = EXERCISES[name]
    params = ex.params(ex.canonical) if ex.params else None
    for g in ex.graphs:
        Recorder.used = set()
        capture(Recorder, g.build, dict(ex.canonical), ex.lr, params)
        assert Recorder.used <= set(g.ops), g.name


def test_hard_coded_canonical_answers_fail_on_random_instances(read_fixture) -> None:
    source = read_fixture("hostile/hardcoded_canonical.py")
    canonical_only = grade(source, ["expression"], seed=11, k=0)
    assert canonical_only.exercises[0].verdict == "passed"  # the cheat does fool one instance
    report = grade(source, ["expression"], seed=11, k=3)
    ex = report.exercises[0]
    assert ex.verdict == "wrong_gradient"
    assert ex.instance and ex.instance > 0
    assert ex.instance_seed == instances(EXERCISES["expression"], 11, 3)[ex.instance][0]
    assert "random instance" in ex.message
    assert report.score < report.max_score


def test_the_replay_command_in_the_message_reproduces_the_failure(read_fixture) -> None:
    """The message names `--exercise X --seed S`; grading again with them fails the same way."""
    import re

    source = read_fixture("hostile/hardcoded_canonical.py")
    first = grade(source, ["expression", "neuron"], seed=11, k=3).exercises[0]
    match = re.search(r"--exercise (\w+) --seed (\d+) replays it", first.message)
    assert match, first.message
    again = grade(source, [match[1]], seed=int(match[2]), k=3).exercises[0]
    assert (again.verdict, again.instance, again.message) == (
        first.verdict, first.instance, first.message)
