"""Diagnosis: name the bug behind a wrong exercise, and the graph node it shows up at.

Reads the focus run's numbers and a trace of its graph (`exercises.single_op.trace`: which
operation made each node, from what). Causes are stable ids the dashboards aggregate.
"""

from __future__ import annotations

import itertools
import logging
import re
from dataclasses import dataclass, field
from typing import Any

from exercises.single_op import OPS, Node, Trace, expression
from grader.grading.compare import Evaluation, RunOutcome, _number, close, fmt
from worker.harness import OP_TEXT

log = logging.getLogger(__name__)

MAX_CONTRIBUTIONS = 12
#: the derivative rule of each operation, as a student reads it
RULES = {
    "add": "For out = a + b, both a.grad and b.grad get `+= out.grad`.",
    "mul": "For out = a * b, a.grad gets `+= b.data * out.grad`, b.grad `+= a.data * out.grad`.",
    "sub": "For out = a - b, a.grad gets `+= out.grad` and b.grad `-= out.grad`.",
    "rsub": "`1.0 - a` calls `a.__rsub__(1.0)`, which computes 1.0 - a: a.grad gets "
            "`-= out.grad`.",
    "neg": "For out = -a, a.grad gets `-= out.grad`.",
    "pow": "For out = x**k, x.grad gets `+= k * x.data**(k-1) * out.grad`.",
    "truediv": "For out = a / b, a.grad gets `+= out.grad / b.data`, b.grad "
               "`-= a.data / b.data**2 * out.grad`.",
    "rtruediv": "`4.0 / a` calls `a.__rtruediv__(4.0)`: a.grad gets "
                "`-= 4.0 / a.data**2 * out.grad`.",
    "tanh": "For t = tanh(x), x.grad gets `+= (1 - t**2) * out.grad`, with t the OUTPUT value.",
    "exp": "For out = exp(x), x.grad gets `+= out.data * out.grad`.",
    "relu": "For out = relu(x), x.grad gets `+= (out.data > 0) * out.grad`.",
}
FAMILY = {"add_number": "add", "radd": "add", "mul_number": "mul", "rmul": "mul",
          "sub_number": "sub", "truediv_number": "truediv"}
MISSING = {
    "radd": "`sum()` starts from 0, so `0 + v` calls `v.__radd__(0)`: add "
            "`def __radd__(self, other): return self + other`.",
    "rmul": "`3 * v` calls `v.__rmul__(3)`: add `def __rmul__(self, other): return self * other`.",
    "rsub": "`1.0 - v` calls `v.__rsub__(1.0)`: add `def __rsub__(self, other): "
            "return other + (-self)`.",
    "rtruediv": "`4.0 / v` calls `v.__rtruediv__(4.0)`: add `def __rtruediv__(self, other): "
                "return other * self**-1`.",
    "number": "Wrap plain numbers first: `other = other if isinstance(other, Value) else "
              "Value(other)` at the top of the method.",
}
FORWARD = {
    "rsub": "`1.0 - v` calls `v.__rsub__(1.0)`: it must compute `other - self`, not "
            "`self - other`.",
    "rtruediv": "`4.0 / v` calls `v.__rtruediv__(4.0)`: it must compute `other / self`.",
    "tanh": "tanh(x) = (exp(2x) - 1) / (exp(2x) + 1).",
    "pow": "x ** k is `self.data ** other`.",
}
TOPO_HINT = ("Call each node's `_backward` only after every node that uses it has added its "
             "gradient: build a topological order of the whole graph once (with a visited "
             "set) and walk it in reverse.")
LIMIT_HINTS = {
    "timeout": ("timeout", "Something never finished: a graph walk without a visited set "
                "revisits shared nodes again and again; build the topological order once."),
    "memory_limit": ("memory", "Your code used too much memory: look for lists (like a "
                     "topological order) that grow every time a shared node is visited."),
}
METHODS = {op.method: name for name, op in reversed(OPS.items())}


@dataclass
class Finding:
    """A diagnosis: cause, the node and op it points at, a summary and hints."""

    cause: str
    summary: str
    node: str | None = None
    op: str | None = None
    hints: list[str] = field(default_factory=list)
    culprit: Node | None = None  #: the trace node to replay alone (shrinking)
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The `result.diagnosis` dict."""
        return {"cause": self.cause, "node": self.node, "op": self.op,
                "summary": self.summary, **self.extra}


def op_text(op: str | None) -> str:
    """An op id as a student reads it, e.g. `Value.tanh()`."""
    if op is None:
        return "Value(x)"
    return OP_TEXT.get(op) or f"Value {expression(op)}"


def rule(op: str | None, hints: Any = None) -> str:
    """The derivative rule for an op, preferring the exercise's own hint."""
    fam = FAMILY.get(op or "", op or "")
    return (hints or {}).get(op) or (hints or {}).get(fam) or RULES.get(fam, "")


