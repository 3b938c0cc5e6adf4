"""`micrograde gradescope` as Gradescope's run_autograder, and results.json field by field."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from grader.cli import cli
from grader.gradescope import find_submission, results_json

SCHEMA = json.loads((Path(__file__).parent / "gradescope_results.schema.json").read_text())
SUBMISSIONS = Path(__file__).resolve().parents[1] / "fixtures" / "submissions"


def run(submission: Path, results: Path, *extra: str) -> dict:
    result = CliRunner().invoke(cli, ["gradescope", "--submission", str(submission),
                                      "--results", str(results), *extra])
    assert result.exit_code == 0, result.output
    data = json.loads(results.read_text())
    jsonschema.validate(data, SCHEMA)
    return data


def test_a_buggy_submission(tmp_path: Path) -> None:
    sub = tmp_path / "submission"
    sub.mkdir()
    shutil.copy(SUBMISSIONS / "bugs" / "tanh_derivative.py", sub / "value.py")
    (sub / "notes.txt").write_text("not code")
    data = run(sub, tmp_path / "results" / "results.json")
    tests = {t["name"].split(" (")[-1].rstrip(")"): t for t in data["tests"]}
    assert list(tests) == ["expression", "diamond", "neuron", "mlp_step", "operators"]
    assert all(tests[n]["status"] == "passed" for n in ("expression", "diamond"))
    assert (tests["expression"]["score"], tests["expression"]["max_score"]) == (2.0, 2.0)
    neuron = tests["neuron"]
    assert neuron["status"] == "failed" and neuron["max_score"] == 2.0
    assert neuron["score"] < 2.0 and "Wrong gradients." in neuron["output"]
    assert "Diagnosis: " in neuron["output"] and "Value.tanh()" in neuron["output"]
    assert tests["operators"]["max_score"] == 0.0 and "feedback only" in tests["operators"]["tags"]
    assert all(t["visibility"] == "visible" for t in data["tests"])   # nothing hidden
    total = sum(t["score"] for t in data["tests"])
    assert data["score"] == pytest.approx(total) and data["score"] < 10
    assert data["output"].startswith(f"micrograde: {data['score']:g} / 10 points")
    assert data["stdout_visibility"] == "hidden"
    assert data["extra_data"]["micrograde"]["status"] == "graded"


def test_an_invalid_submission_and_hidden_exercises(tmp_path: Path) -> None:
    manifest = tmp_path / "assignments.toml"
    manifest.write_text('[[assignment]]\nslug = "hw"\nexercises = ["expression", "neuron"]\n'
                        'hidden = ["neuron"]\n[assignment.points]\nexpression = 4\n'
                        'neuron = 6\n')
    sub = tmp_path / "upload" / "hw1"
    sub.mkdir(parents=True)
    (sub / "my_value.py").write_text("class Value:\n    def __init__(self, x)\n        pass\n")
    data = run(tmp_path / "upload", tmp_path / "r.json", "--assignment", "hw",
               "--manifest", str(manifest))
    assert data["score"] == 0.0
    [test] = data["tests"]
    assert (test["status"], test["max_score"], test["tags"]) == ("failed", 10.0, ["invalid"])
    assert test["output"].startswith("syntax_error:")
    good = tmp_path / "good"
    good.mkdir()
    shutil.copy(SUBMISSIONS / "good" / "lecture.py", good / "value.py")
    data = run(good, tmp_path / "r2.json", "--assignment", "hw", "--manifest", str(manifest))
    assert data["score"] == 10.0
    assert [t["visibility"] for t in data["tests"]] == ["visible", "after_due_date"]
    assert [t["status"] for t in data["tests"]] == ["passed", "passed"]


def test_nothing_to_grade_still_writes_results(tmp_path: Path) -> None:
    sub = tmp_path / "empty"
    sub.mkdir()
    (sub / "README.md").write_text("hi")
    data = run(sub, tmp_path / "results.json")
    assert data["score"] == 0.0 and data["tests"][0]["status"] == "failed"
    assert "Found: README.md" in data["tests"][0]["output"]
    bad = CliRunner().invoke(cli, ["gradescope", "--submission", str(sub), "--results",
                                   str(tmp_path / "x.json"), "--assignment", "nope"])
    assert bad.exit_code == 2 and "no assignment 'nope'" in bad.output


def test_find_submission_prefers_value_py(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "value.py").write_text("x = 1")
    (tmp_path / "engine.py").write_text("class Value:\n    pass\n")
    (tmp_path / "__MACOSX").mkdir()
    (tmp_path / "__MACOSX" / "value.py").write_text("junk")
    assert find_submission(tmp_path) == tmp_path / "a" / "value.py"
    (tmp_path / "a" / "value.py").unlink()
    (tmp_path / "other.py").write_text("print(1)")
    assert find_submission(tmp_path) == tmp_path / "engine.py"
    (tmp_path / "engine.py").unlink()
    assert find_submission(tmp_path) == tmp_path / "other.py"      # the only candidate
    (tmp_path / "nb.ipynb").write_text('{"cells": []}')
    assert find_submission(tmp_path) is None                       # ambiguous


def test_results_json_score_override_and_schema_refusals() -> None:
    report = {"status": "graded", "seed": 5, "score": 8.0, "max_score": 10.0,
              "timing": {"wall_s": 1.6}, "exercises": [
                  {"name": "expression", "title": "Expr", "verdict": "passed", "score": 8.0,
                   "max_score": 8.0, "stdout": "x" * 5000}]}
    data = results_json(report, score=6.0, notes=["late"])
    jsonschema.validate(data, SCHEMA)
    assert (data["score"], data["execution_time"]) == (6.0, 2)
    assert data["output"].splitlines() == ["micrograde: 6 / 10 points (grading seed 5)", "late"]
    assert "more characters" in data["tests"][0]["output"]
    for broken in ({"tests": [{"name": "t"}]},                     # no score anywhere
                   {"score": 1, "tests": [{"status": "ok"}]},
                   {"score": 1, "visibility": "public"},
                   {"score": 1, "tests": [{"score": 1, "max_score": 1, "nmae": "typo"}]}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(broken, SCHEMA)
