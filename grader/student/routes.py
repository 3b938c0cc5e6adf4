"""Assignment list, one assignment with its submit form, submitting, and one's history."""

from __future__ import annotations

import logging

from flask import abort, current_app, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from flask_login import current_user, login_required
from sqlalchemy import func, select

from grader.extensions import db
from grader.models import Assignment, Submission
from grader.student import bp
from grader.student.forms import SubmitForm
from grader.student.present import STATUSES, summaries
from grader.submissions import SubmissionError, create_submission

log = logging.getLogger(__name__)

HISTORY_PAGE = 50


@bp.get("/")
@login_required
def index() -> ResponseReturnValue:
    """The assignments, with this student's best score and attempts on each."""
    return render_template("student/index.html", rows=summaries(current_user))


def active_assignment(slug: str) -> Assignment:
    """The active assignment with this slug, or 404."""
    a = db.session.scalar(select(Assignment).where(Assignment.slug == slug))
    if a is None or not a.active:
        abort(404)
    return a


def render_assignment(a: Assignment, form: SubmitForm, status: int = 200,
                      error: str | None = None) -> ResponseReturnValue:
    """The assignment page: description, exercises, submit form, own submissions."""
    mine = list(db.session.scalars(select(Submission).where(
        Submission.user_id == current_user.id, Submission.assignment_id == a.id)
        .order_by(Submission.id.desc()).limit(100)))
    total = db.session.scalar(select(func.count()).select_from(Submission).where(
        Submission.user_id == current_user.id, Submission.assignment_id == a.id)) or 0
    cooldown = max(int(current_app.config.get("SUBMISSION_COOLDOWN") or 0), a.cooldown_s or 0)
    from exercises import EXERCISES

    exercises = [{"name": n, "title": EXERCISES[n].title if n in EXERCISES else n,
                  "points": a.points.get(n, 0.0), "feedback_only": n in a.feedback_only,
                  "hidden": n in a.hidden} for n in a.exercises]
    html = render_template(
        "student/assignment.html", a=a, form=form, error=error, submissions=mine,
        total=total, exercises=exercises, open=a.is_open(current_user),
        deadline=a.deadline_for(current_user), closes_at=a.closes_at(current_user),
        cooldown=cooldown, limits=current_app.config["LIMITS"], statuses=STATUSES)
    return html, status


@bp.get("/assignments/<slug>")
@login_required
def assignment(slug: str) -> ResponseReturnValue:
    """One assignment and its submit form."""
    return render_assignment(active_assignment(slug), SubmitForm())


@bp.post("/assignments/<slug>/submit")
@login_required
def submit(slug: str) -> ResponseReturnValue:
    """Take an upload or pasted code, queue it for grading, go to its live page."""
    a = active_assignment(slug)
    form = SubmitForm()
    if not form.validate_on_submit():
        return render_assignment(a, form, 400, "The form was not complete; try again.")
    upload = form.file.data
    has_file = upload is not None and bool(getattr(upload, "filename", ""))
    pasted = (form.source.data or "").replace("\r\n", "\n")
    has_text = bool(pasted.strip())
    if has_file and has_text:
        return render_assignment(a, form, 400, "Upload a file or paste your code, not both.")
    if not has_file and not has_text:
        message = ("The pasted code is empty." if pasted else
                   "Choose a .py or .ipynb file to upload, or paste your code.")
        return render_assignment(a, form, 400, message)
    if has_file:
        data: bytes | str = upload.read()
        filename = upload.filename
    else:
        data, filename = pasted, "value.py"
    try:
        sub = create_submission(current_user, a, data, filename)
    except SubmissionError as exc:
        log.info("submission by user %s refused: %s", current_user.id, exc.code)
        html, status = render_assignment(a, form, exc.status, exc.message)
        headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after else {}
        return html, status, headers
    return redirect(url_for("student.submission", submission_id=sub.id), code=303)


@bp.get("/history")
@login_required
def history() -> ResponseReturnValue:
    """All of this student's submissions, newest first."""
    page = max(1, request.args.get("page", 1, type=int) or 1)
    query = select(Submission).where(Submission.user_id == current_user.id)
    total = db.session.scalar(select(func.count()).select_from(query.subquery())) or 0
    rows = list(db.session.scalars(query.order_by(Submission.id.desc())
                                   .offset((page - 1) * HISTORY_PAGE).limit(HISTORY_PAGE)))
    pages = max(1, (total + HISTORY_PAGE - 1) // HISTORY_PAGE)
    if page > pages:
        abort(404)
    return render_template("student/history.html", rows=rows, page=page, pages=pages,
                           total=total, statuses=STATUSES)
