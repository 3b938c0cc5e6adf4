"""The grading task's body in-process (real pipeline and sandbox, SQLite, memory broker)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import func, select

from grader.extensions import db
from grader.models import Assignment, Result, Submission, utcnow
from grader.submissions import create_submission, enqueue_regrade, enqueue_regrades
from tests.service.fixtures import SOURCES, Users
from worker import store, tasks


@pytest.fixture
def fast_app(make_app):
    """An app grading one random instance per exercise (faster, same code paths)."""
    return make_app(INSTANCES_K=1)


def new(app, source: str, filename: str = "value.py", user=None) -> int:
    user = user or Users(app).create()
    with app.app_context():
        from grader.models import User

        return create_submission(db.session.get(User, user.id), "micrograd", source,
                                 filename).id


def queued_messages(app, queue: str) -> list:
    """Drain the in-memory broker's queue and return the messages."""
    out = []
    with app.app_context(), app.extensions["celery"].connection_for_read() as conn:
        q = conn.SimpleQueue(queue, no_ack=True)
        while q.qsize():
            out.append(q.get(timeout=1))
    return out


def test_grading_stores_one_result_per_exercise(fast_app) -> None:
    sid = new(fast_app, SOURCES["correct"])
    with fast_app.app_context():
        assert tasks.run(sid, "test") == "graded"
        sub = db.session.get(Submission, sid)
        assert (sub.status, sub.score, sub.max_score, sub.attempts) == ("graded", 10, 10, 1)
        assert sub.graded_at and sub.finished_at and sub.worker.startswith("test:")
        report = sub.report_dict()
        assert report["schema"] == "micrograde.report/1" and report["seed"] == sub.seed
        assert [e["name"] for e in report["exercises"]] == \
            ["expression", "diamond", "neuron", "mlp_step", "operators"]
        assert all(r.verdict == "passed" for r in sub.results)
        assert sub.results[0].diff_svg.startswith("<svg")


def test_buggy_submission_gets_verdicts_diagnosis_and_red_diff(fast_app) -> None:
    sid = new(fast_app, SOURCES["buggy"])
    with fast_app.app_context():
        tasks.run(sid, "test")
        sub = db.session.get(Submission, sid)
        by_name = {r.name: r for r in sub.results}
        assert sub.status == "graded" and 0 < sub.score < 10
        diamond = by_name["diamond"]
        assert diamond.verdict == "wrong_gradient" and diamond.diagnosis_cause
        assert diamond.data["nodes"] and diamond.data["diff_dot"].startswith("digraph")
        from grader.grading.diffviz import STYLE

        assert STYLE["wrong"][1] in diamond.diff_svg  # the wrong node is drawn red


def test_grading_twice_keeps_exactly_one_result_set(fast_app) -> None:
    sid = new(fast_app, SOURCES["correct"])
    with fast_app.app_context():
        tasks.run(sid, "a")
        first = db.session.get(Submission, sid).report_dict()
        # a redelivered message after a crash finds the row still `running`
        db.session.get(Submission, sid).status = "running"
        db.session.commit()
        assert tasks.run(sid, "b") == "graded"
        n = db.session.scalar(select(func.count()).select_from(Result)
                              .where(Result.submission_id == sid))
        assert n == 5
        again = db.session.get(Submission, sid)
        assert again.attempts == 2
        # same seed, same outcome (the student's own set order may move float last bits)
        outcome = [[(e["name"], e["verdict"], e["score"], e["instance_seed"])
                    for e in r["exercises"]] for r in (first, again.report_dict())]
        assert outcome[0] == outcome[1]
        # a duplicate message for a finished row is dropped without grading
        assert tasks.run(sid, "c") == "skipped"
        assert db.session.get(Submission, sid).attempts == 2


def test_invalid_submission_is_stored_as_invalid(fast_app) -> None:
    sid = new(fast_app, "class Value:\n    def __init__(self, x)\n        pass\n")
    with fast_app.app_context():
        assert tasks.run(sid, "t") == "invalid"
        sub = db.session.get(Submission, sid)
        assert (sub.error_kind, sub.score, sub.max_score) == ("syntax_error", 0, 10)
        assert sub.results == [] and sub.report_dict()["error"]["line"] == 2


