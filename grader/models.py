"""Typed SQLAlchemy 2 models: users, assignments, extensions, submissions, results, workers.

The database is the truth about every submission: a row is committed before its task is
enqueued, and the task re-reads it. Times are timezone-aware UTC in Python.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from datetime import UTC, datetime, timedelta
from typing import Any

from flask_login import UserMixin
from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    func,
    select,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship
from werkzeug.security import check_password_hash, generate_password_hash

from grader.extensions import db

log = logging.getLogger(__name__)

ROLES = ("student", "instructor")
STATUSES = ("queued", "running", "graded", "invalid", "failed")
DONE = ("graded", "invalid", "failed")
TOKEN_PREFIX = "mg_"


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator):
    """A datetime stored as naive UTC and always read back timezone-aware."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is not None and value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        return value

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        return value.replace(tzinfo=UTC) if value is not None else None


def token_digest(token: str) -> str:
    """What is stored of an API token: its SHA-256."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class User(UserMixin, db.Model):
    """A student or an instructor; logs in with a password, scripts with an API token."""

    __tablename__ = "users"

    id: Mapped[int] = mapped_column(primary_key=True)
    email: Mapped[str] = mapped_column(String(254), unique=True)
    name: Mapped[str] = mapped_column(String(120), default="")
    password_hash: Mapped[str] = mapped_column(String(256), default="")
    role: Mapped[str] = mapped_column(String(16), default="student")
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    token_hash: Mapped[str | None] = mapped_column(String(64), unique=True)
    token_hint: Mapped[str | None] = mapped_column(String(16))  #: last characters, to show
    token_created_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    token_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    submissions: Mapped[list[Submission]] = relationship(back_populates="user",
                                                         passive_deletes=True)

    @property
    def is_instructor(self) -> bool:
        """True for instructors and TAs."""
        return self.role == "instructor"

    @property
    def is_active(self) -> bool:  # Flask-Login
        """Deactivated users cannot log in or use a token."""
        return bool(self.active)

    def set_password(self, password: str) -> None:
        """Store a salted hash of `password`."""
        self.password_hash = generate_password_hash(password)

    def check_password(self, password: str) -> bool:
        """True when `password` matches the stored hash."""
        return bool(self.password_hash) and check_password_hash(self.password_hash, password)

    def issue_token(self, ttl_days: int = 365) -> str:
        """Create a new API token (replacing any old one) and return it; only its hash is kept."""
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        self.token_hash = token_digest(token)
        self.token_hint = token[-4:]
        self.token_created_at = utcnow()
        self.token_expires_at = self.token_created_at + timedelta(days=ttl_days)
        return token

    def revoke_token(self) -> None:
        """Forget the API token: it stops working at once."""
        self.token_hash = self.token_hint = None
        self.token_created_at = self.token_expires_at = None

    @classmethod
    def from_token(cls, token: str | None) -> User | None:
        """The active user owning this unexpired token, else None."""
        user = cls.token_owner(token)
        if user is None or not user.active or user.token_expired:
            return None
        return user

    @classmethod
    def token_owner(cls, token: str | None) -> User | None:
        """The user whose token this is, expired or not."""
        if not token or not token.startswith(TOKEN_PREFIX) or len(token) > 200:
            return None
        return db.session.scalar(select(cls).where(cls.token_hash == token_digest(token)))

    @property
    def token_expired(self) -> bool:
        """True when the token's lifetime is over."""
        return self.token_expires_at is not None and self.token_expires_at <= utcnow()

    def __repr__(self) -> str:
        return f"<User {self.id} {self.email} {self.role}>"


