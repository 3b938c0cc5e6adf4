"""The reference engine is the authority, so it is checked against independent sources:
central finite differences on random expressions, PyPI's micrograd, and SPEC §4's numbers."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from micrograd.engine import Value as MicrogradValue

from exercises import EXERCISES
from reference import Value
from worker.harness import capture

N_VARS = 3
BINARY = ("add", "mul", "sub", "div")
POWERS = (2, 3, -1, 0.5)


class Rejected(Exception):
    """The expression is not smooth or not well-conditioned at this point."""


# --- random expressions -----------------------------------------------------------------------

leaf = st.one_of(
    st.builds(lambda i: ("var", i), st.integers(0, N_VARS - 1)),
    st.builds(lambda c: ("const", c),
              st.floats(-3, 3, allow_nan=False).filter(lambda c: abs(c) > 0.1)),
)


def _extend(children: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(
        st.tuples(st.sampled_from(BINARY), children, children),
        st.tuples(st.just("pow"), children, st.sampled_from(POWERS)),
        st.tuples(st.sampled_from(("tanh", "exp", "relu", "neg")), children),
    )


def _uses_var(tree: tuple) -> bool:
    return tree[0] == "var" or any(isinstance(t, tuple) and _uses_var(t) for t in tree[1:])


expressions = st.recursive(leaf, _extend, max_leaves=10).filter(_uses_var)
points = st.lists(st.floats(-2, 2, allow_nan=False), min_size=N_VARS, max_size=N_VARS)


def _num(x: Any) -> float:
    return x.data if hasattr(x, "data") else x


def evaluate(tree: tuple, env: list[Any], unary: dict[str, Callable[[Any], Any]]) -> Any:
    """Evaluate a tree with Python's operators on whatever `env` holds (Values or floats).

    Raises Rejected near a relu kink, a small divisor, a negative base of a square root,
    or where numbers grow large (finite differences lose their precision there).
    """
    op = tree[0]
    if op == "var":
        return env[tree[1]]
    if op == "const":
        return tree[1]
    x = evaluate(tree[1], env, unary)
    if op == "pow":
        k = tree[2]
        if (k == 0.5 and _num(x) < 0.1) or (k == -1 and abs(_num(x)) < 0.1):
            raise Rejected(op)
        out = x**k
    elif op in BINARY:
        y = evaluate(tree[2], env, unary)
        if op == "div" and abs(_num(y)) < 0.1:
            raise Rejected(op)
        out = {"add": lambda: x + y, "mul": lambda: x * y, "sub": lambda: x - y,
               "div": lambda: x / y}[op]()
    elif op == "neg":
        out = -x
    else:
        if (op == "relu" and abs(_num(x)) < 1e-3) or (op == "exp" and _num(x) > 5):
            raise Rejected(op)
        out = unary[op](x) if hasattr(x, "data") else FLOAT_UNARY[op](x)
    if abs(_num(out)) > 1e4:
        raise Rejected("large")
    return out


FLOAT_UNARY: dict[str, Callable[[float], float]] = {
    "tanh": math.tanh, "exp": math.exp, "relu": lambda x: max(x, 0.0)}
VALUE_UNARY: dict[str, Callable[[Any], Any]] = {
    "tanh": lambda v: v.tanh(), "exp": lambda v: v.exp(), "relu": lambda v: v.relu()}


def value_grads(cls: type, tree: tuple, point: list[float]) -> tuple[float, list[float]]:
    """Forward value and gradient of every variable, computed by the engine `cls`."""
    leaves = [cls(x) for x in point]
    out = evaluate(tree, leaves, VALUE_UNARY)
    assume(hasattr(out, "data"))  # the variables may cancel out of a constant subtree
    out.backward()
    return out.data, [float(v.grad) for v in leaves]


def finite_differences(tree: tuple, point: list[float], h: float = 1e-6) -> list[float]:
    """Central differences of the float evaluation, one variable at a time."""
    grads = []
    for i in range(len(point)):
        up, down = list(point), list(point)
        up[i] += h
        down[i] -= h
        grads.append((evaluate(tree, up, FLOAT_UNARY) - evaluate(tree, down, FLOAT_UNARY))
                     / (2 * h))
    return grads


def _without(tree: tuple, ops: set[str]) -> bool:
    return tree[0] not in ops and all(
        not isinstance(t, tuple) or _without(t, ops) for t in tree[1:])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(expressions, points)
def test_gradients_match_central_finite_differences(tree: tuple, point: list[float]) -> None:
    try:
        data, grads = value_grads(Value, tree, point)
        numeric = finite_differences(tree, point)
        expected = evaluate(tree, point, FLOAT_UNARY)
    except Rejected:
        assume(False)
        return
    assert math.isclose(data, expected, rel_tol=1e-12, abs_tol=1e-12)
    for g, n in zip(grads, numeric, strict=True):
        assert math.isclose(g, n, rel_tol=1e-4, abs_tol=1e-5), (tree, point, grads, numeric)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(expressions.filter(lambda t: _without(t, {"tanh", "exp"})), points)
def test_agrees_with_pypi_micrograd(tree: tuple, point: list[float]) -> None:
    """micrograd 0.1.0 has + * ** relu and the derived ops, but neither tanh nor exp."""
    try:
        ours = value_grads(Value, tree, point)
        theirs = value_grads(MicrogradValue, tree, point)
    except Rejected:
        assume(False)
        return
    assert math.isclose(ours[0], theirs[0], rel_tol=1e-12, abs_tol=1e-12)
    for a, b in zip(ours[1], theirs[1], strict=True):
        assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12), (tree, point, ours, theirs)


def test_micrograd_really_lacks_tanh_and_exp() -> None:
    """Why the comparison above leaves tanh and exp to the finite differences."""
    assert not hasattr(MicrogradValue(1.0), "tanh")
    assert not hasattr(MicrogradValue(1.0), "exp")


COERCIONS = {  # name: (f, value at x=3, slope at x=3)
    "x+2": (lambda x: x + 2, 5.0, 1.0), "2+x": (lambda x: 2 + x, 5.0, 1.0),
    "x*2": (lambda x: x * 2, 6.0, 2.0), "2*x": (lambda x: 2 * x, 6.0, 2.0),
    "x-2": (lambda x: x - 2, 1.0, 1.0), "2-x": (lambda x: 2 - x, -1.0, -1.0),
    "x/2": (lambda x: x / 2, 1.5, 0.5), "2/x": (lambda x: 2 / x, 2 / 3, -2 / 9),
}


@pytest.mark.parametrize("name", COERCIONS)
def test_number_coercion_both_ways(name: str) -> None:
    f, value, slope = COERCIONS[name]
    x = Value(3.0)
    out = f(x)
    out.backward()
    assert out.data == pytest.approx(value)
    assert x.grad == pytest.approx(slope)


def test_a_100000_node_chain_backpropagates_without_recursion_error() -> None:
    x = Value(0.5)
    y = x
    for _ in range(100_000):
        y = y * 1.0 + 0.0
    y.backward()
    assert y.data == 0.5
    assert x.grad == 1.0


def test_shared_leaf_and_self_addition_accumulate() -> None:
    x = Value(5.0)
    y = x + x
    y.backward()
    assert x.grad == 2.0
    a = Value(3.0)
    z = a * a * a
    z.backward()
    assert a.grad == pytest.approx(27.0)


# --- SPEC §4's canonical numbers, through the exercises' own builders -----------------------

def canonical(exercise: str, graph: str | None = None) -> dict[str, Any]:
    """The reference's numbers for an exercise's canonical instance (via the harness)."""
    ex = EXERCISES[exercise]
    g = ex.graph(graph) if graph else ex.graphs[0]
    params = ex.params(ex.canonical) if ex.params else None
    return capture(Value, g.build, dict(ex.canonical), ex.lr, params)


def test_expression_canonical_numbers() -> None:
    got = canonical("expression")
    assert got["data"]["L"] == pytest.approx(-8.0)
    assert got["grad"] == pytest.approx(
        {"a": 6.0, "b": -4.0, "c": -2.0, "f": 4.0, "e": -2.0, "d": -2.0, "L": 1.0})


def test_expression_is_not_the_widely_copied_wrong_answer() -> None:
    """A popular write-up prints L=40 and dL/da=-20 for this graph; both are wrong."""
    got = canonical("expression")
    assert got["data"]["L"] != pytest.approx(40.0)
    assert got["grad"]["a"] != pytest.approx(-20.0)
    a, b, c, f = Value(2.0), Value(-3.0), Value(10.0), Value(-2.0)
    L = (a * b + c) * f  # by hand: (2 * -3 + 10) * -2 = -8; dL/da = b * f = 6
    L.backward()
    assert (L.data, a.grad) == (-8.0, 6.0)


def test_diamond_canonical_numbers() -> None:
    got = canonical("diamond", "e")
    assert got["data"]["e"] == pytest.approx(84.0)
    assert {k: got["grad"][k] for k in "abcd"} == pytest.approx(
        {"a": 40.0, "b": 33.0, "c": 12.0, "d": 7.0})
    assert canonical("diamond", "x+x")["grad"]["x"] == pytest.approx(2.0)
    product = canonical("diamond", "(a*b+c)*(a+c)")
    assert product["data"]["out"] == pytest.approx(48.0)
    assert {k: product["grad"][k] for k in "abc"} == pytest.approx(
        {"a": -32.0, "b": 24.0, "c": 16.0})
    reuse = canonical("diamond", "non-leaf reuse")
    assert reuse["data"]["d"] == pytest.approx(42.0)
    assert reuse["grad"]["a"] == pytest.approx(39.0)


def test_neuron_canonical_numbers() -> None:
    got = canonical("neuron")
    assert got["data"]["o"] == pytest.approx(0.70710678, abs=1e-8)
    assert got["grad"]["n"] == pytest.approx(0.5)
    assert {k: got["grad"][k] for k in ("x1", "w1", "x2", "w2", "b")} == pytest.approx(
        {"x1": -1.5, "w1": 1.0, "x2": 0.5, "w2": 0.0, "b": 0.5})


def test_mlp_step_canonical_has_41_parameters_updated_by_sgd() -> None:
    got = canonical("mlp_step")
    assert len(got["updated"]) == 41
    for name, new in got["updated"].items():
        assert new == pytest.approx(got["data"][name] - 0.05 * got["grad"][name])
    assert got["data"]["loss"] > 0
