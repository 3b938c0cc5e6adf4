"""Service commands: serve, migrate, create-user, submit, worker, beat, sweep."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from flask import Flask

log = logging.getLogger(__name__)

CELERY_APP = "worker.entry"
QUEUES = "grading,regrade"


def _app() -> Flask:
    """The site, built from the environment (imported late: `micrograde grade` stays light)."""
    from grader import create_app

    return create_app()


def ensure_schema(app: Flask) -> int:
    """Create or upgrade the database to the newest migration and load the manifest."""
    from flask_migrate import upgrade

    from exercises import manifest
    from grader.submissions import sync_manifest

    with app.app_context():
        upgrade()
        return len(sync_manifest(manifest.load(app.config["MANIFEST"])))


def python() -> str:
    """This interpreter for child processes: its real path, or a virtualenv's own python.

    Resolving a virtualenv's `bin/python` link would leave the virtualenv (and Celery)
    behind, so there the link itself is used; never a `python3` found on PATH (a shim).
    """
    if sys.prefix != sys.base_prefix:
        return os.path.abspath(sys.executable)
    return os.path.realpath(sys.executable)


def celery_command(app: Flask, *args: str) -> list[str]:
    """`python -m celery -A worker.entry ARGS` with this interpreter."""
    return [python(), "-m", "celery", "-A", CELERY_APP, *args]


def worker_command(app: Flask, concurrency: int, beat: bool, queues: str = QUEUES,
                   loglevel: str = "INFO") -> list[str]:
    """The command line of a grading worker (with the sweeper's beat inside it if `beat`)."""
    args = ["worker", "-Q", queues, "-c", str(concurrency), "--loglevel", loglevel,
            "-n", f"micrograde-{os.getpid()}@%h"]
    if beat:
        args += ["-B", "--schedule", str(Path(app.config["INSTANCE_PATH"]) / "celerybeat")]
    return celery_command(app, *args)


class Supervised:
    """A child process (the worker) started in its own process group, restarted if it dies."""

    def __init__(self, cmd: list[str], env: dict[str, str]) -> None:
        self.cmd, self.env = cmd, env
        self.proc: subprocess.Popen[bytes] | None = None
        self.stopping = threading.Event()
        self.restarts = 0

    def start(self) -> None:
        """Start the child and a thread that restarts it when it exits unexpectedly."""
        self._spawn()
        threading.Thread(target=self._watch, daemon=True, name="worker-watch").start()

    def _spawn(self) -> None:
        self.proc = subprocess.Popen(self.cmd, env=self.env, start_new_session=True)
        log.info("worker started (pid %s)", self.proc.pid)

    def _watch(self) -> None:
        while not self.stopping.is_set():
            if self.proc is not None and self.proc.poll() is not None:
                if self.stopping.is_set():
                    return
                click.echo(f"micrograde: the worker exited ({self.proc.returncode}); "
                           "restarting it", err=True)
                self.restarts += 1
                time.sleep(min(10, self.restarts))
                if not self.stopping.is_set():
                    self._spawn()
            self.stopping.wait(1.0)

    def stop(self, timeout: float = 15.0) -> None:
        """Stop the child's whole process group: TERM, then KILL after `timeout`."""
        self.stopping.set()
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        try:
            proc.terminate()  # the worker's warm shutdown stops its pool and beat
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        except ProcessLookupError:
            pass


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=5000, show_default=True, type=click.IntRange(1, 65535))
@click.option("--concurrency", default=2, show_default=True, type=click.IntRange(1, 64),
              help="Grading processes of the worker.")
@click.option("--no-worker", is_flag=True, help="Run only the site (workers run elsewhere).")
def serve(host: str, port: int, concurrency: int, no_worker: bool) -> None:
    """Run the site with a grading worker and the sweeper (creates the instance first)."""
    from werkzeug.serving import run_simple

    from worker.celery_app import sandbox_ready

    app = _app()
    problem = None if no_worker else sandbox_ready(app)
    if problem:
        raise click.ClickException(problem)
    n = ensure_schema(app)
    click.echo(f"micrograde: instance {app.config['INSTANCE_PATH']} "
               f"({n} assignment(s)); database {_redact(app.config['DATABASE_URL'])}; "
               f"broker {_redact(app.config['BROKER_URL'])}", err=True)
    click.echo(f"micrograde: students register with join code {app.config['JOIN_CODE']}; "
               "create staff with `micrograde create-user EMAIL --role instructor`", err=True)
    worker = None
    if not no_worker:
        env = dict(os.environ, MICROGRADE_INSTANCE_PATH=app.config["INSTANCE_PATH"])
        worker = Supervised(worker_command(app, concurrency, beat=True), env)
        worker.start()
    click.echo(f"micrograde: serving on http://{host}:{port}/  (Ctrl+C stops)", err=True)
    signal.signal(signal.SIGTERM, _exit_on_term)
    try:
        run_simple(host, port, app, threaded=True, use_reloader=False, use_debugger=False)
    finally:
        if worker is not None:
            worker.stop()


def _exit_on_term(signum: int, _frame: object) -> None:
    """SIGTERM ends `serve` like Ctrl+C, so the worker it started is stopped too."""
    raise SystemExit(128 + signum)


