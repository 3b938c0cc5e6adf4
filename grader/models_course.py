"""Course-management models: regrade batches (the truth about a class-wide regrade)."""

from __future__ import annotations

import logging
from datetime import datetime

from sqlalchemy import JSON, ForeignKey, Integer, String, func, select
from sqlalchemy.orm import Mapped, mapped_column

from grader.extensions import db
from grader.models import DONE, Submission, UTCDateTime, utcnow

log = logging.getLogger(__name__)


class RegradeBatch(db.Model):
    """A regrade of many submissions requested at once; its progress is read off the rows."""

    __tablename__ = "regrade_batch"

    id: Mapped[int] = mapped_column(primary_key=True)
    assignment_id: Mapped[int] = mapped_column(
        ForeignKey("assignment.id", ondelete="CASCADE"), index=True)
    requested_by: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    submission_ids: Mapped[list[int]] = mapped_column(JSON, default=list)
    total: Mapped[int] = mapped_column(Integer, default=0)
    note: Mapped[str] = mapped_column(String(200), default="")

    def progress(self) -> dict[str, int]:
        """Counts of this batch's submissions: done, running, queued, gone, total, finished."""
        ids = list(self.submission_ids or [])
        counts = {"done": 0, "running": 0, "queued": 0}
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            rows = db.session.execute(
                select(Submission.status, Submission.regrade, func.count())
                .where(Submission.id.in_(chunk))
                .group_by(Submission.status, Submission.regrade))
            for status, regrade, n in rows:
                if status in DONE and not regrade:
                    counts["done"] += n
                elif status == "running":
                    counts["running"] += n
                else:
                    counts["queued"] += n
        counts["total"] = len(ids)
        counts["gone"] = len(ids) - counts["done"] - counts["running"] - counts["queued"]
        counts["finished"] = int(counts["done"] + counts["gone"] >= counts["total"])
        return counts
