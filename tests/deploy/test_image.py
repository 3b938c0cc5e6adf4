"""The Dockerfile: hadolint-clean, no secrets, and an install that carries everything."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from deploy_helpers import ROOT, tool

DOCKERFILE = ROOT / "Dockerfile"


def hadolint(*args: str) -> list[dict]:
    """hadolint's findings at every level (error, warning, info, style)."""
    proc = subprocess.run([tool("hadolint"), "-f", "json", "--failure-threshold", "style",
                           *args, str(DOCKERFILE)], capture_output=True, text=True,
                          timeout=60)
    findings = json.loads(proc.stdout or "[]")
    assert (proc.returncode == 0) == (findings == []), proc.stderr
    return findings


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined."""
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def test_hadolint_reports_nothing() -> None:
    assert hadolint() == []


def test_each_ignored_rule_is_justified_and_still_needed() -> None:
    lines = DOCKERFILE.read_text().splitlines()
    pragmas = [(i, line) for i, line in enumerate(lines) if "hadolint ignore=" in line]
    ignored = set()
    for i, line in pragmas:
        assert i > 0 and lines[i - 1].startswith("# ") and len(lines[i - 1]) > 30, \
            f"line {i + 1}: say why the rule is ignored in the comment above"
        ignored |= set(line.split("=", 1)[1].replace(" ", "").split(","))
    fired = {f["code"] for f in hadolint("--disable-ignore-pragma")}
    assert fired == ignored, "a pragma ignores a rule that no longer fires, or vice versa"


def test_one_slim_image_with_graphviz_and_bubblewrap() -> None:
    steps = instructions()
    assert [arg for op, arg in steps if op == "ARG"] == ["PYTHON_IMAGE=python:3.11-slim-bookworm"]
    froms = [arg for op, arg in steps if op == "FROM"]
    assert froms == ["${PYTHON_IMAGE} AS build", "${PYTHON_IMAGE}"]
    runs = " ".join(arg for op, arg in steps if op == "RUN")
    assert re.search(r"apt-get install -y --no-install-recommends bubblewrap graphviz", runs)


def test_dependencies_are_a_layer_of_their_own() -> None:
    """Editing the code must not reinstall every dependency: pins first, source after."""
    steps = instructions()
    first, final = [i for i, (op, _) in enumerate(steps) if op == "FROM"]
    build = steps[first:final]
    where = {step: i for i, step in enumerate(build)}
    pins = where[("COPY", "deploy/constraints.txt deploy/")]
    deps = where[("RUN", "/opt/venv/bin/pip install --no-cache-dir -r deploy/constraints.txt")]
    source = where[("COPY", ". .")]
    package = next(i for i, (op, arg) in enumerate(build)
                   if op == "RUN" and "--no-deps ." in arg)
    assert pins < deps < source < package
    assert "/opt/venv/bin/pip check" in build[package][1]
    assert [op for op, _ in build[pins:source]] == ["COPY", "RUN"]  # nothing else copied early


def test_roles_run_unprivileged() -> None:
    steps = instructions()
    users = [arg for op, arg in steps if op == "USER"]
    assert users == ["10001:10001"], "the final image runs as the web's own uid"
    runs = " ".join(arg for op, arg in steps if op == "RUN")
    assert "useradd --system --uid 10001 --gid micrograde" in runs
    assert "useradd --system --uid 10002 --gid grader" in runs  # docker-compose worker user
    compose_text = (ROOT / "docker-compose.yml").read_text()
    assert 'user: "10002:10002"' in compose_text


def test_no_secret_is_baked_into_the_image() -> None:
    for op, arg in instructions():
        if op in ("ENV", "ARG", "LABEL"):
            assert not re.search(r"(?i)(secret|password|token|join_code|_key)\b|://", arg), arg
    ignored = (ROOT / ".dockerignore").read_text().splitlines()
    for pattern in (".env", ".env.*", ".git", ".venv", "instance", "tests"):
        assert pattern in ignored, pattern


def test_the_default_command_is_the_web_role() -> None:
    cmd = [arg for op, arg in instructions() if op == "CMD"]
    assert cmd == ['["gunicorn", "-c", "deploy/gunicorn.conf.py", "grader.wsgi:app"]']


def test_deploy_files_used_at_run_time_are_copied(compose_config: dict) -> None:
    copies = " ".join(arg for op, arg in instructions() if op == "COPY")
    used = {word for svc in compose_config["services"].values() if "build" in svc
            for word in svc["command"] + svc.get("healthcheck", {}).get("test", [])
            if word.startswith("deploy/")}
    assert used == {"deploy/gunicorn.conf.py", "deploy/healthcheck.py"}
    for path in used:
        assert path in copies, f"{path} is used by a compose command but not in the image"
        assert (ROOT / path).is_file()


def test_constraints_pin_the_tested_versions() -> None:
    fresh = subprocess.run([sys.executable, str(ROOT / "deploy" / "constraints.py")],
                           capture_output=True, text=True, check=True).stdout
    committed = (ROOT / "deploy" / "constraints.txt").read_text()
    assert committed == fresh, ("dependencies changed: regenerate with "
                                ".venv/bin/python deploy/constraints.py > deploy/constraints.txt")
    pins = dict(line.split("==") for line in committed.splitlines() if "==" in line)
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for dep in project["dependencies"]:
        name, version = re.split(r"\[[^]]*\]|==", dep)[0], dep.rsplit("==", 1)[1]
        key = re.sub(r"[-_.]+", "-", name).lower()
        assert pins[key] == version, dep


@pytest.fixture(scope="module")
def installed_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The files a non-editable install (the image's `pip install .`) puts in site-packages."""
    out = tmp_path_factory.mktemp("build")
    subprocess.run([sys.executable, "-W", "ignore", "-c", "import setuptools; setuptools.setup()",
                    "-q", "egg_info", "--egg-base", str(out), "build_py", "--build-lib",
                    str(out / "lib")], cwd=ROOT, check=True, capture_output=True, timeout=120)
    return out / "lib"


def test_the_installed_package_carries_every_runtime_file(installed_tree: Path) -> None:
    tracked = subprocess.run(["git", "ls-files", "grader", "worker", "exercises", "reference"],
                             cwd=ROOT, capture_output=True, text=True, check=True).stdout
    missing = [path for path in tracked.split()
               if Path(path).suffix and not (installed_tree / path).is_file()]
    assert not missing, f"not installed (see package-data in pyproject.toml): {missing}"
    assert (installed_tree / "grader" / "migrations" / "alembic.ini").is_file()
    assert list((installed_tree / "grader" / "migrations" / "versions").glob("*.py"))
