"""Creating submissions (the one path the web pages and the API share) and enqueueing them.

`create_submission` validates the upload and the assignment's policy, commits the row
with its grading seed, THEN enqueues its id; if the broker cannot take the message the
row is removed again and `SubmissionError("queue_unavailable", ..., 503)` is raised, so
nothing is stored half-way. The database stays the truth: the sweeper re-enqueues rows a
lost message left behind.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import PurePath

from flask import current_app
from sqlalchemy import func, select

from exercises.manifest import AssignmentSpec
from grader.config import GRADING_QUEUE, REGRADE_QUEUE
from grader.extensions import db
from grader.grading.pipeline import new_seed
from grader.models import Assignment, Submission, User, utcnow
from worker.limits import Limits

log = logging.getLogger(__name__)

ALLOWED_SUFFIXES = (".py", ".ipynb")
GRADE_TASK, REGRADE_TASK = "micrograde.grade", "micrograde.regrade"


@dataclass
class SubmissionError(Exception):
    """Why a submission was refused: a stable code, a message for people, an HTTP status."""

    code: str
    message: str
    status: int = 400
    retry_after: int | None = None

    def __str__(self) -> str:
        return self.message

    def to_dict(self) -> dict:
        """The API's error body."""
        body: dict = {"code": self.code, "message": self.message}
        if self.retry_after is not None:
            body["retry_after"] = self.retry_after
        return {"error": body}


def clean_filename(filename: str | None) -> str:
    """The base name of an uploaded file, or value.py when none was given."""
    name = PurePath((filename or "").replace("\\", "/")).name.strip()
    return name[:255] or "value.py"


def check_upload(data: bytes | str, filename: str, limits: Limits) -> str:
    """The upload as text, or SubmissionError for a wrong type, empty, too large, not UTF-8."""
    if not filename.lower().endswith(ALLOWED_SUFFIXES):
        raise SubmissionError("wrong_type", f"{filename!r} is not a Python file: upload a .py "
                              "file or a .ipynb notebook", 415)
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    is_nb = filename.lower().endswith(".ipynb")
    cap = limits.notebook_bytes if is_nb else limits.upload_bytes
    if not raw.strip():
        raise SubmissionError("empty", "the file is empty", 400)
    if len(raw) > cap:
        raise SubmissionError("too_large", f"the file is {len(raw) / 1024:.0f} KiB; the limit "
                              f"is {cap // 1024} KiB", 413)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SubmissionError("not_utf8", "the file is not UTF-8 text (bad byte at offset "
                              f"{exc.start}); save it as UTF-8", 400) from None
    if "\x00" in text:
        raise SubmissionError("not_utf8", "the file contains NUL bytes: it is not a text "
                              "file", 400)
    return compact_notebook(text) if is_nb else text


def compact_notebook(text: str) -> str:
    """A notebook without its outputs and attachments (grading reads only the cell sources)."""
    try:
        nb = json.loads(text)
        cells = nb["cells"]
    except (ValueError, KeyError, TypeError):
        return text  # not a notebook: grading reports it
    if not isinstance(cells, list):
        return text
    kept = [{"cell_type": c.get("cell_type"), "source": c.get("source", "")}
            for c in cells if isinstance(c, dict)]
    return json.dumps({"cells": kept, "nbformat": nb.get("nbformat", 4),
                       "nbformat_minor": nb.get("nbformat_minor", 5), "metadata": {}})


def find_assignment(slug: object) -> Assignment:
    """The active assignment with this slug, or SubmissionError 404 (400 for no slug)."""
    if not isinstance(slug, str) or not slug:
        raise SubmissionError("no_assignment", "say which assignment (e.g. assignment="
                              "micrograd)", 400)
    assignment = db.session.scalar(select(Assignment).where(Assignment.slug == slug))
    if assignment is None or not assignment.active:
        raise SubmissionError("no_assignment", f"there is no assignment {slug!r}", 404)
    return assignment


def check_policy(user: User, assignment: Assignment, now: datetime) -> None:
    """Refuse a closed assignment, a used-up submission quota or a cooldown in progress."""
    if not assignment.is_open(user, now):
        if assignment.opens_at and now < assignment.opens_at:
            when = assignment.opens_at.strftime("%Y-%m-%d %H:%M UTC")
            raise SubmissionError("assignment_closed", f"{assignment.slug} opens at {when}",
                                  403)
        raise SubmissionError("assignment_closed", f"{assignment.slug} is closed: the "
                              "deadline has passed", 403)
    if user.is_instructor:
        return
    mine = select(func.count()).select_from(Submission).where(
        Submission.user_id == user.id, Submission.assignment_id == assignment.id)
    if assignment.max_submissions and db.session.scalar(mine) >= assignment.max_submissions:
        raise SubmissionError("submission_limit", f"you have used all "
                              f"{assignment.max_submissions} submissions for "
                              f"{assignment.slug}", 403)
    cooldown = max(int(current_app.config.get("SUBMISSION_COOLDOWN") or 0),
                   assignment.cooldown_s or 0)
    if cooldown:
        last = db.session.scalar(select(func.max(Submission.created_at)).where(
            Submission.user_id == user.id))
        if last is not None:
            last = last if last.tzinfo else last.replace(tzinfo=now.tzinfo)
            wait = (last + timedelta(seconds=cooldown) - now).total_seconds()
            if wait > 0:
                secs = int(wait) + (wait % 1 > 0)
                raise SubmissionError("cooldown", f"please wait {secs} s before submitting "
                                      f"again (one submission every {cooldown} s)", 429,
                                      retry_after=secs)


