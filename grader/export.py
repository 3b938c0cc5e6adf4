"""Grade exports: the CSV gradebook and Gradescope results.json data for a whole class.

CSV: one row per student (everyone enrolled, plus anyone who submitted), sorted by email:
`email, name, attempts, best_score, last_score, max_score, late, extension_until,
best_submission, last_submitted_at`, then one column of points per graded exercise taken
from the submission the grade comes from. Scores are after the late policy; a student who
never submitted has empty score cells. Cells that a spreadsheet would run as a formula
are prefixed with `'`.
"""

from __future__ import annotations

import csv
import io
import json
import logging
from typing import Any

from sqlalchemy import select

from grader.extensions import db
from grader.gradescope import results_json
from grader.instructor.data import Course
from grader.models import Submission, utcnow
from grader.policy import LATE, TOO_LATE

log = logging.getLogger(__name__)

FIXED = ("email", "name", "attempts", "best_score", "last_score", "max_score", "late",
         "extension_until", "best_submission", "last_submitted_at")


def _num(x: float | None) -> str:
    return "" if x is None else f"{x:.4f}".rstrip("0").rstrip(".")


def _when(dt: Any) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ") if dt else ""


def _cell(value: str) -> str:
    """Neutralise spreadsheet formulas in text cells."""
    return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


def graded_exercises(course: Course) -> list[str]:
    """The exercises that carry points, in manifest order."""
    a = course.assignment
    return [n for n in a.exercises if n not in (a.feedback_only or [])
            and float((a.points or {}).get(n, 0.0)) > 0]


def gradebook_rows(course: Course) -> list[dict[str, str]]:
    """The gradebook as dicts of strings, one per student."""
    names = graded_exercises(course)
    rows = []
    for user in course.students:
        g = course.grade(user.id)
        row = {
            "email": _cell(user.email), "name": _cell(user.name or ""),
            "attempts": str(g.attempts), "best_score": _num(g.best), "last_score": _num(g.last),
            "max_score": _num(course.policy.max_score),
            "late": ("yes" if g.best_late else "no") if g.graded else "",
            "extension_until": _when(g.extension),
            "best_submission": str(g.best_id) if g.best_id is not None else "",
            "last_submitted_at": _when(g.last_at),
        }
        results = course.results_of(g.best_id) if g.best_id is not None else {}
        for n in names:
            r = results.get(n)
            row[n] = _num(r.score) if r is not None else ("0" if g.graded else "")
        rows.append(row)
    return rows


def gradebook_csv(course: Course) -> str:
    """The gradebook as CSV text."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=[*FIXED, *graded_exercises(course)],
                            lineterminator="\n")
    writer.writeheader()
    writer.writerows(gradebook_rows(course))
    return out.getvalue()


def gradescope_entries(course: Course) -> list[dict[str, Any]]:
    """Each graded student's results.json, from the submission their grade comes from."""
    a = course.assignment
    counted = course.counted()
    subs = {s.id: s for s in db.session.scalars(select(Submission).where(
        Submission.id.in_(list(counted.values()) or [-1])))}
    entries = []
    for user in course.students:
        sid = counted.get(user.id)
        sub = subs.get(sid) if sid is not None else None
        if sub is None or sub.report is None:
            continue
        g = course.grade(user.id)
        when = course.policy.timeliness(sub.created_at, g.extension)
        raw = f"raw score {float(sub.score or 0):g}"
        notes = {LATE: [f"Submitted late: {course.policy.late_penalty:.0%} penalty applied "
                        f"({raw})."],
                 TOO_LATE: [f"Submitted after the late window closed: it scores 0 ({raw})."]
                 }.get(when, [])
        entries.append({
            "email": user.email, "name": user.name or "", "submission_id": sub.id,
            "submitted_at": _when(sub.created_at), "late": g.best_late,
            "results": results_json(sub.report_dict() or {}, hidden=a.hidden or (),
                                    score=g.best, notes=notes, filename=sub.filename)})
    return entries


def gradescope_export(course: Course) -> dict[str, Any]:
    """The class's Gradescope data: assignment info and one results.json per student."""
    a = course.assignment
    return {"assignment": a.slug, "title": a.title, "max_score": course.policy.max_score,
            "generated_at": _when(utcnow()), "format": "gradescope-results/1",
            "students": gradescope_entries(course)}


def gradescope_json(course: Course) -> str:
    """`gradescope_export` as JSON text."""
    return json.dumps(gradescope_export(course), indent=2, allow_nan=False)
