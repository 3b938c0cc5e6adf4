"""`sandbox.run` on its own: budgets, the fd 3 channel, limits of the whole process tree,
and nothing left behind. Each test runs a small script in the real jail."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from worker import cgroups, sandbox
from worker.limits import Limits, tasks_of
from worker.sandbox import MAX_CHANNEL_BYTES, bwrap_path, parse_channel

needs_bwrap = pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap is not installed")
MODES = [pytest.param(False, id="bwrap", marks=needs_bwrap), pytest.param(True, id="weak")]
SAY = """import json
import os


def say(**msg):
    os.write(3, (json.dumps(msg) + "\\n").encode())

"""


def run(body: str, limits: Limits | None = None, weak: bool = False, args: tuple = ()
        ) -> sandbox.SandboxResult:
    """Run `body` (with a `say(**msg)` helper writing to fd 3) in the sandbox."""
    script = SAY + textwrap.dedent(body)
    return sandbox.run({"main.py": script}, "main.py", list(args), limits or Limits(),
                       weak=weak)


@pytest.mark.parametrize("weak", MODES)
def test_the_child_gets_the_channel_on_fd_3_and_no_other_descriptor(weak: bool) -> None:
    result = run("""
        fds = sorted(int(fd) for fd in os.listdir('/proc/self/fd'))
        say(event="fds", fds=fds, three=os.readlink('/proc/self/fd/3'))
    """, weak=weak)
    assert result.status == "ok", result
    (msg,) = result.messages
    assert msg["fds"][:4] == [0, 1, 2, 3] and len(msg["fds"]) == 5  # + listdir's own
    assert msg["three"].startswith("pipe:")


GRADER_WITH_BUSY_FDS = """
import json, os, sys
sys.path.insert(0, {root!r})
from worker import sandbox
from worker.limits import Limits, tasks_of
for fd in (3, 4, 5):  # whatever the host process had there must not reach the child
    os.dup2(os.open("/dev/null", os.O_RDONLY), fd)
code = ("import os\\nos.write(3, b'{{\\"event\\": \\"hi\\"}}\\\\n')\\n"
        "print(sorted(os.listdir('/proc/self/fd')))")
