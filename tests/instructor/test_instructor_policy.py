"""Assignment policy: timeliness, penalties, extensions, visibility, quotas, best/last."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from grader.policy import LATE, ON_TIME, TOO_LATE, Policy, grade_student, grade_students
from tests.instructor import klass

D = datetime(2027, 3, 1, 12, 0, tzinfo=UTC)
P = Policy(deadline=D, late_until=D + timedelta(days=2), late_penalty=0.25,
           hidden=frozenset({"mlp_step"}), max_submissions=3, max_score=10.0)


@dataclass
class S:
    id: int
    created_at: datetime
    status: str = "graded"
    score: float | None = 5.0
    user_id: int = 1


@pytest.mark.parametrize(("at", "extension", "expected"), [
    (D - timedelta(seconds=1), None, ON_TIME),
    (D, None, ON_TIME),                                   # the deadline itself is on time
    (D + timedelta(seconds=1), None, LATE),
    (D + timedelta(days=2), None, LATE),                  # the window's end is still late
    (D + timedelta(days=2, seconds=1), None, TOO_LATE),
    (D + timedelta(days=1), D + timedelta(days=1), ON_TIME),        # extension
    (D + timedelta(days=2), D + timedelta(days=1), LATE),           # window shifts with it
    (D + timedelta(days=3), D + timedelta(days=1), LATE),
    (D + timedelta(days=3, seconds=1), D + timedelta(days=1), TOO_LATE),
])
def test_timeliness(at: datetime, extension: datetime | None, expected: str) -> None:
    assert P.timeliness(at, extension) == expected


def test_no_late_window_means_after_the_deadline_is_too_late() -> None:
    p = Policy(deadline=D)
    assert p.timeliness(D + timedelta(minutes=1)) == TOO_LATE
    assert p.closes_for(None) == D
    assert p.closes_for(D + timedelta(days=4)) == D + timedelta(days=4)


def test_no_deadline_is_always_on_time() -> None:
    assert Policy().timeliness(datetime(2100, 1, 1, tzinfo=UTC)) == ON_TIME


def test_adjusted_scores() -> None:
    assert P.adjusted(8.0, ON_TIME) == 8.0
    assert P.adjusted(8.0, LATE) == 6.0
    assert P.adjusted(8.0, TOO_LATE) == 0.0


def test_hidden_exercise_details_show_once_the_students_window_closed() -> None:
    assert P.details_visible("neuron", D - timedelta(days=9))
    assert not P.details_visible("mlp_step", D + timedelta(days=1))
    assert P.details_visible("mlp_step", D + timedelta(days=2, seconds=1))
    ext = D + timedelta(days=5)
    assert not P.details_visible("mlp_step", D + timedelta(days=3), ext)
    assert P.details_visible("mlp_step", D + timedelta(days=7, seconds=1), ext)
    assert not Policy(hidden=frozenset({"x"})).details_visible("x", D)


def test_submissions_left() -> None:
    assert P.submissions_left(0) == 3
    assert P.submissions_left(5) == 0
    assert Policy().submissions_left(99) is None


def test_best_and_last_with_penalties() -> None:
    subs = [S(1, D - timedelta(days=1), score=6.0), S(2, D + timedelta(hours=1), score=10.0),
            S(3, D + timedelta(days=5), score=10.0)]
    g = grade_student(subs, P)
    assert (g.attempts, g.best, g.best_id, g.best_late) == (3, 7.5, 2, True)
    assert (g.last, g.last_id, g.ever_late) == (0.0, 3, True)


def test_on_time_beats_an_equal_late_score_and_ties_go_to_the_earliest() -> None:
    subs = [S(1, D - timedelta(days=2), score=6.0), S(2, D - timedelta(days=1), score=6.0),
            S(3, D + timedelta(hours=1), score=8.0)]  # 8 late -> 6, a tie: earliest wins
    g = grade_student(subs, P)
    assert (g.best, g.best_id, g.best_late) == (6.0, 1, False)


def test_failed_and_ungraded_submissions_count_as_attempts_only() -> None:
    subs = [S(1, D - timedelta(days=1), status="failed", score=None),
            S(2, D - timedelta(hours=1), status="queued", score=None)]
    g = grade_student(subs, P)
    assert (g.attempts, g.best, g.graded, g.last_at) == (2, None, False, D - timedelta(hours=1))


def test_a_regrade_in_progress_keeps_its_previous_score() -> None:
    g = grade_student([S(1, D - timedelta(days=1), status="queued", score=9.0)], P)
    assert (g.best, g.best_id) == (9.0, 1)


def test_the_fixture_class_by_hand() -> None:
    subs, _ = klass.pure_rows()
    p = Policy(deadline=klass.D, late_until=klass.LATE_UNTIL, late_penalty=klass.PENALTY,
               max_score=10.0)
    ids = klass.USER_IDS
    grades = grade_students(subs, p, {ids["dave"]: klass.EXTENSION["dave"]})
    sid = klass.SUB_IDS
    assert grades[ids["alice"]].best == 10.0 and grades[ids["alice"]].best_id == sid["a2"]
    assert grades[ids["bob"]].best == 4.0 and grades[ids["bob"]].best_late
    carol = grades[ids["carol"]]
    assert (carol.best, carol.best_id, carol.last, carol.last_id) == (7.0, sid["c2"], 0.0,
                                                                      sid["c3"])
    assert carol.ever_late and not carol.best_late
    dave = grades[ids["dave"]]
    assert (dave.best, dave.best_late, dave.ever_late) == (4.0, False, False)
    frank = grades[ids["frank"]]
    assert (frank.attempts, frank.best) == (1, None)
    assert ids["erin"] not in grades
