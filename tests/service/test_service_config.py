"""Settings: defaults, MICROGRADE_* environment, the mapping given to create_app."""

from __future__ import annotations

from pathlib import Path

from exercises import manifest
from grader import config, create_app
from worker.limits import Limits


def test_embedded_defaults_live_in_the_instance_folder(tmp_path: Path) -> None:
    conf = config.load({}, environ={"MICROGRADE_INSTANCE_PATH": str(tmp_path / "inst")})
    inst = tmp_path / "inst"
    assert conf["SQLALCHEMY_DATABASE_URI"] == f"sqlite:///{inst / 'micrograde.sqlite'}"
    assert conf["CELERY"]["broker_url"] == f"sqla+sqlite:///{inst / 'broker.sqlite'}"
    # the secret key and join code are generated once and read back afterwards
    again = config.load({}, environ={"MICROGRADE_INSTANCE_PATH": str(inst)})
    assert conf["SECRET_KEY"] == again["SECRET_KEY"] and len(conf["SECRET_KEY"]) >= 40
    assert (inst / "secret_key").stat().st_mode & 0o077 == 0
    assert conf["JOIN_CODE"] == again["JOIN_CODE"]


def test_environment_then_mapping(tmp_path: Path) -> None:
    env = {"MICROGRADE_INSTANCE_PATH": str(tmp_path),
           "MICROGRADE_DATABASE_URL": "postgresql+psycopg://u@h/db",
           "MICROGRADE_BROKER_URL": "redis://127.0.0.1:1/0",
           "MICROGRADE_SUBMISSION_COOLDOWN": "30", "MICROGRADE_ALLOW_WEAK_SANDBOX": "yes",
           "MICROGRADE_LIMIT_WALL_S": "7.5", "MICROGRADE_SECRET_KEY": "env-secret"}
    conf = config.load({"SUBMISSION_COOLDOWN": 5, "MICROGRADE_JOIN_CODE": "abc"}, env)
    assert conf["SQLALCHEMY_DATABASE_URI"] == "postgresql+psycopg://u@h/db"
    assert conf["SUBMISSION_COOLDOWN"] == 5  # the mapping wins over the environment
    assert conf["ALLOW_WEAK_SANDBOX"] is True and conf["JOIN_CODE"] == "abc"
    assert conf["LIMITS"] == Limits(wall_s=7.5) and conf["SECRET_KEY"] == "env-secret"
    assert not (tmp_path / "secret_key").exists()


def test_celery_settings_make_grading_safe(tmp_path: Path) -> None:
    conf = config.load({"INSTANCE_PATH": str(tmp_path),
                        "BROKER_URL": "redis://127.0.0.1:6379/3"}, environ={})
    c = conf["CELERY"]
    assert c["task_acks_late"] and c["task_reject_on_worker_lost"]
    assert c["worker_prefetch_multiplier"] == 1
    assert c["broker_transport_options"]["queue_order_strategy"] == "priority"
    limits = conf["LIMITS"]
    # the slowest submission the sandbox lets through: every exercise of the default
    # assignment uses its whole import and wall time, and a wrong one is replayed (shrunk)
    (spec,) = manifest.load(conf["MANIFEST"])
    budget = len(spec.exercises) * 2 * (limits.import_s + limits.wall_s)
    assert budget < c["task_soft_time_limit"] < c["task_time_limit"]
    assert conf["STUCK_RUNNING_AFTER"] > c["task_time_limit"]
    queues = {q.name: q.routing_key for q in c["task_queues"]}
    assert queues == {"grading": "grading", "regrade": "regrade"}
    assert c["task_routes"]["micrograde.regrade"]["queue"] == "regrade"
    # the embedded broker takes no Redis-only options (they would reach create_engine)
    embedded = config.load({"INSTANCE_PATH": str(tmp_path)}, environ={})["CELERY"]
    assert embedded["broker_transport_options"] == {}


def test_importing_reads_no_environment(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MICROGRADE_INSTANCE_PATH", str(tmp_path / "from-env"))
    app = create_app({"DATABASE_URL": "sqlite://", "BROKER_URL": "memory://",
                      "SECRET_KEY": "k", "JOIN_CODE": "j"})
    assert app.instance_path == str(tmp_path / "from-env")
    assert app.config["SESSION_COOKIE_HTTPONLY"] and app.config["SESSION_COOKIE_SAMESITE"]
    assert app.config["MAX_CONTENT_LENGTH"] > Limits().notebook_bytes
    assert "api" in app.blueprints
    assert app.extensions["celery"].conf.task_acks_late
