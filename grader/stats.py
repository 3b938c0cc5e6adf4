"""Dashboard numbers: pure functions over submission and result rows.

Conventions the dashboard states next to each chart: the score histogram and the pass
rates are over students (each student's counted submission: the best one under the
policy); diagnoses and mistakes count the students who made them in ANY submission
("ever") and those whose latest submission still does ("now").
"""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SubRow:
    """What the statistics read of a submission."""

    id: int
    user_id: int
    created_at: datetime
    status: str
    score: float | None = None
    max_score: float | None = None


@dataclass(frozen=True)
class ResultRow:
    """What the statistics read of one exercise's result."""

    submission_id: int
    name: str
    verdict: str
    cause: str | None = None
    op: str | None = None
    score: float = 0.0
    max_score: float = 0.0
    feedback_only: bool = False


@dataclass(frozen=True)
class Bin:
    """One histogram bar: scores in [lo, hi) (the last bin includes hi)."""

    lo: float
    hi: float
    count: int


@dataclass(frozen=True)
class PassRate:
    """How many students' counted submissions passed an exercise."""

    name: str
    passed: int
    total: int

    @property
    def rate(self) -> float:
        """Passed / total, 0 when nobody was graded."""
        return self.passed / self.total if self.total else 0.0


@dataclass(frozen=True)
class Bucket:
    """Submissions made in [start, start + width), split by timeliness."""

    start: datetime
    on_time: int
    late: int

    @property
    def total(self) -> int:
        """All submissions in the bucket."""
        return self.on_time + self.late


@dataclass(frozen=True)
class Mistake:
    """A diagnosis (cause + operation) and how many students it hit."""

    cause: str
    op: str | None
    label: str
    students: int          #: students with it in some submission
    now: int               #: students whose latest submission still has it
    submissions: int       #: submissions showing it
    of: int                #: students with a graded submission (the percentages' base)

    @property
    def pct(self) -> float:
        """Share of graded students who ever made this mistake, in percent."""
        return 100.0 * self.students / self.of if self.of else 0.0

    @property
    def pct_now(self) -> float:
        """Share of graded students whose latest submission still makes it, in percent."""
        return 100.0 * self.now / self.of if self.of else 0.0


#: operations as the dashboard names them
OP_NAMES = {
    "add": "add (+)", "mul": "mul (*)", "sub": "sub (-)", "neg": "neg (-v)", "pow": "pow (**)",
    "truediv": "div (/)", "rsub": "rsub (number - v)", "rtruediv": "rtruediv (number / v)",
    "radd": "radd (number + v)", "rmul": "rmul (number * v)", "add_number": "v + number",
    "mul_number": "v * number", "sub_number": "v - number", "truediv_number": "v / number",
    "tanh": "tanh", "exp": "exp", "relu": "relu", "backward": "backward()", "init": "Value(x)",
}
#: causes that name an operation's forward or backward
BY_OPERATION = ("local_derivative", "forward_op", "missing_op", "overwrite", "topo_order",
                "unseeded", "recursion")
#: causes about gradient flow as a whole: grouped whatever node they showed up at
OP_AGNOSTIC = ("overwrite", "topo_order", "unseeded")


def op_name(op: str | None) -> str:
    """An operation id as the dashboard shows it."""
    return OP_NAMES.get(op or "", op or "?")


def mistake_label(cause: str, op: str | None) -> str:
    """A short description of a diagnosis, e.g. 'wrong tanh backward'."""
    name = op_name(op)
    labels = {
        "local_derivative": f"wrong {name} backward",
        "forward_op": f"wrong {name} forward",
        "missing_op": f"missing {name}",
        "overwrite": "= instead of += (gradient overwritten)",
        "topo_order": "backward not in topological order",
        "unseeded": "output gradient never seeded",
        "recursion": f"recursion too deep in {name}" if op else "recursion too deep",
        "exception": f"exception in {name}" if op else "exception",
        "timeout": "time limit",
        "memory": "memory limit",
    }
    return labels.get(cause, cause.replace("_", " ") + (f" ({name})" if op else ""))


def score_histogram(scores: Iterable[float], max_score: float, bins: int = 10) -> list[Bin]:
    """Counts of scores in `bins` equal bins over [0, max_score]."""
    values = list(scores)
    if max_score <= 0:
        return [Bin(0.0, 0.0, len(values))]
    width = max_score / bins
    counts = [0] * bins
    for v in values:
        i = min(bins - 1, max(0, math.floor(v / width + 1e-9)))
        counts[i] += 1
    return [Bin(round(i * width, 6), round((i + 1) * width, 6), c)
            for i, c in enumerate(counts)]