def _redact(url: str) -> str:
    from grader.health import _safe_url

    return _safe_url(url)


@click.command("migrate")
def migrate_cmd() -> None:
    """Create or upgrade the database and load the assignments manifest."""
    app = _app()
    n = ensure_schema(app)
    click.echo(f"database {_redact(app.config['DATABASE_URL'])} is up to date; "
               f"{n} assignment(s) loaded from {app.config['MANIFEST']}")


@click.command("create-user")
@click.argument("email")
@click.option("--role", type=click.Choice(["student", "instructor"]), required=True)
@click.option("--password", help="Password for the web login (none: token only).")
@click.option("--name", default="", help="Display name.")
def create_user(email: str, role: str, password: str | None, name: str) -> None:
    """Create a user and print their API token (and nothing else) on stdout."""
    from email_validator import EmailNotValidError, validate_email
    from sqlalchemy import func, select

    from grader.extensions import db
    from grader.models import User

    try:
        email = validate_email(email, check_deliverability=False).normalized.lower()
    except EmailNotValidError as exc:
        raise click.BadParameter(str(exc), param_hint="EMAIL") from None
    app = _app()
    ensure_schema(app)
    with app.app_context():
        if db.session.scalar(select(User).where(func.lower(User.email) == email)):
            raise click.ClickException(f"a user {email} already exists")
        user = User(email=email, role=role, name=name)
        if password:
            user.set_password(password)
        token = user.issue_token(int(app.config["TOKEN_TTL_DAYS"]))
        db.session.add(user)
        db.session.commit()
    click.echo(token)


@click.command("submit")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--server", envvar="MICROGRADE_SERVER", default="http://127.0.0.1:5000",
              show_default=True, help="The micrograde site (or env MICROGRADE_SERVER).")
@click.option("--token", envvar="MICROGRADE_TOKEN", required=True,
              help="Your API token (or env MICROGRADE_TOKEN).")
@click.option("--assignment", default="micrograd", show_default=True)
@click.option("--wait", is_flag=True, help="Wait for the grade and print it.")
@click.option("--json", "as_json", is_flag=True, help="Print the server's JSON.")
@click.option("--timeout", default=600.0, show_default=True, help="Seconds to wait at most.")
def submit(file: Path, server: str, token: str, assignment: str, wait: bool, as_json: bool,
           timeout: float) -> None:
    """Submit FILE to a micrograde server; with --wait, print the grade.

    Exit status: 0 submitted (with --wait: every exercise passed), 1 not passed, 2 refused.
    """
    from grader.api.client import ApiError, Client, summary

    client = Client(server, token)
    made = None
    try:
        made = client.submit(file.name, file.read_bytes(), assignment)
        if not wait:
            click.echo(json.dumps(made) if as_json else
                       f"submission {made['id']} {made['status']}: {made['url']}")
            return
        if not as_json:
            click.echo(f"submission {made['id']} queued; waiting for the grade...", err=True)
        done = client.wait(made["id"], timeout=timeout, on_status=None if as_json else (
            lambda s: click.echo(f"  {s['status']}", err=True)))
    except ApiError as exc:
        click.echo(f"micrograde submit: {exc}", err=True)
        if made is not None:  # stored and queued all the same
            click.echo(f"submission {made['id']} is saved; see {made['url']}", err=True)
        sys.exit(2)
    click.echo(json.dumps(done, indent=2) if as_json else summary(done))
    report = done.get("report") or {}
    passed = done["status"] == "graded" and all(
        e["verdict"] == "passed" for e in report.get("exercises", [])
        if not e.get("feedback_only"))
    sys.exit(0 if passed else 1)


@click.command("worker", context_settings={"ignore_unknown_options": True})
@click.option("-c", "--concurrency", default=2, show_default=True, type=click.IntRange(1, 64))
@click.option("-Q", "--queues", default=QUEUES, show_default=True)
@click.option("--beat", is_flag=True, help="Also run the sweeper's schedule in this worker.")
@click.argument("celery_args", nargs=-1, type=click.UNPROCESSED)
def worker_cmd(concurrency: int, queues: str, beat: bool, celery_args: tuple[str, ...]) -> None:
    """Run a grading worker (`celery -A worker.entry worker -Q grading,regrade`)."""
    app = _app()
    cmd = worker_command(app, concurrency, beat, queues) + list(celery_args)
    os.execv(cmd[0], cmd)


@click.command("beat")
def beat_cmd() -> None:
    """Run the sweeper's schedule (`celery -A worker.entry beat`); one per deployment."""
    app = _app()
    schedule = str(Path(app.config["INSTANCE_PATH"]) / "celerybeat")
    Path(app.config["INSTANCE_PATH"]).mkdir(parents=True, exist_ok=True)
    cmd = celery_command(app, "beat", "--schedule", schedule, "--loglevel", "INFO")
    os.execv(cmd[0], cmd)


@click.command("sweep")
def sweep_cmd() -> None:
    """Re-enqueue stuck submissions once, now, and print their ids."""
    from worker.tasks import sweep_stuck

    app = _app()
    with app.app_context():
        ids = sweep_stuck()
    click.echo(" ".join(map(str, ids)) or "nothing stuck")


COMMANDS = (serve, migrate_cmd, create_user, submit, worker_cmd, beat_cmd, sweep_cmd)
