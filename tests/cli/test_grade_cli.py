"""`micrograde grade`, run as the installed console script: exit codes, the one JSON
document of SPEC §5, repeatable --exercise, reproducible --seed, notebooks, the table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from exercises import EXERCISES
from grader.grading.report import INVALID_KINDS, VERDICTS

MICROGRADE = str(Path(sys.executable).parent / "micrograde")

NUMBER = {"type": "number"}
NODE = {"type": "object", "required": ["name", "op", "expected", "actual", "status"]}
EXERCISE = {
    "type": "object",
    "required": ["name", "title", "verdict", "score", "max_score", "message", "hints", "nodes",
                 "diff_dot", "stdout", "stderr"],
    "properties": {
        "name": {"enum": list(EXERCISES)}, "verdict": {"enum": list(VERDICTS)},
        "score": NUMBER, "max_score": NUMBER, "message": {"type": "string"},
        "hints": {"type": "array", "items": {"type": "string"}},
        "nodes": {"type": "array", "items": NODE},
        "diff_dot": {"type": ["string", "null"]},
        "stdout": {"type": "string"}, "stderr": {"type": "string"},
    },
}
REPORT = {  # SPEC §5
    "type": "object",
    "required": ["schema", "status", "error", "seed", "score", "max_score", "features",
                 "exercises", "timing"],
    "properties": {
        "schema": {"const": "micrograde.report/1"},
        "status": {"enum": ["graded", "invalid"]},
        "error": {"oneOf": [{"type": "null"}, {
            "type": "object", "required": ["kind", "message"],
            "properties": {"kind": {"enum": list(INVALID_KINDS)},
                           "message": {"type": "string"}}}]},
        "seed": {"type": "integer"}, "score": NUMBER, "max_score": NUMBER,
        "features": {"type": "object", "additionalProperties": {"type": "boolean"}},
        "exercises": {"type": "array", "items": EXERCISE},
        "timing": {"type": "object", "required": ["wall_s"],
                   "properties": {"wall_s": NUMBER}},
    },
}


def micrograde(*args: str | Path) -> subprocess.CompletedProcess:
    """Run the console script; never raises on a non-zero exit."""
    return subprocess.run([MICROGRADE, *map(str, args)], capture_output=True, text=True,
                          timeout=120)


@pytest.fixture(scope="module")
def sub(fixtures_dir: Path) -> Path:
    return fixtures_dir / "submissions"


def one_document(stdout: str) -> dict:
    """stdout must hold exactly one JSON document (and nothing else) matching SPEC §5."""
    decoder = json.JSONDecoder()
    doc, end = decoder.raw_decode(stdout.lstrip())
    assert stdout.lstrip()[end:].strip() == ""
    jsonschema.validate(doc, REPORT)
    return doc


def test_a_passing_file_exits_0_with_one_json_document(sub: Path) -> None:
    done = micrograde("grade", sub / "good/lecture.py", "--json", "--seed", "77")
    assert done.returncode == 0, done.stderr
    doc = one_document(done.stdout)
    assert doc["status"] == "graded" and doc["seed"] == 77
    assert [e["name"] for e in doc["exercises"]] == list(EXERCISES)
    assert {e["verdict"] for e in doc["exercises"]} == {"passed"}
    assert doc["score"] == doc["max_score"] == 10.0


def test_a_failing_file_exits_1(sub: Path) -> None:
    done = micrograde("grade", sub / "good/first_half.py", "--json", "--exercise", "mlp_step")
    assert done.returncode == 1
    assert one_document(done.stdout)["exercises"][0]["verdict"] == "missing_feature"


def test_an_invalid_file_exits_1_and_still_prints_one_document(sub: Path) -> None:
    done = micrograde("grade", sub / "invalid/syntax_error.txt", "--json")
    assert done.returncode == 1
    doc = one_document(done.stdout)
    assert doc["status"] == "invalid" and doc["error"]["kind"] == "syntax_error"
    assert doc["error"]["line"] == 12


@pytest.mark.parametrize("args", [
    ("grade", "no/such/file.py"),
    ("grade", "{lecture}", "--no-such-flag"),
    ("grade", "{lecture}", "--exercise", "no_such_exercise"),
    ("grade", "{lecture}", "--seed", "-1"),
    ("grade",),
])
def test_usage_errors_exit_2(args: tuple[str, ...], sub: Path) -> None:
    done = micrograde(*(a.format(lecture=sub / "good/lecture.py") for a in args))
    assert done.returncode == 2
    assert done.stdout == ""
    assert "Usage:" in done.stderr or "Error" in done.stderr


def test_an_unusable_out_folder_or_limit_is_a_usage_error_before_grading(
        sub: Path, tmp_path: Path) -> None:
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    done = micrograde("grade", sub / "good/lecture.py", "--out", a_file / "sub")
    assert (done.returncode, done.stdout) == (2, "")
    assert "Invalid value for '--out'" in done.stderr
    done = subprocess.run([MICROGRADE, "grade", str(sub / "good/lecture.py")],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "MICROGRADE_LIMIT_CPU_S": "2.5"})
    assert (done.returncode, done.stdout) == (2, "")
    assert "MICROGRADE_LIMIT_CPU_S must be a positive whole number, not '2.5'" in done.stderr


def test_exercise_is_repeatable_and_keeps_the_order_given(sub: Path) -> None:
    done = micrograde("grade", sub / "good/lecture.py", "--json", "--exercise", "neuron",
                      "--exercise", "expression")
    assert done.returncode == 0
    assert [e["name"] for e in one_document(done.stdout)["exercises"]] == ["neuron",
                                                                           "expression"]


def test_seed_is_recorded_and_reproduces_the_same_report(sub: Path, tmp_path: Path) -> None:
    wrong = tmp_path / "wrong.py"
    wrong.write_text((sub / "good/lecture.py").read_text().replace(
        "self.grad += other.data * out.grad", "self.grad += out.grad"))
    runs = [one_document(micrograde("grade", wrong, "--json", "--seed", "31337",
                                    "--exercise", "expression").stdout) for _ in range(2)]
    for doc in runs:
        doc.pop("timing")
        for ex in doc["exercises"]:
            ex.pop("wall_s", None)
    assert runs[0] == runs[1]
    assert runs[0]["seed"] == 31337
    assert runs[0]["exercises"][0]["verdict"] == "wrong_gradient"


def test_notebooks_are_accepted(sub: Path) -> None:
    done = micrograde("grade", sub / "good/three_values.ipynb", "--json", "--exercise",
                      "expression")
    assert done.returncode == 0, done.stdout
    doc = one_document(done.stdout)
    assert doc["source"]["value_cell"] == 6


def test_without_json_a_readable_table(sub: Path) -> None:
    done = micrograde("grade", sub / "good/wrong_rsub.py", "--seed", "5")
    assert done.returncode == 0  # operators is feedback only
    lines = done.stdout.splitlines()
    assert lines[0] == "micrograde: wrong_rsub.py (seed 5)"
    header = next(i for i, line in enumerate(lines) if line.split()[:3] == ["exercise",
                                                                            "verdict", "score"])
    rows = [line.split() for line in lines[header + 1:header + 1 + len(EXERCISES)]]
    assert [r[:3] for r in rows[:4]] == [["expression", "passed", "2/2"],
                                         ["diamond", "passed", "3/3"],
                                         ["neuron", "passed", "2/2"],
                                         ["mlp_step", "passed", "3/3"]]
    assert rows[4][:3] == ["operators", "wrong_forward", "feedback"]
    assert any("1.0-a: wrong_forward" in line for line in lines)
    assert "  total 10/10" in lines
    assert not done.stdout.lstrip().startswith("{")
    notes = [line for line in lines if line.startswith("  note (")]
    assert notes == [  # each exercise warning once, naming the exercises it came up in
        "  note (expression, diamond, neuron, mlp_step, operators): calling `backward()` "
        "twice on the same graph changes the gradients (they add up, as in micrograd): set "
        "every `grad` to 0 before each `backward()` when you train",
        "  note (neuron, mlp_step, operators): `tanh()` fails for large inputs "
        "(`Value(400.0).tanh()` overflows or gives nan, as `exp(2x)` does beyond |x| ≈ 355; "
        "`math.tanh` does not): accepted (the graded inputs are small)"]


def test_the_table_shows_a_submissions_escape_sequences_as_text(sub: Path,
                                                                tmp_path: Path) -> None:
    """An exception message could clear the screen or paint a fake verdict."""
    sneaky = tmp_path / "sneaky.py"
    sneaky.write_text((sub / "good/lecture.py").read_text().replace(
        "        build_topo(self)\n",
        "        raise ValueError('\\x1b[2J\\x1b[32mALL PASSED\\x1b[0m\\r')\n"))
    done = micrograde("grade", sneaky, "--exercise", "expression")
    assert done.returncode == 1
    assert "\x1b" not in done.stdout and "\r" not in done.stdout
    assert "ValueError: \\x1b[2J\\x1b[32mALL PASSED\\x1b[0m\\r" in done.stdout


def test_an_invalid_file_reads_as_not_graded(sub: Path) -> None:
    done = micrograde("grade", sub / "invalid/no_value_class.py")
    assert done.returncode == 1
    assert "NOT GRADED (no_value_class)" in done.stdout and "Tensor" in done.stdout
