"""Every sandbox limit in one declarative place, with the defaults of SPEC §7."""

from __future__ import annotations

import os
import resource
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

MiB = 1024 * 1024


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
        """Limits with any field overridden by `values[prefix + FIELD_UPPER]`."""
        changes: dict[str, object] = {}
        for f in fields(cls):
            key = prefix + f.name.upper()
            if key in values and values[key] not in (None, ""):
                changes[f.name] = type(getattr(cls(), f.name))(values[key])  # type: ignore[call-arg]
        return replace(cls(), **changes)

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
