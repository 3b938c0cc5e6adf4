"""Regrade-all on the low-priority queue while students keep submitting (real parts).

PostgreSQL (a database of this module's own), a Redis server of its own, and ONE real
`celery worker` process with one pool process consuming `grading,regrade`. The instructor
presses "Regrade all" on the dashboard; as soon as the worker is busy with the backlog,
two students submit through the API. Their submissions must be graded while most of the
regrade backlog is still waiting: each waits behind at most the one regrade in flight.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from tests.instructor.conftest import csrf_of, sign_in
from tests.service.fixtures import (
    PG_SERVER,
    SOURCES,
    RedisServer,
    Users,
    WorkerProcess,
    build_app,
    wait_for,
)

pytestmark = pytest.mark.integration
BACKLOG = 16


@pytest.fixture(scope="module")
def own_pg() -> Iterator[str]:
    """A PostgreSQL database for this module only (dropped afterwards)."""
    import sqlalchemy as sa

    name = f"micrograde_regrade_{os.getpid()}_{secrets.token_hex(3)}"
    admin = sa.create_engine(f"{PG_SERVER}/postgres", isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    except sa.exc.OperationalError as exc:
        pytest.skip(f"PostgreSQL is not running (scripts/services.sh starts it): {exc}")
    yield f"{PG_SERVER}/{name}"
    with admin.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(scope="module")
def stack(own_pg: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The site on PostgreSQL + Redis, and one single-process worker."""
    instance = tmp_path_factory.mktemp("regrade")
    redis = RedisServer(instance / "redis").start()
    app = build_app(instance, DATABASE_URL=own_pg, BROKER_URL=redis.url, INSTANCES_K=1)
    worker = WorkerProcess(app, instance / "logs", concurrency=1).start()
    try:
        yield {"app": app, "worker": worker, "users": Users(app)}
    finally:
        worker.stop()
        redis.stop()
        from grader.extensions import db

        with app.app_context():
            db.session.remove()
            for engine in db.engines.values():
                engine.dispose()


def graded_rows(app: Any, n: int, source: str) -> list[int]:
    """n finished submissions of n students, as if graded long ago."""
    from grader.extensions import db
    from grader.models import Assignment, Submission, User

    ids = []
    with app.app_context():
        a = db.session.scalar(select(Assignment).where(Assignment.slug == "micrograd"))
        for i in range(n):
            u = User(email=f"old{i}-{secrets.token_hex(3)}@example.org", role="student")
            db.session.add(u)
            db.session.flush()
            sub = Submission(user_id=u.id, assignment_id=a.id, source=source, size=len(source),
                             sha256="0" * 64, seed=100 + i, status="graded", score=10.0,
                             max_score=10.0)
            db.session.add(sub)
            db.session.flush()
            ids.append(sub.id)
        db.session.commit()
    return ids


def rows(app: Any, ids: list[int]) -> dict[int, Any]:
    from grader.extensions import db
    from grader.models import Submission

    with app.app_context():
        out = {s.id: (s.status, s.regrade, s.started_at, s.finished_at, s.created_at)
               for s in db.session.scalars(select(Submission).where(Submission.id.in_(ids)))}
        db.session.remove()
    return out


def test_fresh_submissions_overtake_a_class_wide_regrade(stack: dict[str, Any],
                                                         tmp_path: Path) -> None:
    app = stack["app"]
    old = graded_rows(app, BACKLOG, SOURCES["correct"])
    teacher = stack["users"].create("instructor")
    client = sign_in(app, teacher.email)
    token = csrf_of(client.get("/instructor/micrograd/").get_data(as_text=True))
    assert client.post("/instructor/micrograd/regrade",
                       data={"csrf_token": token}).status_code == 302

    def progress() -> dict:
        return client.get("/instructor/micrograd/regrade/progress").get_json()

    first = progress()["batch"]
    assert (first["total"], first["finished"]) == (BACKLOG, False)
    # wait until the worker is busy with the backlog, then two students submit
    wait_for(lambda: progress()["batch"]["done"] >= 1, 120, 0.05,
             f"the first regrade\n{stack['worker'].tail()}")
    students = [stack["users"].create() for _ in range(2)]
    api = app.test_client()
    fresh = []
    for s in students:
        r = api.post("/api/v1/submissions", headers=s.auth,
                     json={"assignment": "micrograd", "source": SOURCES["correct"]})
        assert r.status_code == 202, r.get_json()
        fresh.append(r.get_json()["id"])
    wait_for(lambda: all(v[0] == "graded" for v in rows(app, fresh).values()), 120, 0.1,
             f"the fresh submissions\n{stack['worker'].tail()}")
    mid = progress()
    fresh_rows = rows(app, fresh)
    fresh_done = max(v[3] for v in fresh_rows.values())
    regrades = rows(app, old)
    still_waiting = [sid for sid, v in regrades.items() if v[3] is None or v[3] > fresh_done]
    print(f"fresh graded with {len(still_waiting)} of {BACKLOG} regrades still waiting")
    # fresh ones came through while most of the backlog was still waiting...
    assert len(still_waiting) >= BACKLOG // 2, (mid, len(still_waiting))
    # ...each behind at most the one regrade already running when it arrived
    for _, _, started, _, created in fresh_rows.values():
        overtaken = [sid for sid, v in regrades.items()
                     if v[2] is not None and created < v[2] < started]
        assert len(overtaken) <= 1
    # and the backlog drains afterwards; the dashboard shows it finished
    wait_for(lambda: progress()["batch"]["finished"], 300, 0.2,
             f"the regrade backlog\n{stack['worker'].tail()}")
    final = progress()["batch"]
    assert (final["done"], final["queued"], final["running"]) == (BACKLOG, 0, 0)
    done = rows(app, old)
    assert all(v[0] == "graded" and not v[1] for v in done.values())
    assert max(v[3] for v in done.values()) > fresh_done
    html = client.get("/instructor/micrograd/").get_data(as_text=True)
    assert f'data-progress="done">{BACKLOG}<' in html and 'data-finished="true"' in html
