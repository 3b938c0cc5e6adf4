"""Every sandbox limit in one declarative place, with the defaults of SPEC §7, and the
setup that puts a child process under them between fork and exec."""

from __future__ import annotations

import contextlib
import glob
import logging
import math
import os
import resource
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from worker.cgroups import Group

log = logging.getLogger(__name__)
MiB = 1024 * 1024
NOBODY = 65534
PR_SET_PDEATHSIG = 1
_warned: list[bool] = []  #: the running-as-root warning is logged once a process


@dataclass(frozen=True)
class Limits:
    """Resource limits for one sandboxed run (one exercise of one submission)."""

    wall_s: float = 5.0          #: wall clock for the exercise itself, after import
    cpu_s: int = 5               #: CPU seconds for the exercise itself, after import
    import_s: float = 10.0       #: wall clock for importing the submission
    memory_mb: int = 512         #: memory of the whole process tree
    processes: int = 16          #: live processes/threads of the whole tree
    file_size_mb: int = 8        #: largest file the code may write
    open_files: int = 64         #: open file descriptors per process
    tmp_mb: int = 16             #: size of the private /tmp
    output_bytes: int = 64 * 1024  #: kept of stdout and of stderr each
    upload_bytes: int = 256 * 1024  #: largest submission source accepted
    notebook_bytes: int = 8 * MiB  #: largest .ipynb upload accepted

    @classmethod
    def from_mapping(cls, values: Mapping[str, object], prefix: str = "") -> Limits:
        """Limits with any field overridden by `values[prefix + FIELD_UPPER]`; a value that
        is not a positive number of the field's type is a ValueError naming the setting."""
        changes: dict[str, object] = {}
        default = cls()
        for f in fields(cls):
            key = prefix + f.name.upper()
            if key in values and values[key] not in (None, ""):
                kind = type(getattr(default, f.name))
                try:
                    value = kind(values[key])
                except (TypeError, ValueError):
                    value = None
                if value is None or not (value > 0 and math.isfinite(value)):
                    raise ValueError(f"{key} must be a positive "
                                     f"{'whole number' if kind is int else 'number'}, "
                                     f"not {values[key]!r}")
                changes[f.name] = value
        return replace(default, **changes)

    @classmethod
    def from_env(cls) -> Limits:
        """Limits from `MICROGRADE_LIMIT_*` environment variables (e.g. MICROGRADE_LIMIT_WALL_S)."""
        return cls.from_mapping(os.environ, "MICROGRADE_LIMIT_")

    def rlimits(self, cpu_s: int, per_process_memory: bool, tasks_in_use: int = 0
                ) -> list[tuple[int, tuple[int, int]]]:
        """The rlimits of one run: CPU, file size, no core, open files and, when no cgroup
        bounds the tree, address space per process and a fork limit. RLIMIT_NPROC counts
        every task of the user, so the fork limit is `processes` above `tasks_in_use`."""
        out = [(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1)),
               (resource.RLIMIT_FSIZE, (self.file_size_mb * MiB,) * 2),
               (resource.RLIMIT_CORE, (0, 0)),
               (resource.RLIMIT_NOFILE, (self.open_files,) * 2)]
        if per_process_memory:
            out += [(resource.RLIMIT_AS, (self.memory_mb * MiB,) * 2),
                    (resource.RLIMIT_NPROC, (tasks_in_use + self.processes,) * 2)]
        return out


def _close_inheritable() -> None:
    """Close every inheritable descriptor above 2 (runs in the child before exec).

    subprocess's own close_fds runs after this setup, and once RLIMIT_NOFILE is lowered it
    can no longer open /proc/self/fd and falls back to closing only the fds below the new
    limit: a grader with many files open (a worker's database sockets, say) would hand
    the ones numbered above it to student code. Close-on-exec ones vanish at exec anyway.
    """
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd <= 2:
            continue
        try:
            if os.get_inheritable(fd):
                os.close(fd)
        except OSError:
            pass  # listdir's own descriptor, already closed


def child_setup(limits: Limits, cpu_s: int, fds: dict[int, int], group: Group | None,
                weak: bool, runtime: tuple[str, ...]) -> Callable[[], None]:
    """The function to run in a child between fork and exec: join the cgroup, set the
    rlimits, put `fds` (sources >= 10) at their numbers and, weakly isolated, die with
    the parent and stop being root if an unprivileged user can run the `runtime` paths."""
    drop_root = weak and os.geteuid() == 0 and _nobody_can_run(runtime)
    per_process = weak or group is None
    tasks = tasks_of(NOBODY if drop_root else os.getuid()) if per_process else 0
    rlimits = limits.rlimits(cpu_s, per_process_memory=per_process, tasks_in_use=tasks)
    if weak and os.geteuid() == 0 and not drop_root and not _warned:
        _warned.append(True)
        log.warning("weak sandbox running as ROOT: nobody can read %s", runtime)

    def setup() -> None:
        if group is not None:
            group.add_self()  # before any privilege drop: the group files belong to root
        _close_inheritable()  # before RLIMIT_NOFILE drops: see the function
        for which, (soft, hard) in rlimits:
            cur_hard = resource.getrlimit(which)[1]
            if cur_hard != resource.RLIM_INFINITY:
                hard = min(hard, cur_hard)
            resource.setrlimit(which, (min(soft, hard), hard))
        for target, source in fds.items():  # sources are >= 10, never a target
            os.dup2(source, target)
        if weak:
            if drop_root:  # never run student code as root when nobody can run Python
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            _die_with_parent()  # after the uid change, which would clear it

    return setup


def tasks_of(uid: int) -> int:
    """How many tasks (threads included, as RLIMIT_NPROC counts) the user runs now."""
    count = 0
    for status in glob.glob("/proc/[0-9]*/status"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            with open(status) as fh:
                info = dict(line.split(":", 1) for line in fh if ":" in line)
            if int(info["Uid"].split()[0]) == uid:
                count += int(info["Threads"])
    return count


def _nobody_can_run(paths: tuple[str, ...]) -> bool:
    """Whether an unprivileged user can read (and enter or run) every one of `paths`."""
    for path in paths:
        parts = Path(os.path.realpath(path)).parts
        for i in range(2, len(parts) + 1):
            if os.stat(os.path.join(*parts[:i])).st_mode & 0o005 != 0o005:
                return False
    return True


def _die_with_parent() -> None:
    """Ask the kernel to SIGKILL this process if the grader dies (weak isolation)."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
