"""Load one assignment's class data (users, submission and result rows, extensions) at once.

The rows are the light `grader.stats` shapes (no sources, no report JSON), so a dashboard
for a few thousand submissions stays a handful of queries; dashboards and exports both
read a `Course`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import select

from grader.extensions import db
from grader.models import Assignment, Extension, Result, Submission, User
from grader.policy import Policy, StudentGrade, counts, grade_students
from grader.stats import ResultRow, SubRow

log = logging.getLogger(__name__)


@dataclass
class Course:
    """An assignment and everything the class did on it."""

    assignment: Assignment
    policy: Policy
    users: dict[int, User]                 #: the students (staff are not the class)
    subs: list[SubRow]
    results: list[ResultRow]
    extensions: dict[int, Extension]
    grades: dict[int, StudentGrade] = field(default_factory=dict)
    _by_submission: dict[int, dict[str, ResultRow]] = field(default_factory=dict, repr=False)

    @property
    def students(self) -> list[User]:
        """Everyone in the gradebook, by email."""
        return sorted(self.users.values(), key=lambda u: u.email)

    def grade(self, user_id: int) -> StudentGrade:
        """A user's grade (zero attempts when they never submitted)."""
        return self.grades.get(user_id) or StudentGrade(
            attempts=0, extension=self.extension_deadline(user_id))

    def extension_deadline(self, user_id: int) -> datetime | None:
        """The user's extended deadline, if they have one."""
        ext = self.extensions.get(user_id)
        return ext.deadline if ext is not None else None

    def owner(self) -> dict[int, int]:
        """Submission id -> user id."""
        return {s.id: s.user_id for s in self.subs}

    def latest(self) -> dict[int, int]:
        """User id -> their latest scored submission id."""
        out: dict[int, int] = {}
        for s in sorted(self.subs, key=lambda s: (s.created_at, s.id)):
            if counts(s):
                out[s.user_id] = s.id
        return out

    def counted(self) -> dict[int, int]:
        """User id -> the submission their grade comes from."""
        return {uid: g.best_id for uid, g in self.grades.items() if g.best_id is not None}

    def results_of(self, submission_id: int) -> dict[str, ResultRow]:
        """One submission's results by exercise name."""
        if not self._by_submission:
            for r in self.results:
                self._by_submission.setdefault(r.submission_id, {})[r.name] = r
        return self._by_submission.get(submission_id, {})


def load_course(assignment: Assignment) -> Course:
    """Read an assignment's students, submissions, results and extensions; grade every student.

    Staff trying the grader out are not the class: their submissions stay openable by id
    but count in no statistic, table or export.
    """
    subs = [SubRow(id=i, user_id=u, created_at=c, status=st, score=sc, max_score=mx)
            for i, u, c, st, sc, mx in db.session.execute(
                select(Submission.id, Submission.user_id, Submission.created_at,
                       Submission.status, Submission.score, Submission.max_score)
                .join(User, User.id == Submission.user_id)
                .where(Submission.assignment_id == assignment.id, User.role == "student")
                .order_by(Submission.created_at, Submission.id))]
    results = [ResultRow(submission_id=sid, name=n, verdict=v, cause=c, op=o, score=s or 0.0,
                         max_score=m or 0.0, feedback_only=bool(f))
               for sid, n, v, c, o, s, m, f in db.session.execute(
                   select(Result.submission_id, Result.name, Result.verdict,
                          Result.diagnosis_cause, Result.diagnosis_op, Result.score,
                          Result.max_score, Result.feedback_only)
                   .join(Submission, Submission.id == Result.submission_id)
                   .join(User, User.id == Submission.user_id)
                   .where(Submission.assignment_id == assignment.id,
                          User.role == "student"))]
    users = {u.id: u for u in db.session.scalars(select(User).where(User.role == "student"))}
    extensions = {e.user_id: e for e in db.session.scalars(
        select(Extension).where(Extension.assignment_id == assignment.id))}
    policy = Policy.of(assignment)
    course = Course(assignment=assignment, policy=policy, users=users, subs=subs,
                    results=results, extensions=extensions)
    course.grades = grade_students(subs, policy, {uid: e.deadline
                                                  for uid, e in extensions.items()})
    return course
