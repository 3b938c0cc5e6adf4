"""`micrograde demo`: an instructor, a class of students and their graded submissions.

Every distinct source (`grader.demo_sources`: a correct lecture-style `Value`, one variant
per diagnosed bug class, a few hostile ones) is graded ONCE by the real pipeline in the
sandbox, diffs included; each demo submission of that source stores that report (same
source, same seed, same result). Submission times are spread over the week before an
assignment's deadline (or before now when it has none), some late ones inside a late window.

The shipped manifest has no deadline, so the demo also writes its own manifest into the
instance folder: the configured assignments plus `demo-late`, a copy of the first one whose
deadline passed a day ago (late window open, a penalty, a hidden exercise), and seeds
that too, with two extensions, so the dashboards show late work.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

from flask import current_app
from sqlalchemy import delete, func, select

from grader.demo_sources import BUGS, HOSTILE, VARIANTS, variant_source
from grader.extensions import db
from grader.grading.pipeline import grade
from grader.grading.report import Report
from grader.models import Assignment, Extension, Submission, User, utcnow

log = logging.getLogger(__name__)

__all__ = ["BUGS", "HOSTILE", "VARIANTS", "variant_source"]  # re-exported for callers

DOMAIN = "demo.example.org"
INSTRUCTOR = f"instructor@{DOMAIN}"
PASSWORD = "micrograde-demo"
LATE_SLUG = "demo-late"
MANIFEST_NAME = "demo-assignments.toml"
LATE_PENALTY = 0.25
NAMES = ("Ada Okafor", "Ben Carter", "Chen Wei", "Dana Levi", "Emil Novak", "Fatima Zahra",
         "Goran Petrov", "Hana Sato", "Ivan Petrenko", "Julia Costa", "Kwame Mensah",
         "Lena Fischer", "Mateo Rossi", "Nadia Haddad", "Omar Farouk", "Priya Nair",
         "Quinn Murphy", "Rosa Ortiz", "Sven Lindqvist", "Tariq Aziz", "Uma Iyer",
         "Victor Silva", "Wen Li", "Yara Nasser")


class Graded(NamedTuple):
    """One variant's report and diff pictures."""

    report: Report
    svgs: dict[str, str]


#: how a class behaves, one kind per student in turn (shuffled per assignment)
KINDS = ("fix", "stuck", "fix_twice", "correct", "fix", "hostile_then_fix", "stuck",
         "fix", "never", "fix_twice", "hostile", "stuck")


def stories(n: int, rng: random.Random) -> list[list[str]]:
    """What each of n students submits, in order; every bug class and hostile kind is used."""
    kinds = [KINDS[i % len(KINDS)] for i in range(n)]
    rng.shuffle(kinds)
    hostile, bugs = iter(HOSTILE * n), iter(BUGS * n)
    out: list[list[str]] = []
    for kind in kinds:
        if kind in ("never", "correct"):
            out.append([] if kind == "never" else ["correct"])
            continue
        bug, other = next(bugs), rng.choice(BUGS)
        if kind == "fix":
            out.append([bug, "correct"])
        elif kind == "fix_twice":
            out.append([bug, other, "correct"])
        elif kind == "stuck":
            out.append([bug] * rng.randint(1, 2) + ([other] if rng.random() < 0.5 else []))
        else:
            out.append([next(hostile), bug] + (["correct"] if kind == "hostile_then_fix"
                                               else []))
    return out


def grade_variants(a: Assignment, names: set[str]) -> dict[str, Graded]:
    """Grade each variant once on the assignment's exercises (real pipeline, diffs rendered)."""
    from worker.store import render_svgs

    conf = current_app.config
    limits, k = conf["LIMITS"], int(conf.get("INSTANCES_K", 3))
    exercises, points = list(a.exercises), dict(a.points or {})
    feedback = tuple(a.feedback_only or ())

    def one(name: str) -> tuple[str, Graded]:
        report = grade(variant_source(name), exercises, None, limits, k=k, points=points,
                       feedback_only=feedback)
        return name, Graded(report, render_svgs(report) if report.status == "graded" else {})

    with ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 2))) as pool:
        return dict(pool.map(one, sorted(names)))


def _times(rng: random.Random, n: int, anchor: datetime, late_until: datetime | None
           ) -> list[datetime]:
    """n increasing submission times in the week before `anchor` (the last maybe late)."""
    start = anchor - timedelta(days=6) + timedelta(hours=rng.uniform(0, 72))
    out, t = [], start
    for _ in range(n):
        t = t + timedelta(hours=rng.uniform(1, 30) * rng.random() ** 2 + 0.2)
        out.append(t)
    # most students submit close to the deadline: squeeze towards it
    out = [anchor - (anchor - x) * rng.uniform(0.25, 1.0) if x < anchor else x for x in out]
    out.sort()
    if late_until is not None and rng.random() < 0.2:
        out[-1] = anchor + (late_until - anchor) * rng.uniform(0.05, 0.8)
    return [min(x, utcnow() - timedelta(minutes=5)) for x in out]


