"""One submission: its live page, the status JSON it polls, its results, diffs and source.

A student sees only their own submissions (anything else is 404, the same as a missing
one); instructors see every submission. Diffs are served as standalone SVG documents
with a policy that forbids scripts and is shown through `<img>`, so nothing a student put
in an op name or label can run, even if it slipped past the escaping.
"""

from __future__ import annotations

import logging
import re

from flask import Response, abort, jsonify, render_template
from flask.typing import ResponseReturnValue
from flask_login import current_user, login_required

from grader.extensions import db
from grader.grading.report import grouped_warnings
from grader.models import Result, Submission
from grader.student import bp
from grader.student.present import (
    INVALID,
    STATUSES,
    attempt_number,
    exercise_views,
    hidden_exercises,
    status_json,
)

log = logging.getLogger(__name__)

#: an SVG document may draw and style itself, and do nothing else
SVG_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; sandbox"
NO_STORE = {"Cache-Control": "no-store"}


def own_submission(submission_id: int) -> Submission:
    """The submission if the current user may see it, else 404 (never 403: ids stay private)."""
    sub = db.session.get(Submission, submission_id)
    if sub is None or (sub.user_id != current_user.id and not current_user.is_instructor):
        abort(404)
    return sub


def results_context(sub: Submission) -> dict:
    """What the results partial needs."""
    report = sub.report or {}
    source_info = report.get("source") or {}
    error = report.get("error") or {}
    line = error.get("line")
    if not isinstance(line, int) or sub.filename.lower().endswith(".ipynb"):
        line = None  # a notebook's line numbers count in its extracted code, not the file
    views = exercise_views(sub, current_user) if sub.done else []
    warnings = grouped_warnings((v.result.name, v.data.get("warnings") or [])
                                for v in views if not v.hidden)
    return {"sub": sub, "exercises": views, "exercise_warnings": warnings,
            "report": report, "error": error, "invalid_titles": INVALID,
            "source_info": source_info, "statuses": STATUSES,
            "error_line": line}


@bp.get("/submissions/<int:submission_id>")
@login_required
def submission(submission_id: int) -> ResponseReturnValue:
    """The submission page; it updates itself while the submission is queued or running."""
    sub = own_submission(submission_id)
    return render_template("student/submission.html", attempt=attempt_number(sub),
                           status=status_json(sub), **results_context(sub))


@bp.get("/submissions/<int:submission_id>/status")
@login_required
def submission_status(submission_id: int) -> ResponseReturnValue:
    """Small JSON the live page polls: status, queue position, score."""
    return jsonify(status_json(own_submission(submission_id))), 200, NO_STORE


@bp.get("/submissions/<int:submission_id>/results")
@login_required
def submission_results(submission_id: int) -> ResponseReturnValue:
    """The results section as an HTML fragment (the live page swaps it in when done)."""
    sub = own_submission(submission_id)
    return render_template("_results.html", **results_context(sub)), 200, NO_STORE


@bp.get("/submissions/<int:submission_id>/diff/<name>.svg")
@login_required
def diff_svg(submission_id: int, name: str) -> ResponseReturnValue:
    """One exercise's graph diff as an SVG document."""
    sub = own_submission(submission_id)
    if name in hidden_exercises(sub, current_user):
        abort(404)
    row = next((r for r in sub.results if r.name == name), None)
    if not isinstance(row, Result) or not row.diff_svg:
        abort(404)
    response = Response(row.diff_svg, mimetype="image/svg+xml")
    response.headers["Content-Security-Policy"] = SVG_CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Cache-Control"] = "private, max-age=3600"
    return response


@bp.get("/submissions/<int:submission_id>/source")
@login_required
def source(submission_id: int) -> ResponseReturnValue:
    """The submitted code as plain text (a notebook as its kept cells)."""
    sub = own_submission(submission_id)
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", sub.filename)[:100] or "value.py"
    response = Response(sub.source, mimetype="text/plain")
    response.headers["Content-Disposition"] = f'attachment; filename="{safe}"'
    response.headers["Content-Security-Policy"] = "default-src 'none'; sandbox"
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response
