"""Counterexample shrinking: the tracer, single-op graphs and replays in the real sandbox."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reference
from exercises import EXERCISES, MODULES
from exercises.base import instances
from exercises.single_op import OPS, for_op, trace
from grader.grading.compare import close
from grader.grading.diagnose import Finding
from grader.grading.feedback import _shrink, annotate
from grader.grading.pipeline import grade, run_exercise
from worker import harness
from worker.limits import Limits

BUGS = Path(__file__).resolve().parents[1] / "fixtures" / "submissions" / "bugs"
CORRECT = Path(reference.__file__).with_name("engine.py").read_text(encoding="utf-8")


def test_single_op_is_copied_into_the_sandbox_but_never_assigned() -> None:
    assert "single_op" in MODULES and "single_op" not in EXERCISES


@pytest.mark.parametrize("op", sorted(OPS))
def test_each_single_op_graph_matches_its_local_derivative(op: str) -> None:
    a, b = (1.7, 2.0) if op == "pow" else (0.6, -1.3)
    ex = for_op(op, a, b)
    (graph,) = ex.graphs
    exp = harness.capture(reference.Value, graph.build, ex.canonical)
    t = trace(graph.build, ex.canonical)
    assert t.out.name == "out"
    assert close(exp["data"]["out"], t.out.data)
    for name, d in zip(("x", "y"), t.out.local(), strict=False):
        assert close(exp["grad"][name], d), (op, name)


@settings(max_examples=15, deadline=None)
@given(st.integers(min_value=0, max_value=2**31 - 1))
def test_trace_agrees_with_the_reference_engine(seed: int) -> None:
    for ex in EXERCISES.values():
        inputs = instances(ex, seed, 1)[1][1]
        params = ex.params(inputs) if ex.params else None
        for graph in ex.graphs:
            exp = harness.capture(reference.Value, graph.build, inputs, ex.lr, params)
            t = trace(graph.build, inputs)
            for name, node in t.tagged.items():
                assert math.isclose(node.data, exp["data"][name], rel_tol=1e-9, abs_tol=1e-12)
                assert math.isclose(node.grad, exp["grad"][name], rel_tol=1e-9, abs_tol=1e-9)


def test_trace_names_operations_as_the_student_wrote_them() -> None:
    t = trace(EXERCISES["mlp_step"].graphs[0].build, EXERCISES["mlp_step"].canonical)
    ops = {name: t.tagged[name].op for name in
           ("s0.yout-ygt", "s0.(yout-ygt)**2", "loss.sum0", "s0.L0.N0.w0*x0",
            "s0.L1.N0.w0*x0", "s0.L0.N0.out")}
    assert ops == {"s0.yout-ygt": "sub_number", "s0.(yout-ygt)**2": "pow",
                   "loss.sum0": "radd", "s0.L0.N0.w0*x0": "mul_number",
                   "s0.L1.N0.w0*x0": "mul", "s0.L0.N0.out": "tanh"}
    assert t.tagged["s0.(yout-ygt)**2"].text() == "s0.yout-ygt ** 2"


def test_tanh_bug_shrinks_to_tanh_alone() -> None:
    report = grade((BUGS / "tanh_derivative.py").read_text(), ["neuron"], 77, k=1,
                   filename="value.py")
    shrunk = report.exercises[0].diagnosis["shrunk"]
    x = math.atanh(1 / math.sqrt(2))          # n of the canonical neuron
    assert shrunk["reproduced"] and shrunk["expression"] == "tanh(x)"
    assert close(shrunk["inputs"]["x"], x)
    assert close(shrunk["expected"]["grad"]["x"], 0.5)
    assert close(shrunk["actual"]["grad"]["x"], 1 - x**2)
    assert shrunk["message"].startswith("`tanh(x)` at x=0.881374 alone: expected grad 0.5, got ")
    assert shrunk["replay"] == "micrograde grade value.py --seed 77 --exercise neuron"
    assert shrunk["seed"] == 77 and shrunk["instance"] == 0


def test_random_instance_failure_shrinks_at_that_instances_values() -> None:
    ex, seed = EXERCISES["neuron"], 91
    code = (BUGS / "tanh_derivative.py").read_text()
    limits = Limits()
    ev, _ = run_exercise(ex, code, seed, 2, limits, None)
    random_run = next(r for r in ev.runs if r.instance == 2)
    ev.focus = random_run
    ev.result.instance, ev.result.instance_seed = 2, ev.seeds[2]
    annotate(ev, seed=seed, filename="my value.py",
             replay=lambda one: run_exercise(one, code, seed, 0, limits, None)[0])
    shrunk = ev.result.diagnosis["shrunk"]
    inputs = ex.random_inputs(random.Random(ev.seeds[2]))
    n = inputs["x1"] * inputs["w1"] + inputs["x2"] * inputs["w2"] + inputs["b"]
    assert close(shrunk["inputs"]["x"], n)
    assert shrunk["reproduced"] and shrunk["instance_seed"] == ev.seeds[2]
    assert shrunk["replay"] == f"micrograde grade 'my value.py' --seed {seed} --exercise neuron"
    assert "random instance 2" in ev.result.diff_dot


def test_a_derivative_right_alone_on_a_shared_node_is_an_order_bug() -> None:
    ex = EXERCISES["diamond"]
    t = trace(ex.graph("non-leaf reuse").build, ex.canonical)
    b = t.tagged["b"]
    finding = Finding("local_derivative", "?", "b", "mul", ["?"], b)
    diag = finding.as_dict() | {"uses": 2}
    _shrink(finding, diag, t,
            lambda one: run_exercise(one, CORRECT, 1, 0, Limits(), None)[0])
    assert diag["shrunk"]["expression"] == "x * y"
    assert diag["shrunk"]["inputs"] == {"x": 2.0, "y": 3.0}
    assert not diag["shrunk"]["reproduced"] and "right" in diag["shrunk"]["message"]
    assert diag["cause"] == "topo_order" and "topological order" in finding.hints[0]


def test_no_shrinking_when_nothing_failed_or_the_graph_is_one_op() -> None:
    report = grade(CORRECT, ["neuron"], 5, k=1)
    assert report.exercises[0].diagnosis is None
    report = grade((BUGS / "tanh_derivative.py").read_text(), ["operators"], 5, k=1)
    assert "shrunk" not in report.exercises[0].diagnosis
