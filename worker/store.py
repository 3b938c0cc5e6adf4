"""The grading task's steps against the database: claim, grade, store, give back."""

from __future__ import annotations

import logging
import os
from typing import Any

from flask import current_app
from sqlalchemy import delete, exists, select

from grader.extensions import db
from grader.grading.pipeline import grade
from grader.grading.report import Report
from grader.models import DONE, Result, Submission, utcnow

log = logging.getLogger(__name__)

MAX_SVG_BYTES = 256 * 1024  #: a bigger diff is not stored (the DOT still is)
MAX_STORED_OUTPUT = 16 * 1024  #: of each exercise's stdout and stderr (the sandbox keeps 64 KiB)


def claim(submission_id: int, hostname: str) -> Submission | None:
    """Mark the row running (attempt + 1), or None when there is nothing to do."""
    sub = db.session.get(Submission, submission_id, with_for_update=True)
    if sub is None:
        log.warning("submission %s does not exist (removed?): message dropped", submission_id)
        db.session.rollback()
        return None
    if sub.status in DONE:
        log.info("submission %s already %s: duplicate message dropped", sub.id, sub.status)
        db.session.rollback()
        return None
    if sub.status == "running" and held_by_live_sibling(sub.worker, hostname):
        # a duplicate (a double regrade click, a sweep of a long queue) while another
        # process of this worker grades it; if that process dies, the sweeper re-queues it
        log.info("submission %s is being graded by %s: duplicate message dropped", sub.id,
                 sub.worker)
        db.session.rollback()
        return None
    max_attempts = int(current_app.config.get("MAX_ATTEMPTS", 3))
    if sub.attempts >= max_attempts:
        fail(sub, "too_many_attempts", f"grading was interrupted {sub.attempts} times; "
             "an instructor can regrade it")
        return None
    sub.status, sub.started_at = "running", utcnow()
    sub.worker = f"{hostname}:{os.getpid()}"[:200]  #: which process grades it
    sub.attempts += 1
    db.session.commit()
    return sub


def held_by_live_sibling(holder: str | None, hostname: str) -> bool:
    """True when `holder` ("node:pid") is another live process of this same worker node."""
    node, _, pid = (holder or "").rpartition(":")
    if (node != hostname or not pid.isdigit() or int(pid) == os.getpid()
            or len(holder or "") >= 200):  # a cut-off name tells nothing
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, under another user
        return True
    return True


def grade_row(sub: Submission) -> Report:
    """Run the shared grading pipeline on the row's source, seed and assignment."""
    a = sub.assignment
    conf = current_app.config
    return grade(sub.source, a.exercises, sub.seed, conf["LIMITS"], filename=sub.filename,
                 k=int(conf.get("INSTANCES_K", 3)), points=a.points,
                 feedback_only=a.feedback_only)


def render_svgs(report: Report) -> dict[str, str]:
    """Each exercise's diff as inline SVG, by exercise name (only drawing, size-capped)."""
    from grader.grading.diffviz import inline_svg, render_svg, safe_svg

    out = {}
    for ex in report.exercises:
        if not ex.diff_dot:
            continue
        try:
            svg = inline_svg(render_svg(ex.diff_dot))
        except Exception as exc:  # a diff that does not render must not lose the grade
            log.warning("diff of %s did not render: %s", ex.name, exc)
            continue
        if len(svg) > MAX_SVG_BYTES or not safe_svg(svg):
            log.warning("diff of %s not stored (%d bytes, or not plain drawing)", ex.name,
                        len(svg))
            continue
        out[ex.name] = svg
    return out


def save(submission_id: int, report: Report, svgs: dict[str, str]) -> str:
    """Replace the submission's results with this report's, in one transaction."""
    sub = db.session.get(Submission, submission_id, with_for_update=True,
                         populate_existing=True)
    if sub is None or sub.status != "running":
        log.info("submission %s changed while grading (%s): result discarded", submission_id,
                 sub.status if sub else "removed")
        db.session.rollback()
        return "discarded"
    data = report.to_dict()
    exercises = data.pop("exercises")
    db.session.execute(delete(Result).where(Result.submission_id == sub.id))
    for i, ex in enumerate(exercises):
        for stream in ("stdout", "stderr"):
            ex[stream] = trim(ex.get(stream) or "")
        diagnosis = ex.get("diagnosis") if isinstance(ex.get("diagnosis"), dict) else {}
        db.session.add(Result(
            submission_id=sub.id, position=i, name=ex["name"], title=ex.get("title", ""),
            verdict=ex["verdict"], score=ex.get("score") or 0.0,
            max_score=ex.get("max_score") or 0.0, feedback_only=bool(ex.get("feedback_only")),
            message=ex.get("message") or "", diagnosis_cause=_short(diagnosis.get("cause")),
            diagnosis_op=_short(diagnosis.get("op"), 32), data=ex,
            diff_svg=svgs.get(ex["name"])))
    now = utcnow()
    sub.report, sub.status = data, report.status
    sub.score, sub.max_score = report.score, report.max_score
    err = report.error or {}
    sub.error_kind, sub.error_message = err.get("kind"), err.get("message")
    sub.finished_at, sub.regrade = now, False
    if sub.graded_at is None:
        sub.graded_at = now
    db.session.commit()
    log.info("submission %s %s: %s/%s", sub.id, sub.status, sub.score, sub.max_score)
    return sub.status


def trim(text: str, limit: int = MAX_STORED_OUTPUT) -> str:
    """Output cut to `limit` characters (head and tail kept), saying how much went."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters cut ...]\n{text[-half:]}"


def _short(value: Any, n: int = 64) -> str | None:
    return str(value)[:n] if value else None


def fail(sub: Submission, kind: str, message: str) -> None:
    """Mark the row failed (a grader fault or too many interrupted attempts)."""
    now = utcnow()
    sub.status, sub.error_kind, sub.error_message = "failed", kind, message
    sub.finished_at, sub.regrade = now, False
    if sub.graded_at is None:
        sub.graded_at = now
    db.session.commit()
    log.error("submission %s failed: %s", sub.id, message)


def give_back(submission_id: int, exc: BaseException) -> str:
    """After a grader fault: queue the row again, or fail it once attempts are used up."""
    sub = db.session.get(Submission, submission_id, with_for_update=True)
    if sub is None or sub.status != "running":
        db.session.rollback()
        return "discarded"
    if sub.attempts >= int(current_app.config.get("MAX_ATTEMPTS", 3)):
        fail(sub, "grader_error", f"the grader failed: {type(exc).__name__}: {exc}"[:500])
        return "failed"
    sub.status, sub.enqueued_at = "queued", utcnow()
    db.session.commit()
    from grader.submissions import send

    try:
        send(sub.id, regrade=sub.regrade)
    except Exception as send_exc:
        log.warning("could not re-enqueue %s (%s): the sweeper will", sub.id, send_exc)
    return "requeued"


def fresh_waiting() -> bool:
    """True when a fresh (not regrade) submission is waiting in the queue."""
    return bool(db.session.scalar(select(exists().where(
        Submission.status == "queued", Submission.regrade.is_(False)))))