def test_manifest_feedback_only_and_points_are_applied(make_app, tmp_path) -> None:
    manifest = tmp_path / "m.toml"
    manifest.write_text('[[assignment]]\nslug = "micrograd"\ntitle = "t"\n'
                        'exercises = ["expression", "neuron"]\nfeedback_only = ["neuron"]\n'
                        '[assignment.points]\nexpression = 5\n')
    app = make_app(MANIFEST=str(manifest), INSTANCES_K=1)
    sid = new(app, SOURCES["correct"])
    with app.app_context():
        tasks.run(sid, "t")
        sub = db.session.get(Submission, sid)
        assert [(r.name, r.score, r.max_score, r.feedback_only) for r in sub.results] == \
            [("expression", 5.0, 5.0, False), ("neuron", 0.0, 0.0, True)]
        assert (sub.score, sub.max_score) == (5.0, 5.0)


def test_a_grader_fault_requeues_then_fails(fast_app) -> None:
    sid = new(fast_app, SOURCES["correct"])
    queued_messages(fast_app, "grading")
    with fast_app.app_context():
        # a real fault: the assignment names an exercise this grader does not have
        a = db.session.scalar(select(Assignment))
        a.exercises = ["expression", "ghost"]
        db.session.commit()
        assert tasks.run(sid, "t") == "requeued"
        sub = db.session.get(Submission, sid)
        assert (sub.status, sub.attempts) == ("queued", 1)
        assert len(queued_messages(fast_app, "grading")) == 1
        tasks.run(sid, "t")
        assert tasks.run(sid, "t") == "failed"
        sub = db.session.get(Submission, sid)
        assert (sub.status, sub.attempts, sub.error_kind) == ("failed", 3, "grader_error")
        assert "ghost" in sub.error_message


def test_too_many_interrupted_attempts_fail(fast_app) -> None:
    sid = new(fast_app, SOURCES["correct"])
    with fast_app.app_context():
        db.session.get(Submission, sid).attempts = 3
        db.session.commit()
        assert tasks.run(sid, "t") == "skipped"
        sub = db.session.get(Submission, sid)
        assert (sub.status, sub.error_kind) == ("failed", "too_many_attempts")


def test_sweep_requeues_only_stuck_rows(fast_app) -> None:
    ids = [new(fast_app, SOURCES["correct"]) for _ in range(4)]
    # the in-memory broker is one per process: drop what other tests left in it
    queued_messages(fast_app, "grading")
    queued_messages(fast_app, "regrade")
    now = utcnow()
    with fast_app.app_context():
        rows = [db.session.get(Submission, i) for i in ids]
        rows[0].enqueued_at = now - timedelta(hours=1)                  # lost message
        rows[1].status, rows[1].started_at = "running", now - timedelta(hours=1)  # dead
        rows[2].status, rows[2].started_at = "running", now              # still grading
        rows[3].status, rows[3].regrade = "queued", True                 # fresh, waiting
        rows[3].enqueued_at = now - timedelta(hours=1)
        db.session.commit()
        assert sorted(tasks.sweep_stuck(now)) == sorted([ids[0], ids[1], ids[3]])
        assert db.session.get(Submission, ids[1]).status == "queued"
        assert db.session.get(Submission, ids[2]).status == "running"
        assert tasks.sweep_stuck(now) == []  # enqueued_at moved: not swept again at once
    grading = queued_messages(fast_app, "grading")
    regrade = queued_messages(fast_app, "regrade")
    assert sorted(m.headers["argsrepr"] for m in grading) == sorted(
        f"[{i}]" for i in ids[:2])
    assert [m.headers["task"] for m in regrade] == ["micrograde.regrade"]


def test_regrade_waits_for_fresh_submissions(fast_app) -> None:
    old = new(fast_app, SOURCES["buggy"])
    with fast_app.app_context():
        tasks.run(old, "t")
        enqueue_regrade(old)
        sub = db.session.get(Submission, old)
        assert (sub.status, sub.regrade, sub.regrades) == ("queued", True, 1)
    queued_messages(fast_app, "regrade")
    fresh = new(fast_app, SOURCES["correct"])
    with fast_app.app_context():
        assert tasks.regrade_submission.run(old) == "deferred"
        (msg,) = queued_messages(fast_app, "regrade")
        assert msg.headers["kwargsrepr"] == "{'deferrals': 1}"
        tasks.run(fresh, "t")
        assert tasks.regrade_submission.run(old) == "graded"
        sub = db.session.get(Submission, old)
        assert sub.regrade is False and len(sub.results) == 5


def stored_bytes(sub: Submission) -> int:
    """Bytes this submission keeps: source, report, every result's JSON and SVG."""
    import json

    return (len(sub.source.encode()) + len(json.dumps(sub.report)) +
            sum(len(json.dumps(r.data)) + len(r.diff_svg or "") for r in sub.results))


