"""Faults: a worker killed mid-grading, Redis restarted with work queued, the broker down.

Each test has its own Redis server (never the shared 6379 one), its own PostgreSQL
database and its own real worker processes; a one-exercise manifest keeps grading short.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from sqlalchemy import func, select

from grader.extensions import db
from grader.models import Result, Submission
from tests.service.fixtures import (
    SOURCES,
    RedisServer,
    Users,
    WorkerProcess,
    build_app,
    free_port,
    wait_for,
)

pytestmark = pytest.mark.integration

MANIFEST = '[[assignment]]\nslug = "micrograd"\ntitle = "faults"\nexercises = ["expression"]\n'


def fault_app(tmp_path: Path, pg_databases, broker: str, **overrides):
    (tmp_path / "manifest.toml").write_text(MANIFEST)
    return build_app(tmp_path / "instance", DATABASE_URL=pg_databases.create(),
                     BROKER_URL=broker, MANIFEST=str(tmp_path / "manifest.toml"),
                     INSTANCES_K=1, SWEEP_INTERVAL=1, **overrides)


def row(app, sid: int) -> Submission:
    with app.app_context():
        sub = db.session.get(Submission, sid)
        db.session.expunge(sub)
        db.session.remove()
        return sub


def results(app, sid: int) -> int:
    with app.app_context():
        n = db.session.scalar(select(func.count()).select_from(Result)
                              .where(Result.submission_id == sid))
        db.session.remove()
        return n


def test_kill_9_mid_grading_then_graded_once(tmp_path, pg_databases) -> None:
    redis = RedisServer(tmp_path / "redis").start()
    app = fault_app(tmp_path, pg_databases, redis.url, STUCK_RUNNING_AFTER=8,
                    STUCK_QUEUED_AFTER=60)
    users = Users(app)
    student = users.create()
    first = WorkerProcess(app, tmp_path / "logs", concurrency=1, beat=True).start()
    second = None
    try:
        from tests.service.fixtures import Stack

        stack = Stack(app, first, None, users)  # type: ignore[arg-type]
        sid = stack.submit(student, SOURCES["slow"])  # ~2 s of import per exercise run
        wait_for(lambda: row(app, sid).status == "running", 60, 0.05, "grading to start")
        first.kill9()  # the whole worker, main process and pool, mid-grading
        assert row(app, sid).status == "running" and results(app, sid) == 0

        second = WorkerProcess(app, tmp_path / "logs", concurrency=1, beat=True).start()
        stack.worker = second
        done = stack.wait_done(student, sid, timeout=120)
        assert done["status"] == "graded" and done["report"]["score"] == 2.0
        sub = row(app, sid)
        assert sub.attempts == 2 and sub.worker.startswith(second.name)
        assert results(app, sid) == 1  # exactly one result set
        assert f"submission {sid} stuck in running" in second.tail(20000)

        # killing only the pool process that grades: the worker requeues the message
        sid2 = stack.submit(student, SOURCES["slow"])
        wait_for(lambda: row(app, sid2).status == "running", 60, 0.05, "grading to start")
        pid = int(row(app, sid2).worker.rsplit(":", 1)[1])
        assert pid in second.children()
        os.kill(pid, signal.SIGKILL)
        done = stack.wait_done(student, sid2, timeout=120)
        assert done["status"] == "graded" and row(app, sid2).attempts == 2
        assert results(app, sid2) == 1
        assert f"submission {sid2} stuck" not in second.tail(20000)  # redelivered at once
    finally:
        first.kill9()
        if second is not None:
            second.stop()
        redis.stop()


def test_redis_restart_with_submissions_queued(tmp_path, pg_databases) -> None:
    redis = RedisServer(tmp_path / "redis").start()
    app = fault_app(tmp_path, pg_databases, redis.url, STUCK_QUEUED_AFTER=2)
    student = Users(app).create()
    client = app.test_client()
    body = {"assignment": "micrograd", "source": SOURCES["correct"]}
    ids = [client.post("/api/v1/submissions", headers=student.auth, json=body)
           .get_json()["id"] for _ in range(3)]
    redis.restart()  # no persistence: the three messages are gone
    # the site keeps working, and publishing reconnects to the new server
    after = client.post("/api/v1/submissions", headers=student.auth, json=body)
    assert after.status_code == 202
    ids.append(after.get_json()["id"])
    assert {row(app, i).status for i in ids} == {"queued"}
    worker = WorkerProcess(app, tmp_path / "logs", beat=True).start()
    try:
        for sid in ids:
            wait_for(lambda sid=sid: row(app, sid).status == "graded", 120, 0.2,
                     f"submission {sid}\n{worker.tail()}")
            assert results(app, sid) == 1 and row(app, sid).attempts == 1
        log = worker.tail(50000)
        assert all(f"submission {i} stuck in queued" in log for i in ids[:3])
    finally:
        worker.stop()
        redis.stop()


def test_broker_down_the_api_stays_up_and_says_so(tmp_path, pg_databases) -> None:
    port = free_port()  # nothing listens here yet
    app = fault_app(tmp_path, pg_databases, f"redis://127.0.0.1:{port}/0")
    student = Users(app).create()
    client = app.test_client()
    body = {"assignment": "micrograd", "source": SOURCES["correct"]}
    response = client.post("/api/v1/submissions", headers=student.auth, json=body)
    assert response.status_code == 503
    err = response.get_json()["error"]
    assert err["code"] == "queue_unavailable" and "nothing was stored" in err["message"]
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Submission)) == 0
    assert client.get("/api/v1/assignments", headers=student.auth).status_code == 200
    health = client.get("/api/v1/health")
    assert health.status_code == 200
    assert health.get_json()["broker"]["ok"] is False
    assert health.get_json()["status"] == "degraded"
    # the broker comes up: submissions are accepted again, without restarting the site
    redis = RedisServer(tmp_path / "redis")
    redis.port = port
    redis.start()
    try:
        assert client.post("/api/v1/submissions", headers=student.auth,
                           json=body).status_code == 202
        assert client.get("/api/v1/health").get_json()["broker"]["ok"] is True
    finally:
        redis.stop()
