"""API routes: assignments, submissions, health."""

from __future__ import annotations

import logging
from typing import Any

from flask import g, jsonify, request, url_for
from flask.typing import ResponseReturnValue
from sqlalchemy import select

from grader.api import bp
from grader.api.auth import error, token_required
from grader.extensions import csrf, db
from grader.models import Assignment, Submission, User
from grader.submissions import SubmissionError, create_submission

log = logging.getLogger(__name__)

csrf.exempt(bp)


def iso(value: Any) -> str | None:
    """ISO 8601 text of a datetime, or None."""
    return value.isoformat() if value is not None else None


def assignment_json(a: Assignment, user: User) -> dict[str, Any]:
    """An assignment as the API shows it."""
    from exercises import EXERCISES

    return {
        "slug": a.slug, "title": a.title, "description": a.description,
        "exercises": [{"name": n, "title": EXERCISES[n].title if n in EXERCISES else n,
                       "points": a.points.get(n, 0.0), "feedback_only": n in a.feedback_only,
                       "hidden": n in a.hidden} for n in a.exercises],
        "max_score": a.max_score,
        "deadline": iso(a.deadline_for(user)), "late_until": iso(a.late_until),
        "late_penalty": a.late_penalty, "max_submissions": a.max_submissions,
        "open": a.is_open(user),
    }


def submission_json(sub: Submission, *, full: bool = True) -> dict[str, Any]:
    """A submission's status (and, once done, its report) as the API shows it."""
    out: dict[str, Any] = {
        "id": sub.id, "url": url_for("api.get_submission", submission_id=sub.id,
                                     _external=True),
        "assignment": sub.assignment.slug, "status": sub.status, "filename": sub.filename,
        "sha256": sub.sha256, "seed": sub.seed, "late": sub.late, "attempts": sub.attempts,
        "score": sub.score, "max_score": sub.max_score,
        "created_at": iso(sub.created_at), "started_at": iso(sub.started_at),
        "finished_at": iso(sub.finished_at),
    }
    if sub.status == "queued":
        out["queue_position"] = sub.queue_position()
    if sub.status == "failed":
        out["error"] = {"code": sub.error_kind or "failed",
                        "message": sub.error_message or "grading failed"}
    if full and sub.status in ("graded", "invalid"):
        out["report"] = visible_report(sub)
    return out


def visible_report(sub: Submission) -> dict[str, Any] | None:
    """The report, hidden exercises' details withheld as on the student pages.

    A hidden exercise shows only its verdict and score until the student's late window
    (shifted by any extension) has closed; staff always see everything.
    """
    from grader.student.present import hidden_exercises

    report = sub.report_dict()
    hidden = hidden_exercises(sub, g.api_user) if report is not None else set()
    for ex in (report or {}).get("exercises", []):
        if ex.get("name") in hidden:
            keep = {k: ex.get(k) for k in ("name", "title", "verdict", "score", "max_score",
                                           "feedback_only")}
            ex.clear()
            ex.update(keep, hidden=True, message="details are shown after the deadline")
    return report


@bp.get("/assignments")
@token_required
def list_assignments() -> ResponseReturnValue:
    """The assignments open to this user."""
    rows = db.session.scalars(select(Assignment).where(Assignment.active.is_(True))
                              .order_by(Assignment.id))
    user = g.api_user
    return jsonify({"assignments": [assignment_json(a, user) for a in rows
                                    if a.is_open(user)]})


@bp.post("/submissions")
@token_required
def post_submission() -> ResponseReturnValue:
    """Accept a file (multipart `file`) or JSON `source`, for `assignment`; 202 when queued."""
    if request.files:
        upload = request.files.get("file")
        if upload is None:
            return error("no_file", "send the file in a multipart field named 'file'", 400)
        data: bytes | str = upload.read()
        filename = upload.filename or "value.py"
        slug = request.form.get("assignment")
    elif request.is_json:
        body = request.get_json(silent=True)
        if not isinstance(body, dict) or not isinstance(body.get("source"), str):
            return error("bad_request", "send JSON {\"assignment\": ..., \"source\": ...}",
                         400)
        data, filename = body["source"], str(body.get("filename") or "value.py")
        slug = body.get("assignment")
    else:
        return error("bad_request", "send multipart/form-data with 'file' and 'assignment', "
                     "or JSON with 'source' and 'assignment'", 400)
    try:
        sub = create_submission(g.api_user, slug, data, filename)
    except SubmissionError as exc:
        response = jsonify(exc.to_dict())
        response.status_code = exc.status
        if exc.retry_after is not None:
            response.headers["Retry-After"] = str(exc.retry_after)
        return response
    body = submission_json(sub, full=False)
    response = jsonify({"id": sub.id, "url": body["url"], "status": sub.status,
                        "queue_position": body.get("queue_position")})
    response.status_code = 202
    response.headers["Location"] = body["url"]
    return response


@bp.get("/submissions")
@token_required
def list_submissions() -> ResponseReturnValue:
    """This user's own submissions, newest first (no reports)."""
    query = select(Submission).where(Submission.user_id == g.api_user.id)
    slug = request.args.get("assignment")
    if slug:
        query = query.join(Assignment).where(Assignment.slug == slug)
    rows = db.session.scalars(query.order_by(Submission.id.desc()).limit(200))
    return jsonify({"submissions": [submission_json(s, full=False) for s in rows]})


@bp.get("/submissions/<int:submission_id>")
@token_required
def get_submission(submission_id: int) -> ResponseReturnValue:
    """One submission's status and, once done, its report; 404 unless it is yours."""
    sub = db.session.get(Submission, submission_id)
    if sub is None or (sub.user_id != g.api_user.id and not g.api_user.is_instructor):
        return error("not_found", f"no submission {submission_id}", 404)
    return jsonify(submission_json(sub))


@bp.get("/health")
def get_health() -> ResponseReturnValue:
    """Database, broker, workers, queue depth, running, latency p50/p95, stuck (public)."""
    from grader.health import health

    data = health()
    return jsonify(data), (503 if data["status"] == "down" else 200)
