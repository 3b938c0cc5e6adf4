"""Run a Python script on untrusted files in a throw-away jail: one call in, one result out.

Knows nothing about autograd. The jail is bubblewrap (no network, no view of the host
beyond the interpreter, its stdlib and the packages asked for, a private size-bounded
/tmp, no writable /dev/shm, an empty environment, uid 65534 with no capabilities) plus
rlimits, plus a cgroup for the memory and process count of the whole tree where the host
allows one. Without bwrap it falls back to rlimits only (`weak` isolation: no view or
network isolation; as nobody when started as root, if nobody can run the interpreter),
which callers must announce.

The script talks back on file descriptor 3 in JSON lines, one object a line and each
`event` at most once. Its first line ends the `import_s` budget and starts the `wall_s`
budget; both are measured here, never trusted from inside.
"""

from __future__ import annotations

import fcntl
import functools
import glob
import json
import logging
import os
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
from worker.cgroups import kill_tree
from worker.limits import NOBODY, Limits, MiB, child_setup

log = logging.getLogger(__name__)

BOX = "/box"
BOX_PREFIX = "micrograde-box-"
CHANNEL_FD = 3
ARGS_FD = 4
MAX_CHANNEL_BYTES = 8 * MiB
BWRAP = "bwrap"
DRAIN_S = 0.5  #: at most this long reading what an exited run left in its pipes
SYSTEM_DIRS = ("/usr/lib", "/usr/lib64", "/lib", "/lib64")
#: other Pythons' package directories under the system dirs, hidden from the jail
HIDDEN_GLOBS = ("/usr/lib/python3*", "/usr/lib64/python3*")


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


