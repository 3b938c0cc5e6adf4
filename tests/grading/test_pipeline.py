"""`grade()` end to end on real learner variants (SPEC §3's tolerance list), missing
operations, partial credit, seeds and the report's shape."""

from __future__ import annotations

import json

import pytest

from exercises import EXERCISES, instances
from grader.grading.pipeline import grade
from grader.grading.report import VERDICTS
from grader.grading.verdicts import WARNINGS, warning_texts

ALL = list(EXERCISES)
TOLERATED = ["lecture.py", "slots_no_label.py", "parents_list_int_grads.py",
             "numpy_scalars.py", "no_backward_closures.py", "demo_at_import.py"]


def verdicts(report) -> dict[str, str]:
    return {e.name: e.verdict for e in report.exercises}


@pytest.mark.parametrize("name", TOLERATED)
def test_learner_variants_pass_every_exercise(name: str, read_fixture) -> None:
    """__slots__, no label, parents in _children or parents, int grads, numpy scalars, no
    _backward closures, recursive topological sorts, heavy imports and demos at import."""
    report = grade(read_fixture(f"good/{name}"), seed=8, k=1, filename=name)
    assert verdicts(report) == dict.fromkeys(ALL, "passed"), [
        (e.name, e.message) for e in report.exercises]
    assert report.passed and report.score == report.max_score == 10.0


INT, RELU, TANH, TWICE = (WARNINGS[c] for c in ("int_grad", "relu_grad_at_zero",
                                                 "tanh_overflow", "double_backward"))


@pytest.mark.parametrize(("fixture", "exercise", "expected"), [
    ("parents_list_int_grads.py", "expression", [INT, TWICE]),
    ("relu_grad_one_at_zero.py", "operators", [RELU]),
    ("relu_grad_one_at_zero.py", "neuron", []),         # math.tanh, idempotent backward
    ("lecture.py", "neuron", [TANH, TWICE]),             # math.exp raises OverflowError
    ("tanh_overflow_nan.py", "neuron", [TANH, TWICE]),   # numpy's exp: nan
    ("tanh_overflow_nan.py", "expression", [TWICE]),     # no tanh in expression
])
def test_legitimate_quirks_pass_with_a_warning(fixture: str, exercise: str,
                                               expected: list[str], read_fixture) -> None:
    """SPEC §3: int grads, relu'(0)=1, tanh overflow and a double backward() that adds up
    are warnings in the exercises using those operations, never failures."""
    report = grade(read_fixture(f"good/{fixture}"), [exercise], seed=1, k=0)
    (ex,) = report.exercises
    assert (ex.verdict, ex.score) == ("passed", ex.max_score), ex.message
    assert ex.warnings == expected


def test_warning_codes_from_the_sandbox_only_pick_fixed_texts() -> None:
    """The codes come from the submission's process: unknown or odd ones are dropped."""
    codes = ["<script>", "tanh_overflow", 7, None, "int_grad", "tanh_overflow", ["x"]]
    assert warning_texts(codes) == [WARNINGS["int_grad"], WARNINGS["tanh_overflow"]]


def test_structure_is_read_from_whichever_attribute_holds_it(read_fixture) -> None:
    """`_children` tuple, `parents` list with `operation`, and `_prev` set all give ops."""
    for name, op in (("slots_no_label.py", "*"), ("parents_list_int_grads.py", "mul"),
                     ("lecture.py", "*")):
        report = grade(read_fixture(f"good/{name}"), ["expression"], seed=1, k=0)
        rows = {row.name: row for row in report.exercises[0].nodes}
        assert rows["e"].op == op, name


def test_the_first_half_of_the_lecture_passes_what_it_can(read_fixture) -> None:
    """Value+Value, Value*Value and tanh: enough for three exercises, not for mlp_step."""
    report = grade(read_fixture("good/first_half.py"), seed=8, k=1)
    assert verdicts(report) == {"expression": "passed", "diamond": "passed",
                                "neuron": "passed", "mlp_step": "missing_feature",
                                "operators": "missing_feature"}
    mlp = report.exercises[3]
    assert mlp.message.startswith("needs Value * number")
    assert report.score == 7.0 and report.max_score == 10.0 and not report.passed
    assert {op for op, ok in report.features.items() if ok} == {"add", "mul", "tanh",
                                                                "backward"}


def test_a_wrong_rsub_shows_in_the_operators_table_only(read_fixture) -> None:
    report = grade(read_fixture("good/wrong_rsub.py"), seed=8, k=1)
    assert verdicts(report) == {**dict.fromkeys(ALL, "passed"), "operators": "wrong_forward"}
    ops = report.exercises[-1]
    assert ops.feedback_only and ops.score == 0
    rows = {row["graph"]: row for row in ops.table}
    assert rows["1.0-a"]["verdict"] == "wrong_forward"
    assert "but should be" in rows["1.0-a"]["message"]
    assert {g: r["verdict"] for g, r in rows.items() if g != "1.0-a"} == dict.fromkeys(
        [g.name for g in EXERCISES["operators"].graphs if g.name != "1.0-a"], "passed")
    assert report.passed  # feedback only: it costs nothing


