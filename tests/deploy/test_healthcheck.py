"""deploy/healthcheck.py says unhealthy, and why, when a role cannot do its job.

(That it says healthy for running roles is shown by the stack smoke test.)
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from deploy_helpers import ROOT, free_port

SCRIPT = ROOT / "deploy" / "healthcheck.py"


def check(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run the healthcheck script as a container would."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("MICROGRADE_")}
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=ROOT, text=True,
                          capture_output=True, env={**base, **env}, timeout=120)


def test_web_is_unhealthy_when_nothing_serves() -> None:
    proc = check("web", MICROGRADE_BIND=f"127.0.0.1:{free_port()}")
    assert proc.returncode == 1
    assert proc.stderr.startswith("unhealthy: http://127.0.0.1:")
    assert "/api/v1/health" in proc.stderr


def test_beat_schedule_must_be_fresh(tmp_path: Path) -> None:
    schedule = tmp_path / "beat-schedule"
    missing = check("beat", "--schedule", str(schedule))
    assert missing.returncode == 1 and "no beat schedule" in missing.stderr
    (tmp_path / "beat-schedule.dat").write_bytes(b"x")  # dbm files carry suffixes
    assert check("beat", "--schedule", str(schedule)).returncode == 0
    old = time.time() - 3600
    os.utime(tmp_path / "beat-schedule.dat", (old, old))
    stale = check("beat", "--schedule", str(schedule))
    assert stale.returncode == 1 and "not written for 3600 s" in stale.stderr


def test_worker_is_unhealthy_when_the_jail_cannot_run(tmp_path: Path) -> None:
    """A jail that cannot even import numpy (here: 1 MiB of memory) fails the check."""
    proc = check("worker", MICROGRADE_LIMIT_MEMORY_MB="1",
                 MICROGRADE_INSTANCE_PATH=str(tmp_path))
    assert proc.returncode == 1
    assert "unhealthy: a jailed probe run failed (memory_limit" in proc.stderr
    assert "MICROGRADE_LIMIT_" in proc.stderr


def test_worker_names_the_missing_privileges(tmp_path: Path) -> None:
    """Docker's default seccomp profile makes bwrap fail like this; no Docker engine runs
    here, so a stand-in bwrap first on PATH answers the way bwrap does in such a container."""
    fake = tmp_path / "bin" / "bwrap"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'bwrap: Creating new namespace failed: "
                    "Operation not permitted' >&2\nexit 1\n")
    fake.chmod(0o755)
    proc = check("worker", MICROGRADE_INSTANCE_PATH=str(tmp_path),
                 PATH=f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    assert proc.returncode == 1
    assert "Creating new namespace failed" in proc.stderr
    assert "security_opt entries of docker-compose.yml" in proc.stderr
