"""Settings: defaults, then `MICROGRADE_*` environment variables, then the mapping given.

Read only by `grader.create_app`. Keys are the environment names without the prefix
(`DATABASE_URL`, `BROKER_URL`, `SECRET_KEY`, `INSTANCE_PATH`, `JOIN_CODE`,
`SUBMISSION_COOLDOWN`, `ALLOW_WEAK_SANDBOX`, `LIMIT_WALL_S`, ...); a mapping passed to
`create_app` may also use the prefixed names, and may set any Flask key directly.
"""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kombu import Exchange, Queue

from worker.limits import Limits

log = logging.getLogger(__name__)

PREFIX = "MICROGRADE_"
LIMIT_PREFIX = "LIMIT_"
GRADING_QUEUE = "grading"
REGRADE_QUEUE = "regrade"
DEFAULT_MANIFEST = Path(__file__).resolve().parent.parent / "exercises" / "assignments.toml"

DEFAULTS: dict[str, Any] = {
    "INSTANCE_PATH": "./instance",
    "DATABASE_URL": "",          #: default sqlite:///<instance>/micrograde.sqlite
    "BROKER_URL": "",            #: default sqla+sqlite:///<instance>/broker.sqlite
    "SECRET_KEY": "",            #: default generated once into <instance>/secret_key
    "JOIN_CODE": "",             #: default generated once into <instance>/join_code
    "SUBMISSION_COOLDOWN": 0,    #: seconds between one student's submissions; 0 = off
    "ALLOW_WEAK_SANDBOX": False,  #: let a worker start without bubblewrap
    "MANIFEST": "",              #: assignments manifest; default exercises/assignments.toml
    "INSTANCES_K": 3,            #: random instances per exercise besides the canonical one
    "SWEEP_INTERVAL": 30.0,      #: seconds between sweeps for stuck submissions
    "STUCK_QUEUED_AFTER": 300.0,  #: a queued submission is re-enqueued after this long
    "STUCK_RUNNING_AFTER": 0.0,  #: ... a running one after this (0: hard time limit + 60 s)
    "MAX_ATTEMPTS": 3,           #: grading attempts before a submission is marked failed
    "TOKEN_TTL_DAYS": 365,       #: API tokens expire after this many days
    "WORKER_HEARTBEAT": 10.0,    #: seconds between a worker's heartbeats in the database
    "SESSION_COOKIE_SECURE": False,
    "TRUSTED_PROXIES": 0,        #: reverse proxies in front whose X-Forwarded-* are believed
    "LOGIN_MAX_FAILURES": 5,     #: failed sign-ins per email and address before a pause
    "LOGIN_WINDOW_S": 300.0,     #: ... counted over, and paused for, this many seconds
    "LOGIN_THROTTLE_URL": "",    #: Redis for the counts; default the broker's Redis, else SQLite
}


def _coerce(value: Any, like: Any) -> Any:
    """Convert an environment string to the type of the default."""
    if not isinstance(value, str):
        return value
    if isinstance(like, bool):
        return value.strip().lower() in {"1", "true", "yes", "on"}
    if isinstance(like, int):
        return int(value)
    if isinstance(like, float):
        return float(value)
    return value


def gather(mapping: Mapping[str, Any] | None, environ: Mapping[str, str]) -> dict[str, Any]:
    """Merge defaults, `MICROGRADE_*` variables and the mapping (which wins)."""
    conf = dict(DEFAULTS)
    for key, value in environ.items():
        if key.startswith(PREFIX):
            name = key[len(PREFIX):]
            conf[name] = _coerce(value, DEFAULTS.get(name, ""))
    for key, value in (mapping or {}).items():
        name = key[len(PREFIX):] if key.startswith(PREFIX) else key
        conf[name] = _coerce(value, DEFAULTS.get(name, ""))
    return conf


def _instance_secret(instance: Path, name: str, nbytes: int) -> str:
    """A random value created once in the instance folder and read back afterwards."""
    path = instance / name
    if not path.exists():
        instance.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_urlsafe(nbytes))
        log.info("generated %s", path)
    return path.read_text().strip()


#: sandbox runs an exercise may take: its own and, for a wrong result, the shrinking replay
RUNS_PER_EXERCISE = 2


