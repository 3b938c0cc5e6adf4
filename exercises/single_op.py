"""Single operations: one graph per operation on the inputs you pass, and a graph tracer.

Used to shrink a failing exercise to the one operation that reproduces the failure: the
grader replays `x.tanh()` (say) alone, at the culprit's input values, in the sandbox. Not
part of any assignment. The tracer runs an exercise builder with a recording `Value` to
learn which Python operation made each node (``yout - ygt`` is `sub_number`, ``0 + v`` is
`radd`), with its operands and local derivatives. Standard library only.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from exercises.base import Exercise, Graph


def _relu(x: Any) -> Any:
    return x.relu() if hasattr(x, "relu") else max(x, 0.0)


def _call(method: str, fn: Callable[[float], float]) -> Callable[[Any], Any]:
    return lambda x: getattr(x, method)() if hasattr(x, method) else fn(x)


@dataclass(frozen=True)
class Op:
    """One operation: which operands are Values (V) or numbers (N), its text and maths."""

    sig: str                    #: "V", "VV", "VN" or "NV"
    text: str                   #: how a student writes it; {a} / {b} are the number operands
    apply: Callable[..., Any]   #: works on Values and on floats alike
    local: Callable[..., tuple[float, ...]]  #: d out / d each Value operand, from (a, b, out)
    probe: str | None           #: the harness probe that must pass before it is run
    method: str                 #: the method that implements it


OPS: dict[str, Op] = {
    "add": Op("VV", "{x} + {y}", operator.add, lambda a, b, o: (1.0, 1.0), "add", "__add__"),
    "add_number": Op("VN", "{x} + {b}", operator.add, lambda a, b, o: (1.0,), "add_number",
                     "__add__"),
    "radd": Op("NV", "{a} + {x}", operator.add, lambda a, b, o: (1.0,), "radd", "__radd__"),
    "mul": Op("VV", "{x} * {y}", operator.mul, lambda a, b, o: (b, a), "mul", "__mul__"),
    "mul_number": Op("VN", "{x} * {b}", operator.mul, lambda a, b, o: (b,), "mul_number",
                     "__mul__"),
    "rmul": Op("NV", "{a} * {x}", operator.mul, lambda a, b, o: (a,), "rmul", "__rmul__"),
    "sub": Op("VV", "{x} - {y}", operator.sub, lambda a, b, o: (1.0, -1.0), "sub", "__sub__"),
    "sub_number": Op("VN", "{x} - {b}", operator.sub, lambda a, b, o: (1.0,), "sub_number",
                     "__sub__"),
    "rsub": Op("NV", "{a} - {x}", operator.sub, lambda a, b, o: (-1.0,), "rsub", "__rsub__"),
    "neg": Op("V", "-{x}", operator.neg, lambda a, b, o: (-1.0,), "neg", "__neg__"),
    "pow": Op("VN", "{x} ** {b}", operator.pow, lambda a, b, o: (b * a ** (b - 1),), "pow",
              "__pow__"),
    "truediv": Op("VV", "{x} / {y}", operator.truediv, lambda a, b, o: (1 / b, -a / b**2),
                  "truediv", "__truediv__"),
    "truediv_number": Op("VN", "{x} / {b}", operator.truediv, lambda a, b, o: (1 / b,), None,
                         "__truediv__"),
    "rtruediv": Op("NV", "{a} / {x}", operator.truediv, lambda a, b, o: (-a / b**2,),
                   "rtruediv", "__rtruediv__"),
    "tanh": Op("V", "tanh({x})", _call("tanh", math.tanh), lambda a, b, o: (1 - o**2,),
               "tanh", "tanh"),
    "exp": Op("V", "exp({x})", _call("exp", math.exp), lambda a, b, o: (o,), "exp", "exp"),
    "relu": Op("V", "relu({x})", _relu, lambda a, b, o: (1.0 if a > 0 else 0.0,), "relu",
               "relu"),
}
VALUE_NAMES = ("x", "y")


def expression(op: str, a: float | None = None, b: float | None = None, x: str = "x",
               y: str = "y") -> str:
    """The operation as a student writes it, e.g. ``x ** 2`` or ``1 - x``."""
    return OPS[op].text.format(a=f"{a:g}" if a is not None else "a",
                               b=f"{b:g}" if b is not None else "b", x=x, y=y)


def _builder(op_name: str) -> Callable:
    def build(Value, x, tag):
        if x.get("op") != op_name:  # only the requested graph does real work
            return tag(Value(1.0), "x")
        op = OPS[op_name]
        args, values = [], iter(VALUE_NAMES)
        for kind, raw in zip(op.sig, (x["a"], x.get("b")), strict=False):
            args.append(tag(Value(raw), next(values)) if kind == "V" else raw)
        return tag(op.apply(*args), "out")

    build.__doc__ = f"out = {expression(op_name)} alone."
    return build


EXERCISE = Exercise(
    name="single_op",
    title="One operation alone",
    summary="Replays a single operation at given inputs (counterexample shrinking).",
    points=0.0,
    graphs=tuple(Graph(name, _builder(name), (*((op.probe,) if op.probe else ()), "backward"),
                       expression(name)) for name, op in OPS.items()),
    canonical={"op": "add", "a": 2.0, "b": 3.0},
    random_inputs=lambda rng: {"op": "add", "a": 2.0, "b": 3.0},
    feedback_only=True,
)


def for_op(op: str, a: float, b: float | None = None) -> Exercise:
    """The exercise that runs just `op` on operands `a` (and `b`): one graph, one instance."""
    inputs = {"op": op, "a": a, "b": b}
    return replace(EXERCISE, graphs=(EXERCISE.graph(op),), canonical=inputs,
                   random_inputs=lambda rng: dict(inputs))


# --- the tracer ---------------------------------------------------------------------------

@dataclass(eq=False)
class Node:
    """A node of a traced graph: how it was made, its reference value and gradient."""

    index: int
    data: float
    op: str | None = None
    args: tuple[Any, ...] = ()        #: Node or number operands, in call order
    names: list[str] = field(default_factory=list)
    grad: float = 0.0

    @property
    def name(self) -> str:
        """The tag the harness reports it under (the last one), or ``#t<index>``."""
        return self.names[-1] if self.names else f"#t{self.index}"

    @property
    def inputs(self) -> list[Node]:
        """The Value operands, one entry per use."""
        return [a for a in self.args if isinstance(a, Node)]

    def local(self) -> tuple[float, ...]:
        """d self / d each Value operand (same order as `inputs`)."""
        nums = [a.data if isinstance(a, Node) else float(a) for a in self.args] + [0.0]
        return OPS[self.op].local(nums[0], nums[1], self.data) if self.op else ()

    def text(self, name: Callable[[Node], str] | None = None) -> str:
        """How the node was computed, e.g. ``d * f`` or ``s0.yout-ygt ** 2``."""
        if not self.op:
            return f"Value({self.data:g})"
        vals = [name(a) if name else a.name for a in self.inputs] + ["y"]
        nums = [None if isinstance(a, Node) else float(a) for a in self.args] + [None]
        return expression(self.op, nums[0], nums[1], vals[0], vals[1])

    def operands(self) -> dict[str, float]:
        """Operand values keyed as the single-op graph names them: x, y, a, b."""
        out, values = {}, iter(VALUE_NAMES)
        for pos, (kind, arg) in enumerate(zip(OPS[self.op].sig, self.args, strict=False)):
            key = next(values) if kind == "V" else "ab"[pos]
            out[key] = arg.data if isinstance(arg, Node) else float(arg)
        return out