r = sandbox.run({{"m.py": code}}, "m.py", [], Limits(), weak={weak})
print(json.dumps([r.status, r.messages, r.stdout]))
"""


@pytest.mark.parametrize("weak", MODES)
def test_the_hosts_own_descriptors_3_to_5_never_reach_the_child(weak: bool) -> None:
    root = str(Path(__file__).resolve().parents[2])
    out = subprocess.run([sys.executable, "-c", GRADER_WITH_BUSY_FDS.format(root=root,
                                                                            weak=weak)],
                         capture_output=True, text=True, timeout=60, check=True)
    status, messages, stdout = json.loads(out.stdout.splitlines()[-1])
    assert (status, messages) == ("ok", [{"event": "hi"}])
    assert stdout.strip() == "['0', '1', '2', '3', '4']"  # 4: listdir's own


def test_the_first_line_ends_the_import_budget_and_starts_the_wall_budget() -> None:
    slow_import = run("import time\ntime.sleep(1.5)\nsay(event='loaded')\n",
                      Limits(import_s=10, wall_s=0.5))
    assert slow_import.status == "ok"
    too_slow = run("import time\ntime.sleep(30)\n", Limits(import_s=0.5, wall_s=10))
    assert too_slow.status == "import_timeout"
    slow_run = run("say(event='loaded')\nimport time\ntime.sleep(30)\n",
                   Limits(import_s=10, wall_s=0.5))
    assert slow_run.status == "timeout"


def test_cpu_time_is_limited_even_when_the_wall_clock_is_generous() -> None:
    result = run("say(event='loaded')\nwhile True:\n    pass\n",
                 Limits(cpu_s=1, import_s=1, wall_s=60))
    assert result.status == "timeout"
    assert result.detail == "CPU time limit"


@pytest.mark.parametrize("weak", MODES)
def test_exits_and_signals_are_crashes_with_a_readable_detail(weak: bool) -> None:
    assert run("os._exit(7)", weak=weak).detail == "exited with status 7"
    killed = run("import signal\nos.kill(os.getpid(), signal.SIGKILL)", weak=weak)
    assert (killed.status, killed.detail) == ("crashed", "killed by SIGKILL")


def test_memory_limit_holds_for_the_whole_process_tree(cgroups_available: bool) -> None:
    """Four processes of 100 MiB each: every one is far below 256 MiB, the tree is not."""
    if not cgroups_available:
        pytest.skip("no cgroup on this host: memory is bounded per process only")
    result = run("""
        say(event='loaded')
        kids = []
        for _ in range(4):
            pid = os.fork()
            if pid == 0:
                block = b'x' * (100 << 20)
                import time
                time.sleep(1)
                os._exit(0)
            kids.append(pid)
        for pid in kids:
            os.waitpid(pid, 0)
    """, Limits(memory_mb=256, wall_s=20))
    assert result.status == "memory_limit"


@pytest.mark.parametrize("weak", MODES)
def test_process_count_is_bounded(weak: bool, cgroups_available: bool) -> None:
    if weak and not cgroups_available and os.geteuid() == 0:
        pytest.skip("root ignores RLIMIT_NPROC; without a cgroup nothing bounds forks")
    limits = Limits(processes=16)
    result = run("""
        import threading, time
        started = 0
        try:
            for _ in range(500):
                threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
                started += 1
        except RuntimeError:
            pass
        say(event="threads", started=started)
        os._exit(0)
    """, limits, weak=weak)
    assert result.status == "ok", result
    assert 0 < result.messages[0]["started"] <= limits.processes + 4


@pytest.mark.parametrize("weak", MODES)
def test_file_size_and_open_files_are_bounded(weak: bool) -> None:
    limits = Limits(file_size_mb=1, open_files=32)
    result = run("""
        import tempfile
        path = tempfile.mkdtemp() + '/big'
        try:
            with open(path, 'wb') as fh:
                fh.write(b'x' * (3 << 20))
            big = 'written'
        except OSError as exc:
            big = type(exc).__name__ + str(exc.errno)
        handles = []
        try:
            while len(handles) < 1000:
                handles.append(open('/dev/null'))
        except OSError:
            pass
        say(event='limits', big=big, handles=len(handles))
    """, limits, weak=weak)
    assert result.status == "ok", result
    assert result.messages[0]["big"] == "OSError27"  # EFBIG
    assert result.messages[0]["handles"] < 32


def test_exceeding_the_channel_cap_or_breaking_the_protocol_is_garbled() -> None:
    result = run("say(event='loaded')\nos.write(3, b'x' * (9 << 20))\n")
    assert (result.status, result.detail) == ("crashed", "garbled result")


def test_parse_channel_accepts_only_one_object_per_event() -> None:
    assert parse_channel(b'{"event": "loaded"}\n{"event": "result", "x": 1}\n') == (
        [{"event": "loaded"}, {"event": "result", "x": 1}], False)
    assert parse_channel(b'{"event": "result"}\n{"event": "result"}\n')[1] is True
    assert parse_channel(b'[1, 2]\n')[1] is True
    assert parse_channel(b'not json\n')[1] is True
    assert parse_channel(b"[" * 200_000 + b"\n")[1] is True  # nested too deep for json
    assert parse_channel(b'{"event": "a"}\n' + b" " * MAX_CHANNEL_BYTES)[1] is True
    assert parse_channel(b"") == ([], False)


def test_a_script_that_cannot_start_is_a_crash_not_an_exception() -> None:
    result = sandbox.run({"main.py": "pass"}, "missing.py", [], Limits())
    assert result.status == "crashed"
    assert "status 2" in result.detail


@pytest.mark.parametrize("weak", MODES)
def test_no_box_cgroup_or_process_is_left_after_many_runs(weak: bool, tracked_runs: dict,
                                                          descendants) -> None:
    bodies = ["say(event='loaded')",
              "say(event='loaded')\nwhile True: pass",
              "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)",
              "say(event='loaded')\nblock = []\nwhile True: block.append(b'x' * (1 << 24))",
              "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\n"
              "say(event='loaded')"]
    statuses = set()
    before = descendants(os.getpid())  # e.g. a browser or worker another test module keeps
    for i in range(15):
        result = run(bodies[i % len(bodies)], Limits(wall_s=0.3, memory_mb=128), weak=weak)
        statuses.add(result.status)
    # weakly isolated, the address-space rlimit turns the hog into a MemoryError (a crash
    # here; the harness reports it as memory_limit) before the cgroup's limit is reached
    assert statuses == {"ok", "timeout", "crashed"} | (set() if weak else {"memory_limit"})
    assert len(tracked_runs["boxes"]) == 15
    assert not any(os.path.exists(box) for box in tracked_runs["boxes"])
    assert not any(d.exists() for g in tracked_runs["groups"] for d in g.dirs)
    assert descendants(os.getpid()) - before == set()


@pytest.mark.parametrize("weak", MODES)
def test_the_jail_dies_with_the_grader(weak: bool, tmp_path: Path, processes_with) -> None:
    """If the grading process is killed mid-run, nothing it started keeps running."""
    marker = f"micrograde-orphan-{os.getpid()}-{int(weak)}"
    grader = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys
            sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
            from worker import sandbox
            from worker.limits import Limits, tasks_of
            sandbox.run({{"m.py": "import time\\ntime.sleep(120)"}}, "m.py", [{marker!r}],
                        Limits(import_s=120), weak={weak})
        """)],
        env={**os.environ, "TMPDIR": str(tmp_path), "MICROGRADE_NO_CGROUP": "1"})
    try:
        for _ in range(200):
            if processes_with(marker + "\0"):
                break
            time.sleep(0.05)
        assert processes_with(marker + "\0"), "the jail never started"
    finally:
        grader.send_signal(signal.SIGKILL)
        grader.wait()
    for _ in range(100):  # the kernel delivers the parent-death signal asynchronously
        if not processes_with(marker + "\0"):
            break
        time.sleep(0.05)
    assert processes_with(marker + "\0") == []