def time_limits(limits: Limits, n_exercises: int = 5) -> tuple[int, int]:
    """Celery soft and hard time limits above the sandbox's whole budget for a submission."""
    budget = n_exercises * RUNS_PER_EXERCISE * (limits.import_s + limits.wall_s)
    soft = int(budget * 1.2) + 30
    return soft, soft + 30


def resolve(conf: dict[str, Any]) -> dict[str, Any]:
    """Derive the Flask, SQLAlchemy and Celery settings from the merged settings."""
    instance = Path(conf["INSTANCE_PATH"]).expanduser().resolve()
    conf["INSTANCE_PATH"] = str(instance)
    db_url = conf["DATABASE_URL"] or f"sqlite:///{instance / 'micrograde.sqlite'}"
    broker = conf["BROKER_URL"] or f"sqla+sqlite:///{instance / 'broker.sqlite'}"
    conf["DATABASE_URL"], conf["BROKER_URL"] = db_url, broker
    conf.setdefault("SQLALCHEMY_DATABASE_URI", db_url)
    if db_url.startswith("sqlite"):
        conf.setdefault("SQLALCHEMY_ENGINE_OPTIONS", {"connect_args": {"timeout": 30}})
    else:
        conf.setdefault("SQLALCHEMY_ENGINE_OPTIONS", {"pool_pre_ping": True})
    if not conf["SECRET_KEY"]:
        conf["SECRET_KEY"] = _instance_secret(instance, "secret_key", 32)
    if not conf["JOIN_CODE"]:
        conf["JOIN_CODE"] = _instance_secret(instance, "join_code", 6)
    conf["MANIFEST"] = str(conf["MANIFEST"] or DEFAULT_MANIFEST)
    limits = Limits.from_mapping(conf, LIMIT_PREFIX)
    conf["LIMITS"] = limits
    conf.setdefault("MAX_CONTENT_LENGTH", limits.notebook_bytes + 256 * 1024)
    soft, hard = time_limits(limits)
    if not conf["STUCK_RUNNING_AFTER"]:
        conf["STUCK_RUNNING_AFTER"] = float(hard + 60)
    conf.setdefault("SESSION_COOKIE_HTTPONLY", True)
    conf.setdefault("SESSION_COOKIE_SAMESITE", "Lax")
    conf["CELERY"] = celery_settings(broker, conf, soft, hard) | dict(conf.get("CELERY") or {})
    return conf


def celery_settings(broker: str, conf: Mapping[str, Any], soft: int, hard: int) -> dict:
    """Celery settings: late acks, one message prefetched, grading served before regrades."""
    transport: dict[str, Any] = {}
    if broker.startswith(("redis://", "rediss://")):
        # always poll `grading` before `regrade` (BRPOP key order), never round robin; a
        # message unacked this long (its worker died) is delivered again
        transport = {"queue_order_strategy": "priority",
                     "visibility_timeout": max(3600, hard * 4)}
    return {
        "broker_url": broker,
        "task_ignore_result": True,
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        "task_soft_time_limit": soft,
        "task_time_limit": hard,
        "task_default_queue": GRADING_QUEUE,
        "task_queues": tuple(Queue(q, Exchange(q, type="direct"), routing_key=q)
                            for q in (GRADING_QUEUE, REGRADE_QUEUE)),
        "task_default_exchange": GRADING_QUEUE,
        "task_default_routing_key": GRADING_QUEUE,
        "task_routes": {"micrograde.regrade": {"queue": REGRADE_QUEUE}},
        "broker_transport_options": transport,
        "broker_connection_timeout": 3,
        "broker_connection_retry_on_startup": True,
        "task_publish_retry_policy": {"max_retries": 2, "interval_start": 0,
                                      "interval_step": 0.3, "interval_max": 0.6},
        "worker_hijack_root_logger": False,
        "beat_schedule": {"sweep": {"task": "micrograde.sweep",
                                    "schedule": float(conf["SWEEP_INTERVAL"])}},
    }


def load(mapping: Mapping[str, Any] | None = None,
         environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The app's whole configuration."""
    return resolve(gather(mapping, os.environ if environ is None else environ))
