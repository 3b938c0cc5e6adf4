"""Instructor pages: assignments, dashboard, student table, one student, one submission."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from flask import abort, jsonify, render_template, request
from flask.typing import ResponseReturnValue
from sqlalchemy import select

from grader.auth.forms import ActionForm
from grader.extensions import db
from grader.health import queue_health
from grader.instructor import bp
from grader.instructor.dashboard import build, mistake_students, summary_json
from grader.instructor.data import Course, load_course
from grader.instructor.forms import ExtensionForm
from grader.models import Assignment, Submission, User
from grader.models_course import RegradeBatch
from grader.policy import ON_TIME, Policy, StudentGrade
from grader.stats import mistake_label

log = logging.getLogger(__name__)

SORTS = ("name", "email", "best", "last", "attempts", "last_at", "late")


def get_assignment(slug: str) -> Assignment:
    """The assignment with this slug (active or not), else 404."""
    a = db.session.scalar(select(Assignment).where(Assignment.slug == slug))
    if a is None:
        abort(404)
    return a


def latest_batch(a: Assignment) -> RegradeBatch | None:
    """The assignment's most recent class-wide regrade."""
    return db.session.scalar(select(RegradeBatch).where(RegradeBatch.assignment_id == a.id)
                             .order_by(RegradeBatch.id.desc()).limit(1))


@bp.get("/")
def index() -> ResponseReturnValue:
    """Every assignment with its headline numbers, and the queue's health."""
    rows = []
    for a in db.session.scalars(select(Assignment).order_by(Assignment.active.desc(),
                                                            Assignment.id)):
        course = load_course(a)
        graded = [g.best or 0.0 for g in course.grades.values() if g.graded]
        rows.append({"a": a, "submissions": len(course.subs), "students": len(course.grades),
                     "enrolled": sum(1 for u in course.users.values() if not u.is_instructor),
                     "mean": sum(graded) / len(graded) if graded else None})
    return render_template("instructor/index.html", rows=rows, health=queue_health())


@bp.get("/<slug>/")
def dashboard(slug: str) -> ResponseReturnValue:
    """Charts, mistakes, queue health, policy, regrades and exports of one assignment."""
    a = get_assignment(slug)
    course = load_course(a)
    form = ExtensionForm()
    form.set_students(course.students)
    batch = latest_batch(a)
    return render_template("instructor/dashboard.html", a=a, course=course,
                           dash=build(course), health=queue_health(), batch=batch,
                           progress=batch.progress() if batch else None,
                           action=ActionForm(), ext_form=form)


@bp.get("/<slug>/stats.json")
def stats_json(slug: str) -> ResponseReturnValue:
    """The dashboard's numbers and the queue's health as JSON."""
    a = get_assignment(slug)
    return jsonify({"assignment": a.slug, **summary_json(build(load_course(a))),
                    "queue": queue_health()})


@dataclass
class StudentRow:
    """One line of the student table."""

    user: User
    grade: StudentGrade

    def key(self, sort: str) -> Any:
        """The value a column sorts by (None: no value, listed last either way)."""
        g = self.grade
        return {
            "name": (self.user.name or self.user.email).lower(),
            "email": self.user.email.lower(),
            "best": g.best,
            "last": g.last,
            "attempts": g.attempts,
            "last_at": g.last_at,
            "late": (int(g.best_late), int(g.ever_late)) if g.graded or g.ever_late else None,
        }[sort]


def student_rows(course: Course, q: str = "", sort: str = "name", desc: bool = False,
                 only: set[int] | None = None) -> list[StudentRow]:
    """The student table: filtered by `q` (name or email) and `only`, sorted by `sort`."""
    needle = q.strip().lower()
    rows = [StudentRow(u, course.grade(u.id)) for u in course.students
            if (only is None or u.id in only) and (
                not needle or needle in u.email.lower() or needle in (u.name or "").lower())]
    if sort not in SORTS:
        sort = "name"
    present = [r for r in rows if r.key(sort) is not None]
    absent = [r for r in rows if r.key(sort) is None]
    present.sort(key=lambda r: r.user.email)  # ties stay by email either way (stable sort)
    present.sort(key=lambda r: r.key(sort), reverse=desc)
    absent.sort(key=lambda r: r.user.email)
    return present + absent