class Graph:
    """The trace seen through one run's numbers."""

    def __init__(self, trace: Trace, run: RunOutcome) -> None:
        self.trace, self.run = trace, run
        self.users = trace.consumers()
        self.tagged = {n.name for n in trace.tagged.values()} & set(run.expected["grad"])
        self._right: dict[int, bool] = {}

    def actual(self, key: str, name: str) -> float:
        """The student's number for a tagged node."""
        return _number(((self.run.actual or {}).get(key) or {}).get(name))

    def is_tagged(self, n: Node) -> bool:
        """Whether the run reports numbers for this node."""
        return n.name in self.tagged

    def grad_right(self, n: Node) -> bool:
        """Tagged: its grad matches; untagged: everything using it is right."""
        if n.index not in self._right:
            self._right[n.index] = (n.name not in self.run.grad_wrong if self.is_tagged(n)
                                    else all(self.grad_right(u) for u in self.users.get(
                                        n.index, [])))
        return self._right[n.index]

    def data_right(self, n: Node) -> bool:
        """Tagged: its data matches; untagged: its inputs' data match."""
        if self.is_tagged(n):
            return n.name not in self.run.data_wrong
        return all(self.data_right(a) for a in n.inputs)

    def named(self, n: Node) -> str:
        """A drawable name for a node: its own, or that of the nearest tagged user."""
        while not self.is_tagged(n) and self.users.get(n.index):
            n = self.users[n.index][0]
        return n.name

    def contributions(self, n: Node) -> list[float]:
        """What each use of `n` adds to its gradient, by the reference."""
        out = []
        for user in dict.fromkeys(self.users.get(n.index, [])):
            for arg, d in zip(user.inputs, user.local(), strict=False):
                if arg is n:
                    out.append(d * user.grad)
        return out

    def verified(self, op: str | None, besides: Node) -> bool:
        """Some other node with this op passes a right gradient to an input only it uses."""
        for d in self.trace.nodes:
            if d is besides or d.op != op or not self.is_tagged(d) or not self.grad_right(d):
                continue
            for arg, local in zip(d.inputs, d.local(), strict=False):
                only = all(u is d for u in self.users.get(arg.index, []))
                if (only and self.is_tagged(arg) and d.grad and local
                        and arg.name not in self.run.grad_wrong):
                    return True
        return False


def _subset_sums(parts: list[float]) -> list[float]:
    return [sum(c) for r in range(1, len(parts)) for c in itertools.combinations(parts, r)]


def gradient(g: Graph, hints: Any) -> Finding:
    """Why gradients are wrong while every forward value is right."""
    run, out = g.run, g.trace.out
    grad_now = g.actual("grad", out.name)
    others = [n for n in g.tagged if n != out.name]
    if out.name in run.grad_wrong or (
            others and all(g.actual("grad", n) == 0 for n in others)
            and any(run.expected["grad"][n] for n in others)):
        summary = (f"`{out.name}.grad` is {fmt(grad_now)} after backward(); it must be "
                   "seeded with 1.0." if out.name in run.grad_wrong else
                   f"Every gradient below `{out.name}` is 0: its gradient was still 0 when "
                   "its `_backward` ran.")
        return Finding("unseeded", summary, out.name, "backward", [
            "Start `backward()` with `self.grad = 1.0` before calling the `_backward` of "
            "every node."])
    frontier = [n for n in g.trace.nodes if g.is_tagged(n) and n.name in run.grad_wrong
                and all(g.grad_right(u) for u in g.users.get(n.index, []))]
    for x in frontier:
        parts = g.contributions(x)
        a = g.actual("grad", x.name)
        if 2 <= len(parts) <= MAX_CONTRIBUTIONS and a and any(
                close(a, s) for s in _subset_sums(parts)):
            users = len(dict.fromkeys(g.users[x.index]))
            feeds = f"{users} nodes" if users > 1 else f"the same node {len(parts)} times"
            return Finding(
                "overwrite", f"`{x.name}` feeds {feeds} but `{x.name}.grad` is {fmt(a)}, "
                f"only part of the {fmt(run.expected['grad'][x.name])} they add up to: "
                "a gradient is overwritten instead of accumulated.", x.name, None,
                [f"`{x.name}` feeds {feeds} but its gradient only holds one contribution: "
                 "accumulate with `+=` in `_backward`, never `=`."])
    candidates = [c for c in reversed(g.trace.nodes) if c.op and g.grad_right(c) and any(
        g.is_tagged(a) and a.name in run.grad_wrong for a in c.inputs)]
    if not candidates:
        first = next(iter(run.grad_wrong or run.update_wrong), out.name)
        return Finding("update" if not run.grad_wrong else "unknown",
                       f"`{first}` is wrong, and no single operation explains it.", first)
    c = next((c for c in candidates if not g.verified(c.op, c)), candidates[0])
    x = next(a for a in c.inputs if g.is_tagged(a) and a.name in run.grad_wrong)
    node = g.named(c)
    wrong = (f"`{x.name}.grad` is {fmt(g.actual('grad', x.name))}, should be "
             f"{fmt(run.expected['grad'][x.name])}")
    uses = len(g.users.get(c.index, []))
    if uses >= 2 and g.verified(c.op, c):
        return Finding("topo_order", f"`{node}` is used by {uses} nodes and its `_backward` "
                       f"ran before all of them had added their gradient ({wrong}).", node,
                       c.op, [TOPO_HINT], c)
    fam = FAMILY.get(c.op or "", c.op)
    return Finding(
        "local_derivative", f"`{node}` = {c.text(g.named)} has the right gradient but passes "
        f"a wrong one to its input ({wrong}): the backward of {op_text(c.op)} is wrong.",
        node, fam, [f"The backward of {op_text(c.op)} is wrong. " + rule(c.op, hints)], c,
        {"uses": uses})


