"""A per-run cgroup (v2 or v1) bounding memory and process count of a whole process tree,
and killing a run's whole tree.

Used when the host lets us create one (root, or a delegated subtree); `create` returns
None otherwise and the sandbox falls back to per-process rlimits.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

log = logging.getLogger(__name__)
ROOT = Path("/sys/fs/cgroup")
PREFIX = "micrograde-"
STALE_S = 3600  #: a group this old is left over from a grader that was killed mid-run


class Group:
    """One cgroup (one directory per controller) for one sandboxed run."""

    def __init__(self, dirs: list[Path], v2: bool) -> None:
        self.dirs = dirs
        self.v2 = v2

    def add_self(self) -> None:
        """Move the calling process into the group (runs in the child before exec)."""
        pid = str(os.getpid())
        for d in self.dirs:
            (d / "cgroup.procs").write_text(pid)

    def pids(self) -> set[int]:
        """Every process currently in the group."""
        found: set[int] = set()
        for d in self.dirs:
            with contextlib.suppress(OSError, ValueError):
                found.update(int(x) for x in (d / "cgroup.procs").read_text().split())
        return found

    def kill_all(self) -> None:
        """SIGKILL every process in the group, until none is left (a fork bomb forks on)."""
        if self.v2 and (self.dirs[0] / "cgroup.kill").exists():
            with contextlib.suppress(OSError):
                (self.dirs[0] / "cgroup.kill").write_text("1")
        for attempt in range(400):  # about a second, most of it only if something resists
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.0005 if attempt < 20 else 0.003)
        log.error("processes survive in cgroup %s", self.dirs[0])

    def oom_killed(self) -> bool:
        """Whether the kernel killed something in the group for exceeding its memory.

        v2 counts kills in memory.events. v1 counts them as `oom_kill` in
        memory.oom_control on kernels that have it (4.13+); only older kernels fall back to
        memory.failcnt, which also counts limit hits the kernel recovered from by reclaim.
        """
        for d in self.dirs:
            try:
                if self.v2:
                    return _counter(d / "memory.events", "oom_kill") > 0
                if (d / "memory.oom_control").exists():
                    kills = _counter(d / "memory.oom_control", "oom_kill")
                    if kills >= 0:
                        return kills > 0
                    return int((d / "memory.failcnt").read_text()) > 0
            except (OSError, ValueError):
                continue
        return False

    def remove(self) -> None:
        """Delete the group's directories (after its processes are gone)."""
        self.kill_all()
        for d in self.dirs:
            for _ in range(50):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)
            else:
                log.error("could not remove cgroup %s", d)


def _counter(path: Path, key: str) -> int:
    """The number after `key` in a flat keyed cgroup file, or -1 when the key is absent."""
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == key:
            return int(parts[1])
    return -1


def _own_path(controller: str) -> str | None:
    """This process's cgroup path for a v1 controller ('' for the v2 unified tree)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, ctrls, path = line.split(":", 2)
        if controller == "" and ctrls == "" or controller in ctrls.split(","):
            return path
    return None


def create(memory_bytes: int, max_pids: int) -> Group | None:
    """A fresh group limited to `memory_bytes` (no swap) and `max_pids`, or None."""
    if os.environ.get("MICROGRADE_NO_CGROUP"):
        return None
    name = f"{PREFIX}{uuid.uuid4().hex[:12]}"
    try:
        if (ROOT / "cgroup.controllers").exists():
            return _create_v2(name, memory_bytes, max_pids)
        return _create_v1(name, memory_bytes, max_pids)
    except OSError as exc:
        log.debug("no cgroup for the sandbox: %s", exc)
        return None


def sweep(parent: Path, now: float | None = None) -> list[Path]:
    """Remove empty groups of ours under `parent` older than STALE_S (a grader killed in
    the middle of a run never removed them); the removed ones are returned."""
    now = time.time() if now is None else now
    removed = []
    for d in parent.glob(f"{PREFIX}*"):
        with contextlib.suppress(OSError):  # busy (in use) or already gone
            if now - d.stat().st_mtime > STALE_S and not (d / "cgroup.procs").read_text():
                d.rmdir()
                removed.append(d)
    return removed


def _create_v1(name: str, memory_bytes: int, max_pids: int) -> Group | None:
    made: list[Path] = []
    try:
        for ctrl in ("memory", "pids"):
            own = _own_path(ctrl)
            if own is None or not (ROOT / ctrl).is_dir():
                raise OSError(f"no v1 {ctrl} controller")
            d = ROOT / ctrl / own.lstrip("/") / name
            sweep(d.parent)
            d.mkdir()
            made.append(d)
        mem, pids = made
        (mem / "memory.limit_in_bytes").write_text(str(memory_bytes))
        swap = mem / "memory.memsw.limit_in_bytes"
        if swap.exists():
            swap.write_text(str(memory_bytes))
        (pids / "pids.max").write_text(str(max_pids))
        return Group(made, v2=False)
    except OSError:
        for d in made:
            with contextlib.suppress(OSError):
                d.rmdir()
        raise


def _create_v2(name: str, memory_bytes: int, max_pids: int) -> Group | None:
    own = _own_path("")
    if own is None:
        return None
    d = ROOT / own.lstrip("/") / name
    sweep(d.parent)
    d.mkdir()
    try:
        (d / "memory.max").write_text(str(memory_bytes))
        if (d / "memory.swap.max").exists():
            (d / "memory.swap.max").write_text("0")
        (d / "pids.max").write_text(str(max_pids))
    except OSError:
        d.rmdir()
        raise
    return Group([d], v2=True)


def kill_tree(proc: subprocess.Popen, group: Group | None) -> None:
    """Kill the whole process tree of a run, whatever state it is in (idempotent)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # its own session, so its own process group
    if group is not None:
        group.kill_all()  # also those that left the process group
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        log.error("sandbox process %s did not die", proc.pid)
    for stream in (proc.stdout, proc.stderr):
        if stream and not stream.closed:
            stream.close()