class Assignment(db.Model):
    """An assignment from the manifest: its exercises, points and policy."""

    __tablename__ = "assignment"

    id: Mapped[int] = mapped_column(primary_key=True)
    slug: Mapped[str] = mapped_column(String(64), unique=True)
    title: Mapped[str] = mapped_column(String(200))
    description: Mapped[str] = mapped_column(Text, default="")
    exercises: Mapped[list[str]] = mapped_column(JSON, default=list)  #: names, in order
    points: Mapped[dict[str, float]] = mapped_column(JSON, default=dict)  #: name -> points
    feedback_only: Mapped[list[str]] = mapped_column(JSON, default=list)  #: 0-point exercises
    hidden: Mapped[list[str]] = mapped_column(JSON, default=list)  #: details after deadline
    opens_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    deadline: Mapped[datetime | None] = mapped_column(UTCDateTime)
    late_until: Mapped[datetime | None] = mapped_column(UTCDateTime)  #: end of late window
    late_penalty: Mapped[float] = mapped_column(Float, default=0.0)  #: fraction taken off
    max_submissions: Mapped[int | None] = mapped_column(Integer)  #: None = unlimited
    cooldown_s: Mapped[int] = mapped_column(Integer, default=0)  #: 0 = the global setting
    active: Mapped[bool] = mapped_column(Boolean, default=True)  #: False once off manifest
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)

    extensions: Mapped[list[Extension]] = relationship(back_populates="assignment",
                                                       cascade="all, delete-orphan")

    @property
    def max_score(self) -> float:
        """Points available (feedback-only exercises count zero)."""
        return float(sum(self.points.get(n, 0.0) for n in self.exercises
                         if n not in self.feedback_only))

    def extension_for(self, user: User | None) -> Extension | None:
        """The user's extension on this assignment, if any."""
        if user is None:
            return None
        return db.session.scalar(select(Extension).where(
            Extension.assignment_id == self.id, Extension.user_id == user.id))

    def deadline_for(self, user: User | None) -> datetime | None:
        """The on-time deadline for this user (an extension moves it)."""
        ext = self.extension_for(user)
        return ext.deadline if ext is not None else self.deadline

    def closes_at(self, user: User | None) -> datetime | None:
        """When this user can no longer submit: late window end, else deadline; None: never."""
        ext = self.extension_for(user)
        if ext is not None:
            if self.deadline and self.late_until:
                return max(ext.deadline + (self.late_until - self.deadline), ext.deadline)
            return ext.deadline
        return self.late_until or self.deadline

    def is_open(self, user: User | None = None, now: datetime | None = None) -> bool:
        """True while this user may submit."""
        now = now or utcnow()
        if not self.active or (self.opens_at is not None and now < self.opens_at):
            return False
        closes = self.closes_at(user)
        return closes is None or now <= closes

    def is_late(self, user: User | None, at: datetime) -> bool:
        """True when a submission at `at` is after this user's deadline."""
        deadline = self.deadline_for(user)
        return deadline is not None and at > deadline


