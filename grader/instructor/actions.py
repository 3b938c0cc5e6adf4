"""Instructor actions: regrade one or all, regrade progress, extensions, grade exports."""

from __future__ import annotations

import logging
import re
from datetime import UTC

from flask import Response, abort, flash, jsonify, redirect, url_for
from flask.typing import ResponseReturnValue
from flask_login import current_user
from sqlalchemy import select

from grader import export
from grader.auth.forms import ActionForm
from grader.extensions import db
from grader.health import queue_health
from grader.instructor import bp
from grader.instructor.data import load_course
from grader.instructor.forms import ExtensionForm
from grader.instructor.routes import get_assignment, latest_batch
from grader.models import DONE, Extension, Submission, User
from grader.models_course import RegradeBatch
from grader.submissions import SubmissionError, enqueue_regrade, enqueue_regrades

log = logging.getLogger(__name__)


def _checked() -> None:
    """Abort unless the posted form's CSRF token is valid."""
    if not ActionForm().validate_on_submit():
        abort(400)


@bp.post("/submissions/<int:submission_id>/regrade")
def regrade_one(submission_id: int) -> ResponseReturnValue:
    """Put one submission on the low-priority regrade queue."""
    _checked()
    current = db.session.get(Submission, submission_id)
    if current is None:
        abort(404)
    if not current.done:
        flash(f"Submission #{current.id} is already {current.status}: it will be graded "
              "with the current reference.", "info")
        return redirect(url_for("instructor.submission", submission_id=current.id))
    try:
        sub = enqueue_regrade(submission_id)
    except SubmissionError as exc:
        abort(exc.status)
    log.info("%s requested a regrade of submission %s", current_user.email, sub.id)
    flash(f"Submission #{sub.id} is queued for regrading.", "success")
    return redirect(url_for("instructor.submission", submission_id=sub.id))


@bp.post("/<slug>/regrade")
def regrade_all(slug: str) -> ResponseReturnValue:
    """Regrade every finished submission of an assignment on the regrade queue."""
    _checked()
    a = get_assignment(slug)
    ids = list(db.session.scalars(select(Submission.id).where(
        Submission.assignment_id == a.id, Submission.status.in_(DONE))
        .order_by(Submission.id)))
    batch = RegradeBatch(assignment_id=a.id, requested_by=current_user.id,
                         submission_ids=ids, total=len(ids),
                         note=f"regrade all of {a.slug}")
    db.session.add(batch)
    db.session.commit()
    n = enqueue_regrades(ids)
    log.info("%s requested a regrade of %d submissions of %s (batch %s)",
             current_user.email, n, a.slug, batch.id)
    flash(f"{n} submission{'s' if n != 1 else ''} queued for regrading; fresh submissions "
          "still go first.", "success")
    return redirect(url_for("instructor.dashboard", slug=a.slug, _anchor="regrade"))


@bp.get("/<slug>/regrade/progress")
def regrade_progress(slug: str) -> ResponseReturnValue:
    """Progress of the latest class-wide regrade, and the queue's health (polled)."""
    a = get_assignment(slug)
    batch = latest_batch(a)
    body: dict = {"batch": None, "queue": queue_health()}
    if batch is not None:
        p = batch.progress()
        body["batch"] = {"id": batch.id, "created_at": batch.created_at.isoformat(), **p,
                         "finished": bool(p["finished"])}
    return jsonify(body), 200, {"Cache-Control": "no-store"}


@bp.post("/<slug>/extensions")
def save_extension(slug: str) -> ResponseReturnValue:
    """Grant or change a student's extension."""
    a = get_assignment(slug)
    form = ExtensionForm()
    form.set_students(db.session.scalars(select(User).order_by(User.email)))
    if not form.validate_on_submit():
        for errors in form.errors.values():
            for e in errors:
                flash(str(e), "error")
        return redirect(url_for("instructor.dashboard", slug=a.slug, _anchor="extensions"))
    user = db.session.get(User, form.user_id.data)
    if user is None:
        abort(404)
    deadline = form.deadline.data.replace(tzinfo=UTC)
    ext = a.extension_for(user) or Extension(assignment_id=a.id, user_id=user.id)
    ext.deadline, ext.reason = deadline, form.reason.data or ""
    db.session.add(ext)
    db.session.commit()
    log.info("%s gave %s an extension on %s to %s", current_user.email, user.email, a.slug,
             deadline.isoformat())
    flash(f"{user.email} now has until {deadline:%Y-%m-%d %H:%M} UTC.", "success")
    return redirect(url_for("instructor.student", slug=a.slug, user_id=user.id))


@bp.post("/<slug>/extensions/<int:extension_id>/delete")
def delete_extension(slug: str, extension_id: int) -> ResponseReturnValue:
    """Remove an extension."""
    _checked()
    a = get_assignment(slug)
    ext = db.session.get(Extension, extension_id)
    if ext is None or ext.assignment_id != a.id:
        abort(404)
    email = ext.user.email
    db.session.delete(ext)
    db.session.commit()
    flash(f"The extension of {email} was removed.", "success")
    return redirect(url_for("instructor.dashboard", slug=a.slug, _anchor="extensions"))


def _download(body: str, mimetype: str, filename: str) -> Response:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", filename)
    response = Response(body, mimetype=mimetype)
    response.headers["Content-Disposition"] = f'attachment; filename="{safe}"'
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/<slug>/export.csv")
def export_csv(slug: str) -> ResponseReturnValue:
    """The gradebook as CSV, one row per student."""
    a = get_assignment(slug)
    return _download(export.gradebook_csv(load_course(a)), "text/csv",
                     f"{a.slug}-gradebook.csv")


@bp.get("/<slug>/gradescope.json")
def export_gradescope(slug: str) -> ResponseReturnValue:
    """Every student's counted submission as Gradescope results.json data."""
    a = get_assignment(slug)
    return _download(export.gradescope_json(load_course(a)), "application/json",
                     f"{a.slug}-gradescope.json")
