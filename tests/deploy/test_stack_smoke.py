"""Smoke test: the compose file's own commands, run outside Docker, grade a submission.

Reads each role's command, environment and healthcheck from docker-compose.yml as Compose
v2 resolves it, maps the addresses of the `postgres` and `redis` services to the loopback
PostgreSQL and Redis that scripts/services.sh runs (a database of its own, Redis database
index 14), runs `migrate`, then `web`, `worker` and `beat` exactly as written, waits for
their healthchecks, creates a user with `micrograde create-user` and grades one submission
through the HTTP API. Everything it starts is killed at the end.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from deploy_helpers import BIN, ROOT, free_port

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PG = "postgresql+psycopg://postgres@127.0.0.1:5432"
REDIS_DB = 14
REDIS = f"redis://127.0.0.1:6379/{REDIS_DB}"
SERVICES = ("web", "worker", "beat")


def image_env() -> dict[str, str]:
    """The ENV of the Dockerfile's final stage (PATH left to the caller)."""
    text = re.sub(r"\\\n\s*", " ", (ROOT / "Dockerfile").read_text())
    final = text.rsplit("\nFROM ", 1)[1]
    env: dict[str, str] = {}
    for line in final.splitlines():
        if line.startswith("ENV "):
            env.update(pair.split("=", 1) for pair in line[4:].split())
    env.pop("PATH", None)
    return env


def forget_beat(schedule: str) -> None:
    """Remove beat's schedule files (dbm adds suffixes to the name)."""
    for path in glob.glob(glob.escape(schedule) + "*"):
        os.remove(path)


def psql(sql: str) -> None:
    """Run one statement on the loopback PostgreSQL as the superuser."""
    subprocess.run(["psql", "-h", "127.0.0.1", "-U", "postgres", "-qtA", "-v",
                    "ON_ERROR_STOP=1", "-c", sql, "postgres"], check=True,
                   capture_output=True, timeout=60)


def services_up() -> bool:
    """Whether the loopback Redis and PostgreSQL answer."""
    redis = subprocess.run(["redis-cli", "-h", "127.0.0.1", "ping"], capture_output=True,
                           text=True).stdout.strip() == "PONG"
    pg = subprocess.run(["pg_isready", "-h", "127.0.0.1", "-p", "5432", "-q"]).returncode == 0
    return redis and pg


@dataclass
class Stack:
    """The roles running outside Docker, with what the tests need to talk to them."""

    config: dict
    env: dict[str, dict[str, str]]
    base_url: str
    database: str
    logs: Path
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)
    migrate: subprocess.CompletedProcess | None = None

    def run(self, service: str, argv: list[str], timeout: float = 120) -> \
            subprocess.CompletedProcess[str]:
        """Run a command to completion with a service's environment."""
        return subprocess.run(argv, cwd=ROOT, env=self.env[service], capture_output=True,
                              text=True, timeout=timeout)

    def start(self, service: str) -> None:
        """Start a role's command in its own process group, logging to a file."""
        log = (self.logs / f"{service}.log").open("wb")
        self.procs[service] = subprocess.Popen(
            self.config["services"][service]["command"], cwd=ROOT, env=self.env[service],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()

    def healthy(self, service: str) -> subprocess.CompletedProcess[str]:
        """Run the service's own healthcheck command."""
        test = self.config["services"][service]["healthcheck"]["test"]
        assert test[0] == "CMD"
        return self.run(service, test[1:], timeout=60)

    def wait_healthy(self, service: str, within: float = 90) -> None:
        """Poll the healthcheck until it passes (or the role dies, or time runs out)."""
        deadline = time.monotonic() + within
        while True:
            proc = self.procs[service]
            if proc.poll() is not None:
                pytest.fail(f"{service} exited {proc.returncode}:\n{self.log(service)}")
            check = self.healthy(service)
            if check.returncode == 0:
                return
            if time.monotonic() > deadline:
                pytest.fail(f"{service} never healthy: {check.stderr}\n{self.log(service)}")
            time.sleep(1)

    def log(self, service: str) -> str:
        """The tail of a role's output."""
        path = self.logs / f"{service}.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    def stop(self) -> None:
        """TERM every role's process group, KILL what is left after a grace period."""
        for proc in self.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        for proc in self.procs.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # the group: celery's pool processes too
            proc.wait()

    def api(self, method: str, path: str, token: str | None = None,
            body: dict | None = None) -> tuple[int, dict]:
        """Call the JSON API; (status, decoded body)."""
        req = urllib.request.Request(self.base_url + path, method=method,
                                     data=None if body is None else json.dumps(body).encode())
        if body is not None:
            req.add_header("Content-Type", "application/json")
        if token:
            req.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"{}")


