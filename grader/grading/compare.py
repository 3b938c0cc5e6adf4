"""Compare a sandbox run's numbers with the reference's and decide the verdicts."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from exercises.base import Exercise
from grader.grading.report import ExerciseResult, NodeRow
from worker.harness import OP_TEXT

REL_TOL = 1e-6
ABS_TOL = 1e-9
FORWARD_SHARE = 0.3


def close(actual: Any, expected: float) -> bool:
    """SPEC §4 matching: isclose(rel 1e-6, abs 1e-9); NaN and ±inf never match."""
    if not isinstance(actual, int | float) or isinstance(actual, bool):
        return False
    if not (math.isfinite(actual) and math.isfinite(expected)):
        return False
    return math.isclose(actual, expected, rel_tol=REL_TOL, abs_tol=ABS_TOL)


def fmt(x: float | None) -> str:
    """A number as a student reads it: up to 6 significant digits."""
    if x is None:
        return "unreadable"
    if isinstance(x, float) and math.isnan(x):
        return "nan"
    return f"{x:.6g}"


@dataclass
class RunOutcome:
    """One (instance, graph) of an exercise: expected and actual numbers, and what differs."""

    instance: int
    graph: str
    expected: dict[str, Any]
    actual: dict[str, Any] | None = None
    missing: list[str] = field(default_factory=list)
    error: dict[str, Any] | None = None
    data_wrong: list[str] = field(default_factory=list)
    grad_wrong: list[str] = field(default_factory=list)
    update_wrong: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        """This run's verdict alone."""
        if self.missing:
            return "missing_feature"
        if self.error:
            return "memory_limit" if self.error.get("kind") == "memory" else "error"
        if self.data_wrong:
            return "wrong_forward"
        if self.grad_wrong or self.update_wrong:
            return "wrong_gradient"
        return "passed"


@dataclass
class Evaluation:
    """An exercise's result plus the evidence behind it, for diagnosis and diffs."""

    exercise: Exercise
    result: ExerciseResult
    runs: list[RunOutcome] = field(default_factory=list)
    focus: RunOutcome | None = None  #: the run the report's nodes and diff show
    features: dict[str, Any] = field(default_factory=dict)
    seeds: list[int | None] = field(default_factory=list)


def _number(x: Any) -> float:
    """A channel value as a float; anything else reads as NaN (never matches)."""
    if isinstance(x, int | float) and not isinstance(x, bool):
        return float(x)
    return math.nan


def compare_run(run: RunOutcome) -> None:
    """Fill in which nodes' data, grad and updated value differ from the reference."""
    act = run.actual or {}
    for key, wrong in (("data", run.data_wrong), ("grad", run.grad_wrong),
                       ("updated", run.update_wrong)):
        got = act.get(key) if isinstance(act.get(key), dict) else {}
        for name, exp in run.expected[key].items():
            if not close(_number(got.get(name)), exp):
                wrong.append(name)


def node_rows(run: RunOutcome) -> list[NodeRow]:
    """The per-node table of one run, in the order the graph was built."""
    act = run.actual or {}
    act_nodes = act.get("nodes") or {}
    exp_nodes = run.expected["nodes"]
    rows = []
    for name, exp_data in run.expected["data"].items():
        exp_grad = run.expected["grad"][name]
        a_data = _number((act.get("data") or {}).get(name))
        a_grad = _number((act.get("grad") or {}).get(name))
        if name in run.data_wrong:
            status = "wrong_data"
        elif name in run.grad_wrong:
            status = "wrong_grad"
        elif name in run.update_wrong:
            status = "wrong_update"
        else:
            status = "ok"
        op = (act_nodes.get(name) or {}).get("op")
        if not isinstance(op, str):
            op = (exp_nodes.get(name) or {}).get("op") or ""
        rows.append(NodeRow(name=name, op=op[:40],
                            expected={"data": exp_data, "grad": exp_grad},
                            actual={"data": a_data, "grad": a_grad}, status=status))
    return rows


def first_problem(run: RunOutcome) -> str:
    """One sentence naming the first wrong number of a run."""
    act = run.actual or {}
    for name in run.data_wrong:
        got = _number((act.get("data") or {}).get(name))
        return f"{name}.data is {fmt(got)} but should be {fmt(run.expected['data'][name])}"
    for name in run.grad_wrong:
        got = _number((act.get("grad") or {}).get(name))
        return f"{name}.grad is {fmt(got)} but should be {fmt(run.expected['grad'][name])}"
    for name in run.update_wrong:
        got = _number((act.get("updated") or {}).get(name))
        return (f"{name}.data after the SGD step is {fmt(got)} but should be "
                f"{fmt(run.expected['updated'][name])}")
    return "all values match"


def missing_message(ops: list[str], features: dict[str, Any]) -> str:
    """Which operation is missing, as the student would write it, and why."""
    op = ops[0]
    why = (features.get("_why") or {}).get(op, "")
    text = f"needs {OP_TEXT.get(op, op)}, which your Value does not support"
    return f"{text} ({why})" if why else text


SEVERITY = ("error", "memory_limit", "missing_feature", "wrong_forward", "wrong_gradient",
            "passed")


def pick_focus(runs: list[RunOutcome]) -> RunOutcome | None:
    """The run to show: the first with the worst verdict (canonical instance first)."""
    if not runs:
        return None
    return min(runs, key=lambda r: (SEVERITY.index(r.verdict), r.instance))
