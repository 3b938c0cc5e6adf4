"""Every command docker-compose.yml gives a role names an entry point the package has."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from deploy_helpers import BIN, ROOT, tool

IN_IMAGE = {"python", "micrograde", "gunicorn", "celery"}  # on PATH in /opt/venv/bin


def console_script(name: str) -> metadata.EntryPoint:
    """The installed console-script entry point called `name`."""
    found = [ep for ep in metadata.entry_points(group="console_scripts") if ep.name == name]
    assert found, f"no console script {name!r} is installed"
    return found[0]


def run_python(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run code in a fresh interpreter with a throw-away instance folder (no services)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MICROGRADE_")}
    env.update(MICROGRADE_INSTANCE_PATH=str(tmp_path / "instance"),
               MICROGRADE_SECRET_KEY="x" * 32, MICROGRADE_JOIN_CODE="code")
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, text=True,
                          capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def commands(compose_config: dict) -> dict[str, list[str]]:
    """Each image role's command, as Compose resolved it."""
    return {name: svc["command"] for name, svc in compose_config["services"].items()
            if "build" in svc}


def test_every_executable_is_one_the_image_has(compose_config: dict) -> None:
    for name, svc in compose_config["services"].items():
        if "build" not in svc:
            continue
        argvs = [svc["command"]]
        if "healthcheck" in svc:
            argvs.append(svc["healthcheck"]["test"][1:])
        for argv in argvs:
            assert argv[0] in IN_IMAGE, (name, argv)
            assert (BIN / argv[0]).exists(), (name, argv)


def test_micrograde_subcommands_exist(commands: dict[str, list[str]]) -> None:
    assert console_script("micrograde").value == "grader.cli:main"
    assert console_script("micrograde").dist.name == "micrograde"
    from grader.cli import cli

    used = {argv[1] for argv in commands.values() if argv[0] == "micrograde"}
    assert used == {"migrate"}
    for sub in used:
        assert sub in cli.commands, sub
        proc = subprocess.run([tool("micrograde"), sub, "--help"], capture_output=True,
                              text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("role", ["worker", "beat"])
def test_celery_roles_use_options_celery_has(commands: dict[str, list[str]],
                                             role: str) -> None:
    argv = commands[role]
    assert argv[:4] == ["celery", "-A", "worker.entry", role]
    assert console_script("celery").dist.name == "celery"
    help_text = subprocess.run([tool("celery"), role, "--help"], capture_output=True,
                               text=True, timeout=60).stdout
    for arg in argv[4:]:
        assert arg.startswith("--"), arg
        assert re.search(rf"(^|[\s,]){re.escape(arg.split('=')[0])}[\s=]", help_text, re.M), arg


def test_the_celery_app_is_found_where_the_roles_look(commands: dict[str, list[str]],
                                                      tmp_path: Path) -> None:
    module = commands["worker"][2]
    assert commands["beat"][2] == module
    code = f"""
import json
from celery import Celery
from celery.app.utils import find_app
app = find_app({module!r})
app.loader.import_default_modules()  # what `celery worker` does at start
assert isinstance(app, Celery), type(app)
print(json.dumps({{"queues": sorted(q.name for q in app.conf.task_queues),
                  "routes": sorted({{r["queue"] for r in app.conf.task_routes.values()}}),
                  "default": app.conf.task_default_queue,
                  "tasks": sorted(t for t in app.tasks if t.startswith("micrograde.")),
                  "beat": sorted(e["task"] for e in app.conf.beat_schedule.values())}}))
"""
    proc = run_python(code, tmp_path)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout.splitlines()[-1])
    consumed = next(a for a in commands["worker"] if a.startswith("--queues="))
    consumed = set(consumed.split("=", 1)[1].split(","))
    assert consumed == set(found["queues"]), "the worker consumes every queue the app has"
    assert {found["default"], *found["routes"]} <= consumed, "and every queue tasks go to"
    assert {"micrograde.grade", "micrograde.sweep", "micrograde.regrade"} <= set(found["tasks"])
    assert found["beat"] == ["micrograde.sweep"], "beat schedules the sweeper"


def test_gunicorn_loads_the_wsgi_app(commands: dict[str, list[str]], tmp_path: Path) -> None:
    argv = commands["web"]
    assert argv[0] == "gunicorn"
    assert console_script("gunicorn").dist.name == "gunicorn"
    config = argv[argv.index("-c") + 1]
    assert (ROOT / config).is_file()
    module, attr = argv[-1].split(":")
    proc = run_python(f"import {module} as m; from flask import Flask; "
                      f"assert isinstance(m.{attr}, Flask)", tmp_path)
    assert proc.returncode == 0, proc.stderr
    env = {k: v for k, v in os.environ.items() if not k.startswith("MICROGRADE_")}
    env.update(MICROGRADE_INSTANCE_PATH=str(tmp_path / "instance"),
               MICROGRADE_SECRET_KEY="x" * 32, MICROGRADE_JOIN_CODE="code",
               PATH=f"{BIN}:{os.environ['PATH']}")
    check = subprocess.run([*argv[:-1], "--check-config", argv[-1]], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stderr


def test_healthcheck_roles_exist(compose_config: dict) -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "deploy" / "healthcheck.py"), "--help"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    for name, svc in compose_config["services"].items():
        test = svc["healthcheck"]["test"] if "healthcheck" in svc else []
        if "deploy/healthcheck.py" in test:
            role = test[test.index("deploy/healthcheck.py") + 1]
            assert role == name and role in proc.stdout, (name, test)
