"""The harness's own rules (SPEC §3), checked in-process with stand-in Value classes:
stubs, reading numbers and structure, probing, and touching nothing but grad and data."""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from exercises import EXERCISES
from reference import Value
from worker import harness


@pytest.fixture
def stubs(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The harness's import stubs, installed for one test; the real modules come back."""
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    saved = {n: m for n, m in sys.modules.items() if n.split(".")[0] in harness.STUBBED}
    for name in saved:
        del sys.modules[name]
    harness.install_stubs()
    yield
    for name in [n for n in sys.modules if n.split(".")[0] in harness.STUBBED]:
        del sys.modules[name]
    sys.modules.update(saved)


def test_heavy_imports_are_permissive_stubs(stubs: None) -> None:
    import graphviz
    import matplotlib.pyplot as plt
    import torch
    from IPython.display import display
    from torch import nn

    dot = graphviz.Digraph(format="svg", graph_attr={"rankdir": "LR"})
    dot.node(name="a", label="{ a | data 2.0 }", shape="record")
    with torch.no_grad():
        x = torch.Tensor([2.0]).double()
        x.requires_grad = True
    plt.plot([1, 2, 3])
    plt.show()
    display(dot)

    class Net(nn.Module):
        pass

    assert isinstance(Net(), object)
    assert list(plt.figure()) == []
    with pytest.raises(ValueError, match="not enough values to unpack"):
        fig, ax = plt.subplots()  # the demo-at-import failure SPEC §3 explains


def test_only_the_listed_libraries_are_stubbed(stubs: None) -> None:
    with pytest.raises(ImportError):
        import scipy  # noqa: F401


@pytest.mark.parametrize(("raw", "expected"), [
    (3, 3.0), (2.5, 2.5), (np.float64(1.5), 1.5), (np.float32(0.5), 0.5),
    (np.array(4.0), 4.0), (True, 1.0),
])
def test_numbers_are_read_with_float(raw: Any, expected: float) -> None:
    class Node:
        data = raw

    assert harness.read_number(Node(), ("data",)) == expected


def test_unreadable_numbers_are_nan_and_value_is_the_fallback() -> None:
    class Broken:
        data = "two"

    class Old:
        value = 7

    class Hostile:
        @property
        def data(self) -> float:
            raise RuntimeError("no")

    assert math.isnan(harness.read_number(Broken(), ("data", "value")))
    assert harness.read_number(Old(), ("data", "value")) == 7.0
    assert math.isnan(harness.read_number(object(), ("data", "value")))
    with pytest.raises(RuntimeError):  # anything but AttributeError is the student's error
        harness.read_number(Hostile(), ("data",))


@pytest.mark.parametrize("attr", harness.CHILD_ATTRS)
def test_children_are_read_from_the_first_structure_attribute(attr: str) -> None:
    a, b = Value(1.0), Value(2.0)

    class Node:
        pass

    node = Node()
    setattr(node, attr, {a, b} if attr == "_prev" else (a, b))
    assert sorted(v.data for v in harness.read_children(node)) == [1.0, 2.0]
    assert harness.read_children(Node()) is None


def test_probes_tell_missing_operations_from_broken_ones() -> None:
    class Partial(Value):
        __slots__ = ()

        def tanh(self) -> Value:
            raise ValueError("tanh is broken")

        def exp(self) -> Value:
            raise NotImplementedError

        def __rsub__(self, other: float) -> Value:
            return NotImplemented

    features = harness.probe(Partial)
    assert features["add"] is True and features["relu"] is True
    assert features["exp"] is False and features["rsub"] is False
    assert features["tanh"] == "ValueError: tanh is broken"
    assert "TypeError" in features["_why"]["rsub"]
    assert set(harness.PROBES) <= set(harness.OP_TEXT)


class Watched(Value):
    """A Value that records every attribute the harness sets on it from outside."""

    __slots__ = ()
    outside: list[str] = []
    inside = [0]

    def __setattr__(self, name: str, value: Any) -> None:
        if Watched.inside[0] == 0:
            Watched.outside.append(name)
        Value.__setattr__(self, name, value)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if kwargs or len(args) != 1:  # the grader only ever calls Value(x)
            Watched.outside.append(f"Value{args!r}{kwargs!r}")
        Watched.inside[0] += 1
        try:
            super().__init__(*args, **kwargs)
        finally:
            Watched.inside[0] -= 1


def _watch_methods() -> None:
    for name in ("__add__", "__radd__", "__mul__", "__rmul__", "__sub__", "__rsub__",
                 "__pow__", "__truediv__", "__rtruediv__", "__neg__", "tanh", "exp", "relu",
                 "backward"):
        base = getattr(Value, name)

        def method(self: Any, *args: Any, _base: Any = base) -> Any:
            Watched.inside[0] += 1
            try:
                out = _base(self, *args)
                if isinstance(out, Value):
                    object.__setattr__(out, "__class__", Watched)  # results are watched too
                return out
            finally:
                Watched.inside[0] -= 1

        setattr(Watched, name, method)


_watch_methods()


@pytest.mark.parametrize("name", list(EXERCISES))
def test_the_harness_sets_only_grad_and_data_and_only_for_the_sgd_step(name: str) -> None:
    ex = EXERCISES[name]
    params = ex.params(ex.canonical) if ex.params else None
    Watched.outside = []
    for g in ex.graphs:
        harness.capture(Watched, g.build, dict(ex.canonical), ex.lr, params)
    allowed = {"grad", "data"} if ex.lr is not None else set()
    assert set(Watched.outside) <= allowed, Watched.outside
    if ex.lr is not None:
        assert Watched.outside.count("grad") == Watched.outside.count("data") == 41


def test_the_quirk_checks_set_nothing_and_call_only_value_of_one_number() -> None:
    Watched.outside = []
    found = harness.quirks(Watched, EXERCISES["operators"].ops, harness.probe(Watched))
    assert found == ["double_backward"]  # the reference accumulates, like micrograd
    assert Watched.outside == []


ALL_OPS = tuple(harness.PROBES)


class ReluOneAtZero(Value):
    __slots__ = ()

    def relu(self) -> Value:
        out = Value(max(self.data, 0.0))
        out._prev, out._backward = {self}, lambda: setattr(self, "grad", self.grad + out.grad)
        return out


class OverflowingTanh(Value):
    __slots__ = ()

    def tanh(self) -> Value:
        e = math.exp(2 * self.data)
        return Value((e - 1) / (e + 1))


class NanTanh(Value):
    __slots__ = ()

    def tanh(self) -> Value:
        with np.errstate(over="ignore", invalid="ignore"):
            e = np.exp(np.float64(2 * self.data))
            return Value((e - 1) / (e + 1))


class IdempotentBackward(Value):
    __slots__ = ()

    def __mul__(self, other: Value) -> Value:
        out = Value.__mul__(self, other)
        object.__setattr__(out, "__class__", IdempotentBackward)
        return out

    def backward(self) -> None:
        for node in self._prev:  # enough for the one-operation graph the check builds
            node.grad = 0.0
        super().backward()


@pytest.mark.parametrize(("cls", "found"), [
    (ReluOneAtZero, ["relu_grad_at_zero", "double_backward"]),
    (OverflowingTanh, ["tanh_overflow", "double_backward"]),
    (NanTanh, ["tanh_overflow", "double_backward"]),
    (IdempotentBackward, []),
])
def test_quirks_are_found_on_fresh_values(cls: type, found: list[str]) -> None:
    features = harness.probe(cls)
    assert harness.quirks(cls, ALL_OPS, features) == found
    assert harness.quirks(cls, ("add", "mul"), features) == []  # no backward in that exercise


def test_a_quirk_check_that_raises_or_lacks_its_operation_says_nothing() -> None:
    class Broken(Value):
        __slots__ = ()

        def relu(self) -> Value:
            raise SystemExit("no relu at 0")

        def tanh(self) -> Value:
            raise KeyboardInterrupt

    assert harness.quirks(Broken, ALL_OPS, dict.fromkeys(ALL_OPS, True)) == [
        "double_backward"]
    lacking = {"tanh": False, "backward": True, "mul": True}
    assert harness.quirks(OverflowingTanh, ALL_OPS, lacking) == ["double_backward"]


def test_the_output_gradient_is_never_pre_seeded() -> None:
    class Unseeded:
        """Right local derivatives, but backward() forgets `self.grad = 1`."""

        def __init__(self, data: float, children: tuple = ()) -> None:
            self.data, self.grad, self._prev = data, 0.0, children
            self._backward = lambda: None

        def __add__(self, other: Unseeded) -> Unseeded:
            out = Unseeded(self.data + other.data, (self, other))

            def _backward() -> None:
                self.grad += out.grad
                other.grad += out.grad

            out._backward = _backward
            return out

        def __mul__(self, other: Unseeded) -> Unseeded:
            out = Unseeded(self.data * other.data, (self, other))

            def _backward() -> None:
                self.grad += other.data * out.grad
                other.grad += self.data * out.grad

            out._backward = _backward
            return out

        def backward(self) -> None:
            for v in (self, *self._prev, *self._prev[0]._prev, *self._prev[0]._prev[0]._prev):
                v._backward()

    ex = EXERCISES["expression"]
    got = harness.capture(Unseeded, ex.graphs[0].build, dict(ex.canonical))
    assert got["data"]["L"] == -8.0
    assert set(got["grad"].values()) == {0.0}


class SetValue:
    """Just enough of a learner's Value for structure(): children kept in a set."""

    def __init__(self, data: float, children: tuple = (), op: str = "") -> None:
        self.data, self.grad, self._prev, self._op = data, 0.0, set(children), op

    def __add__(self, other: SetValue) -> SetValue:
        return SetValue(self.data + other.data, (self, other), "+")

    def __mul__(self, other: SetValue) -> SetValue:
        return SetValue(self.data * other.data, (self, other), "*")


def test_structure_is_the_same_whatever_order_a_set_iterates_in() -> None:
    """Children sets iterate in id() order, which differs from run to run."""
    shapes, orders = set(), set()
    for i in range(30):
        padding = [SetValue(0.0) for _ in range(i)]  # shift the addresses of the next ones
        a, b = SetValue(3.0), SetValue(4.0)
        out = a * b + SetValue(-1.0) + SetValue(2.0)
        orders.add(tuple(v.data for v in out._prev))
        got = harness.structure({"a": a, "b": b}, out)
        shapes.add(repr(sorted(got["nodes"].items())) + repr(sorted(got["extra"].items())))
        del padding
    assert len(orders) > 1  # the sets did iterate in different orders
    assert len(shapes) == 1


def test_errors_are_described_even_when_they_refuse_to_print() -> None:
    class Nasty(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

    try:
        raise Nasty()
    except Nasty as exc:
        described = harness.describe_error(exc)
    assert described["message"] == "Nasty: <unprintable>"
    assert described["kind"] == "error"
    assert harness.describe_error(RecursionError("deep"))["kind"] == "recursion"
    assert harness.describe_error(MemoryError())["kind"] == "memory"