def test_storage_per_graded_submission_is_bounded(app, capsys) -> None:
    noisy = ("import sys\nfor _ in range(3000):\n    print('x' * 1000)\n"
             "    print('y' * 1000, file=sys.stderr)\n") + SOURCES["buggy"]
    sizes = {}
    for name, source in (("correct", SOURCES["correct"]), ("buggy", SOURCES["buggy"]),
                         ("noisy", noisy)):
        sid = new(app, source)
        with app.app_context():
            tasks.run(sid, "t")
            sub = db.session.get(Submission, sid)
            assert sub.status == "graded"
            sizes[name] = stored_bytes(sub)
            if name == "noisy":
                out = sub.results[0].data["stdout"]
                assert len(out) <= store.MAX_STORED_OUTPUT + 100 and "characters cut" in out
    with capsys.disabled():
        print("\nbytes stored per graded submission (K=3): " +
              ", ".join(f"{k} {v / 1024:.0f} KiB" for k, v in sizes.items()))
    assert sizes["correct"] < 256 * 1024 and sizes["buggy"] < 256 * 1024
    assert sizes["noisy"] < 512 * 1024  # 6 MB of output, kept to 16 KiB a stream


def test_regrade_all_marks_rows_in_chunks_and_sends_one_message_each(fast_app) -> None:
    ids = [new(fast_app, SOURCES["correct"]) for _ in range(5)]
    queued_messages(fast_app, "grading")
    queued_messages(fast_app, "regrade")
    with fast_app.app_context():
        # a repeated id is regraded once; chunks of 2 cover all five rows
        assert enqueue_regrades(ids + ids[:2], chunk=2) == 5
        rows = [db.session.get(Submission, i) for i in ids]
        assert {(r.status, r.regrade, r.regrades) for r in rows} == {("queued", True, 1)}
    regrade = queued_messages(fast_app, "regrade")
    assert sorted(m.headers["argsrepr"] for m in regrade) == sorted(f"[{i}]" for i in ids)
    assert queued_messages(fast_app, "grading") == []


def test_sweep_leaves_a_row_that_finished_while_it_looked(fast_app) -> None:
    from sqlalchemy import event, text

    sid = new(fast_app, SOURCES["correct"])
    queued_messages(fast_app, "grading")
    now = utcnow()
    with fast_app.app_context():
        sub = db.session.get(Submission, sid)
        sub.status, sub.started_at = "running", now - timedelta(hours=1)
        db.session.commit()
        db.session.remove()
        engine = db.engine
        finished = []

        def worker_saves(conn, cursor, statement, *_args) -> None:
            # right after the sweeper's first look at the table, the slow worker commits
            if not finished and statement.lstrip().upper().startswith("SELECT"):
                finished.append(True)
                with engine.connect() as other:
                    other.execute(text("UPDATE submission SET status = 'graded' "
                                       "WHERE id = :id"), {"id": sid})
                    other.commit()

        event.listen(engine, "after_cursor_execute", worker_saves)
        try:
            assert tasks.sweep_stuck(now) == []
        finally:
            event.remove(engine, "after_cursor_execute", worker_saves)
        assert finished and db.session.get(Submission, sid).status == "graded"
    assert queued_messages(fast_app, "grading") == []


def test_duplicate_message_while_a_sibling_grades_is_dropped(fast_app) -> None:
    import subprocess
    import sys

    sid = new(fast_app, SOURCES["correct"])
    # a live process standing in for the pool process of this node that claimed the row
    sibling = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with fast_app.app_context():
            sub = db.session.get(Submission, sid)
            sub.status, sub.attempts, sub.started_at = "running", 1, utcnow()
            sub.worker = f"node@host:{sibling.pid}"
            db.session.commit()
            for _ in range(3):  # never graded twice, never counted as interrupted
                assert tasks.run(sid, "node@host") == "skipped"
            sub = db.session.get(Submission, sid)
            assert (sub.status, sub.attempts) == ("running", 1)
            # another node cannot see that process: it grades (the sweeper's view)
            assert not store.held_by_live_sibling(sub.worker, "other@host")
    finally:
        sibling.kill()
        sibling.wait()
    with fast_app.app_context():  # the holder died: the redelivered message grades it
        assert tasks.run(sid, "node@host") == "graded"
        assert db.session.get(Submission, sid).attempts == 2
