"""Grade exports on the fixture class, checked field by field: CSV and Gradescope JSON."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import jsonschema
from click.testing import CliRunner

from grader.cli import cli

SCHEMA = json.loads((Path(__file__).parent / "gradescope_results.schema.json").read_text())
HEADER = ["email", "name", "attempts", "best_score", "last_score", "max_score", "late",
          "extension_until", "best_submission", "last_submitted_at", "expression", "diamond",
          "neuron", "mlp_step"]


def expected_rows(subs: dict[str, int]) -> list[dict[str, str]]:
    """The gradebook of tests/instructor/klass.py, worked out by hand."""
    def row(email, name, attempts, best, last, late, ext, best_id, last_at, points):
        return dict(zip(HEADER, [f"{email}@class.example.org", name, attempts, best, last,
                                 "10", late, ext, best_id, last_at, *points], strict=True))
    return [
        row("alice", "Alice Adams", "2", "10", "10", "no", "", str(subs["a2"]),
            "2027-02-28T12:00:00Z", ["2", "3", "2", "3"]),
        row("bob", "Bob Brown", "1", "4", "4", "yes", "", str(subs["b1"]),
            "2027-03-02T12:00:00Z", ["2", "3", "0", "3"]),
        row("carol", "Carol Chen", "3", "7", "0", "no", "", str(subs["c2"]),
            "2027-03-04T12:00:00Z", ["2", "3", "2", "0"]),
        row("dave", "'=Dave Drop()", "1", "4", "4", "no", "2027-03-02T12:00:00Z",
            str(subs["d1"]), "2027-03-02T00:00:00Z", ["2", "0", "2", "0"]),
        row("erin", "Erin Early", "0", "", "", "", "", "", "", ["", "", "", ""]),
        row("frank", "Frank Fail", "1", "", "", "", "", "", "2027-02-28T12:00:00Z",
            ["", "", "", ""]),
    ]


def test_csv_gradebook_field_by_field(class_app: dict[str, Any]) -> None:
    response = class_app["client"].get("/instructor/micrograd/export.csv")
    assert response.status_code == 200 and response.mimetype == "text/csv"
    assert 'filename="micrograd-gradebook.csv"' in response.headers["Content-Disposition"]
    reader = csv.DictReader(io.StringIO(response.get_data(as_text=True)))
    assert reader.fieldnames == HEADER
    rows = list(reader)
    expected = expected_rows(class_app["ids"]["subs"])
    assert len(rows) == len(expected)
    for got, want in zip(rows, expected, strict=True):
        for field in HEADER:
            assert got[field] == want[field], (want["email"], field)


def test_gradescope_export_validates_and_matches(class_app: dict[str, Any]) -> None:
    response = class_app["client"].get("/instructor/micrograd/gradescope.json")
    assert response.status_code == 200
    data = json.loads(response.get_data(as_text=True))
    assert (data["assignment"], data["max_score"]) == ("micrograd", 10.0)
    subs = class_app["ids"]["subs"]
    entries = {e["email"].split("@")[0]: e for e in data["students"]}
    assert set(entries) == {"alice", "bob", "carol", "dave"}   # graded students only
    for entry in entries.values():
        jsonschema.validate(entry["results"], SCHEMA)
    bob = entries["bob"]
    assert (bob["submission_id"], bob["late"], bob["submitted_at"]) == \
        (subs["b1"], True, "2027-03-02T12:00:00Z")
    res = bob["results"]
    assert res["score"] == 4.0 and res["visibility"] == "visible"
    assert "Submitted late: 50% penalty applied (raw score 8)." in res["output"]
    tests = {t["name"]: t for t in res["tests"]}
    assert list(tests) == ["Expression (expression)", "Diamond (diamond)", "Neuron (neuron)",
                           "Mlp_Step (mlp_step)", "Operators (operators)"]
    neuron = tests["Neuron (neuron)"]
    assert (neuron["score"], neuron["max_score"], neuron["status"], neuron["visibility"],
            neuron["number"]) == (0.0, 2.0, "failed", "visible", "3")
    assert "neuron is wrong" in neuron["output"] and "Diagnosis: local_derivative at tanh" \
        in neuron["output"] and "--exercise neuron --seed 4242" in neuron["output"]
    mlp = tests["Mlp_Step (mlp_step)"]
    assert (mlp["score"], mlp["status"], mlp["visibility"]) == (3.0, "passed", "after_due_date")
    ops = tests["Operators (operators)"]
    assert ops["tags"] == ["passed", "feedback only"] and ops["max_score"] == 0.0
    assert entries["carol"]["submission_id"] == subs["c2"]
    assert entries["carol"]["results"]["score"] == 7.0


def test_cli_export(class_app: dict[str, Any], tmp_path: Path) -> None:
    env = {"MICROGRADE_INSTANCE_PATH": class_app["app"].config["INSTANCE_PATH"]}
    runner = CliRunner()
    out = tmp_path / "grades.csv"
    result = runner.invoke(cli, ["export", "micrograd", "--format", "csv", "-o", str(out)],
                           env=env)
    assert result.exit_code == 0, result.output
    web = class_app["client"].get("/instructor/micrograd/export.csv").get_data(as_text=True)
    assert out.read_text() == web
    result = runner.invoke(cli, ["export", "micrograd", "--format", "gradescope"], env=env)
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert [e["email"] for e in data["students"]][0] == "alice@class.example.org"
    for entry in data["students"]:
        jsonschema.validate(entry["results"], SCHEMA)
    bad = runner.invoke(cli, ["export", "nope"], env=env)
    assert bad.exit_code == 2 and "no assignment 'nope'" in bad.output
    assert runner.invoke(cli, ["export", "micrograd", "--format", "xls"], env=env).exit_code \
        == 2


def test_a_grade_from_after_the_late_window_says_it_scores_zero(
        fresh_class_app: dict[str, Any]) -> None:
    from datetime import timedelta

    from grader.extensions import db
    from grader.models import Result, Submission
    from tests.instructor import klass

    app, ids = fresh_class_app["app"], fresh_class_app["ids"]
    at = klass.LATE_UNTIL + timedelta(hours=1)   # erin's only submission: too late
    with app.app_context():
        sub = Submission(user_id=ids["users"]["erin"], assignment_id=ids["assignment"],
                         filename="value.py", source="class Value: pass\n", size=18,
                         sha256="0" * 64, seed=9, status="graded", score=10.0,
                         max_score=10.0, created_at=at, finished_at=at,
                         report={"schema": "micrograde.report/1", "status": "graded",
                                 "score": 10.0, "max_score": 10.0, "exercises": []})
        db.session.add(sub)
        db.session.flush()
        db.session.add(Result(submission_id=sub.id, position=0, name="expression",
                              title="Expression", verdict="passed", score=2.0, max_score=2.0,
                              data={"name": "expression", "verdict": "passed"}))
        db.session.commit()
    client = fresh_class_app["client"]
    data = json.loads(client.get("/instructor/micrograd/gradescope.json").get_data(as_text=True))
    erin = next(e for e in data["students"] if e["email"].startswith("erin@"))
    assert (erin["late"], erin["results"]["score"]) == (True, 0.0)
    assert "after the late window closed: it scores 0 (raw score 10)" in erin["results"]["output"]
    assert "penalty applied" not in erin["results"]["output"]
    rows = csv.DictReader(io.StringIO(client.get("/instructor/micrograd/export.csv")
                                      .get_data(as_text=True)))
    row = next(r for r in rows if r["email"].startswith("erin@"))
    assert (row["best_score"], row["late"], row["attempts"]) == ("0", "yes", "1")
