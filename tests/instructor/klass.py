"""A small hand-computed class: the fixture every statistic, export and page is checked on.

Assignment `micrograd` (expression 2, diamond 3, neuron 2, mlp_step 3, operators feedback
only; 10 points) with deadline D = 2027-03-01 12:00 UTC, late window to D + 2 days at a
50% penalty, `mlp_step` hidden. Scores per exercise are all-or-nothing here.

| student | submission | when        | status  | score | results that are not passed             |
|---------|------------|-------------|---------|-------|-----------------------------------------|
| alice   | a1         | D - 2 d     | graded  | 2     | diamond overwrite; neuron, mlp_step      |
|         |            |             |         |       | local_derivative tanh                    |
|         | a2         | D - 1 d     | graded  | 10    | -                                        |
| bob     | b1         | D + 1 d     | graded  | 8     | neuron local_derivative tanh (late: 4)   |
| carol   | c1         | D - 3 d     | invalid | 0     | (no results)                             |
|         | c2         | D - 2 d     | graded  | 7     | mlp_step, operators missing_op radd      |
|         | c3         | D + 3 d     | graded  | 10    | - (after the late window: counts 0)      |
| dave    | d1         | D + 12 h    | graded  | 4     | diamond topo_order mul, mlp_step         |
|         |            |             |         |       | topo_order tanh (extension to D + 1 d)   |
| erin    | -          |             |         |       | never submitted                          |
| frank   | f1         | D - 1 d     | failed  | -     | grading failed                           |

By hand: grades alice 10 (a2), bob 4 (late), carol 7 (c2; last 0), dave 4, erin -, frank -.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from grader.stats import ResultRow, SubRow

D = datetime(2027, 3, 1, 12, 0, tzinfo=UTC)
LATE_UNTIL = D + timedelta(days=2)
PENALTY = 0.5
POINTS = {"expression": 2.0, "diamond": 3.0, "neuron": 2.0, "mlp_step": 3.0, "operators": 0.0}
EXERCISES = list(POINTS)
EXTENSION = {"dave": D + timedelta(days=1)}
NAMES = {"alice": "Alice Adams", "bob": "Bob Brown", "carol": "Carol Chen",
         "dave": "=Dave Drop()", "erin": "Erin Early", "frank": "Frank Fail"}


def _results(**wrong: tuple[str, str, str | None]) -> list[tuple[str, str, str | None,
                                                                  str | None, float]]:
    """All five exercises: passed (full points) unless listed as (verdict, cause, op)."""
    out = []
    for name in EXERCISES:
        if name in wrong:
            verdict, cause, op = wrong[name]
            out.append((name, verdict, cause, op, 0.0))
        else:
            out.append((name, "passed", None, None, POINTS[name]))
    return out


@dataclass(frozen=True)
class Sub:
    """One submission of the class."""

    key: str
    student: str
    at: datetime
    status: str
    score: float | None
    results: list[tuple[str, str, str | None, str | None, float]]


SUBS = [
    Sub("a1", "alice", D - timedelta(days=2), "graded", 2.0, _results(
        diamond=("wrong_gradient", "overwrite", None),
        neuron=("wrong_gradient", "local_derivative", "tanh"),
        mlp_step=("wrong_gradient", "local_derivative", "tanh"))),
    Sub("a2", "alice", D - timedelta(days=1), "graded", 10.0, _results()),
    Sub("b1", "bob", D + timedelta(days=1), "graded", 8.0, _results(
        neuron=("wrong_gradient", "local_derivative", "tanh"))),
    Sub("c1", "carol", D - timedelta(days=3), "invalid", 0.0, []),
    Sub("c2", "carol", D - timedelta(days=2), "graded", 7.0, _results(
        mlp_step=("missing_feature", "missing_op", "radd"),
        operators=("missing_feature", "missing_op", "radd"))),
    Sub("c3", "carol", D + timedelta(days=3), "graded", 10.0, _results()),
    Sub("d1", "dave", D + timedelta(hours=12), "graded", 4.0, _results(
        diamond=("wrong_gradient", "topo_order", "mul"),
        mlp_step=("wrong_gradient", "topo_order", "tanh"))),
    Sub("f1", "frank", D - timedelta(days=1), "failed", None, []),
]
STUDENTS = ["alice", "bob", "carol", "dave", "erin", "frank"]
USER_IDS = {name: i for i, name in enumerate(STUDENTS, 1)}
SUB_IDS = {s.key: i for i, s in enumerate(SUBS, 1)}


def pure_rows() -> tuple[list[SubRow], list[ResultRow]]:
    """The class as `grader.stats` rows (user and submission ids from USER_IDS / SUB_IDS)."""
    subs = [SubRow(SUB_IDS[s.key], USER_IDS[s.student], s.at, s.status, s.score, 10.0)
            for s in SUBS]
    results = [ResultRow(SUB_IDS[s.key], n, v, c, o, sc, POINTS[n], n == "operators")
               for s in SUBS for n, v, c, o, sc in s.results]
    return subs, results


def insert(app: Any) -> dict[str, Any]:
    """Put the class in the app's database; return {'users': name->id, 'subs': key->id}."""
    from sqlalchemy import select

    from grader.extensions import db
    from grader.models import Assignment, Extension, Result, Submission, User

    with app.app_context():
        a = db.session.scalar(select(Assignment).where(Assignment.slug == "micrograd"))
        a.deadline, a.late_until, a.late_penalty = D, LATE_UNTIL, PENALTY
        a.hidden, a.points = ["mlp_step"], dict(POINTS)
        users = {}
        for name in STUDENTS:
            u = User(email=f"{name}@class.example.org", name=NAMES[name], role="student")
            u.set_password("correct horse battery")
            db.session.add(u)
            users[name] = u
        db.session.flush()
        for name, until in EXTENSION.items():
            db.session.add(Extension(assignment_id=a.id, user_id=users[name].id,
                                     deadline=until, reason="medical"))
        subs = {}
        for s in SUBS:
            done = s.at + timedelta(seconds=2)
            sub = Submission(
                user_id=users[s.student].id, assignment_id=a.id, filename="value.py",
                source=f"# {s.key}\nclass Value:\n    pass\n", size=30, sha256="0" * 64,
                seed=1000 + len(subs), status=s.status, score=s.score,
                max_score=10.0 if s.status != "failed" else None, created_at=s.at,
                enqueued_at=s.at, started_at=s.at + timedelta(seconds=1),
                finished_at=done, graded_at=done, attempts=1, worker="w@test",
                late=a.is_late(users[s.student], s.at),
                error_kind={"invalid": "syntax_error", "failed": "grader_error"}.get(s.status),
                report=_report(s))
            db.session.add(sub)
            db.session.flush()
            subs[s.key] = sub.id
            for pos, (n, v, c, o, sc) in enumerate(s.results):
                db.session.add(Result(
                    submission_id=sub.id, position=pos, name=n, title=n.title(), verdict=v,
                    score=sc, max_score=POINTS[n], feedback_only=n == "operators",
                    message="" if v == "passed" else f"{n} is wrong",
                    diagnosis_cause=c, diagnosis_op=o,
                    data=_entry(s, n, v, c, o, sc)))
        db.session.commit()
        return {"users": {k: u.id for k, u in users.items()}, "subs": subs,
                "assignment": a.id}


