"""docker-compose.yml validated by the real Compose v2 and checked against the design."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from deploy_helpers import COMPOSE_FILE, ROOT, compose, env_file_values, make_env

from grader import config as app_config
from worker.limits import Limits

WORKER_SECURITY_OPT = {"no-new-privileges:true", "seccomp=unconfined", "apparmor=unconfined",
                       "systempaths=unconfined"}
SECRETS = ("POSTGRES_PASSWORD", "REDIS_PASSWORD", "MICROGRADE_SECRET_KEY",
           "MICROGRADE_JOIN_CODE")


def app_services(config: dict) -> dict[str, dict]:
    """Services that run the micrograde image (built from the Dockerfile)."""
    return {name: svc for name, svc in config["services"].items() if "build" in svc}


def one_shots(config: dict) -> set[str]:
    """Services others wait on to *finish* (migrations), not to be healthy."""
    return {dep for svc in config["services"].values()
            for dep, how in (svc.get("depends_on") or {}).items()
            if how["condition"] == "service_completed_successfully"}


def test_compose_v2_accepts_the_file(project_dir: Path) -> None:
    proc = compose(project_dir, "config", "--quiet")
    assert proc.stderr == ""  # no warnings either (obsolete keys, missing files...)


def test_compose_refuses_to_start_without_each_secret(tmp_path: Path) -> None:
    for secret in SECRETS:
        project = make_env(tmp_path / secret)
        env = (project / ".env").read_text()
        (project / ".env").write_text(re.sub(rf"(?m)^{secret}=.*$", f"{secret}=", env))
        proc = compose(project, "config", "--quiet", check=False)
        assert proc.returncode != 0, secret
        assert f"set {secret} in .env" in proc.stderr


def test_the_roles(compose_config: dict) -> None:
    services = compose_config["services"]
    assert set(services) == {"migrate", "web", "worker", "beat", "redis", "postgres"}
    assert set(app_services(compose_config)) == {"migrate", "web", "worker", "beat"}
    images = {svc["image"] for svc in app_services(compose_config).values()}
    assert len(images) == 1  # one image, every role with its own command
    for svc in app_services(compose_config).values():
        assert svc["build"]["dockerfile"] == "Dockerfile"
        assert svc["command"], "each role states its command"


def test_every_long_running_service_has_a_healthcheck(compose_config: dict) -> None:
    once = one_shots(compose_config)
    assert once == {"migrate"}
    assert compose_config["services"]["migrate"]["restart"] == "no"
    for name, svc in compose_config["services"].items():
        if name in once:
            continue
        check = svc.get("healthcheck")
        assert check and not check.get("disable"), name
        assert check["test"][0] in ("CMD", "CMD-SHELL") and len(check["test"]) > 1, name


def test_dependencies_wait_for_health_or_completion(compose_config: dict) -> None:
    once = one_shots(compose_config)
    for name, svc in compose_config["services"].items():
        for dep, how in (svc.get("depends_on") or {}).items():
            wanted = ("service_completed_successfully" if dep in once
                      else "service_healthy")
            assert how["condition"] == wanted, (name, dep)
    for name in ("web", "worker", "beat"):
        deps = compose_config["services"][name]["depends_on"]
        assert set(deps) == {"postgres", "redis", "migrate"}, name
    assert set(compose_config["services"]["migrate"]["depends_on"]) == {"postgres"}


def test_migrations_come_before_the_web_serves(compose_config: dict) -> None:
    services = compose_config["services"]
    assert services["migrate"]["command"] == ["micrograde", "migrate"]
    assert services["web"]["depends_on"]["migrate"]["condition"] == \
        "service_completed_successfully"


def test_worker_is_scalable(compose_config: dict) -> None:
    worker = compose_config["services"]["worker"]
    assert "container_name" not in worker
    assert not worker.get("ports")
    assert not worker.get("hostname")
    for name, svc in compose_config["services"].items():
        assert "container_name" not in svc, name
        for port in svc.get("ports") or []:
            assert name == "web" and port["host_ip"] == "127.0.0.1", (name, port)


def test_worker_gets_what_bubblewrap_needs_and_nothing_more(compose_config: dict) -> None:
    text = COMPOSE_FILE.read_text()
    assert not re.search(r"(?m)^\s*privileged\s*:", text)
    for name, svc in compose_config["services"].items():
        assert not svc.get("privileged"), name
        assert not svc.get("cap_add"), name
        assert svc.get("pid") is None and svc.get("network_mode") is None, name
        if name in app_services(compose_config):
            assert svc["cap_drop"] == ["ALL"], name
            opts = set(svc.get("security_opt") or [])
            assert "no-new-privileges:true" in opts, name
            if name != "worker":
                assert opts == {"no-new-privileges:true"}, name
    worker = compose_config["services"]["worker"]
    assert set(worker["security_opt"]) == WORKER_SECURITY_OPT
    assert worker["user"] == "10002:10002"
    # the comment above security_opt states why each relaxation is there
    comment = text[text.index("  worker:"):text.index("    security_opt:\n      - no-new")]
    for opt in ("seccomp=unconfined", "apparmor=unconfined", "systempaths=unconfined"):
        assert f"#   {opt}" in comment, opt
    assert worker["pids_limit"] > 0 and worker["mem_limit"]


def test_database_and_broker_sit_on_an_internal_network(compose_config: dict) -> None:
    networks = compose_config["networks"]
    assert networks["backend"].get("internal") is True
    assert not networks["frontend"].get("internal")
    for name in ("postgres", "redis", "worker", "beat", "migrate"):
        assert set(compose_config["services"][name]["networks"]) == {"backend"}, name
    assert set(compose_config["services"]["web"]["networks"]) == {"backend", "frontend"}


def test_state_lives_in_named_volumes(compose_config: dict) -> None:
    mounts = {name: {(v["type"], v.get("source"), v["target"]) for v in svc.get("volumes", [])}
              for name, svc in compose_config["services"].items()}
    assert ("volume", "pgdata", "/var/lib/postgresql/data") in mounts["postgres"]
    assert ("volume", "redis-data", "/data") in mounts["redis"]
    assert {"pgdata", "redis-data"} <= set(compose_config["volumes"])
    for name in app_services(compose_config):
        assert not mounts[name], f"{name} keeps no state of its own"


def test_services_reach_each_other_with_the_secrets_from_env(compose_config: dict,
                                                             dotenv: dict) -> None:
    env = compose_config["services"]["worker"]["environment"]
    assert env["MICROGRADE_DATABASE_URL"] == (
        f"postgresql+psycopg://micrograde:{dotenv['POSTGRES_PASSWORD']}"
        "@postgres:5432/micrograde")
    assert env["MICROGRADE_BROKER_URL"] == f"redis://:{dotenv['REDIS_PASSWORD']}@redis:6379/0"
    pg = compose_config["services"]["postgres"]["environment"]
    assert pg["POSTGRES_PASSWORD"] == dotenv["POSTGRES_PASSWORD"]
    assert (pg["POSTGRES_USER"], pg["POSTGRES_DB"]) == ("micrograde", "micrograde")
    redis = compose_config["services"]["redis"]
    assert redis["environment"]["REDIS_PASSWORD"] == dotenv["REDIS_PASSWORD"]
    assert "--requirepass" in " ".join(redis["command"])
    for name in app_services(compose_config):
        app_env = compose_config["services"][name]["environment"]
        assert app_env["MICROGRADE_SECRET_KEY"] == dotenv["MICROGRADE_SECRET_KEY"], name
        assert app_env["MICROGRADE_JOIN_CODE"] == dotenv["MICROGRADE_JOIN_CODE"], name
        assert "MICROGRADE_ALLOW_WEAK_SANDBOX" not in app_env, name


def test_env_example_has_no_secret_and_documents_every_variable() -> None:
    example = env_file_values(ROOT / ".env.example")
    for secret in SECRETS:
        assert example[secret] == "", f"{secret} must not ship with a value"
    assert [k for k, v in example.items() if v == ""] == list(SECRETS)
    used = set(re.findall(r"\$\{([A-Z0-9_]+)", COMPOSE_FILE.read_text()))
    assert used <= set(example), f"undocumented: {used - set(example)}"
    text = (ROOT / ".env.example").read_text()
    for extra in ROOT.glob("deploy/compose.*.yml"):
        for name in set(re.findall(r"\$\{([A-Z0-9_]+)", extra.read_text())):
            assert re.search(rf"(?m)^(# )?{name}=", text), f"{name} ({extra.name})"


def test_make_env_fills_every_secret(dotenv: dict) -> None:
    values = [dotenv[s] for s in SECRETS]
    assert all(re.fullmatch(r"[0-9a-f]{8,}", v) for v in values)
    assert len(set(values)) == len(values)
    example = env_file_values(ROOT / ".env.example")
    assert {k: v for k, v in dotenv.items() if k not in SECRETS} == \
        {k: v for k, v in example.items() if k not in SECRETS}


def test_every_setting_in_env_example_is_read_by_something() -> None:
    """A misspelt MICROGRADE_* name would be silently ignored: each must have a reader."""
    readers = COMPOSE_FILE.read_text() + (ROOT / "deploy" / "gunicorn.conf.py").read_text()
    limit_fields = {f.upper() for f in Limits.__dataclass_fields__}
    for key in env_file_values(ROOT / ".env.example"):
        if not key.startswith("MICROGRADE_"):
            assert f"${{{key}" in readers, key
            continue
        name = key.removeprefix("MICROGRADE_")
        known = (name in app_config.DEFAULTS
                 or name.removeprefix("LIMIT_") in limit_fields and name.startswith("LIMIT_")
                 or key in readers)
        assert known, f"{key} is read by nothing"


def test_env_example_settings_reach_the_app_config(dotenv: dict) -> None:
    conf = app_config.load(environ={**dotenv, "MICROGRADE_INSTANCE_PATH": "/nonexistent"})
    example = env_file_values(ROOT / ".env.example")
    assert conf["SUBMISSION_COOLDOWN"] == int(example["MICROGRADE_SUBMISSION_COOLDOWN"])
    assert conf["JOIN_CODE"] == dotenv["MICROGRADE_JOIN_CODE"]
    assert conf["SECRET_KEY"] == dotenv["MICROGRADE_SECRET_KEY"]
    limits = conf["LIMITS"]
    for key, value in example.items():
        if key.startswith("MICROGRADE_LIMIT_"):
            field = key.removeprefix("MICROGRADE_LIMIT_").lower()
            assert getattr(limits, field) == pytest.approx(float(value)), key


WORKER_KEYS = ("command", "user", "init", "restart", "cap_drop", "security_opt", "pids_limit",
               "mem_limit", "stop_grace_period", "healthcheck", "image")


def test_a_worker_machine_runs_the_same_worker(compose_config: dict, tmp_path: Path) -> None:
    project = make_env(tmp_path)
    url_db = "postgresql+psycopg://micrograde:pw@10.0.0.5:5432/micrograde"
    url_broker = "redis://:pw@10.0.0.5:6379/0"
    with (project / ".env").open("a") as env:
        env.write(f"MICROGRADE_DATABASE_URL={url_db}\nMICROGRADE_BROKER_URL={url_broker}\n")
    files = ("deploy/compose.worker.yml",)
    compose(project, "--env-file", ".env", "config", "--quiet", files=files)
    remote = json.loads(compose(project, "--env-file", ".env", "config", "--format", "json",
                                files=files).stdout)
    assert set(remote["services"]) == {"worker"}
    worker, here = remote["services"]["worker"], compose_config["services"]["worker"]
    for key in WORKER_KEYS:
        assert worker[key] == here[key], key
    assert worker["build"]["context"] == str(project)
    assert worker["environment"]["MICROGRADE_DATABASE_URL"] == url_db
    assert worker["environment"]["MICROGRADE_BROKER_URL"] == url_broker
    assert "container_name" not in worker and not worker.get("ports")


def test_a_worker_machine_needs_the_server_urls(tmp_path: Path) -> None:
    project = make_env(tmp_path)
    proc = compose(project, "--env-file", ".env", "config", "--quiet",
                   files=("deploy/compose.worker.yml",), check=False)
    assert proc.returncode != 0
    assert "set MICROGRADE_DATABASE_URL in .env" in proc.stderr


def test_exposing_database_and_broker_to_worker_machines(tmp_path: Path) -> None:
    project = make_env(tmp_path)
    files = ("docker-compose.yml", "deploy/compose.expose.yml")
    refused = compose(project, "config", "--quiet", files=files, check=False)
    assert refused.returncode != 0 and "MICROGRADE_PRIVATE_ADDRESS" in refused.stderr
    with (project / ".env").open("a") as env:
        env.write("MICROGRADE_PRIVATE_ADDRESS=10.0.0.5\n")
    config = json.loads(compose(project, "config", "--format", "json", files=files).stdout)
    for name, port in (("postgres", 5432), ("redis", 6379)):
        svc = config["services"][name]
        assert [(p["host_ip"], int(p["published"]), p["target"]) for p in svc["ports"]] == \
            [("10.0.0.5", port, port)], name
        assert set(svc["networks"]) == {"backend", "cluster"}
    assert config["networks"]["backend"]["internal"] is True
    assert config["services"]["web"]["ports"][0]["host_ip"] == "127.0.0.1"