def test_v1_oom_detection_prefers_the_kill_counter_to_failcnt(tmp_path: Path) -> None:
    """failcnt also counts limit hits the kernel recovered from; oom_kill counts kills."""
    def group(oom_control: str, failcnt: str) -> cgroups.Group:
        d = tmp_path / f"g{len(list(tmp_path.iterdir()))}"
        d.mkdir()
        (d / "memory.oom_control").write_text(oom_control)
        (d / "memory.failcnt").write_text(failcnt)
        return cgroups.Group([d], v2=False)

    assert not group("oom_kill_disable 0\nunder_oom 0\noom_kill 0\n", "12\n").oom_killed()
    assert group("oom_kill_disable 0\nunder_oom 0\noom_kill 1\n", "12\n").oom_killed()
    assert group("oom_kill_disable 0\nunder_oom 0\n", "3\n").oom_killed()  # old kernels
    assert not group("oom_kill_disable 0\nunder_oom 0\n", "0\n").oom_killed()


def test_the_fork_limit_sits_above_the_users_other_tasks() -> None:
    """RLIMIT_NPROC counts all of a user's tasks: a bare 16 would stop bwrap itself on a
    laptop running a browser, so the limit is the user's current count plus `processes`."""
    import resource
    import threading

    mine = tasks_of(os.getuid())
    assert mine >= threading.active_count()
    nproc = dict(Limits(processes=16).rlimits(5, True, tasks_in_use=mine))
    assert nproc[resource.RLIMIT_NPROC] == (mine + 16, mine + 16)
    assert resource.RLIMIT_NPROC not in dict(Limits().rlimits(5, False))


