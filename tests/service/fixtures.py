"""Service fixtures, reusable by any test package (`from tests.service.fixtures import *`).

Real parts only (see tests/service/processes.py): our own Redis server, PostgreSQL
databases made for the session, real `celery worker` processes, the site over HTTP.

Fixtures: `make_app`, `app`, `client`, `users` (SQLite + in-memory broker, no worker);
`pg_databases`, `pg_url` (session scoped); `redis_server`, `pg_stack` (PostgreSQL + Redis
+ a 2-process worker + live HTTP server; module scoped, so no process outlives a module).
Helpers: `build_app`, `Users`, `MadeUser`, `Stack`, `SOURCES` (tests/service/files/*.py
by stem).
"""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.security import generate_password_hash

from tests.service.processes import (  # noqa: F401  (re-exported for `import *`)
    PG_SERVER,
    LiveServer,
    PgDatabases,
    RedisServer,
    WorkerProcess,
    free_port,
    wait_for,
    worker_env,
)

HERE = Path(__file__).resolve().parent
FILES = HERE / "files"
PASSWORD = "correct horse battery"
SOURCES = {p.stem: p.read_text(encoding="utf-8") for p in FILES.glob("*.py")}


def build_app(instance: Path, *, schema: bool = True, **overrides: Any) -> Flask:
    """An app on `instance` (SQLite + in-memory broker unless overridden), migrated, loaded."""
    from grader import create_app

    instance.mkdir(parents=True, exist_ok=True)
    config = {
        "INSTANCE_PATH": str(instance),
        "DATABASE_URL": f"sqlite:///{instance / 'micrograde.sqlite'}",
        "BROKER_URL": "memory://localhost/",
        "SECRET_KEY": "test-" + secrets.token_hex(8),
        "JOIN_CODE": "join-test",
        "SUBMISSION_COOLDOWN": 0,
        "TESTING": True,
        **overrides,
    }
    app = create_app(config)
    if schema:
        migrate_and_load(app)
    return app


_template: dict[str, bytes] = {}


def migrate_and_load(app: Flask) -> None:
    """Upgrade the app's database to the newest migration and load its manifest.

    A fresh SQLite file is copied from one migrated once per test session (fast).
    """
    from flask_migrate import upgrade

    from exercises import manifest
    from grader.submissions import sync_manifest

    url = app.config["DATABASE_URL"]
    path = Path(url.removeprefix("sqlite:///")) if url.startswith("sqlite:///") else None
    with app.app_context():
        if path is not None and not path.exists() and "sqlite" in _template:
            path.write_bytes(_template["sqlite"])
        else:
            upgrade()
            if path is not None and "sqlite" not in _template:
                from grader.extensions import db

                db.session.remove()
                db.engine.dispose()
                with sqlite3.connect(path) as conn:  # fold the WAL into the file
                    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                _template["sqlite"] = path.read_bytes()
        sync_manifest(manifest.load(app.config["MANIFEST"]))


@dataclass
class MadeUser:
    """A user made for a test, with the plain password and API token."""

    id: int
    email: str
    role: str
    password: str
    token: str

    @property
    def auth(self) -> dict[str, str]:
        """Authorization header for the API."""
        return {"Authorization": f"Bearer {self.token}"}


class Users:
    """Creates users in an app's database."""

    def __init__(self, app: Flask) -> None:
        self.app = app

    def create(self, role: str = "student", email: str | None = None,
               password: str = PASSWORD, name: str = "") -> MadeUser:
        """A new user (unique email unless given) with a password and an API token."""
        from grader.extensions import db
        from grader.models import User

        email = email or f"{role}-{secrets.token_hex(4)}@example.org"
        with self.app.app_context():
            user = User(email=email, role=role, name=name or email.split("@")[0])
            # a cheap hash keeps tests fast; check_password reads any werkzeug hash
            user.password_hash = generate_password_hash(password, "pbkdf2:sha256:1000")
            token = user.issue_token()
            db.session.add(user)
            db.session.commit()
            return MadeUser(user.id, email, role, password, token)


@dataclass
class Stack:
    """A running service: app (also the test client's), worker, live server, users."""

    app: Flask
    worker: WorkerProcess
    server: LiveServer
    users: Users
    extra: dict[str, Any] = field(default_factory=dict)

    def submit(self, user: MadeUser, source: str, filename: str = "value.py",
               assignment: str = "micrograd") -> int:
        """POST a submission through the API; return its id."""
        response = self.app.test_client().post(
            "/api/v1/submissions", headers=user.auth,
            json={"assignment": assignment, "source": source, "filename": filename})
        assert response.status_code == 202, response.get_json()
        return response.get_json()["id"]

    def wait_done(self, user: MadeUser, submission_id: int, timeout: float = 120) -> dict:
        """Poll the API until the submission is graded, invalid or failed; return its JSON."""
        client = self.app.test_client()

        def done() -> dict | None:
            body = client.get(f"/api/v1/submissions/{submission_id}", headers=user.auth)
            data = body.get_json()
            return data if data.get("status") in ("graded", "invalid", "failed") else None

        return wait_for(done, timeout, 0.2, f"submission {submission_id}\n"
                        f"{self.worker.tail()}")


# --------------------------------------------------------------------------- fixtures


@pytest.fixture
def make_app(tmp_path: Path) -> Callable[..., Flask]:
    """Build a fresh migrated app (SQLite + memory broker) with settings overridden."""
    counter = iter(range(1000))
    return lambda **overrides: build_app(tmp_path / f"app{next(counter)}", **overrides)


@pytest.fixture
def app(make_app: Callable[..., Flask]) -> Flask:
    """A fresh app on SQLite with the in-memory broker (CSRF on, as in production)."""
    return make_app()


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    """Test client of `app`."""
    return app.test_client()


@pytest.fixture
def users(app: Flask) -> Users:
    """User factory for `app`: `users.create(role="student")` -> MadeUser with a token."""
    return Users(app)


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A Redis server of our own for this module (not the shared 6379 one)."""
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def pg_databases() -> Iterator[PgDatabases]:
    """Factory of fresh PostgreSQL databases: `pg_databases.create()` -> URL."""
    dbs = PgDatabases()
    yield dbs
    dbs.drop_all()


@pytest.fixture(scope="session")
def pg_url(pg_databases: PgDatabases) -> str:
    """A PostgreSQL database for this session (dropped afterwards)."""
    return pg_databases.create()


@pytest.fixture(scope="module")
def pg_stack(pg_databases: PgDatabases, redis_server: RedisServer,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """PostgreSQL + our Redis + a real 2-process Celery worker + the site over HTTP.

    Module scoped: its processes end with the module, so no child process outlives the
    tests that use it.
    """
    instance = tmp_path_factory.mktemp("pg-stack")
    app = build_app(instance, DATABASE_URL=pg_databases.create(), BROKER_URL=redis_server.url,
                    INSTANCES_K=1)
    worker = WorkerProcess(app, instance / "logs").start()
    server = LiveServer(app).start()
    yield Stack(app, worker, server, Users(app))
    server.stop()
    worker.stop()
    from grader.extensions import db

    with app.app_context():
        db.session.remove()
        for engine in db.engines.values():
            engine.dispose()
