"""Service fixtures, reusable by any test package (`from tests.service.fixtures import *`).

Real parts only: a Redis server of our own on a free loopback port (never the shared
6379 one), a PostgreSQL database created for the session on the local server and dropped
after it, real `celery worker` processes, and a live HTTP server for the site.

Fixtures: `make_app`, `app`, `client`, `users` (SQLite + in-memory broker, no worker);
`redis_server`, `pg_databases`, `pg_url`, `pg_stack` (PostgreSQL + Redis + a 2-process worker + live
HTTP server, session scoped); helpers `build_app`, `RedisServer`, `WorkerProcess`,
`LiveServer`, `wait_for`, `SOURCES`.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import sqlite3
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.security import generate_password_hash

HERE = Path(__file__).resolve().parent
FILES = HERE / "files"
PG_SERVER = os.environ.get("MICROGRADE_TEST_PG_SERVER",
                           "postgresql+psycopg://postgres@127.0.0.1:5432")
PASSWORD = "correct horse battery"
SOURCES = {p.stem: p.read_text(encoding="utf-8") for p in FILES.glob("*.py")}


def free_port() -> int:
    """A TCP port free on loopback right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate: Callable[[], Any], timeout: float = 60.0, interval: float = 0.2,
             what: str = "condition") -> Any:
    """Poll until `predicate()` is truthy and return it; fail the test after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


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


def worker_env(app: Flask, **extra: Any) -> dict[str, str]:
    """The environment that makes a worker process use the app's database and broker."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MICROGRADE_")}
    keys = ("INSTANCE_PATH", "DATABASE_URL", "BROKER_URL", "SECRET_KEY", "JOIN_CODE",
            "MANIFEST", "INSTANCES_K", "SWEEP_INTERVAL", "STUCK_QUEUED_AFTER",
            "STUCK_RUNNING_AFTER", "MAX_ATTEMPTS", "ALLOW_WEAK_SANDBOX")
    for key in keys:
        env[f"MICROGRADE_{key}"] = str(app.config[key])
    env["MICROGRADE_WORKER_HEARTBEAT"] = "1"
    env.update({f"MICROGRADE_{k}": str(v) for k, v in extra.items()})
    return env


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


class RedisServer:
    """A redis-server of our own on a free loopback port, restartable, no persistence."""

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.workdir = workdir
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """Broker URL of this server."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        """Start the server and wait until it answers PING."""
        binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.workdir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(self.ping, 20, 0.05, f"redis on port {self.port}")
        return self

    def ping(self) -> bool:
        """True when the server answers."""
        import redis

        try:
            return bool(redis.Redis(port=self.port, socket_timeout=0.5).ping())
        except redis.RedisError:
            return False

    def stop(self) -> None:
        """Stop the server (its queued messages are lost: no persistence)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def restart(self) -> None:
        """Stop and start again on the same port."""
        self.stop()
        self.start()


class WorkerProcess:
    """A real `celery worker` process (its own process group) for an app's settings."""

    def __init__(self, app: Flask, logdir: Path, concurrency: int = 2, beat: bool = False,
                 **env: Any) -> None:
        self.app = app
        self.name = f"test-{secrets.token_hex(3)}"
        self.hostname = f"{self.name}@{socket.gethostname()}"
        self.concurrency, self.beat = concurrency, beat
        self.env = worker_env(app, **env)
        self.log = logdir / f"{self.name}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        """`python -m celery -A worker.entry worker ...` with this venv's interpreter."""
        from grader.cli.service import python

        cmd = [python(), "-m", "celery", "-A", "worker.entry", "worker", "-Q",
               "grading,regrade", "-c", str(self.concurrency), "-n", f"{self.name}@%h",
               "--loglevel", "INFO", "--without-gossip", "--without-mingle"]
        if self.beat:
            cmd += ["-B", "--schedule", str(self.log.with_suffix(".beat"))]
        return cmd

    def start(self, wait: bool = True) -> WorkerProcess:
        """Start the worker; with `wait`, until it has written its first heartbeat."""
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(self.command(), env=self.env, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        if wait:
            wait_for(self.ready, 90, 0.2, f"worker {self.name} ready\n{self.tail()}")
        return self

    def ready(self) -> bool:
        """True once this worker's heartbeat row exists (and the process lives)."""
        from grader.extensions import db
        from grader.models import WorkerHeartbeat

        if self.proc is None or self.proc.poll() is not None:
            pytest.fail(f"worker {self.name} exited:\n{self.tail()}")
        with self.app.app_context():
            row = db.session.get(WorkerHeartbeat, self.hostname)
            db.session.remove()
            return row is not None

    def children(self) -> list[int]:
        """Pids of the worker's pool processes."""
        out = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True,
                             text=True).stdout
        return [int(p) for p in out.split()]

    def kill9(self) -> None:
        """SIGKILL the whole worker (main process and pool) at once."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        """Warm shutdown, then SIGKILL of the group if it lingers."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.kill9()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def tail(self, n: int = 4000) -> str:
        """The end of the worker's log."""
        return self.log.read_text(errors="replace")[-n:] if self.log.exists() else ""


class LiveServer:
    """The site served over real HTTP on a free loopback port, in a thread."""

    def __init__(self, app: Flask) -> None:
        from werkzeug.serving import make_server

        self.port = free_port()
        self.server = make_server("127.0.0.1", self.port, app, threaded=True)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """Base URL, e.g. http://127.0.0.1:PORT."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> LiveServer:
        """Serve in the background."""
        self.thread.start()
        return self

    def stop(self) -> None:
        """Stop serving."""
        self.server.shutdown()


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


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A Redis server of this session's own (not the shared 6379 one)."""
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server
    server.stop()


class PgDatabases:
    """Creates PostgreSQL databases on the local server and drops them all at the end."""

    def __init__(self) -> None:
        import sqlalchemy as sa

        self.admin = sa.create_engine(f"{PG_SERVER}/postgres", isolation_level="AUTOCOMMIT")
        self.names: list[str] = []

    def create(self) -> str:
        """A new empty database; its URL."""
        import sqlalchemy as sa

        name = f"micrograde_test_{os.getpid()}_{secrets.token_hex(3)}"
        try:
            with self.admin.connect() as conn:
                conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        except sa.exc.OperationalError as exc:
            pytest.skip(f"PostgreSQL is not running (scripts/services.sh starts it): {exc}")
        self.names.append(name)
        return f"{PG_SERVER}/{name}"

    def drop_all(self) -> None:
        """Drop every database made here."""
        import sqlalchemy as sa

        with self.admin.connect() as conn:
            for name in self.names:
                conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        self.admin.dispose()


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


@pytest.fixture(scope="session")
def pg_stack(pg_url: str, redis_server: RedisServer,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """PostgreSQL + our Redis + a real 2-process Celery worker + the site over HTTP."""
    instance = tmp_path_factory.mktemp("pg-stack")
    app = build_app(instance, DATABASE_URL=pg_url, BROKER_URL=redis_server.url,
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
