"""Every dashboard statistic against the hand-computed fixture class (tests/instructor/klass)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from grader import stats
from grader.policy import ON_TIME, Policy, grade_students
from tests.instructor import klass

SUBS, RESULTS = klass.pure_rows()
IDS, SID = klass.USER_IDS, klass.SUB_IDS
POLICY = Policy(deadline=klass.D, late_until=klass.LATE_UNTIL, late_penalty=klass.PENALTY,
                max_score=10.0)
EXT = {IDS["dave"]: klass.EXTENSION["dave"]}
GRADES = grade_students(SUBS, POLICY, EXT)
OWNER = {s.id: s.user_id for s in SUBS}
LATEST = {IDS["alice"]: SID["a2"], IDS["bob"]: SID["b1"], IDS["carol"]: SID["c3"],
          IDS["dave"]: SID["d1"]}


def best_scores() -> list[float]:
    return [g.best for g in GRADES.values() if g.graded]


def test_histogram_of_best_scores() -> None:
    bins = stats.score_histogram(best_scores(), 10.0, bins=10)
    assert [b.count for b in bins] == [0, 0, 0, 0, 2, 0, 0, 1, 0, 1]  # 4, 4, 7, 10
    assert (bins[0].lo, bins[0].hi, bins[-1].lo, bins[-1].hi) == (0.0, 1.0, 9.0, 10.0)
    assert sum(b.count for b in bins) == 4


def test_histogram_edges() -> None:
    assert [b.count for b in stats.score_histogram([0, 2.5, 2.4999, 5, 5], 5, 2)] == [2, 3]
    assert stats.score_histogram([1, 2], 0.0) == [stats.Bin(0.0, 0.0, 2)]


def test_mean_and_median() -> None:
    best = best_scores()
    assert sum(best) / len(best) == 6.25
    assert stats.median(best) == 5.5
    assert stats.median([3.0]) == 3.0 and stats.median([]) is None


def test_pass_rates_over_each_students_counted_submission() -> None:
    counted = [g.best_id for g in GRADES.values() if g.best_id is not None]
    assert sorted(counted) == sorted([SID["a2"], SID["b1"], SID["c2"], SID["d1"]])
    rates = {r.name: (r.passed, r.total) for r in
             stats.pass_rates(RESULTS, counted, klass.EXERCISES)}
    assert rates == {"expression": (4, 4), "diamond": (3, 4), "neuron": (3, 4),
                     "mlp_step": (2, 4), "operators": (3, 4)}
    assert stats.PassRate("x", 0, 0).rate == 0.0


def test_mistakes_ever_and_still() -> None:
    found = stats.mistakes(RESULTS, OWNER, LATEST, graded_students=4)
    got = [(m.cause, m.op, m.students, m.now, m.submissions) for m in found]
    assert got == [("local_derivative", "tanh", 2, 1, 2),   # alice a1, bob b1 (still)
                   ("topo_order", None, 1, 1, 1),           # dave d1, on mul and tanh nodes
                   ("overwrite", None, 1, 0, 1),            # alice a1
                   ("missing_op", "radd", 1, 0, 1)]         # carol c2, fixed in c3
    tanh = found[0]
    assert (tanh.pct, tanh.pct_now, tanh.label) == (50.0, 25.0, "wrong tanh backward")
    assert found[2].label == "= instead of += (gradient overwritten)"
    assert found[3].label == "missing radd (number + v)"


def test_mistakes_by_operation_keeps_operation_causes_only() -> None:
    extra = [stats.ResultRow(SID["b1"], "diamond", "timeout", "timeout", None)]
    by_op = stats.mistakes_by_operation(RESULTS + extra, OWNER, LATEST, 4)
    assert [m.cause for m in by_op] == ["local_derivative", "topo_order", "overwrite",
                                        "missing_op"]
    everything = stats.mistakes(RESULTS + extra, OWNER, LATEST, 4)
    assert ("timeout", "time limit") in [(m.cause, m.label) for m in everything]


def test_labels() -> None:
    assert stats.mistake_label("forward_op", "rsub") == "wrong rsub (number - v) forward"
    assert stats.mistake_label("local_derivative", "mul") == "wrong mul (*) backward"
    assert stats.mistake_label("recursion", "radd") == "recursion too deep in radd (number + v)"
    assert stats.mistake_label("strange", "foo") == "strange (foo)"


def test_timeline_buckets_around_the_deadline() -> None:
    events = [(s.created_at, POLICY.timeliness(s.created_at, EXT.get(s.user_id)) != ON_TIME)
              for s in SUBS]
    buckets, width = stats.timeline(events, around=(POLICY.deadline, POLICY.late_until))
    assert width == timedelta(hours=6)   # D-3d .. D+3d: 24 six-hour steps, < 48
    assert len(buckets) == 25 and buckets[0].start == klass.D - timedelta(days=3)
    by_start = {b.start: (b.on_time, b.late) for b in buckets if b.total}
    d = klass.D
    assert by_start == {d - timedelta(days=3): (1, 0), d - timedelta(days=2): (2, 0),
                        d - timedelta(days=1): (2, 0), d + timedelta(hours=12): (1, 0),
                        d + timedelta(days=1): (0, 1), d + timedelta(days=3): (0, 1)}
    assert sum(b.total for b in buckets) == len(SUBS)


def test_timeline_fixed_width_and_empty() -> None:
    t0 = datetime(2027, 1, 4, 23, 59, tzinfo=UTC)
    buckets, width = stats.timeline([(t0, False), (t0 + timedelta(minutes=2), True)],
                                    width=timedelta(days=1))
    assert width == timedelta(days=1)
    assert [(b.start.day, b.on_time, b.late) for b in buckets] == [(4, 1, 0), (5, 0, 1)]
    assert stats.timeline([]) == ([], timedelta(hours=1))


def test_bucket_width_grows_with_the_span() -> None:
    t = datetime(2027, 1, 1, tzinfo=UTC)
    assert stats.bucket_width(t, t + timedelta(hours=10)) == timedelta(hours=1)
    assert stats.bucket_width(t, t + timedelta(days=20)) == timedelta(hours=12)
    assert stats.bucket_width(t, t + timedelta(days=30)) == timedelta(days=1)
    assert stats.bucket_width(t, t + timedelta(days=2000)) == timedelta(days=7)