def _report(s: Sub) -> dict[str, Any] | None:
    if s.status == "failed":
        return None
    status = "invalid" if s.status == "invalid" else "graded"
    return {"schema": "micrograde.report/1", "status": status, "seed": 4242,
            "error": {"kind": "syntax_error", "message": "invalid syntax (line 3)",
                      "line": 3} if status == "invalid" else None,
            "score": s.score, "max_score": 10.0, "features": {}, "timing": {"wall_s": 0.8},
            "warnings": [], "source": {"filename": "value.py"}, "isolation": "bwrap"}


def _entry(s: Sub, n: str, v: str, c: str | None, o: str | None, sc: float) -> dict:
    return {"name": n, "title": n.title(), "verdict": v, "score": sc,
            "max_score": POINTS[n], "message": "" if v == "passed" else f"{n} is wrong",
            "hints": [] if v == "passed" else [f"look at {o or 'the graph'}"], "nodes": [],
            "diff_dot": None, "stdout": f"printed by {s.key}/{n}",
            "stderr": f"warned by {s.key}/{n}" if v != "passed" else "",
            "diagnosis": {"cause": c, "node": "n", "op": o, "summary": f"{c} at {o}"}
            if c else None, "feedback_only": n == "operators", "instance_seed": 77,
            "wall_s": 0.125}