def forward(g: Graph) -> Finding:
    """Which operation computes a wrong value from right inputs."""
    for n in g.trace.nodes:
        if g.is_tagged(n) and n.name in g.run.data_wrong and all(
                g.data_right(a) for a in n.inputs):
            got = fmt(g.actual("data", n.name))
            want = fmt(g.run.expected["data"][n.name])
            if n.op is None:
                return Finding("forward_op", f"`{n.name}` = Value({want}) reads back as {got}.",
                               n.name, "init", ["`Value(x)` must keep the number it is given "
                                                "in `.data` (as a float)."])
            return Finding(
                "forward_op", f"`{n.name}` = {n.text(g.named)} is {got} but should be {want} "
                "although its inputs are right: the forward of "
                f"{op_text(n.op)} is wrong.", n.name, FAMILY.get(n.op, n.op),
                [f"{op_text(n.op)} computes the wrong value: check how `out` is computed in "
                 f"`{OPS[n.op].method}`."] + ([FORWARD[n.op]] if n.op in FORWARD else []),
                n)
    first = g.run.data_wrong[0]
    return Finding("forward_op", f"`{first}.data` is wrong.", first)


def missing(ev: Evaluation, trace: Trace | None) -> Finding:
    """A missing operation or number coercion."""
    assert ev.focus is not None
    op = ev.focus.missing[0]
    node = None
    if trace is not None:
        hit = next((n for n in trace.nodes if n.op == op), trace.out)
        node = Graph(trace, ev.focus).named(hit)
    why = str((ev.features.get("_why") or {}).get(op, ""))
    coercion = op.endswith("_number") or re.search(r"'(int|float)' object", why)
    hint = ev.exercise.hints.get(op) or MISSING.get(op) or (
        MISSING["number"] if coercion else f"Implement {op_text(op)}: the exercise needs it.")
    return Finding("missing_op", f"{op_text(op)} is not supported by your Value.", node, op,
                   [hint])


def failure(ev: Evaluation, trace: Trace | None) -> Finding | None:
    """An exception, recursion, timeout or memory limit."""
    verdict, res = ev.result.verdict, ev.result
    if verdict in LIMIT_HINTS:
        cause, hint = LIMIT_HINTS[verdict]
        return Finding(cause, res.message, hints=[hint])
    err = (ev.focus.error if ev.focus else None) or {}
    frames = re.findall(r'File "(?:[^"]*/)?submission\.py", line (\d+), in (\w+)',
                        res.traceback or err.get("traceback") or "")
    func = frames[-1][1] if frames else None
    op = METHODS.get(func or "") or ("init" if func == "__init__" else "backward" if func and (
        "backward" in func or "topo" in func) else None)
    node = None
    if trace is not None and op:
        hit = next((n for n in trace.nodes if n.op == op), trace.out)
        node = Graph(trace, ev.focus).named(hit) if ev.focus else hit.name
    if err.get("kind") == "recursion":
        where = f"`{func}`" if func else "your code"
        hint = (f"{where} keeps calling itself until Python gives up: "
                + ("build the topological order with an explicit stack (a loop) instead of "
                   "recursion." if op == "backward" else
                   "compute its result from other operations without re-entering it (e.g. "
                   "`__radd__` returns `self + other`, not `other + self`)."))
        return Finding("recursion", f"RecursionError in {where}.", node, op, [hint])
    if verdict == "error" or res.traceback:
        line = f" (line {frames[-1][0]})" if frames else ""
        return Finding("exception", res.message, node, op,
                       [f"Your code raised an exception in `{func or 'Value'}`{line}: read "
                        "the traceback below, then run the same steps by hand."])
    return None


def diagnose(ev: Evaluation, trace: Trace | None) -> Finding | None:
    """The diagnosis of an exercise's focus run, or None when it passed."""
    verdict, run = ev.result.verdict, ev.focus
    if verdict == "passed":
        return None
    if verdict == "missing_feature" and run is not None and run.missing:
        return missing(ev, trace)
    if verdict in ("wrong_forward", "wrong_gradient") and run is not None and trace:
        g = Graph(trace, run)
        return forward(g) if run.data_wrong else gradient(g, ev.exercise.hints)
    return failure(ev, trace)