@dataclass
class Trace:
    """Every node a builder made, in creation order (a topological order)."""

    nodes: list[Node]
    tagged: dict[str, Node]
    out: Node

    def consumers(self) -> dict[int, list[Node]]:
        """For each node index, the nodes using it (one entry per use)."""
        users: dict[int, list[Node]] = {}
        for n in self.nodes:
            for arg in n.inputs:
                users.setdefault(arg.index, []).append(n)
        return users


def _op_method(vv: str, vn: str | None, reflected: bool = False) -> Callable:
    def method(self, other):
        if reflected:
            return self._make(vv, (other, self))
        if isinstance(other, Traced):
            return self._make(vv, (self, other))
        if vn is None:
            raise TypeError(f"{vv} needs a number")
        return self._make(vn, (self, other))
    return method


class Traced:
    """A recording stand-in for `Value`, bound to one trace by `trace()`."""

    _nodes: list[Node] = []

    def __init__(self, data: float) -> None:
        self.node = Node(len(self._nodes), float(data))
        self._nodes.append(self.node)

    def _make(self, op: str, args: tuple[Any, ...]) -> Traced:
        out = type(self)(OPS[op].apply(*(a.node.data if isinstance(a, Traced) else a
                                         for a in args)))
        out.node.op = op
        out.node.args = tuple(a.node if isinstance(a, Traced) else float(a) for a in args)
        return out

    __add__ = _op_method("add", "add_number")
    __radd__ = _op_method("radd", None, reflected=True)
    __mul__ = _op_method("mul", "mul_number")
    __rmul__ = _op_method("rmul", None, reflected=True)
    __sub__ = _op_method("sub", "sub_number")
    __rsub__ = _op_method("rsub", None, reflected=True)
    __truediv__ = _op_method("truediv", "truediv_number")
    __rtruediv__ = _op_method("rtruediv", None, reflected=True)

    def __pow__(self, k: float) -> Traced:
        return self._make("pow", (self, k))

    def __neg__(self) -> Traced:
        return self._make("neg", (self,))

    def tanh(self) -> Traced:
        return self._make("tanh", (self,))

    def exp(self) -> Traced:
        return self._make("exp", (self,))

    def relu(self) -> Traced:
        return self._make("relu", (self,))


def trace(build: Callable, inputs: dict[str, Any]) -> Trace:
    """Run `build` with a recording Value; return its nodes with reference grads."""
    nodes: list[Node] = []
    tagged: dict[str, Node] = {}
    V = type("Value", (Traced,), {"_nodes": nodes})

    def tag(v: Traced, name: str) -> Traced:
        v.node.names.append(name)
        tagged[name] = v.node
        return v

    out = build(V, inputs, tag).node
    out.grad = 1.0
    for n in reversed(nodes[: out.index + 1]):
        for arg, d in zip(n.inputs, n.local(), strict=False):
            arg.grad += d * n.grad
    return Trace(nodes, tagged, out)
