"""API -> broker -> worker -> database -> API with real parts.

PostgreSQL + our own Redis + a real 2-process `celery worker` (session scoped), and the
embedded default: `micrograde serve` on SQLite with the SQLAlchemy broker, started as a
real process with its own worker.
"""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from pathlib import Path

import pytest

from grader.api.client import Client
from grader.cli.service import python
from tests.service.fixtures import SOURCES, free_port, wait_for

pytestmark = pytest.mark.integration
#: the `micrograde` command, run by this interpreter
MICROGRADE = [python(), "-c", "from grader.cli import main; main()"]


def check_correct(done: dict) -> None:
    report = done["report"]
    assert done["status"] == "graded" and report["status"] == "graded"
    assert (report["score"], report["max_score"]) == (10.0, 10.0)
    assert [e["verdict"] for e in report["exercises"]] == ["passed"] * 5


def check_buggy(done: dict) -> None:
    verdicts = {e["name"]: e for e in done["report"]["exercises"]}
    assert done["status"] == "graded" and 0 < done["score"] < 10
    diamond = verdicts["diamond"]
    assert diamond["verdict"] == "wrong_gradient" and diamond["hints"]
    assert diamond["diagnosis"]["cause"] and diamond["diff_dot"].startswith("digraph")
    assert verdicts["expression"]["verdict"] == "passed"


def check_hostile(done: dict, secret: str) -> None:
    report = done["report"]
    assert done["status"] == "graded" and done["score"] == 0
    assert {e["verdict"] for e in report["exercises"]} <= {"memory_limit", "crashed",
                                                          "error"}
    text = json.dumps(report)
    assert "no network" in text and "NETWORK-OPEN" not in text
    assert secret not in text and "READ /work" not in text


def test_correct_buggy_hostile_on_postgresql_and_redis(pg_stack) -> None:
    student = pg_stack.users.create()
    ids = {name: pg_stack.submit(student, SOURCES[name])
           for name in ("correct", "buggy", "hostile")}
    done = {name: pg_stack.wait_done(student, sid) for name, sid in ids.items()}
    check_correct(done["correct"])
    check_buggy(done["buggy"])
    check_hostile(done["hostile"], pg_stack.app.config["SECRET_KEY"])
    # the worker survived the hostile file: the next submission is graded too
    check_correct(pg_stack.wait_done(student, pg_stack.submit(student, SOURCES["correct"])))
    with pg_stack.app.app_context():
        from grader.extensions import db
        from grader.models import Result, Submission

        for sid in ids.values():
            sub = db.session.get(Submission, sid)
            assert sub.attempts == 1 and sub.worker.startswith(pg_stack.worker.name)
            assert db.session.query(Result).filter_by(submission_id=sid).count() == 5
        assert db.engine.dialect.name == "postgresql"


def test_students_cannot_read_each_other_over_http(pg_stack) -> None:
    alice, bob = pg_stack.users.create(), pg_stack.users.create()
    sid = pg_stack.submit(alice, SOURCES["correct"])
    bob_client = Client(pg_stack.server.url, bob.token)
    with pytest.raises(Exception) as info:
        bob_client.submission(sid)
    assert getattr(info.value, "status", None) == 404
    assert bob_client.request("GET", "/submissions") == {"submissions": []}
    assert Client(pg_stack.server.url, alice.token).wait(sid, 120, 0.2)["status"] == "graded"


def test_cli_submit_wait_and_health(pg_stack) -> None:
    student = pg_stack.users.create()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MICROGRADE_")}
    out = subprocess.run(
        [*MICROGRADE, "submit", str(Path(__file__).parent / "files/buggy.py"),
         "--server", pg_stack.server.url, "--token", student.token, "--wait"],
        capture_output=True, text=True, timeout=180, env=env)
    assert out.returncode == 1, out.stderr  # graded, not every exercise passed
    assert "diamond" in out.stdout and "wrong_gradient" in out.stdout and "total" in out.stdout
    bad = subprocess.run(
        [*MICROGRADE, "submit", str(Path(__file__).parent / "files/buggy.py"),
         "--server", pg_stack.server.url, "--token", "mg_wrong"],
        capture_output=True, text=True, timeout=60, env=env)
    assert bad.returncode == 2 and "bad_token" in bad.stderr
    with urllib.request.urlopen(pg_stack.server.url + "/api/v1/health", timeout=10) as r:
        health = json.loads(r.read())
    assert health["status"] == "ok" and health["database"]["dialect"] == "postgresql"
    assert health["broker"]["ok"] and pg_stack.worker.hostname in \
        [w["hostname"] for w in health["workers"]]
    assert health["graded_last_hour"] >= 1 and health["latency_p95_s"] >= \
        health["latency_p50_s"] > 0


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """`micrograde serve` with no configuration but an instance folder: the embedded default."""
    instance = tmp_path_factory.mktemp("serve") / "instance"
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MICROGRADE_")}
    env["MICROGRADE_INSTANCE_PATH"] = str(instance)
    env["MICROGRADE_INSTANCES_K"] = "1"
    log = open(instance.parent / "serve.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen([*MICROGRADE, "serve", "--port", str(port)],
                            env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        assert proc.poll() is None, (instance.parent / "serve.log").read_text()
        try:
            with urllib.request.urlopen(url + "/api/v1/health", timeout=2) as r:
                return json.loads(r.read()).get("worker_count", 0) > 0
        except OSError:
            return False

    wait_for(healthy, 90, 0.3, "micrograde serve to come up with a worker")
    yield {"url": url, "env": env, "instance": instance, "proc": proc,
           "log": instance.parent / "serve.log"}
    if proc.poll() is None:
        proc.terminate()
        proc.wait(60)
    log.close()


def test_embedded_serve_grades_correct_buggy_hostile(served) -> None:
    token = subprocess.run(
        [*MICROGRADE, "create-user", "student@example.org", "--role",
         "student", "--password", "pw-12345"], env=served["env"], capture_output=True,
        text=True, timeout=60, check=True).stdout
    assert token.count("\n") == 1 and token.startswith("mg_")  # the token and nothing else
    client = Client(served["url"], token.strip())
    assert [a["slug"] for a in client.assignments()] == ["micrograd"]
    ids = {name: client.submit(f"{name}.py", SOURCES[name].encode(), "micrograd")["id"]
           for name in ("correct", "buggy", "hostile")}
    done = {name: client.wait(sid, 180, 0.3) for name, sid in ids.items()}
    check_correct(done["correct"])
    check_buggy(done["buggy"])
    secret = (served["instance"] / "secret_key").read_text().strip()
    check_hostile(done["hostile"], secret)
    inst = served["instance"]
    assert (inst / "micrograde.sqlite").exists() and (inst / "broker.sqlite").exists()


def test_serve_stops_its_worker_on_sigterm(served) -> None:
    proc = served["proc"]
    children = subprocess.run(["pgrep", "-f", f"micrograde-{proc.pid}@"],
                              capture_output=True, text=True).stdout.split()
    assert children, served["log"].read_text()[-3000:]
    proc.terminate()
    proc.wait(60)
    wait_for(lambda: not subprocess.run(["pgrep", "-f", f"micrograde-{proc.pid}@"],
                                        capture_output=True).stdout, 60, 0.3,
             "the worker started by serve to stop")
