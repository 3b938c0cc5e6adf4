"""The report: the one shape the CLI, the worker, the database, the API and exports read."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

SCHEMA = "micrograde.report/1"
VERDICTS = ("passed", "wrong_forward", "wrong_gradient", "missing_feature", "error",
            "timeout", "memory_limit", "crashed")
INVALID_KINDS = ("empty", "too_large", "not_utf8", "syntax_error", "no_value_class",
                 "import_error", "import_timeout")


@dataclass
class NodeRow:
    """Expected against actual for one named node of a graph."""

    name: str
    op: str
    expected: dict[str, float | None]
    actual: dict[str, float | None]
    status: str  #: ok | wrong_data | wrong_grad | wrong_update | missing


@dataclass
class ExerciseResult:
    """The verdict and feedback for one exercise."""

    name: str
    title: str
    verdict: str
    score: float
    max_score: float
    message: str
    hints: list[str] = field(default_factory=list)
    nodes: list[NodeRow] = field(default_factory=list)
    diff_dot: str | None = None
    stdout: str = ""
    stderr: str = ""
    graph: str | None = None            #: the graph the nodes and diff show
    instance: int | None = None         #: 0 is canonical, 1.. the random ones
    instance_seed: int | None = None    #: that instance's own seed (from the report's seed)
    diagnosis: dict[str, Any] | None = None
    table: list[dict[str, Any]] = field(default_factory=list)  #: per-graph rows (operators)
    params: list[dict[str, Any]] = field(default_factory=list)  #: per-parameter rows (mlp_step)
    feedback_only: bool = False
    traceback: str | None = None
    warnings: list[str] = field(default_factory=list)
    wall_s: float = 0.0


@dataclass
class Report:
    """A whole submission's result (SPEC §5)."""

    status: str  #: graded | invalid
    seed: int
    error: dict[str, Any] | None = None
    score: float = 0.0
    max_score: float = 0.0
    features: dict[str, bool] = field(default_factory=dict)
    exercises: list[ExerciseResult] = field(default_factory=list)
    timing: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    source: dict[str, Any] = field(default_factory=dict)  #: file name, notebook cell, size
    isolation: str = "bwrap"
    schema: str = SCHEMA

    @property
    def passed(self) -> bool:
        """True when the submission is graded and every graded exercise passed."""
        return self.status == "graded" and all(
            e.verdict == "passed" for e in self.exercises if not e.feedback_only)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict with the schema key first and NaN/inf as null."""
        data = asdict(self)
        ordered = {"schema": data.pop("schema"), "status": data.pop("status"),
                   "error": data.pop("error"), "seed": data.pop("seed"), **data}
        return _finite(ordered)

    def to_json(self, indent: int | None = 2) -> str:
        """The report as one JSON document."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)


def grouped_warnings(pairs: Iterable[tuple[str, Iterable[str]]]) -> list[tuple[str, list[str]]]:
    """Each warning once, with the exercises it came up in, from (exercise, warnings) pairs."""
    seen: dict[str, list[str]] = {}
    for name, warnings in pairs:
        for w in warnings or ():
            seen.setdefault(str(w), []).append(name)
    return list(seen.items())


def _finite(obj: Any) -> Any:
    """Replace NaN and infinities (not valid JSON) by None, recursively."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    return obj


def invalid(seed: int, kind: str, message: str, **extra: Any) -> Report:
    """A report for a submission that cannot be graded at all."""
    assert kind in INVALID_KINDS, kind
    return Report(status="invalid", seed=seed, error={"kind": kind, "message": message, **extra})
