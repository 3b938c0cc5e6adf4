"""Feedback for one exercise: diagnosis, hints, the diff's DOT, the parameter table, shrinking.

`annotate` runs once per `Evaluation` inside `grade()`; it never renders SVG (callers that
show the diff do) and never lets a failure of its own cost the exercise its verdict.
"""

from __future__ import annotations

import logging
import random
from typing import Any

from exercises.single_op import Trace, trace
from grader.grading import diffviz
from grader.grading.compare import Evaluation, RunOutcome, _number
from grader.grading.diagnose import FAMILY, FORWARD, TOPO_HINT, Finding, diagnose, op_text, rule
from grader.grading.shrink import Replay, replay_command, shrink, shrinkable

log = logging.getLogger(__name__)

SHRUNK_CAUSES = ("local_derivative", "forward_op")


def instance_inputs(ev: Evaluation, index: int) -> dict[str, Any]:
    """The inputs of instance `index` (0 is the canonical one)."""
    ex = ev.exercise
    seed = ev.seeds[index] if index < len(ev.seeds) else None
    return dict(ex.canonical) if seed is None else ex.random_inputs(random.Random(seed))


def focus_trace(ev: Evaluation) -> Trace | None:
    """The trace of the focus run's graph on its instance, or None when there is no focus."""
    if ev.focus is None:
        return None
    return trace(ev.exercise.graph(ev.focus.graph).build, instance_inputs(ev, ev.focus.instance))


def param_rows(run: RunOutcome, names: list[str]) -> list[dict[str, Any]]:
    """Every parameter's grad and value after the SGD step, expected against actual."""
    act = run.actual or {}
    rows = []
    for name in names:
        exp = {"data": run.expected["data"][name], "grad": run.expected["grad"][name],
               "updated": run.expected["updated"].get(name)}
        got = {k: _number((act.get(key) or {}).get(name)) if run.actual else None
               for k, key in (("data", "data"), ("grad", "grad"), ("updated", "updated"))}
        status = ("unknown" if run.actual is None else "wrong_grad" if name in run.grad_wrong
                  else "wrong_update" if name in run.update_wrong else "ok")
        rows.append({"name": name, "expected": exp, "actual": got, "status": status})
    return rows


def title(ev: Evaluation) -> str:
    """The diff's caption: exercise, graph and instance."""
    res = ev.result
    which = ("canonical instance" if not res.instance else
             f"random instance {res.instance}")
    done = ev.focus is not None and ev.focus.actual is not None
    return f"{ev.exercise.name}: {res.graph} · {which}" + (
        "" if done else " · expected values (your code did not finish this graph)")


def _shrink(finding: Finding, diag: dict[str, Any], t: Trace, replay: Replay) -> None:
    """Replay the culprit alone; a local derivative that is right alone is an order bug."""
    if finding.cause not in SHRUNK_CAUSES or not shrinkable(finding.culprit, sum(
            1 for n in t.nodes if n.op)):
        return
    assert finding.culprit is not None
    found = shrink(finding.culprit, replay, cause=finding.cause)
    diag["shrunk"] = found
    if (finding.cause == "local_derivative" and not found["reproduced"]
            and found["verdict"] == "passed" and diag.get("uses", 0) >= 2):
        diag["cause"] = "topo_order"
        diag["summary"] = (f"`{finding.node}` is used by {diag['uses']} nodes; alone its "
                           "backward is right, so it ran before all of them had added "
                           "their gradient.")
        finding.hints[:] = [TOPO_HINT]


def annotate(ev: Evaluation, *, seed: int, filename: str = "value.py",
             replay: Replay | None = None) -> None:
    """Fill in the result's diagnosis, hints, diff_dot and params (and shrink a failure).

    Each part is independent: one that fails is logged and the others still appear.
    """
    res = ev.result
    node = None
    try:
        t = focus_trace(ev)
    except Exception:  # noqa: BLE001 - an op the tracer does not know: diagnose without it
        log.warning("could not trace %s", ev.exercise.name, exc_info=True)
        t = None
    try:
        finding = diagnose(ev, t)
        if finding is not None:
            node = finding.node
            res.diagnosis = describe(ev, finding, t, seed, filename, replay)
            res.hints = list(dict.fromkeys([*finding.hints, *res.hints]))
    except Exception:  # noqa: BLE001 - feedback is a bonus; the verdict must survive
        log.exception("diagnosis of %s failed", ev.exercise.name)
    try:
        if ev.focus is not None:
            res.diff_dot = diffviz.diff_dot(ev.focus, highlight=node, title=title(ev))
            if ev.exercise.params:
                names = ev.exercise.params(instance_inputs(ev, ev.focus.instance))
                res.params = param_rows(ev.focus, names)
        table_hints(ev)
    except Exception:  # noqa: BLE001
        log.exception("diff of %s failed", ev.exercise.name)


def describe(ev: Evaluation, finding: Finding, t: Trace | None, seed: int, filename: str,
             replay: Replay | None) -> dict[str, Any]:
    """The `result.diagnosis` dict, shrunk to one operation when that helps."""
    res = ev.result
    diag = finding.as_dict()
    diag.update(graph=res.graph, instance=res.instance)
    if replay is not None and t is not None:
        _shrink(finding, diag, t, replay)
    if "shrunk" in diag:
        diag["shrunk"].update(seed=seed, instance=res.instance, instance_seed=res.instance_seed,
                              replay=replay_command(filename, seed, ev.exercise.name))
    diag.pop("uses", None)
    return diag


def table_hints(ev: Evaluation) -> None:
    """Give each failing row of a per-operation table (operators) its op and a hint."""
    for row in ev.result.table:
        op = ev.exercise.graph(row["graph"]).ops[0]
        if row.get("verdict") == "wrong_forward":
            row["hint"] = FORWARD.get(op) or f"{op_text(op)} computes the wrong value."
        elif row.get("verdict") == "wrong_gradient":
            row["hint"] = rule(op, ev.exercise.hints) or None
        if row.get("verdict") != "passed":
            row["op"] = FAMILY.get(op, op)
