"""Diagnosis: one fixture submission per bug class, graded for real; cause AND node asserted."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

import reference
from exercises import EXERCISES
from grader.grading.compare import Evaluation, RunOutcome, compare_run
from grader.grading.diagnose import diagnose
from grader.grading.pipeline import grade
from grader.grading.report import ExerciseResult
from worker import harness

BUGS = Path(__file__).resolve().parents[1] / "fixtures" / "submissions" / "bugs"
SEED = 2024

#: fixture -> exercise, cause, node (regex), op, graph
CASES = {
    "overwrite": ("diamond", "overwrite", "a", None, "e"),
    "tanh_derivative": ("neuron", "local_derivative", "o", "tanh", "o"),
    "pow_derivative": ("mlp_step", "local_derivative", r"s\d\.\(yout-ygt\)\*\*2", "pow",
                       "training step"),
    "mul_derivative": ("expression", "local_derivative", "L", "mul", "L"),
    "tanh_forward": ("neuron", "forward_op", "o", "tanh", "o"),
    "unseeded": ("expression", "unseeded", "L", "backward", "L"),
    "topo_bfs": ("diamond", "topo_order", "b", "mul", "non-leaf reuse"),
    "topo_recursive": ("diamond", "topo_order", "b", "mul", "non-leaf reuse"),
    "no_radd": ("mlp_step", "missing_op", "loss.sum0", "radd", "training step"),
    "no_coercion": ("mlp_step", "missing_op", r"s0\.L0\.N0\.w0\*x0", "mul_number",
                    "training step"),
    "radd_recursion": ("mlp_step", "recursion", "loss.sum0", "radd", "training step"),
    "rsub_sign": ("operators", "forward_op", "out", "rsub", "1.0-a"),
}


def graded(fixture: str, exercise: str, k: int = 1) -> tuple[ExerciseResult, list[Evaluation]]:
    """Grade a bug fixture on one exercise in the real sandbox."""
    evaluations: list[Evaluation] = []
    report = grade((BUGS / f"{fixture}.py").read_text(encoding="utf-8"), [exercise], SEED,
                   k=k, filename=f"{fixture}.py", on_evaluation=evaluations.append)
    assert report.status == "graded", report.error
    return report.exercises[0], evaluations


@pytest.mark.parametrize("fixture", sorted(CASES))
def test_fixture_is_diagnosed_with_cause_and_node(fixture: str) -> None:
    exercise, cause, node, op, graph = CASES[fixture]
    result, _ = graded(fixture, exercise)
    assert result.verdict != "passed"
    diag = result.diagnosis
    assert diag is not None, result.message
    assert (diag["cause"], diag["op"], diag["graph"]) == (cause, op, graph), diag
    assert re.fullmatch(node, diag["node"]), diag
    assert 1 <= len(result.hints) <= 2
    assert all(h.endswith(".") and len(h) < 400 for h in result.hints)
    assert diag["summary"]


def test_overwrite_hint_names_the_shared_node() -> None:
    result, _ = graded("overwrite", "diamond")
    assert result.hints[0].startswith("`a` feeds 2 nodes")
    assert "+=" in result.hints[0]


def test_topological_bug_only_breaks_the_non_leaf_reuse_graph() -> None:
    result, (ev,) = graded("topo_bfs", "diamond")
    failing = {run.graph for run in ev.runs if run.verdict != "passed"}
    assert failing == {"non-leaf reuse"}
    assert "topological order" in result.hints[0]


def test_passing_exercise_has_no_diagnosis_but_a_diff() -> None:
    result, _ = graded("tanh_derivative", "expression")
    assert result.verdict == "passed"
    assert result.diagnosis is None and result.hints == []
    assert result.diff_dot and "mg-wrong" not in result.diff_dot


def test_mlp_step_reports_all_41_parameters() -> None:
    result, _ = graded("pow_derivative", "mlp_step")
    assert len(result.params) == 41
    names = {p["name"] for p in result.params}
    assert {"L0.N0.w0", "L0.N0.b", "L2.N0.w3", "L2.N0.b"} <= names
    row = result.params[0]
    assert set(row["expected"]) == {"data", "grad", "updated"}
    assert all(p["status"] == "wrong_grad" for p in result.params)


def test_operators_table_rows_carry_hints() -> None:
    result, _ = graded("rsub_sign", "operators")
    rows = {row["graph"]: row for row in result.table}
    assert rows["1.0-a"]["op"] == "rsub" and "__rsub__" in rows["1.0-a"]["hint"]
    assert "hint" not in rows["a+a"]


def evaluation_from(run: RunOutcome, name: str) -> Evaluation:
    """An Evaluation around one hand-made run (no sandbox)."""
    ex = EXERCISES[name]
    res = ExerciseResult(name=name, title=ex.title, verdict=run.verdict, score=0.0,
                         max_score=ex.points, message="", graph=run.graph, instance=0)
    return Evaluation(ex, res, [run], run, {}, [None])


def test_untagged_intermediate_nodes_are_named_by_their_consumer() -> None:
    ex = EXERCISES["diamond"]
    graph = ex.graph("(a*b+c)*(a+c)")
    exp = harness.capture(reference.Value, graph.build, ex.canonical)
    act = copy.deepcopy(exp)
    act["grad"]["b"] *= 2          # the hidden a*b passed a wrong gradient to b
    run = RunOutcome(0, graph.name, exp, act)
    compare_run(run)
    from exercises.single_op import trace

    finding = diagnose(evaluation_from(run, "diamond"), trace(graph.build, ex.canonical))
    assert finding is not None
    assert (finding.cause, finding.node, finding.op) == ("local_derivative", "ab+c", "mul")