@bp.get("/<slug>/students")
def students(slug: str) -> ResponseReturnValue:
    """The student table with search (`q`), sort (`sort`, `dir`) and a mistake filter."""
    a = get_assignment(slug)
    course = load_course(a)
    q, sort = request.args.get("q", ""), request.args.get("sort", "name")
    desc = request.args.get("dir") == "desc"
    cause, op = request.args.get("cause") or None, request.args.get("op") or None
    only = mistake_students(course, cause, op) if cause else None
    rows = student_rows(course, q, sort, desc, only)
    return render_template("instructor/students.html", a=a, course=course, rows=rows, q=q,
                           sort=sort if sort in SORTS else "name", desc=desc, cause=cause,
                           op=op, mistake=mistake_label(cause, op) if cause else None)


@bp.get("/<slug>/students/<int:user_id>")
def student(slug: str, user_id: int) -> ResponseReturnValue:
    """One student's submissions on an assignment, their grade and extension."""
    a = get_assignment(slug)
    user = db.session.get(User, user_id)
    if user is None:
        abort(404)
    course = load_course(a)
    subs = list(db.session.scalars(select(Submission).where(
        Submission.assignment_id == a.id, Submission.user_id == user.id)
        .order_by(Submission.created_at.desc(), Submission.id.desc())))
    ext = course.extensions.get(user.id)
    when = {s.id: course.policy.timeliness(s.created_at, ext.deadline if ext else None)
            for s in subs}
    form = ExtensionForm()
    form.set_students([user])
    form.user_id.data = user.id
    if ext is not None:
        form.deadline.data, form.reason.data = ext.deadline.replace(tzinfo=None), ext.reason
    return render_template("instructor/student.html", a=a, user=user, subs=subs, when=when,
                           grade=course.grade(user.id), ext=ext, ext_form=form,
                           policy=course.policy, action=ActionForm(), ON_TIME=ON_TIME)


def timings(sub: Submission) -> list[tuple[str, float | None]]:
    """Queue wait, grading time and turnaround of a submission, in seconds."""
    def span(a: Any, b: Any) -> float | None:
        return round((b - a).total_seconds(), 3) if a and b else None

    report = sub.report or {}
    return [("waited in queue", span(sub.enqueued_at, sub.started_at)),
            ("graded in", span(sub.started_at, sub.finished_at)),
            ("pipeline wall time", (report.get("timing") or {}).get("wall_s")),
            ("submit to result", span(sub.created_at, sub.finished_at))]


@bp.get("/submissions/<int:submission_id>")
def submission(submission_id: int) -> ResponseReturnValue:
    """Any submission in full: metadata, seed, timings, every exercise, output, the source."""
    from grader.student.submission import results_context

    sub = db.session.get(Submission, submission_id)
    if sub is None:
        abort(404)
    a = sub.assignment
    ext = a.extension_for(sub.user)
    course_policy = Policy.of(a)
    when = course_policy.timeliness(sub.created_at, ext.deadline if ext else None)
    siblings = list(db.session.scalars(select(Submission.id).where(
        Submission.assignment_id == a.id, Submission.user_id == sub.user_id)
        .order_by(Submission.created_at, Submission.id)))
    attempt = siblings.index(sub.id) + 1
    return render_template(
        "instructor/submission.html", a=a, when=when, timings=timings(sub), attempt=attempt,
        attempts=len(siblings), prev_id=siblings[attempt - 2] if attempt > 1 else None,
        next_id=siblings[attempt] if attempt < len(siblings) else None,
        adjusted=course_policy.adjusted(sub.score, when) if sub.score is not None else None,
        action=ActionForm(),
        **results_context(sub))


@bp.get("/submissions/<int:submission_id>/report.json")
def report_json(submission_id: int) -> ResponseReturnValue:
    """The stored report (SPEC §5 shape) of a submission."""
    sub = db.session.get(Submission, submission_id)
    if sub is None:
        abort(404)
    response = jsonify(sub.report_dict() or {"status": sub.status, "report": None})
    response.headers["Content-Disposition"] = f'attachment; filename="report-{sub.id}.json"'
    return response