class Extension(db.Model):
    """A per-student deadline extension on one assignment."""

    __tablename__ = "extension"
    __table_args__ = (UniqueConstraint("assignment_id", "user_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    assignment_id: Mapped[int] = mapped_column(ForeignKey("assignment.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    deadline: Mapped[datetime] = mapped_column(UTCDateTime)
    reason: Mapped[str] = mapped_column(String(500), default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    assignment: Mapped[Assignment] = relationship(back_populates="extensions")
    user: Mapped[User] = relationship()


class Submission(db.Model):
    """One uploaded file and the truth about its grading job."""

    __tablename__ = "submission"
    __table_args__ = (
        Index("ix_submission_status_enqueued", "status", "enqueued_at"),
        Index("ix_submission_user_created", "user_id", "created_at"),
        Index("ix_submission_assignment_user", "assignment_id", "user_id"),
        Index("ix_submission_graded", "graded_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    assignment_id: Mapped[int] = mapped_column(ForeignKey("assignment.id", ondelete="CASCADE"))
    filename: Mapped[str] = mapped_column(String(255), default="value.py")
    source: Mapped[str] = mapped_column(Text)
    size: Mapped[int] = mapped_column(Integer, default=0)  #: bytes as uploaded
    sha256: Mapped[str] = mapped_column(String(64))
    seed: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16), default="queued")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    regrade: Mapped[bool] = mapped_column(Boolean, default=False)  #: on the regrade queue
    regrades: Mapped[int] = mapped_column(Integer, default=0)  #: regrades requested so far
    late: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    enqueued_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    graded_at: Mapped[datetime | None] = mapped_column(UTCDateTime)  #: first grading only
    worker: Mapped[str | None] = mapped_column(String(200))
    score: Mapped[float | None] = mapped_column(Float)
    max_score: Mapped[float | None] = mapped_column(Float)
    error_kind: Mapped[str | None] = mapped_column(String(32))
    error_message: Mapped[str | None] = mapped_column(Text)
    #: the report of SPEC §5 without its `exercises` (those are the `results` rows)
    report: Mapped[dict[str, Any] | None] = mapped_column(JSON)

    user: Mapped[User] = relationship(back_populates="submissions")
    assignment: Mapped[Assignment] = relationship()
    results: Mapped[list[Result]] = relationship(
        back_populates="submission", order_by="Result.position",
        cascade="all, delete-orphan", passive_deletes=True)

    @property
    def done(self) -> bool:
        """True once graded, invalid or failed."""
        return self.status in DONE

    def queue_position(self) -> int | None:
        """1-based place among fresh queued submissions (regrades wait behind), else None."""
        if self.status != "queued":
            return None
        queued = select(func.count()).select_from(Submission).where(
            Submission.status == "queued")
        fresh_ahead = Submission.regrade.is_(False)
        if self.regrade:  # every fresh submission goes first, then older regrades
            fresh_ahead = fresh_ahead | (Submission.id < self.id)
        else:
            fresh_ahead = fresh_ahead & (Submission.id < self.id)
        return int(db.session.scalar(queued.where(fresh_ahead)) or 0) + 1

    def report_dict(self) -> dict[str, Any] | None:
        """The full SPEC §5 report (exercises from the result rows), or None before grading."""
        if self.report is None:
            return None
        data = dict(self.report)
        data["exercises"] = [r.data for r in self.results] if data.get("status") == "graded" \
            else []
        return data


class Result(db.Model):
    """One exercise's verdict, feedback, node table and diff for one submission."""

    __tablename__ = "result"
    __table_args__ = (UniqueConstraint("submission_id", "name"),
                      Index("ix_result_name_verdict", "name", "verdict"))

    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = mapped_column(
        ForeignKey("submission.id", ondelete="CASCADE"), index=True)
    position: Mapped[int] = mapped_column(Integer, default=0)
    name: Mapped[str] = mapped_column(String(64))
    title: Mapped[str] = mapped_column(String(200), default="")
    verdict: Mapped[str] = mapped_column(String(32))
    score: Mapped[float] = mapped_column(Float, default=0.0)
    max_score: Mapped[float] = mapped_column(Float, default=0.0)
    feedback_only: Mapped[bool] = mapped_column(Boolean, default=False)
    message: Mapped[str] = mapped_column(Text, default="")
    diagnosis_cause: Mapped[str | None] = mapped_column(String(64))  #: for dashboards
    diagnosis_op: Mapped[str | None] = mapped_column(String(32))
    #: the exercise's entry of the SPEC §5 report (hints, nodes, diff_dot, stdout, ...)
    data: Mapped[dict[str, Any]] = mapped_column(JSON)
    diff_svg: Mapped[str | None] = mapped_column(Text)

    submission: Mapped[Submission] = relationship(back_populates="results")

    @property
    def hints(self) -> list[str]:
        """Hints for the student."""
        return list(self.data.get("hints") or [])


class WorkerHeartbeat(db.Model):
    """A grading worker's last sign of life (queue health works with any broker)."""

    __tablename__ = "worker_heartbeat"

    hostname: Mapped[str] = mapped_column(String(200), primary_key=True)
    pid: Mapped[int] = mapped_column(Integer, default=0)
    queues: Mapped[str] = mapped_column(String(200), default="")
    concurrency: Mapped[int] = mapped_column(Integer, default=1)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_seen: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
