"""`micrograde demo`: an instructor, a class of students and their graded submissions.

Every distinct source (a correct lecture-style `Value`, one variant per diagnosed bug
class, a few hostile ones) is graded ONCE by the real pipeline in the sandbox, diffs
included; each demo submission of that source stores that report (same source, same seed,
same result). Submission times are spread over the week before the assignment's deadline
(or before now when it has none), with some late ones when the manifest has a late window.
"""

from __future__ import annotations

import hashlib
import logging
import os
import random
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import NamedTuple

from flask import current_app
from sqlalchemy import delete, select

from grader.extensions import db
from grader.grading.pipeline import grade
from grader.grading.report import Report
from grader.models import Assignment, Extension, Submission, User, utcnow

log = logging.getLogger(__name__)

DOMAIN = "demo.example.org"
INSTRUCTOR = f"instructor@{DOMAIN}"
PASSWORD = "micrograde-demo"
NAMES = ("Ada Okafor", "Ben Carter", "Chen Wei", "Dana Levi", "Emil Novak", "Fatima Zahra",
         "Goran Petrov", "Hana Sato", "Ivan Petrenko", "Julia Costa", "Kwame Mensah",
         "Lena Fischer", "Mateo Rossi", "Nadia Haddad", "Omar Farouk", "Priya Nair",
         "Quinn Murphy", "Rosa Ortiz", "Sven Lindqvist", "Tariq Aziz", "Uma Iyer",
         "Victor Silva", "Wen Li", "Yara Nasser")

BASE = '''import math


class Value:
    def __init__(self, data, _children=(), _op=""):
        self.data = data
        self.grad = 0.0
        self._backward = lambda: None
        self._prev = set(_children)
        self._op = _op

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data + other.data, (self, other), "+")

        def _backward():
            self.grad += out.grad
            other.grad += out.grad
        out._backward = _backward
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data * other.data, (self, other), "*")

        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out._backward = _backward
        return out

    def __pow__(self, k):
        out = Value(self.data ** k, (self,), f"**{k}")

        def _backward():
            self.grad += k * self.data ** (k - 1) * out.grad
        out._backward = _backward
        return out

    def __radd__(self, other):
        return self + other

    def __rmul__(self, other):
        return self * other

    def __neg__(self):
        return self * -1

    def __sub__(self, other):
        return self + (-other)

    def __rsub__(self, other):
        return other + (-self)

    def __truediv__(self, other):
        return self * other ** -1

    def __rtruediv__(self, other):
        return other * self ** -1

    def tanh(self):
        x = self.data
        t = (math.exp(2 * x) - 1) / (math.exp(2 * x) + 1)
        out = Value(t, (self,), "tanh")

        def _backward():
            self.grad += (1 - t ** 2) * out.grad
        out._backward = _backward
        return out

    def exp(self):
        out = Value(math.exp(self.data), (self,), "exp")

        def _backward():
            self.grad += out.data * out.grad
        out._backward = _backward
        return out

    def relu(self):
        out = Value(max(0.0, self.data), (self,), "relu")

        def _backward():
            self.grad += (out.data > 0) * out.grad
        out._backward = _backward
        return out

    def backward(self):
        topo, seen = [], set()

        def build(v):
            if v not in seen:
                seen.add(v)
                for child in v._prev:
                    build(child)
                topo.append(v)
        build(self)
        self.grad = 1.0
        for v in reversed(topo):
            v._backward()
'''
COERCE = "        other = other if isinstance(other, Value) else Value(other)\n"
BFS = '''    def backward(self):
        self.grad = 1.0
        queue = [self]
        while queue:
            v = queue.pop(0)
            v._backward()
            queue.extend(v._prev)
'''
#: variant -> replacements applied to BASE (each must match)
VARIANTS: dict[str, list[tuple[str, str]]] = {
    "correct": [],
    "overwrite": [("self.grad += out.grad\n            other.grad += out.grad",
                   "self.grad = out.grad\n            other.grad = out.grad")],
    "mul_backward": [("self.grad += other.data * out.grad", "self.grad += self.data * out.grad")],
    "tanh_backward": [("(1 - t ** 2)", "(1 - x ** 2)")],
    "tanh_forward": [("(math.exp(2 * x) - 1) / (math.exp(2 * x) + 1)",
                      "(math.exp(x) - 1) / (math.exp(x) + 1)")],
    "pow_backward": [("k * self.data ** (k - 1)", "self.data ** (k - 1)")],
    "rsub_sign": [("return other + (-self)", "return self + (-other)")],
    "no_radd": [("    def __radd__(self, other):\n        return self + other\n\n", "")],
    "no_coercion": [(COERCE, ""), (COERCE, "")],
    "unseeded": [("        self.grad = 1.0\n        for v", "        for v")],
    "topo_bfs": [(BASE[BASE.index("    def backward(self):"):], BFS)],
    "radd_recursion": [("def __radd__(self, other):\n        return self + other",
                        "def __radd__(self, other):\n        return other + self")],
    "hostile_exit": [("        topo, seen = [], set()", "        import os\n        os._exit(3)")],
    "hostile_memory": [("        topo, seen = [], set()",
                        "        hog = [bytearray(1 << 20) for _ in range(4096)]\n"
                        "        topo, seen = [], set()")],
    "syntax_error": [("def tanh(self):", "def tanh(self)")],
    "import_crash": [("import math\n", "import math\nraise SystemExit('training run')\n")],
}
BUGS = [v for v in VARIANTS if v not in ("correct", "hostile_exit", "hostile_memory",
                                          "syntax_error", "import_crash")]
HOSTILE = ["hostile_exit", "hostile_memory", "syntax_error", "import_crash"]


def variant_source(name: str) -> str:
    """The demo source of a variant."""
    text = BASE
    for old, new in VARIANTS[name]:
        if old not in text:
            raise ValueError(f"demo variant {name}: {old[:40]!r} not found")
        text = text.replace(old, new, 1)
    return f'"""A micrograd Value ({name.replace("_", " ")})."""\n' + text


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
    if late_until is not None and rng.random() < 0.15:
        out[-1] = anchor + (late_until - anchor) * rng.uniform(0.05, 0.8)
    return [min(x, utcnow() - timedelta(minutes=5)) for x in out]


def remove_demo() -> int:
    """Delete the demo users (their submissions go with them); return how many."""
    ids = list(db.session.scalars(select(User.id).where(User.email.like(f"%@{DOMAIN}"))))
    if ids:
        db.session.execute(delete(Submission).where(Submission.user_id.in_(ids)))
        db.session.execute(delete(Extension).where(Extension.user_id.in_(ids)))
        db.session.execute(delete(User).where(User.id.in_(ids)))
        db.session.commit()
    return len(ids)


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
    assignments = list(db.session.scalars(select(Assignment).where(Assignment.active)))
    made = 0
    for a in assignments:
        plan = dict(zip((u.id for u in users), stories(len(users), rng), strict=True))
        needed = {v for s in plan.values() for v in s}
        graded = grade_variants(a, needed)
        anchor = a.deadline or utcnow()
        if a.deadline is not None:
            for u in rng.sample(users, k=min(2, len(users))):
                db.session.add(Extension(assignment_id=a.id, user_id=u.id, reason="demo",
                                         deadline=a.deadline + timedelta(days=2)))
            db.session.commit()
        for u in users:
            for variant, t in zip(plan[u.id], _times(rng, len(plan[u.id]), anchor,
                                                     a.late_until), strict=True):
                g = graded[variant]
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