@functools.cache
def bwrap_path() -> str | None:
    """The bubblewrap binary, or None when it is not installed or cannot make a jail here
    (no user namespaces for this user, say): checked once a process."""
    path = shutil.which(BWRAP) or (
        "/usr/bin/bwrap" if os.access("/usr/bin/bwrap", os.X_OK) else None)
    if path is None:
        return None
    probe = [path, "--unshare-all", "--die-with-parent", "--new-session"]
    if os.geteuid() == 0:
        probe += ["--uid", str(NOBODY), "--gid", str(NOBODY), "--cap-drop", "ALL"]
    probe += [*_system_binds(), "--proc", "/proc", "--dev", "/dev", "--",
              interpreter(), "-I", "-S", "-c", "pass"]
    try:
        done = subprocess.run(probe, env={}, capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("bubblewrap at %s cannot run: %s", path, exc)
        return None
    if done.returncode != 0:
        log.warning("bubblewrap at %s cannot make a jail here: %s", path,
                    done.stderr.decode(errors="replace").strip()[:300])
        return None
    return path


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


def _system_binds() -> list[str]:
    """bwrap arguments showing the shared libraries, the interpreter and its stdlib only."""
    exe = interpreter()
    stdlib = os.path.realpath(sysconfig.get_paths()["stdlib"])
    args: list[str] = []
    for top in SYSTEM_DIRS:
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for pattern in HIDDEN_GLOBS:  # e.g. Debian's dist-packages: not ours to show
        for hidden in glob.glob(pattern):
            if os.path.isdir(hidden) and not os.path.islink(hidden) \
                    and hidden.startswith(SYSTEM_DIRS) and hidden != stdlib:
                args += ["--tmpfs", hidden]
    args += ["--ro-bind", exe, exe, "--ro-bind", stdlib, stdlib]
    for sub in ("site-packages", "dist-packages"):  # the interpreter's own stays hidden
        if os.path.isdir(os.path.join(stdlib, sub)):
            args += ["--tmpfs", os.path.join(stdlib, sub)]
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    for lib in Path(libdir).glob("libpython3*.so*") if libdir else ():
        args += ["--ro-bind", str(lib), str(lib)]
    return args


def bwrap_args(box: str, limits: Limits, packages: dict[str, str]) -> list[str]:
    """bubblewrap's options for one run (passed on a pipe, so `/proc/1/cmdline` inside
    shows none of the host's paths)."""
    cmd = ["--unshare-all", "--die-with-parent", "--new-session"]
    if os.geteuid() == 0:  # as root bwrap keeps every capability unless told otherwise
        cmd += ["--uid", str(NOBODY), "--gid", str(NOBODY), "--cap-drop", "ALL"]
    cmd += _system_binds()
    cmd += ["--ro-bind", box, BOX]
    for name, host in packages.items():
        cmd += ["--ro-bind", host, f"{BOX}/_site/{name}"]
    return cmd + [
        "--proc", "/proc", "--dev", "/dev",
        "--tmpfs", "/dev/shm", "--remount-ro", "/dev/shm",  # no unbounded shared memory
        "--size", str(limits.tmp_mb * MiB), "--tmpfs", "/tmp",
        "--remount-ro", "/dev", "--remount-ro", "/",  # /tmp is the only writable place
        "--hostname", "sandbox", "--chdir", BOX, "--clearenv"]


def sweep_boxes(now: float | None = None) -> list[str]:
    """Remove box directories older than an hour: a grader killed in the middle of a run
    never removed them. The removed ones are returned."""
    now = time.time() if now is None else now
    stale = []
    for box in glob.glob(os.path.join(tempfile.gettempdir(), f"{BOX_PREFIX}*")):
        try:
            if now - os.stat(box).st_mtime > cgroups.STALE_S:
                shutil.rmtree(box)
                stale.append(box)
        except OSError:
            continue  # gone already, or not ours to remove
    return stale


def _prepare_box(files: Mapping[str, str | bytes], packages: dict[str, str], weak: bool) -> str:
    """A fresh host directory holding the files (and package mount points or links)."""
    sweep_boxes()
    box = tempfile.mkdtemp(prefix=BOX_PREFIX)
    try:
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
            if not p.is_symlink():  # never touch the host directory a link points to
                p.chmod(0o755 if p.is_dir() else 0o644)
        Path(box).chmod(0o755)
    except BaseException:
        shutil.rmtree(box, ignore_errors=True)
        raise
    return box


def run(files: Mapping[str, str | bytes], script: str, args: list[str], limits: Limits,
        packages: tuple[str, ...] = ("numpy",), weak: bool | None = None) -> SandboxResult:
    """Run `python -I -S -u <box>/script args...` on `files` under `limits`.

    `weak=None` picks bubblewrap when installed; `weak=True` forces the rlimits-only
    fallback. Paths in `args` are relative to the box, which is the working directory;
    packages are importable from `_site` in it. Student faults are statuses, never
    exceptions; the box directory and the cgroup are removed whatever happens.
    """
    if weak is None:
        weak = bwrap_path() is None
    isolation = "weak" if weak else "bwrap"
    pkg_dirs = package_dirs(packages)
    argv = [interpreter(), "-I", "-S", "-u", script, *args]  # -u: prints survive a kill
    box = _prepare_box(files, pkg_dirs, weak)
    group: cgroups.Group | None = None
    opened: list[int] = []  # every pipe end this call still has to close
    proc: subprocess.Popen | None = None
    try:
        channel, child_fds = _high_pipe(opened), {}
        child_fds[CHANNEL_FD] = channel[1]
        cmd, cwd = argv, box
        if not weak:
            options = _high_pipe(opened)
            os.write(options[1], "\0".join(bwrap_args(box, limits, pkg_dirs)).encode() + b"\0")
            os.close(options[1])  # a pipe holds 64 KiB; the options are about 2 KiB
            opened.remove(options[1])
            child_fds[ARGS_FD] = options[0]
            cmd, cwd = [bwrap_path() or BWRAP, "--args", str(ARGS_FD), "--", *argv], "/"
        group = cgroups.create(limits.memory_mb * MiB, limits.processes + 4)
        cpu_budget = int(limits.cpu_s + limits.import_s) + 1
        runtime = (interpreter(), sysconfig.get_paths()["stdlib"])
        start = time.monotonic()
        try:
            proc = subprocess.Popen(
                cmd, cwd=cwd, env={}, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, pass_fds=tuple(child_fds), start_new_session=True,
                preexec_fn=child_setup(limits, cpu_budget, child_fds, group, weak, runtime))
        except (OSError, subprocess.SubprocessError) as exc:
            log.error("could not start the sandbox: %s", exc)
            return SandboxResult("crashed", isolation=isolation,
                                 detail=f"could not start the sandbox: {exc}")
        for fd in child_fds.values():  # only the child holds these ends now
            os.close(fd)
            opened.remove(fd)
        result = _supervise(proc, channel[0], limits, start, weak)
        result.isolation = isolation
        kill_tree(proc, group)
        if group is not None and result.status != "import_timeout" and group.oom_killed():
            result.status, result.detail = "memory_limit", "out of memory"
        return result
    finally:
        if proc is not None:
            kill_tree(proc, group)
        for fd in opened:
            os.close(fd)
        if group is not None:
            group.remove()
        shutil.rmtree(box, ignore_errors=True)


def _high_pipe(opened: list[int]) -> tuple[int, int]:
    """A close-on-exec pipe numbered 10 or above, clear of the fds the child gets fixed
    numbers for; its ends are added to `opened`."""
    ends = []
    for fd in os.pipe():
        try:
            ends.append(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10))
        finally:
            os.close(fd)
        opened.append(ends[-1])
    return ends[0], ends[1]


