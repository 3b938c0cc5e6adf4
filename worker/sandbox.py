"""Run a Python script on untrusted files in a throw-away jail: one call in, one result out.

Knows nothing about autograd. The jail is bubblewrap (no network, no view of the host
beyond the interpreter, its stdlib and the packages asked for, a private size-bounded
/tmp, an empty environment, uid 65534 with no capabilities) plus rlimits, plus a cgroup
for the memory and process count of the whole tree where the host allows one. Without
bwrap it falls back to rlimits only (`weak` isolation), which callers must announce.

The script talks back on file descriptor 3 in JSON lines. Its first line ends the
`import_s` budget and starts the `wall_s` budget; both are measured here, never trusted
from inside.
"""

from __future__ import annotations

import json
import logging
import os
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from worker import cgroups
from worker.limits import MiB, Limits

log = logging.getLogger(__name__)

BOX = "/box"
CHANNEL_FD = 3
MAX_CHANNEL_BYTES = 8 * MiB
BWRAP = "bwrap"


@dataclass
class SandboxResult:
    """What happened: a status, the messages from the channel and the captured output."""

    status: str  #: ok | timeout | import_timeout | memory_limit | crashed
    messages: list[dict[str, Any]] = field(default_factory=list)
    stdout: str = ""
    stderr: str = ""
    returncode: int | None = None
    wall_s: float = 0.0
    isolation: str = "bwrap"
    detail: str = ""


def interpreter() -> str:
    """The real path of this interpreter (never a pyenv shim or venv link)."""
    return os.path.realpath(sys.executable)


def bwrap_path() -> str | None:
    """The bubblewrap binary, or None when it is not installed."""
    return shutil.which(BWRAP) or (
        "/usr/bin/bwrap" if os.access("/usr/bin/bwrap", os.X_OK) else None)


def package_dirs(packages: tuple[str, ...]) -> dict[str, str]:
    """Host directories of the given importable packages (plus numpy's bundled libs)."""
    dirs: dict[str, str] = {}
    for name in packages:
        try:
            module = __import__(name)
        except ImportError:
            log.warning("package %s is not installed; the sandbox will not have it", name)
            continue
        pkg_dir = Path(module.__file__).resolve().parent
        dirs[name] = str(pkg_dir)
        libs = pkg_dir.parent / f"{name}.libs"
        if libs.is_dir():
            dirs[libs.name] = str(libs)
    return dirs


def _stdlib_binds() -> list[str]:
    """bwrap arguments that show the interpreter, its shared library and stdlib, read-only."""
    exe = interpreter()
    stdlib = sysconfig.get_paths()["stdlib"]
    args = ["--ro-bind", exe, exe, "--ro-bind", stdlib, stdlib]
    site = os.path.join(stdlib, "site-packages")
    if os.path.isdir(site):
        args += ["--tmpfs", site]  # the interpreter's own site-packages stays hidden
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    for lib in Path(libdir).glob("libpython3*.so*") if libdir else ():
        args += ["--ro-bind", str(lib), str(lib)]
    for top in ("/usr/lib", "/usr/lib64", "/lib", "/lib64"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    return args


def bwrap_argv(box: str, argv: list[str], limits: Limits, packages: dict[str, str]) -> list[str]:
    """The full bubblewrap command line for one run."""
    cmd = [bwrap_path() or BWRAP, "--unshare-all", "--die-with-parent", "--new-session"]
    if os.geteuid() == 0:  # as root bwrap keeps every capability unless told otherwise
        cmd += ["--uid", "65534", "--gid", "65534", "--cap-drop", "ALL"]
    cmd += _stdlib_binds()
    cmd += ["--ro-bind", box, BOX]
    for name, host in packages.items():
        cmd += ["--ro-bind", host, f"{BOX}/_site/{name}"]
    cmd += ["--proc", "/proc", "--dev", "/dev",
            "--size", str(limits.tmp_mb * MiB), "--tmpfs", "/tmp",
            "--hostname", "sandbox", "--chdir", BOX, "--clearenv", "--"]
    return cmd + argv


def _prepare_box(files: Mapping[str, str | bytes], packages: dict[str, str], weak: bool) -> str:
    """A fresh host directory holding the files (and package mount points or links)."""
    box = tempfile.mkdtemp(prefix="micrograde-box-")
    for rel, content in files.items():
        path = Path(box, rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
    site = Path(box, "_site")
    site.mkdir()
    for name, host in packages.items():
        if weak:
            (site / name).symlink_to(host)
        else:
            (site / name).mkdir()
    for p in Path(box).rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    Path(box).chmod(0o755)
    return box


def _preexec(limits: Limits, cpu_s: int, channel_w: int, group: cgroups.Group | None,
             weak: bool):
    """The function run in the child between fork and exec: rlimits, cgroup, channel."""
    mem = limits.memory_mb * MiB

    def setup() -> None:
        if group is not None:
            group.add_self()
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_size_mb * MiB,) * 2)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files,) * 2)
        if weak or group is None:
            # without a cgroup the tree is bounded per process and by a fork limit
            resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
            resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes,) * 2)
        os.dup2(channel_w, CHANNEL_FD)

    return setup