def create_submission(user: User, assignment: str | Assignment, data: bytes | str,
                      filename: str | None = "value.py", *,
                      now: datetime | None = None) -> Submission:
    """Validate, store and enqueue a submission; return the committed row."""
    now = now or utcnow()
    limits: Limits = current_app.config["LIMITS"]
    filename = clean_filename(filename)
    if not isinstance(assignment, Assignment):
        assignment = find_assignment(assignment)
    text = check_upload(data, filename, limits)
    # serialize one user's submissions (cooldown and quota) where the database can
    db.session.execute(select(User.id).where(User.id == user.id).with_for_update())
    try:
        check_policy(user, assignment, now)
    except SubmissionError:
        db.session.rollback()
        raise
    raw_size = len(data.encode("utf-8")) if isinstance(data, str) else len(data)
    sub = Submission(user_id=user.id, assignment_id=assignment.id, filename=filename,
                     source=text, size=raw_size, seed=new_seed(), status="queued",
                     sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
                     late=assignment.is_late(user, now), created_at=now, enqueued_at=now)
    db.session.add(sub)
    db.session.commit()
    try:
        send(sub.id, regrade=False)
    except Exception as exc:  # broker down or refusing: undo, say so
        log.error("could not enqueue submission %s: %s", sub.id, exc)
        db.session.delete(sub)
        db.session.commit()
        raise SubmissionError("queue_unavailable", "the grading queue is unavailable right "
                              "now; nothing was stored. Please try again in a minute.",
                              503) from exc
    log.info("submission %s by user %s queued (seed %s)", sub.id, user.id, sub.seed)
    return sub


def send(submission_id: int, *, regrade: bool, deferrals: int = 0) -> None:
    """Publish a grading message for this id (fresh queue or the low-priority regrade one)."""
    celery = current_app.extensions["celery"]
    if regrade:
        celery.send_task(REGRADE_TASK, args=[submission_id], kwargs={"deferrals": deferrals},
                         queue=REGRADE_QUEUE)
    else:
        celery.send_task(GRADE_TASK, args=[submission_id], queue=GRADING_QUEUE)


def _mark_for_regrade(sub: Submission) -> None:
    """Put a row back to queued as a regrade (the caller commits)."""
    sub.status, sub.regrade, sub.attempts = "queued", True, 0
    sub.regrades += 1
    sub.enqueued_at = utcnow()


def _send_regrade(sid: int) -> None:
    """Send one regrade message; when the broker is down the sweeper sends it later."""
    try:
        send(sid, regrade=True)
    except Exception as exc:
        # the row says queued: the sweeper sends it once the broker is back
        log.warning("regrade of %s not sent now (%s); the sweeper will retry", sid, exc)


def enqueue_regrade(submission_id: int) -> Submission:
    """Mark a submission for regrading and put it on the low-priority regrade queue."""
    sub = db.session.get(Submission, submission_id)
    if sub is None:
        raise SubmissionError("not_found", f"no submission {submission_id}", 404)
    _mark_for_regrade(sub)
    db.session.commit()
    _send_regrade(sub.id)
    return sub


def enqueue_regrades(submission_ids: Iterable[int], chunk: int = 500) -> int:
    """Regrade many submissions (e.g. a whole assignment); return how many were queued.

    Rows are marked and committed a chunk at a time, each chunk before its messages are
    sent, so a class of thousands costs a few commits rather than one per submission.
    """
    ids = list(dict.fromkeys(submission_ids))
    n = 0
    for start in range(0, len(ids), chunk):
        part = ids[start:start + chunk]
        rows = list(db.session.scalars(select(Submission).where(Submission.id.in_(part))))
        for sub in rows:
            _mark_for_regrade(sub)
        db.session.commit()
        for sub in rows:
            _send_regrade(sub.id)
        n += len(rows)
    return n


def sync_manifest(specs: Iterable[AssignmentSpec]) -> list[Assignment]:
    """Create or update assignments from manifest specs; deactivate ones no longer listed."""
    specs = list(specs)
    rows = {a.slug: a for a in db.session.scalars(select(Assignment))}
    out = []
    for spec in specs:
        a = rows.get(spec.slug) or Assignment(slug=spec.slug)
        a.title, a.description = spec.title, spec.description
        a.exercises, a.points = list(spec.exercises), dict(spec.points)
        a.feedback_only, a.hidden = list(spec.feedback_only), list(spec.hidden)
        a.opens_at, a.deadline, a.late_until = spec.opens_at, spec.deadline, spec.late_until
        a.late_penalty, a.max_submissions = spec.late_penalty, spec.max_submissions
        a.cooldown_s, a.active = spec.cooldown, True
        db.session.add(a)
        out.append(a)
    listed = {s.slug for s in specs}
    for slug, a in rows.items():
        if slug not in listed:
            a.active = False
    db.session.commit()
    return out