def test_right_forward_values_earn_the_forward_share(read_fixture) -> None:
    overwrite = read_fixture("good/lecture.py").replace(
        "self.grad += 1.0 * out.grad\n            other.grad += 1.0 * out.grad",
        "self.grad = 1.0 * out.grad\n            other.grad = 1.0 * out.grad")
    report = grade(overwrite, ["diamond"], seed=2, k=1)
    (ex,) = report.exercises
    assert ex.verdict == "wrong_gradient"
    assert ex.score == pytest.approx(0.3 * 3.0)
    wrong_forward = read_fixture("good/lecture.py").replace(
        "Value(self.data * other.data, (self, other), \"*\")",
        "Value(self.data + other.data, (self, other), \"*\")")
    (ex,) = grade(wrong_forward, ["diamond"], seed=2, k=1).exercises
    assert (ex.verdict, ex.score) == ("wrong_forward", 0.0)


def test_a_probe_error_is_an_error_and_a_failing_constructor_fails_everything(read_fixture
                                                                              ) -> None:
    tanh_raises = read_fixture("good/lecture.py").replace(
        "        x = self.data\n", "        x = self.data / 0\n")
    report = grade(tanh_raises, ["expression", "neuron"], seed=2, k=0)
    assert verdicts(report) == {"expression": "passed", "neuron": "error"}
    neuron = report.exercises[1]
    assert "ZeroDivisionError" in neuron.message
    assert "tanh" in neuron.traceback and "/box/" not in neuron.traceback
    broken_init = read_fixture("good/lecture.py").replace(
        "        self.data = data\n", "        self.data = data\n        assert data > 5\n", 1)
    report = grade(broken_init, ["expression", "neuron"], seed=2, k=0)
    assert verdicts(report) == {"expression": "error", "neuron": "error"}
    assert report.exercises[0].message.startswith("Value(2.0) raised AssertionError")


def test_the_seed_is_recorded_and_reproduces_the_instances(read_fixture) -> None:
    wrong = read_fixture("good/lecture.py").replace(
        "self.grad += other.data * out.grad", "self.grad += out.grad")
    first = grade(wrong, ["expression"], seed=4242, k=3)
    again = grade(wrong, ["expression"], seed=4242, k=3)
    assert first.seed == again.seed == 4242
    a, b = first.exercises[0], again.exercises[0]
    assert (a.verdict, a.message, a.instance, a.instance_seed) == (
        b.verdict, b.message, b.instance, b.instance_seed)
    seeds = [s for s, _ in instances(EXERCISES["expression"], 4242, 3)]
    assert a.instance_seed == seeds[a.instance]
    fresh = grade(wrong, ["expression"], k=0)
    assert isinstance(fresh.seed, int) and fresh.to_dict()["seed"] == fresh.seed


def test_the_report_is_one_json_document_with_spec_keys(read_fixture) -> None:
    seen = []
    report = grade(read_fixture("hostile/nan_grads.py"), ["neuron", "expression"], seed=9,
                   k=0, on_evaluation=seen.append)
    assert [e.exercise.name for e in seen] == ["neuron", "expression"]
    data = json.loads(report.to_json())
    assert list(data)[:4] == ["schema", "status", "error", "seed"]
    assert data["schema"] == "micrograde.report/1"
    for key in ("score", "max_score", "features", "exercises", "timing"):
        assert key in data
    for ex in data["exercises"]:
        assert ex["verdict"] in VERDICTS
        for key in ("name", "title", "verdict", "score", "max_score", "message", "hints",
                    "nodes", "diff_dot", "stdout", "stderr"):
            assert key in ex, key
    grads = [row["actual"]["grad"] for ex in data["exercises"] for row in ex["nodes"]]
    assert None in grads  # inf and NaN become null, never invalid JSON


def test_unknown_exercises_are_refused() -> None:
    with pytest.raises(ValueError, match="nope"):
        grade("class Value: pass", ["expression", "nope"])


def test_an_exercise_named_twice_is_graded_and_counted_once(read_fixture) -> None:
    report = grade(read_fixture("good/lecture.py"), ["neuron", "expression", "neuron"],
                   seed=3, k=0)
    assert [e.name for e in report.exercises] == ["neuron", "expression"]
    assert (report.score, report.max_score) == (4.0, 4.0)


def test_assignment_points_and_feedback_only_exercises(read_fixture) -> None:
    source = read_fixture("good/lecture.py")
    report = grade(source, ["expression", "neuron"], seed=3, k=0,
                   points={"expression": 5.0}, feedback_only=["neuron"])
    by_name = {e.name: e for e in report.exercises}
    assert (by_name["expression"].score, by_name["expression"].max_score) == (5.0, 5.0)
    assert by_name["neuron"].feedback_only and by_name["neuron"].max_score == 0.0
    assert by_name["neuron"].verdict == "passed"
    assert (report.score, report.max_score) == (5.0, 5.0)
    # an ungradable file is out of the same total
    empty = grade(b"", ["expression", "neuron"], seed=3, points={"expression": 5.0},
                  feedback_only=["neuron"])
    assert (empty.status, empty.score, empty.max_score) == ("invalid", 0.0, 5.0)
    broken = grade("import nope\nclass Value: pass\n", ["expression", "neuron"], seed=3,
                   points={"expression": 5.0}, feedback_only=["neuron"])
    assert (broken.status, broken.max_score) == ("invalid", 5.0)
