"""The per-assignment dashboard: numbers from `grader.stats`, pictures from `grader.charts`."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from flask import url_for
from markupsafe import Markup

from grader import charts, stats
from grader.instructor.data import Course
from grader.policy import ON_TIME
from grader.stats import Mistake, PassRate

log = logging.getLogger(__name__)

TOP_DIAGNOSES = 10


@dataclass
class Dashboard:
    """Everything the dashboard page shows about one assignment."""

    enrolled: int
    submitted: int
    graded: int
    submissions: int
    late_submissions: int
    mean: float | None
    median: float | None
    full_marks: int
    max_score: float
    pass_rates: list[PassRate]
    diagnoses: list[Mistake]
    by_operation: list[Mistake]
    charts: dict[str, Markup] = field(default_factory=dict)


def build(course: Course) -> Dashboard:
    """Compute the dashboard's numbers and draw its charts."""
    a, policy = course.assignment, course.policy
    graded = {uid: g for uid, g in course.grades.items() if g.graded}
    best = [g.best or 0.0 for g in graded.values()]
    max_score = policy.max_score
    point_exercises = [n for n in a.exercises if n not in (a.feedback_only or [])]
    rates = stats.pass_rates(course.results, course.counted().values(), a.exercises)
    owner, latest = course.owner(), course.latest()
    diagnoses = stats.mistakes(course.results, owner, latest, len(graded))[:TOP_DIAGNOSES]
    by_op = stats.mistakes_by_operation(course.results, owner, latest, len(graded))
    events = [(s.created_at, policy.timeliness(s.created_at, course.extension_deadline(
        s.user_id)) != ON_TIME) for s in course.subs]
    dash = Dashboard(
        enrolled=sum(1 for u in course.users.values() if not u.is_instructor),
        submitted=len(course.grades), graded=len(graded), submissions=len(course.subs),
        late_submissions=sum(1 for _, late in events if late),
        mean=sum(best) / len(best) if best else None, median=stats.median(best),
        full_marks=sum(1 for b in best if max_score and b >= max_score - 1e-9),
        max_score=max_score, pass_rates=rates, diagnoses=diagnoses, by_operation=by_op)
    bins = stats.score_histogram(best, max_score, bins=10 if max_score >= 10 else 5)
    dash.charts["histogram"] = Markup(charts.histogram(
        bins, f"Best score per student ({len(best)} graded)", x_label=f"score (of "
        f"{charts.fmt_num(max_score)})", chart_id="chart-histogram"))
    dash.charts["pass_rate"] = Markup(charts.bar_chart(
        [charts.Bar(label=n, value=100 * r.rate, text=f"{100 * r.rate:.0f}% "
                    f"({r.passed}/{r.total})", color=charts.GREEN if n in point_exercises
                    else charts.MUTED) for n, r in zip(a.exercises, rates, strict=True)],
        "Pass rate per exercise (each student's graded submission)", chart_id="chart-pass",
        x_label="students passing"))
    buckets, width = stats.timeline(events, around=(policy.deadline, policy.late_until))
    dash.charts["timeline"] = Markup(charts.time_series(
        buckets, width, f"Submissions over time ({len(events)})",
        marks=(("deadline", policy.deadline), ("late window ends", policy.late_until)),
        chart_id="chart-timeline"))
    dash.charts["diagnoses"] = Markup(charts.bar_chart(
        [_mistake_bar(m, a.slug) for m in diagnoses], "Most common diagnoses "
        "(students who hit each, in any submission)", chart_id="chart-diagnoses",
        top=_top(diagnoses), x_label="share of graded students", label_width=280,
        empty="no diagnoses yet"))
    dash.charts["by_operation"] = Markup(charts.bar_chart(
        [_mistake_bar(m, a.slug, now=True) for m in by_op], "Mistakes by operation",
        chart_id="chart-operations", top=_top(by_op),
        x_label="share of graded students (ever made it)", label_width=280,
        empty="no mistakes in any operation yet"))
    return dash


def _top(mistakes: list[Mistake]) -> float:
    """The axis end of a mistakes chart: just above the largest share (at least 10%)."""
    return max([10.0] + [m.pct for m in mistakes])


def _mistake_bar(m: Mistake, slug: str, now: bool = False) -> charts.Bar:
    text = f"{m.pct:.0f}% ({m.students})"
    if now:
        text += f", {m.pct_now:.0f}% still"
    href = url_for("instructor.students", slug=slug, cause=m.cause, op=m.op or "")
    color = charts.ORANGE if m.cause in ("forward_op", "missing_op") else charts.RED
    return charts.Bar(label=m.label, value=m.pct, text=text, href=href, color=color)


def mistake_students(course: Course, cause: str, op: str | None) -> set[int]:
    """Users who made this mistake in some submission (the student table's filter)."""
    owner = course.owner()
    return {owner[r.submission_id] for r in course.results
            if r.cause == cause and r.verdict != "passed"
            and (cause in stats.OP_AGNOSTIC or (r.op or "") == (op or ""))
            and r.submission_id in owner}


def summary_json(dash: Dashboard) -> dict[str, Any]:
    """The dashboard's numbers as JSON (no charts)."""
    return {
        "enrolled": dash.enrolled, "submitted": dash.submitted, "graded": dash.graded,
        "submissions": dash.submissions, "late_submissions": dash.late_submissions,
        "mean": dash.mean, "median": dash.median, "full_marks": dash.full_marks,
        "max_score": dash.max_score,
        "pass_rates": [{"exercise": r.name, "passed": r.passed, "of": r.total,
                        "rate": r.rate} for r in dash.pass_rates],
        "diagnoses": [_mistake_json(m) for m in dash.diagnoses],
        "by_operation": [_mistake_json(m) for m in dash.by_operation],
    }


def _mistake_json(m: Mistake) -> dict[str, Any]:
    return {"cause": m.cause, "op": m.op, "label": m.label, "students": m.students,
            "still": m.now, "submissions": m.submissions, "of": m.of,
            "pct": round(m.pct, 1), "pct_still": round(m.pct_now, 1)}