def _supervise(proc: subprocess.Popen, channel: int, limits: Limits, start: float,
               weak: bool) -> SandboxResult:
    """Collect output and messages until the process exits or a budget runs out."""
    sel = selectors.DefaultSelector()
    buffers = {"stdout": bytearray(), "stderr": bytearray(), "channel": bytearray()}
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
        _read_ready(sel, buffers, caps, min(remaining, 0.5))
        if not loaded and b"\n" in buffers["channel"]:
            loaded = True  # the first line ends the import budget and starts the wall one
            deadline = time.monotonic() + limits.wall_s
        if proc.poll() is not None:
            _drain(sel, buffers, caps)
            break
    sel.close()
    if status is None:
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            status = "timeout" if loaded else "import_timeout"
    messages, bad = parse_channel(bytes(buffers["channel"]))
    result = SandboxResult(
        status=status or "ok", messages=messages, returncode=proc.returncode,
        stdout=_text(buffers["stdout"], limits.output_bytes),
        stderr=_text(buffers["stderr"], limits.output_bytes),
        wall_s=round(time.monotonic() - start, 3))
    if result.status == "ok" and _signal(proc.returncode, weak) == signal.SIGXCPU:
        result.status, result.detail = "timeout", "CPU time limit"
    elif result.status == "ok" and (proc.returncode != 0 or bad):
        result.status = "crashed"
        result.detail = (_exit_detail(proc.returncode, weak) if proc.returncode
                         else "garbled result")
    return result


def _read_ready(sel: selectors.BaseSelector, buffers: dict[str, bytearray],
                caps: dict[str, int], timeout: float) -> bool:
    """Read once from every stream ready within `timeout`; True if anything came."""
    got = False
    for key, _ in sel.select(timeout=timeout):
        fd = key.fileobj if isinstance(key.fileobj, int) else key.fileobj.fileno()
        chunk = os.read(fd, 65536)
        if not chunk:
            sel.unregister(key.fileobj)
            continue
        got = True
        buf = buffers[key.data]
        if len(buf) <= caps[key.data]:  # keep one byte past the cap to know it was cut
            buf += chunk[: caps[key.data] + 1 - len(buf)]
    return got


def _drain(sel: selectors.BaseSelector, buffers: dict[str, bytearray],
           caps: dict[str, int]) -> None:
    """Read what an exited process left in its pipes, without waiting for a leftover
    child that still holds them open (it is killed right after)."""
    until = time.monotonic() + DRAIN_S
    while sel.get_map() and time.monotonic() < until:
        if not _read_ready(sel, buffers, caps, 0.0):
            break


def parse_channel(raw: bytes) -> tuple[list[dict[str, Any]], bool]:
    """JSON objects, one a line; the flag tells whether anything broke the protocol
    (not JSON, not an object, cut at the cap, or an `event` sent twice)."""
    messages: list[dict[str, Any]] = []
    bad = len(raw) > MAX_CHANNEL_BYTES
    events: set[str] = set()
    for line in raw[:MAX_CHANNEL_BYTES].split(b"\n"):
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
        except (ValueError, RecursionError):  # RecursionError: absurdly nested arrays
            bad = True
            continue
        if not isinstance(msg, dict):
            bad = True
            continue
        event = str(msg.get("event"))
        bad = bad or event in events
        events.add(event)
        messages.append(msg)
    return messages, bad


def _text(buf: bytearray, cap: int) -> str:
    """Decoded output, truncated to `cap` bytes with a note when cut."""
    text = bytes(buf[:cap]).decode("utf-8", errors="replace")
    if len(buf) > cap:
        text += f"\n[output truncated at {cap // 1024} KiB]"
    return text


def _signal(code: int | None, weak: bool) -> int | None:
    """The signal that ended a run (bwrap exits with 128 + N when its child got signal N)."""
    if code is not None and code < 0:
        return -code
    if code is not None and not weak and code > 128:
        return code - 128
    return None


def _exit_detail(code: int | None, weak: bool = True) -> str:
    """A phrase for how a process ended."""
    sig = _signal(code, weak)
    if sig is not None:
        try:
            return f"killed by {signal.Signals(sig).name}"
        except ValueError:
            return f"killed by signal {sig}"
    return "did not exit" if code is None else f"exited with status {code}"
