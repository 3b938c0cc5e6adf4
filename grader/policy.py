"""Assignment policy: deadlines, late window and penalty, extensions, visibility, quotas.

Pure functions over an assignment's policy fields and plain submission rows, shared by the
instructor pages, the exports and the statistics. A submission is *on time* up to the
student's deadline (an extension moves it), *late* inside the late window (its score loses
`late_penalty`), and *too late* after the window: it counts as an attempt but scores 0.
Each student's grade is the best policy-adjusted score; the last one is reported beside it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

log = logging.getLogger(__name__)

ON_TIME, LATE, TOO_LATE = "on_time", "late", "too_late"
#: statuses whose score is final; a queued/running regrade keeps its previous score
COUNTED = ("graded", "invalid", "queued", "running")


class Attempt(Protocol):
    """What the policy reads of a submission."""

    id: int
    created_at: datetime
    status: str
    score: float | None


@dataclass(frozen=True)
class Policy:
    """An assignment's policy fields."""

    deadline: datetime | None = None
    late_until: datetime | None = None
    late_penalty: float = 0.0
    hidden: frozenset[str] = frozenset()
    max_submissions: int | None = None
    cooldown_s: int = 0
    max_score: float = 0.0

    @classmethod
    def of(cls, assignment: Any) -> Policy:
        """The policy of an `Assignment` row (or anything with the same fields)."""
        return cls(deadline=assignment.deadline, late_until=assignment.late_until,
                   late_penalty=float(assignment.late_penalty or 0.0),
                   hidden=frozenset(assignment.hidden or ()),
                   max_submissions=assignment.max_submissions or None,
                   cooldown_s=int(assignment.cooldown_s or 0),
                   max_score=float(assignment.max_score))

    def deadline_for(self, extension: datetime | None = None) -> datetime | None:
        """The on-time deadline of a student with this extension (None: none)."""
        return extension if extension is not None else self.deadline

    def closes_for(self, extension: datetime | None = None) -> datetime | None:
        """When the student's late window ends; an extension shifts the whole window."""
        if extension is None:
            return self.late_until or self.deadline
        if self.deadline is not None and self.late_until is not None:
            return max(extension + (self.late_until - self.deadline), extension)
        return extension

    def timeliness(self, at: datetime, extension: datetime | None = None) -> str:
        """on_time, late or too_late for a submission made at `at`."""
        deadline = self.deadline_for(extension)
        if deadline is None or at <= deadline:
            return ON_TIME
        closes = self.closes_for(extension)
        if self.late_until is not None and closes is not None and at <= closes:
            return LATE
        return TOO_LATE

    def adjusted(self, score: float, timeliness: str) -> float:
        """The score after the late policy (late: minus the penalty; too late: 0)."""
        if timeliness == TOO_LATE:
            return 0.0
        if timeliness == LATE:
            return round(score * (1.0 - self.late_penalty), 4)
        return score

    def details_visible(self, exercise: str, now: datetime,
                        extension: datetime | None = None) -> bool:
        """Whether a student may see an exercise's details (hidden: once their window closed)."""
        if exercise not in self.hidden:
            return True
        closes = self.closes_for(extension)
        return closes is not None and now > closes

    def submissions_left(self, used: int) -> int | None:
        """How many more submissions the student may make (None: unlimited)."""
        if not self.max_submissions:
            return None
        return max(0, self.max_submissions - used)


@dataclass(frozen=True)
class StudentGrade:
    """One student's standing on an assignment under its policy."""

    attempts: int
    best: float | None = None          #: best adjusted score
    best_id: int | None = None         #: the submission that earned it
    best_late: bool = False            #: ... and whether it was late
    last: float | None = None          #: the most recent submission's adjusted score
    last_id: int | None = None
    last_at: datetime | None = None    #: when the student last submitted (any status)
    ever_late: bool = False            #: some submission was after the deadline
    extension: datetime | None = None

    @property
    def graded(self) -> bool:
        """True when some submission has a score."""
        return self.best_id is not None


def counts(sub: Attempt) -> bool:
    """A submission with a usable score (graded, invalid, or being regraded)."""
    return sub.score is not None and sub.status in COUNTED


def grade_student(subs: Iterable[Attempt], policy: Policy,
                  extension: datetime | None = None) -> StudentGrade:
    """Best and last policy-adjusted scores of one student's submissions."""
    ordered = sorted(subs, key=lambda s: (s.created_at, s.id))
    if not ordered:
        return StudentGrade(attempts=0, extension=extension)
    scored = [(s, policy.timeliness(s.created_at, extension)) for s in ordered if counts(s)]
    ever_late = any(policy.timeliness(s.created_at, extension) != ON_TIME for s in ordered)
    base = StudentGrade(attempts=len(ordered), last_at=ordered[-1].created_at,
                        ever_late=ever_late, extension=extension)
    if not scored:
        return base
    best_sub, best_when, best = None, ON_TIME, -1.0
    for s, when in scored:  # earliest submission wins a tie
        value = policy.adjusted(float(s.score or 0.0), when)
        if value > best:
            best_sub, best_when, best = s, when, value
    last_sub, last_when = scored[-1]
    assert best_sub is not None
    return StudentGrade(
        attempts=base.attempts, best=best, best_id=best_sub.id, best_late=best_when != ON_TIME,
        last=policy.adjusted(float(last_sub.score or 0.0), last_when), last_id=last_sub.id,
        last_at=base.last_at, ever_late=ever_late, extension=extension)


def grade_students(subs: Iterable[Any], policy: Policy,
                   extensions: Mapping[int, datetime] | None = None) -> dict[int, StudentGrade]:
    """`grade_student` for every user_id among the rows."""
    by_user: dict[int, list[Any]] = {}
    for s in subs:
        by_user.setdefault(s.user_id, []).append(s)
    ext = extensions or {}
    return {uid: grade_student(rows, policy, ext.get(uid)) for uid, rows in by_user.items()}