def run(files: Mapping[str, str | bytes], script: str, args: list[str], limits: Limits,
        packages: tuple[str, ...] = ("numpy",), weak: bool | None = None) -> SandboxResult:
    """Run `python -I -S <box>/script args...` on `files` under `limits`.

    `weak=None` picks bubblewrap when installed; `weak=True` forces the rlimits-only
    fallback. Paths in `args` are relative to the box, which is the working directory;
    packages are importable from `_site` in it.
    """
    if weak is None:
        weak = bwrap_path() is None
    pkg_dirs = package_dirs(packages)
    box = _prepare_box(files, pkg_dirs, weak)
    argv = [interpreter(), "-I", "-S", script, *args]
    if weak:
        cmd, cwd, env = argv, box, {}
    else:
        cmd, cwd, env = bwrap_argv(box, argv, limits, pkg_dirs), "/", {}
    group = cgroups.create(limits.memory_mb * MiB, limits.processes + 4)
    read_fd, write_fd = os.pipe()
    cpu_budget = int(limits.cpu_s + limits.import_s) + 1
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, pass_fds=(write_fd, CHANNEL_FD), start_new_session=True,
            preexec_fn=_preexec(limits, cpu_budget, write_fd, group, weak),
        )
    except OSError as exc:
        os.close(read_fd)
        os.close(write_fd)
        shutil.rmtree(box, ignore_errors=True)
        if group:
            group.remove()
        return SandboxResult("crashed", detail=f"could not start the sandbox: {exc}")
    os.close(write_fd)
    try:
        result = _supervise(proc, read_fd, limits, start)
    finally:
        _kill(proc, group)
        os.close(read_fd)
        shutil.rmtree(box, ignore_errors=True)
    result.isolation = "weak" if weak else "bwrap"
    if group is not None:
        if result.status in ("crashed", "ok") and group.oom_killed():
            result.status = "memory_limit"
        group.remove()
    return result


def _supervise(proc: subprocess.Popen, channel: int, limits: Limits,
               start: float) -> SandboxResult:
    """Collect output and messages until the process exits or a budget runs out."""
    sel = selectors.DefaultSelector()
    buffers: dict[str, bytearray] = {"stdout": bytearray(), "stderr": bytearray(),
                                     "channel": bytearray()}
    caps = {"stdout": limits.output_bytes, "stderr": limits.output_bytes,
            "channel": MAX_CHANNEL_BYTES}
    sel.register(proc.stdout, selectors.EVENT_READ, "stdout")
    sel.register(proc.stderr, selectors.EVENT_READ, "stderr")
    sel.register(channel, selectors.EVENT_READ, "channel")
    deadline = start + limits.import_s
    loaded = False
    status = None
    while sel.get_map():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            status = "timeout" if loaded else "import_timeout"
            break
        for key, _ in sel.select(timeout=min(remaining, 0.5)):
            fd = key.fileobj if isinstance(key.fileobj, int) else key.fileobj.fileno()
            chunk = os.read(fd, 65536)
            if not chunk:
                sel.unregister(key.fileobj)
                continue
            buf = buffers[key.data]
            if len(buf) < caps[key.data] + 1:
                buf += chunk[: caps[key.data] + 1 - len(buf)]
            if key.data == "channel" and not loaded and b"\n" in buf:
                loaded = True
                deadline = time.monotonic() + limits.wall_s
        if proc.poll() is not None and not _drain(sel, buffers, caps):
            break  # exited; a leftover child may hold the pipes open, so stop reading
    sel.close()
    if status is None:
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            status = "timeout" if loaded else "import_timeout"
    wall = time.monotonic() - start
    messages, bad = _parse_channel(bytes(buffers["channel"]))
    result = SandboxResult(
        status=status or "ok", messages=messages, returncode=proc.returncode,
        stdout=_text(buffers["stdout"], limits.output_bytes),
        stderr=_text(buffers["stderr"], limits.output_bytes), wall_s=round(wall, 3))
    if result.status == "ok" and (proc.returncode != 0 or bad):
        result.status = "crashed"
        result.detail = _exit_detail(proc.returncode) if proc.returncode else "garbled result"
    return result


def _drain(sel: selectors.BaseSelector, buffers: dict[str, bytearray],
           caps: dict[str, int]) -> bool:
    """Read whatever is ready without waiting; False once nothing more is."""
    got = False
    for key, _ in sel.select(timeout=0.05):
        fd = key.fileobj if isinstance(key.fileobj, int) else key.fileobj.fileno()
        chunk = os.read(fd, 65536)
        if not chunk:
            sel.unregister(key.fileobj)
            continue
        got = True
        buf = buffers[key.data]
        if len(buf) < caps[key.data] + 1:
            buf += chunk[: caps[key.data] + 1 - len(buf)]
    return got and bool(sel.get_map())


def _parse_channel(raw: bytes) -> tuple[list[dict[str, Any]], bool]:
    """JSON objects, one a line; the flag tells whether anything was not one."""
    messages, bad = [], False
    for line in raw.split(b"\n"):
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            bad = True
            continue
        if isinstance(msg, dict):
            messages.append(msg)
        else:
            bad = True
    return messages, bad


def _text(buf: bytearray, cap: int) -> str:
    """Decoded output, truncated to `cap` bytes with a note when cut."""
    text = bytes(buf[:cap]).decode("utf-8", errors="replace")
    if len(buf) > cap:
        text += f"\n[output truncated at {cap // 1024} KiB]"
    return text


def _exit_detail(code: int | None) -> str:
    """A phrase for how a process ended."""
    if code is None:
        return "did not exit"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}"


def _kill(proc: subprocess.Popen, group: cgroups.Group | None) -> None:
    """Kill the whole process tree of a run, whatever state it is in."""
    for target in (proc.pid,):
        try:
            os.killpg(target, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    if group is not None:
        group.kill_all()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        log.error("sandbox process %s did not die", proc.pid)
    for stream in (proc.stdout, proc.stderr):
        if stream:
            stream.close()
