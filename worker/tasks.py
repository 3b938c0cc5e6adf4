"""Celery tasks: grade a submission, regrade one, sweep for stuck ones.

Tasks take ids and re-read the row; grading is idempotent (results are replaced in one
transaction), so a redelivered or swept message is harmless.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from celery import Task, shared_task
from celery.exceptions import SoftTimeLimitExceeded
from sqlalchemy import select, update

from grader.extensions import db
from grader.models import Submission, utcnow
from worker import store

log = logging.getLogger(__name__)

#: how many times a regrade steps aside for fresh submissions before it runs anyway
MAX_DEFERRALS = 50


@shared_task(name="micrograde.grade", bind=True, acks_late=True, reject_on_worker_lost=True)
def grade_submission(self: Task, submission_id: int) -> str:
    """Grade a fresh submission."""
    return run(submission_id, self.request.hostname or "worker")


@shared_task(name="micrograde.regrade", bind=True, acks_late=True,
             reject_on_worker_lost=True)
def regrade_submission(self: Task, submission_id: int, deferrals: int = 0) -> str:
    """Regrade a submission, after any fresh submission that is waiting."""
    if deferrals < MAX_DEFERRALS and store.fresh_waiting():
        # any broker: step aside so a student's fresh submission is graded first
        time.sleep(0.05)
        from grader.submissions import send

        send(submission_id, regrade=True, deferrals=deferrals + 1)
        return "deferred"
    return run(submission_id, self.request.hostname or "worker")


@shared_task(name="micrograde.sweep", acks_late=False)
def sweep() -> list[int]:
    """Re-enqueue submissions stuck in queued or running past their deadline."""
    return sweep_stuck()


def run(submission_id: int, hostname: str) -> str:
    """Claim the row, grade it with the shared pipeline, store the results; return the status."""
    sub = store.claim(submission_id, hostname)
    if sub is None:
        return "skipped"
    try:
        report = store.grade_row(sub)
        svgs = store.render_svgs(report)
    except (SoftTimeLimitExceeded, Exception) as exc:  # a grader fault, not the student's
        log.exception("grading submission %s failed", submission_id)
        db.session.rollback()
        return store.give_back(submission_id, exc)
    return store.save(submission_id, report, svgs)


def sweep_stuck(now: Any = None) -> list[int]:
    """Put stuck submissions back on their queue (commit first, then send); return their ids.

    The rows are reset with one conditional UPDATE that re-checks "still stuck", so a row
    a worker claimed or finished after the sweeper looked at it is left alone.
    """
    from grader.health import stuck_filter
    from grader.submissions import send

    now = now or utcnow()
    stuck = list(db.session.execute(select(Submission.id, Submission.status)
                                    .where(stuck_filter(now))
                                    .order_by(Submission.id).limit(500)))
    if not stuck:
        db.session.rollback()
        return []
    reset = db.session.execute(
        update(Submission).where(Submission.id.in_([sid for sid, _ in stuck]),
                                 stuck_filter(now))
        .values(status="queued", enqueued_at=now)
        .returning(Submission.id, Submission.regrade)
        .execution_options(synchronize_session=False)).all()
    db.session.commit()
    was = dict(stuck)
    ids = sorted((sid, regrade) for sid, regrade in reset)
    for sid, _ in ids:
        log.warning("submission %s stuck in %s: re-enqueued", sid, was.get(sid))
    sent = []
    for sid, regrade in ids:
        try:
            send(sid, regrade=regrade)
            sent.append(sid)
        except Exception as exc:  # broker still down: the next sweep tries again
            log.warning("sweep could not send %s: %s", sid, exc)
            break
    if sent:
        log.info("swept %d stuck submission(s): %s", len(sent), sent)
    return sent