def role_env(config: dict, service: str, instance: Path, port: int, database: str) -> dict:
    """A role's environment from the compose file, its addresses mapped to loopback."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MICROGRADE_", "POSTGRES_", "REDIS_"))}
    env.update(image_env())
    env.update(config["services"][service].get("environment") or {})
    compose_db = env["MICROGRADE_DATABASE_URL"]
    assert compose_db.split("@", 1)[1].startswith("postgres:5432/")
    assert env["MICROGRADE_BROKER_URL"].split("@", 1)[1].startswith("redis:6379/")
    env.update(MICROGRADE_DATABASE_URL=f"{PG}/{database}", MICROGRADE_BROKER_URL=REDIS,
               MICROGRADE_INSTANCE_PATH=str(instance / service),
               PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}")
    if "MICROGRADE_BIND" in env:
        assert env["MICROGRADE_BIND"] == "0.0.0.0:8000"
        env["MICROGRADE_BIND"] = f"127.0.0.1:{port}"
    return env


@pytest.fixture(scope="module")
def stack(compose_config: dict, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """migrate, then web, worker and beat running with the compose file's commands."""
    if not services_up():
        subprocess.run(["bash", str(ROOT / "scripts" / "services.sh")], check=False,
                       capture_output=True, timeout=120)
    if not services_up():
        pytest.fail("Redis and PostgreSQL are not running on loopback: bash scripts/services.sh")
    tmp = tmp_path_factory.mktemp("stack")
    database = f"micrograde_deploy_{uuid.uuid4().hex[:8]}"
    psql(f"CREATE DATABASE {database}")
    subprocess.run(["redis-cli", "-n", str(REDIS_DB), "flushdb"], check=True,
                   capture_output=True)
    beat_state = next(a.split("=", 1)[1] for a in compose_config["services"]["beat"]["command"]
                      if a.startswith("--schedule="))
    forget_beat(beat_state)  # a stale schedule would pass beat's healthcheck at once
    port = free_port()
    env = {name: role_env(compose_config, name, tmp / "instance", port, database)
           for name in ("migrate", *SERVICES)}
    stack = Stack(compose_config, env, f"http://127.0.0.1:{port}", database, tmp)
    try:
        stack.migrate = stack.run("migrate", compose_config["services"]["migrate"]["command"])
        if stack.migrate.returncode == 0:
            for name in SERVICES:
                stack.start(name)
            for name in SERVICES:
                stack.wait_healthy(name)
        yield stack
    finally:
        stack.stop()
        forget_beat(beat_state)
        subprocess.run(["redis-cli", "-n", str(REDIS_DB), "flushdb"], capture_output=True)
        psql(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")


def test_migrate_succeeds_and_is_repeatable(stack: Stack) -> None:
    assert stack.migrate.returncode == 0, stack.migrate.stderr
    assert "up to date" in stack.migrate.stdout
    again = stack.run("migrate", stack.config["services"]["migrate"]["command"])
    assert again.returncode == 0, again.stderr  # what `docker compose up -d` does on upgrade


def test_every_role_passes_its_own_healthcheck(stack: Stack) -> None:
    for name in SERVICES:
        assert stack.procs[name].poll() is None, f"{name} died:\n{stack.log(name)}"
        check = stack.healthy(name)
        assert check.returncode == 0, f"{name}: {check.stderr}"
        assert check.stdout.strip() == "healthy"


def test_health_endpoint_sees_database_broker_and_worker(stack: Stack) -> None:
    status, health = stack.api("GET", "/api/v1/health")
    assert status == 200, health
    assert health["database"]["ok"] and health["broker"]["ok"], health
    assert health["worker_count"] >= 1 and health["status"] == "ok", health


def test_grades_one_submission_through_the_api(stack: Stack) -> None:
    made = stack.run("web", ["micrograde", "create-user", "smoke@example.edu",
                             "--role", "student"])
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    assert token and "\n" not in token, "create-user prints the token and nothing else"

    source = (ROOT / "reference" / "engine.py").read_text()  # a correct Value
    status, sub = stack.api("POST", "/api/v1/submissions", token,
                            {"assignment": "micrograd", "source": source})
    assert status == 202, sub
    assert sub["url"].startswith(stack.base_url)
    deadline = time.monotonic() + 120
    while True:
        status, sub = stack.api("GET", f"/api/v1/submissions/{sub['id']}", token)
        assert status == 200, sub
        if sub["status"] not in ("queued", "running") or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert sub["status"] == "graded", (sub, stack.log("worker"))
    report = sub["report"]
    assert report["status"] == "graded" and report["isolation"] == "bwrap"
    assert report["score"] == report["max_score"] > 0
    verdicts = {e["name"]: e["verdict"] for e in report["exercises"]}
    assert set(verdicts) >= {"expression", "diamond", "neuron", "mlp_step"}
    assert set(verdicts.values()) == {"passed"}, verdicts

    status, other = stack.api("GET", f"/api/v1/submissions/{sub['id']}", "not-a-token")
    assert status == 401 and "error" in other


def test_backup_and_restore_keep_the_grades(stack: Stack, tmp_path: Path) -> None:
    """The pg_dump / pg_restore of docs/deploying.md, on the smoke test's database."""
    if shutil.which("pg_dump") is None:
        pytest.fail("pg_dump is not installed (postgresql-client)")
    dump = tmp_path / "micrograde.dump"
    with dump.open("wb") as out:
        subprocess.run(["pg_dump", "-h", "127.0.0.1", "-U", "postgres", "-Fc", stack.database],
                       stdout=out, check=True, timeout=120)
    restored = f"{stack.database}_restored"
    psql(f"CREATE DATABASE {restored}")
    try:
        with dump.open("rb") as dump_in:
            subprocess.run(["pg_restore", "-h", "127.0.0.1", "-U", "postgres", "-d", restored,
                            "--clean", "--if-exists"], stdin=dump_in, check=True,
                           capture_output=True, timeout=120)
        count = subprocess.run(
            ["psql", "-h", "127.0.0.1", "-U", "postgres", "-qtA", "-c",
             "select count(*) from submission where status = 'graded'", restored],
            capture_output=True, text=True, check=True).stdout.strip()
        assert int(count) >= 1
    finally:
        psql(f"DROP DATABASE IF EXISTS {restored} WITH (FORCE)")


def test_worker_command_refuses_to_grade_without_a_jail(compose_config: dict,
                                                        tmp_path: Path) -> None:
    """What a worker container lacking the security_opt entries does: exit, saying why.

    No Docker engine runs here, so a stand-in bwrap first on PATH answers the way bwrap
    answers inside a container under Docker's default seccomp profile."""
    fake = tmp_path / "bin" / "bwrap"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'bwrap: Creating new namespace failed: "
                    "Operation not permitted' >&2\nexit 1\n")
    fake.chmod(0o755)
    env = role_env(compose_config, "worker", tmp_path / "instance", 0, "unused")
    env["PATH"] = f"{fake.parent}{os.pathsep}{env['PATH']}"
    proc = subprocess.run(compose_config["services"]["worker"]["command"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "Creating new namespace failed" in proc.stderr
    assert "installed but cannot make a jail here" in proc.stderr
    assert "security_opt" in proc.stderr
    assert "MICROGRADE_ALLOW_WEAK_SANDBOX" in proc.stderr
    assert "MICROGRADE_ALLOW_WEAK_SANDBOX" not in env