def test_a_bwrap_that_cannot_make_a_jail_counts_as_absent(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """Hosts without user namespaces have bwrap but cannot use it; this machine can, so a
    stand-in bwrap fails the way theirs does. The CLI then falls back to weak isolation
    and the worker refuses to start, instead of every exercise 'crashing'."""
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\n"
                    "exit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    sandbox.bwrap_path.cache_clear()
    try:
        assert sandbox.bwrap_path() is None
    finally:
        monkeypatch.undo()
        sandbox.bwrap_path.cache_clear()
    if Path("/usr/bin/bwrap").exists():
        assert sandbox.bwrap_path() is not None


def test_groups_left_by_a_killed_grader_are_swept(cgroups_available: bool) -> None:
    """Only empty groups of ours older than an hour go; fresh or busy ones stay."""
    if not cgroups_available:
        pytest.skip("no cgroup on this host")
    group = cgroups.create(64 << 20, 8)
    parent = group.dirs[0].parent
    stale, fresh = parent / f"{cgroups.PREFIX}stale-test", parent / f"{cgroups.PREFIX}fresh-test"
    try:
        stale.mkdir()
        fresh.mkdir()
        old = time.time() - cgroups.STALE_S - 60
        os.utime(stale, (old, old))
        os.utime(group.dirs[0], (old, old))
        sleeper = subprocess.Popen(["sleep", "30"], preexec_fn=group.add_self)
        try:
            assert cgroups.sweep(parent) == [stale]  # the old busy group is in use
        finally:
            sleeper.kill()
            sleeper.wait()
        assert fresh.exists() and group.dirs[0].exists() and not stale.exists()
    finally:
        for d in (stale, fresh):
            if d.exists():
                d.rmdir()
        group.remove()


def test_boxes_left_by_a_killed_grader_are_swept(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    stale, fresh = tmp_path / "micrograde-box-stale", tmp_path / "micrograde-box-fresh"
    other = tmp_path / "someone-elses-dir"
    for d in (stale, fresh, other):
        (d / "exercises").mkdir(parents=True)
    old = time.time() - cgroups.STALE_S - 60
    for d in (stale, other):
        os.utime(d, (old, old))
    assert sandbox.sweep_boxes() == [str(stale)]
    assert fresh.exists() and other.exists() and not stale.exists()
    assert run("say(event='hi')").messages == [{"event": "hi"}]  # runs sweep and still work


@pytest.mark.parametrize("weak", MODES)
def test_what_was_printed_before_a_timeout_is_kept(weak: bool) -> None:
    """Output is unbuffered: a student's debugging print before an endless loop shows."""
    result = run("""
        say(event="loaded")
        print("about to loop")
        while True:
            pass
    """, Limits(wall_s=0.5, import_s=2.0), weak=weak)
    assert result.status == "timeout"
    assert "about to loop" in result.stdout


@pytest.mark.parametrize("weak", MODES)
def test_inheritable_descriptors_of_the_grader_never_reach_the_child(weak: bool) -> None:
    """Above the child's open-files limit too: subprocess's own closing stops there when
    the grader has more files open than that limit (a busy worker)."""
    busy = [os.open("/dev/null", os.O_RDONLY) for _ in range(100)]  # close-on-exec
    leaked = []
    try:
        for target in (300, 301):
            fd = os.open("/dev/null", os.O_RDONLY)
            os.dup2(fd, target, inheritable=True)
            os.close(fd)
            leaked.append(target)
        result = run("""
            fds = sorted(int(fd) for fd in os.listdir('/proc/self/fd'))
            say(event="fds", fds=fds)
        """, weak=weak)
    finally:
        for fd in leaked + busy:
            os.close(fd)
    assert result.status == "ok", result
    (msg,) = result.messages
    assert msg["fds"][:4] == [0, 1, 2, 3] and len(msg["fds"]) == 5  # + listdir's own
