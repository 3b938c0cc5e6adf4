"""Shaping stored submissions and results for the student pages (no HTTP, no markup)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select

from grader.extensions import db
from grader.grading.compare import close
from grader.models import Assignment, Result, Submission, User, utcnow
from grader.policy import Policy

log = logging.getLogger(__name__)

VERDICTS = {
    "passed": "Passed", "wrong_forward": "Wrong forward pass",
    "wrong_gradient": "Wrong gradient", "missing_feature": "Missing operation",
    "error": "Raised an error", "timeout": "Timed out", "memory_limit": "Out of memory",
    "crashed": "Crashed",
}
STATUSES = {"queued": "Queued", "running": "Grading", "graded": "Graded",
            "invalid": "Not gradable", "failed": "Grading failed"}
INVALID = {
    "empty": "The file is empty", "too_large": "The file is too large",
    "not_utf8": "The file is not UTF-8 text", "syntax_error": "Syntax error",
    "no_value_class": "No class named Value", "import_error": "Importing the file failed",
    "import_timeout": "Importing the file took too long",
}
BIG_TABLE = 40  #: above this many nodes, the table opens on the wrong rows only


@dataclass
class Cell:
    """One expected-vs-actual number."""

    expected: float | None
    actual: float | None
    wrong: bool


@dataclass
class NodeLine:
    """One row of a node or parameter table."""

    name: str
    op: str
    status: str
    cells: dict[str, Cell]

    @property
    def wrong(self) -> bool:
        """True unless the row matched."""
        return self.status != "ok"


@dataclass
class ExerciseView:
    """One exercise's result as the page shows it."""

    result: Result
    hidden: bool
    nodes: list[NodeLine] = field(default_factory=list)
    params: list[NodeLine] = field(default_factory=list)

    @property
    def data(self) -> dict[str, Any]:
        """The stored report entry."""
        return self.result.data or {}

    @property
    def verdict_label(self) -> str:
        """The verdict in words."""
        return VERDICTS.get(self.result.verdict, self.result.verdict)

    @property
    def wrong_nodes(self) -> list[NodeLine]:
        """Rows that did not match."""
        return [n for n in self.nodes if n.wrong]

    @property
    def big(self) -> bool:
        """True when the node table is long enough to open on its wrong rows only."""
        return len(self.nodes) > BIG_TABLE

    @property
    def has_diff(self) -> bool:
        """True when a diff picture can be shown."""
        return bool(self.result.diff_svg) and not self.hidden


def node_lines(rows: list[dict[str, Any]], keys: tuple[str, ...]) -> list[NodeLine]:
    """Table rows from stored node (or parameter) dicts."""
    out = []
    for row in rows or []:
        if not isinstance(row, dict):
            continue
        exp, act = row.get("expected") or {}, row.get("actual") or {}
        cells = {}
        for k in keys:
            if k not in exp and k not in act:
                continue
            e, a = exp.get(k), act.get(k)
            wrong = e is not None and not close(a, e) if isinstance(e, int | float) else False
            cells[k] = Cell(expected=e, actual=a, wrong=wrong or (a is None and e is not None))
        out.append(NodeLine(name=str(row.get("name", "")), op=str(row.get("op") or ""),
                            status=str(row.get("status") or "ok"), cells=cells))
    return out


def table_keys(lines: list[NodeLine]) -> list[str]:
    """The quantities (data, grad, updated) any row of a table has, in that order."""
    present = {k for line in lines for k in line.cells}
    return [k for k in ("data", "grad", "updated") if k in present]


def hidden_exercises(sub: Submission, viewer: User) -> set[str]:
    """Exercises whose details a student may not see yet.

    A hidden exercise stays hidden until the student can no longer submit (their late
    window, shifted by any extension, has closed), as on the dashboard and in exports.
    """
    a = sub.assignment
    if viewer.is_instructor or not a.hidden:
        return set()
    policy = Policy.of(a)
    ext = a.extension_for(sub.user)
    now = utcnow()
    extension = ext.deadline if ext is not None else None
    return {name for name in a.hidden if not policy.details_visible(name, now, extension)}


def exercise_views(sub: Submission, viewer: User) -> list[ExerciseView]:
    """The submission's results, ready for the page."""
    hidden = hidden_exercises(sub, viewer)
    views = []
    for r in sub.results:
        view = ExerciseView(result=r, hidden=r.name in hidden)
        if not view.hidden:
            view.nodes = node_lines(r.data.get("nodes") or [], ("data", "grad", "updated"))
            view.params = node_lines(r.data.get("params") or [], ("data", "grad", "updated"))
        views.append(view)
    return views


def attempt_number(sub: Submission) -> int:
    """Which of the student's submissions to this assignment this is (1-based)."""
    return int(db.session.scalar(select(func.count()).select_from(Submission).where(
        Submission.user_id == sub.user_id, Submission.assignment_id == sub.assignment_id,
        Submission.id <= sub.id)) or 0)


@dataclass
class AssignmentSummary:
    """One row of the assignment list."""

    assignment: Assignment
    deadline: Any
    closes_at: Any
    open: bool
    attempts: int
    best: float | None
    last: Submission | None


def summaries(user: User) -> list[AssignmentSummary]:
    """Every active assignment with this user's best score, attempts and last submission."""
    rows = list(db.session.scalars(select(Assignment).where(Assignment.active.is_(True))
                                   .order_by(Assignment.deadline.is_(None),
                                             Assignment.deadline, Assignment.id)))
    stats = {aid: (n, best) for aid, n, best in db.session.execute(
        select(Submission.assignment_id, func.count(), func.max(Submission.score))
        .where(Submission.user_id == user.id).group_by(Submission.assignment_id))}
    out = []
    for a in rows:
        n, best = stats.get(a.id, (0, None))
        last = db.session.scalar(select(Submission).where(
            Submission.user_id == user.id, Submission.assignment_id == a.id)
            .order_by(Submission.id.desc()).limit(1)) if n else None
        out.append(AssignmentSummary(assignment=a, deadline=a.deadline_for(user),
                                     closes_at=a.closes_at(user), open=a.is_open(user),
                                     attempts=int(n), best=best, last=last))
    return out


def status_json(sub: Submission) -> dict[str, Any]:
    """What the live submission page polls for."""
    out: dict[str, Any] = {
        "id": sub.id, "status": sub.status, "label": STATUSES.get(sub.status, sub.status),
        "done": sub.done, "attempts": sub.attempts, "queue_position": None,
        "score": sub.score, "max_score": sub.max_score,
    }
    if sub.status == "queued":
        pos = sub.queue_position()
        out["queue_position"] = pos
        out["detail"] = ("next in line" if pos == 1 else f"#{pos} in the queue" if pos
                         else "waiting")
        if sub.attempts:
            out["detail"] += " (retrying after an interruption)"
    elif sub.status == "running":
        out["detail"] = "running your Value on the exercises"
    elif sub.status == "graded":
        out["detail"] = f"score {sub.score:g} / {sub.max_score:g}" if sub.score is not None \
            else "graded"
    elif sub.status == "invalid":
        out["detail"] = INVALID.get(sub.error_kind or "", "could not be graded")
    else:
        out["detail"] = sub.error_message or "grading failed"
    return out