def _toml_when(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def manifest_text(configured: str, now: datetime) -> str:
    """The configured manifest plus `demo-late` (unless it already declares that slug)."""
    from exercises import manifest

    specs = manifest.parse(configured)
    if any(s.slug == LATE_SLUG for s in specs):
        return configured
    base = specs[0]
    deadline = (now - timedelta(days=1)).replace(minute=0, second=0, microsecond=0)
    graded = [n for n in base.exercises if n not in base.feedback_only]
    lines = [
        "", "", "# Added by `micrograde demo`: a copy of the first assignment whose deadline",
        "# has passed, so the demo shows late submissions, a penalty and extensions.",
        "[[assignment]]", f"slug = {json.dumps(LATE_SLUG)}",
        f"title = {json.dumps(base.title + ' (demo: deadline passed)')}",
        f"description = {json.dumps(base.description)}",
        f"exercises = {json.dumps(list(base.exercises))}",
        f"feedback_only = {json.dumps(list(base.feedback_only))}",
        f"hidden = {json.dumps(graded[-1:])}",
        f"deadline = {_toml_when(deadline)}",
        f"late_until = {_toml_when(deadline + timedelta(days=3))}",
        f"late_penalty = {LATE_PENALTY}", "", "[assignment.points]"]
    lines += [f"{json.dumps(n)} = {p}" for n, p in base.points.items()]
    text = configured.rstrip("\n") + "\n".join(lines) + "\n"
    manifest.parse(text)  # still a valid manifest
    return text


def install_manifest(path: Path, renew: bool = False) -> Path:
    """Write the demo manifest to `path` (an existing one is kept unless `renew`), built
    from the configured manifest, and load it into the database."""
    from exercises import manifest
    from grader.submissions import sync_manifest

    if renew or not path.exists():
        configured = Path(current_app.config["MANIFEST"]).read_text(encoding="utf-8")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(manifest_text(configured, utcnow()), encoding="utf-8")
    sync_manifest(manifest.load(path))
    return path


def remove_demo() -> int:
    """Delete the demo users (their submissions go with them); return how many."""
    ids = list(db.session.scalars(select(User.id).where(User.email.like(f"%@{DOMAIN}"))))
    if ids:
        db.session.execute(delete(Submission).where(Submission.user_id.in_(ids)))
        db.session.execute(delete(Extension).where(Extension.user_id.in_(ids)))
        db.session.execute(delete(User).where(User.id.in_(ids)))
        db.session.commit()
    return len(ids)


def seeded(password: str = PASSWORD) -> dict[str, Any] | None:
    """The demo already in this database (accounts, counts), else None.

    `password` is reported only when it is the instructor's real one.
    """
    teacher = db.session.scalar(select(User).where(User.email == INSTRUCTOR))
    if teacher is None:
        return None
    students = list(db.session.scalars(select(User.email).where(
        User.email.like(f"%@{DOMAIN}"), User.role == "student").order_by(User.email)))
    made = db.session.scalar(select(func.count()).select_from(Submission).join(User)
                             .where(User.email.like(f"%@{DOMAIN}")))
    slugs = list(db.session.scalars(select(Assignment.slug).where(Assignment.active)
                                    .order_by(Assignment.id)))
    return {"instructor": INSTRUCTOR, "students": students, "submissions": made,
            "password": password if teacher.check_password(password) else None,
            "assignments": slugs}


def seed(students: int = 24, password: str = PASSWORD, rng_seed: int = 2027) -> dict:
    """Create the instructor, students and graded submissions on every active assignment."""
    from worker.store import save

    rng = random.Random(rng_seed)
    people = [(INSTRUCTOR, "Demo Instructor", "instructor")] + [
        (f"student{i + 1:02d}@{DOMAIN}", NAMES[i % len(NAMES)] + (
            "" if i < len(NAMES) else f" {i // len(NAMES) + 1}"), "student")
        for i in range(students)]
    users = [User(email=e, name=n, role=r) for e, n, r in people]
    for u in users:
        u.set_password(password)
    db.session.add_all(users)
    db.session.commit()
    users = users[1:]
    assignments = list(db.session.scalars(select(Assignment).where(Assignment.active)
                                          .order_by(Assignment.id)))
    made = 0
    reports: dict[tuple, dict[str, Graded]] = {}   # assignments grading alike share reports
    for a in assignments:
        plan = dict(zip((u.id for u in users), stories(len(users), rng), strict=True))
        needed = {v for s in plan.values() for v in s}
        alike = (tuple(a.exercises), json.dumps(a.points, sort_keys=True),
                 tuple(a.feedback_only or ()))
        known = reports.setdefault(alike, {})
        known.update(grade_variants(a, needed - set(known)))
        anchor = a.deadline or utcnow()
        if a.deadline is not None:
            for u in rng.sample(users, k=min(2, len(users))):
                db.session.add(Extension(assignment_id=a.id, user_id=u.id, reason="demo",
                                         deadline=a.deadline + timedelta(days=2)))
            db.session.commit()
        for u in users:
            for variant, t in zip(plan[u.id], _times(rng, len(plan[u.id]), anchor,
                                                     a.late_until), strict=True):
                g = known[variant]
                src = variant_source(variant)
                sub = Submission(user_id=u.id, assignment_id=a.id, filename="value.py",
                                 source=src, size=len(src.encode()), seed=g.report.seed,
                                 sha256=hashlib.sha256(src.encode()).hexdigest(),
                                 status="running", late=a.is_late(u, t),
                                 created_at=t, enqueued_at=t, attempts=1,
                                 started_at=t + timedelta(seconds=rng.uniform(0.05, 2)),
                                 worker="demo@localhost")
                db.session.add(sub)
                db.session.commit()
                save(sub.id, g.report, g.svgs)
                wall = float(g.report.timing.get("wall_s") or 0.5)
                sub.finished_at = sub.graded_at = sub.started_at + timedelta(seconds=wall)
                db.session.commit()
                made += 1
    log.info("demo: %d students, %d submissions", len(users), made)
    return {"instructor": INSTRUCTOR, "students": [u.email for u in users],
            "password": password, "submissions": made,
            "assignments": [a.slug for a in assignments]}
