"""Celery wiring: `celery_init_app(app)` binds a Celery app to the Flask app (Flask's pattern).

Queues: `grading` for fresh submissions and `regrade` for regrades. A worker consumes
`-Q grading,regrade`; with Redis the transport option `queue_order_strategy=priority`
makes every fetch try `grading` first, and prefetch 1 with late acks means a worker holds
at most one message per process, so a class-wide regrade never delays a fresh submission
by more than the regrades already running.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from celery import Celery, Task
from celery.signals import (
    celeryd_after_setup,
    task_postrun,
    worker_init,
    worker_process_init,
    worker_ready,
    worker_shutdown,
)
from flask import Flask

log = logging.getLogger(__name__)

_state: dict[str, Any] = {}


def celery_init_app(app: Flask) -> Celery:
    """Create the Celery app whose tasks run inside the Flask app's context."""

    class FlaskTask(Task):
        def __call__(self, *args: object, **kwargs: object) -> object:
            with app.app_context():
                return self.run(*args, **kwargs)

    celery_app = Celery(app.name, task_cls=FlaskTask)
    celery_app.config_from_object(app.config["CELERY"])
    celery_app.conf.update(include=["worker.tasks"])
    celery_app.set_default()
    app.extensions["celery"] = celery_app
    _state["flask_app"] = app
    return celery_app


def sandbox_ready(app: Flask) -> str | None:
    """None when grading may run here, else why not (no bwrap and weak mode not allowed)."""
    import shutil

    from worker.sandbox import BWRAP, bwrap_path

    if bwrap_path() is not None or app.config.get("ALLOW_WEAK_SANDBOX"):
        return None
    weak = "or set MICROGRADE_ALLOW_WEAK_SANDBOX=1 to grade with resource limits only."
    if shutil.which(BWRAP):
        return ("bubblewrap (bwrap) is installed but cannot make a jail here (user "
                "namespaces or mounting /proc refused; its reason is logged above). In "
                "Docker the worker needs the security_opt entries of docker-compose.yml; "
                "on a host, allow unprivileged user namespaces, " + weak)
    return ("bubblewrap (bwrap) is not installed, so student code cannot be isolated. "
            "Install it (apt-get install bubblewrap) " + weak)


@worker_init.connect
def _refuse_without_sandbox(**_: Any) -> None:
    app = _state.get("flask_app")
    problem = sandbox_ready(app) if app is not None else None
    if problem:
        log.critical(problem)
        raise SystemExit(f"micrograde worker: {problem}")


@worker_process_init.connect
def _dispose_engine(**_: Any) -> None:
    """A forked pool process must not reuse its parent's database connections."""
    app = _state.get("flask_app")
    if app is None:
        return
    from grader.extensions import db

    with app.app_context():
        for engine in db.engines.values():
            engine.dispose(close=False)


@task_postrun.connect
def _remove_session(**_: Any) -> None:
    app = _state.get("flask_app")
    if app is None:
        return
    from grader.extensions import db

    with app.app_context():
        db.session.remove()


@celeryd_after_setup.connect
def _remember_worker(sender: str, instance: Any, **_: Any) -> None:
    _state["hostname"] = sender
    _state["concurrency"] = getattr(instance, "concurrency", 1) or 1
    queues = instance.app.amqp.queues.consume_from or instance.app.amqp.queues
    _state["queues"] = ",".join(sorted(queues))


@worker_ready.connect
def _start_heartbeat(**_: Any) -> None:
    app = _state.get("flask_app")
    if app is None or "hostname" not in _state:
        return
    stop = threading.Event()
    _state["heartbeat_stop"] = stop
    thread = threading.Thread(target=_heartbeat_loop, args=(app, stop), daemon=True,
                              name="micrograde-heartbeat")
    thread.start()


@worker_shutdown.connect
def _stop_heartbeat(**_: Any) -> None:
    stop = _state.get("heartbeat_stop")
    app = _state.get("flask_app")
    if stop is None or app is None:
        return
    stop.set()
    from grader.health import forget_worker

    try:
        with app.app_context():
            forget_worker(_state["hostname"])
    except Exception as exc:  # the database may be gone at shutdown
        log.warning("could not remove worker heartbeat: %s", exc)


def _heartbeat_loop(app: Flask, stop: threading.Event) -> None:
    from grader.health import beat

    interval = float(app.config.get("WORKER_HEARTBEAT", 10.0))
    while True:
        try:
            with app.app_context():
                beat(_state["hostname"], os.getpid(), _state.get("queues", ""),
                     int(_state.get("concurrency", 1)))
        except Exception as exc:
            log.warning("worker heartbeat failed: %s", exc)
        if stop.wait(interval):
            return