def pass_rates(results: Iterable[ResultRow], counted: Iterable[int],
               exercises: Iterable[str]) -> list[PassRate]:
    """Per exercise: how many of the counted submissions (one per student) passed it."""
    ids = set(counted)
    passed: dict[str, int] = defaultdict(int)
    for r in results:
        if r.submission_id in ids and r.verdict == "passed":
            passed[r.name] += 1
    return [PassRate(name, passed[name], len(ids)) for name in exercises]


STEPS = (timedelta(hours=1), timedelta(hours=3), timedelta(hours=6), timedelta(hours=12),
         timedelta(days=1), timedelta(days=7))
EPOCH = datetime(1970, 1, 5, tzinfo=UTC)  #: a Monday, so weekly buckets start on Mondays


def bucket_width(start: datetime, end: datetime, max_buckets: int = 48) -> timedelta:
    """The smallest of 1h/3h/6h/12h/1d/7d giving at most `max_buckets` buckets."""
    span = end - start
    for step in STEPS:
        if span / step < max_buckets:
            return step
    return STEPS[-1]


def _floor(t: datetime, width: timedelta) -> datetime:
    return EPOCH + ((t - EPOCH) // width) * width


def timeline(events: Iterable[tuple[datetime, bool]], width: timedelta | None = None,
             around: Iterable[datetime | None] = ()) -> tuple[list[Bucket], timedelta]:
    """Submissions per time bucket (on time / late), every bucket between first and last.

    `around` adds moments (deadline, late window end) the range must include.
    """
    points = list(events)
    marks = [m for m in around if m is not None]
    moments = [t for t, _ in points] + marks
    if not moments:
        return [], width or STEPS[0]
    lo, hi = min(moments), max(moments)
    width = width or bucket_width(lo, hi)
    first, last = _floor(lo, width), _floor(hi, width)
    on_time: dict[datetime, int] = defaultdict(int)
    late: dict[datetime, int] = defaultdict(int)
    for t, is_late in points:
        (late if is_late else on_time)[_floor(t, width)] += 1
    out, t = [], first
    while t <= last:
        out.append(Bucket(t, on_time[t], late[t]))
        t += width
    return out, width


def mistakes(results: Iterable[ResultRow], owner: Mapping[int, int],
             latest: Mapping[int, int], graded_students: int,
             causes: Iterable[str] | None = None) -> list[Mistake]:
    """Diagnoses by (cause, op): students ever and still affected, submissions; most first.

    `owner` maps submission id to user id, `latest` user id to their latest scored
    submission id; `causes` keeps only those causes (None: all).
    """
    keep = set(causes) if causes is not None else None
    ever: dict[tuple[str, str | None], set[int]] = defaultdict(set)
    now: dict[tuple[str, str | None], set[int]] = defaultdict(set)
    subs: dict[tuple[str, str | None], set[int]] = defaultdict(set)
    latest_ids = set(latest.values())
    for r in results:
        if not r.cause or r.verdict == "passed" or (keep is not None and r.cause not in keep):
            continue
        uid = owner.get(r.submission_id)
        if uid is None:
            continue
        key = (r.cause, None if r.cause in OP_AGNOSTIC else r.op)
        ever[key].add(uid)
        subs[key].add(r.submission_id)
        if r.submission_id in latest_ids:
            now[key].add(uid)
    out = [Mistake(cause, op, mistake_label(cause, op), len(users), len(now[(cause, op)]),
                   len(subs[(cause, op)]), graded_students)
           for (cause, op), users in ever.items()]
    out.sort(key=lambda m: (-m.students, -m.now, -m.submissions, m.label))
    return out


def mistakes_by_operation(results: Iterable[ResultRow], owner: Mapping[int, int],
                          latest: Mapping[int, int], graded_students: int) -> list[Mistake]:
    """The mistakes that name an operation's forward or backward (or gradient flow)."""
    return mistakes(results, owner, latest, graded_students, BY_OPERATION)


def median(values: Iterable[float]) -> float | None:
    """The median, or None for no values."""
    v = sorted(values)
    if not v:
        return None
    mid = len(v) // 2
    return v[mid] if len(v) % 2 else (v[mid - 1] + v[mid]) / 2
