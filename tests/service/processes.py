"""Real service processes for tests and benchmarks: Redis, PostgreSQL, workers, HTTP.

A Redis server of our own on a free loopback port (never the shared 6379 one), PostgreSQL
databases created on the local server and dropped afterwards, real `celery worker`
processes in their own process groups, and the site served over real HTTP.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

PG_SERVER = os.environ.get("MICROGRADE_TEST_PG_SERVER",
                           "postgresql+psycopg://postgres@127.0.0.1:5432")


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
