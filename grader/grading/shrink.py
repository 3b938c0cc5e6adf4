"""Counterexample shrinking: replay the culprit operation alone, at the culprit's inputs.

A wrong local derivative found deep in an MLP is easier to fix as "``tanh(x)`` at x=0.5
alone: expected grad 0.786448, got 0.75". The replay is one more sandbox run through the
pipeline's own path (`exercises.single_op`), never student code in this process.
"""

from __future__ import annotations

import logging
import shlex
from collections.abc import Callable
from typing import Any

from exercises.base import Exercise
from exercises.single_op import OPS, Node, expression, for_op
from grader.grading.compare import Evaluation, _number, fmt

log = logging.getLogger(__name__)

#: runs one exercise on the submission in the sandbox, as the pipeline does
Replay = Callable[[Exercise], Evaluation]


def replay_command(filename: str, seed: int, exercise: str) -> str:
    """The command that grades the same instances again locally."""
    return f"micrograde grade {shlex.quote(filename)} --seed {seed} --exercise {exercise}"


def shrinkable(culprit: Node | None, nodes: int) -> bool:
    """Whether replaying the culprit alone says more than the graph already does."""
    return culprit is not None and culprit.op in OPS and nodes > 1


def shrink(culprit: Node, replay: Replay, *, cause: str) -> dict[str, Any]:
    """Run `culprit`'s operation alone on its input values; what it gives and should give."""
    vals = [a.data if isinstance(a, Node) else float(a) for a in culprit.args] + [None]
    op = str(culprit.op)
    ev = replay(for_op(op, vals[0], vals[1]))
    nums = [None if isinstance(a, Node) else float(a) for a in culprit.args] + [None]
    text = expression(op, nums[0], nums[1])
    inputs = {k: v for k, v in culprit.operands().items() if k in ("x", "y")}
    at = ", ".join(f"{k}={fmt(v)}" for k, v in inputs.items())
    found: dict[str, Any] = {"op": op, "expression": text, "inputs": inputs,
                             "verdict": ev.result.verdict}
    run = ev.runs[0] if ev.runs else None
    if run is None or run.actual is None:
        found.update(reproduced=ev.result.verdict != "passed",
                     message=f"`{text}` at {at} alone: {ev.result.message}")
        return found
    act = run.actual
    found["expected"] = {"data": run.expected["data"]["out"],
                         "grad": {k: run.expected["grad"][k] for k in inputs}}
    found["actual"] = {"data": _number((act.get("data") or {}).get("out")),
                       "grad": {k: _number((act.get("grad") or {}).get(k)) for k in inputs}}
    wrong_data = "out" in run.data_wrong
    wrong_grad = [k for k in inputs if k in run.grad_wrong]
    checked = wrong_data or (wrong_grad if cause != "forward_op" else [])
    found["reproduced"] = bool(checked)
    if wrong_data:
        detail = (f"expected {fmt(found['expected']['data'])}, got "
                  f"{fmt(found['actual']['data'])}")
    elif checked:
        k = wrong_grad[0]
        which = "grad" if len(inputs) == 1 else f"{k}.grad"
        detail = (f"expected {which} {fmt(found['expected']['grad'][k])}, got "
                  f"{fmt(found['actual']['grad'][k])}")
    else:
        grads = ", ".join(f"{k}.grad {fmt(v)}" for k, v in found["actual"]["grad"].items())
        detail = (f"right (value {fmt(found['actual']['data'])}, {grads}): the failure needs "
                  "the larger graph")
    found["message"] = f"`{text}` at {at} alone: {detail}"
    return found
