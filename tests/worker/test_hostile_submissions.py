"""Hostile submissions through the real pipeline and the real bubblewrap sandbox.

Every case asserts the exact verdict (or invalid kind) and then that a good submission
graded right after still passes. The fixtures live in fixtures/submissions/hostile/.
"""

from __future__ import annotations

import json
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from grader.grading.verdicts import WARNINGS
from worker.limits import Limits
from worker.sandbox import bwrap_path

pytestmark = pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap is not installed")
ROOT = Path(__file__).resolve().parents[2]
KIB = 1024
#: fixtures that go looking for the grader's own files learn where it is checked out here
REPO_LINE = 'REPO = "/path/of/the/grader/checkout"'
#: for fixtures that never finish: long enough for any honest import and run
FAST = Limits(wall_s=1.0, import_s=1.0)


@dataclass
class Case:
    """A hostile fixture, what to grade it on and what must come out."""

    fixture: str
    verdicts: dict[str, str] = field(default_factory=dict)
    invalid: str | None = None
    limits: Limits | None = None
    says: str = ""  #: a phrase the message (or invalid message) must contain


CASES = [
    Case("import_loop", invalid="import_timeout", limits=FAST, says="took more than 1 s"),
    Case("import_sleep_ignoring_signals", invalid="import_timeout", limits=FAST),
    Case("fork_bomb_import", invalid="import_timeout", limits=FAST),
    Case("import_exit", invalid="import_error", says="SystemExit: done training"),
    Case("loop_on_tanh", {"expression": "passed", "neuron": "timeout"}, limits=FAST),
    Case("sleep_in_backward", {"expression": "timeout"}, limits=FAST),
    Case("output_flood_forever", {"expression": "timeout"}, limits=FAST),
    Case("memory_hog", {"expression": "memory_limit", "neuron": "memory_limit"}),
    Case("fork_bomb_backward", {"expression": "passed", "neuron": "passed"}),
    Case("threads_left_running", {"expression": "passed"}),
    Case("kill_parent", {"expression": "passed", "neuron": "passed"}),
    Case("os_exit", {"expression": "crashed"}, says="exited with status 3"),
    Case("segfault", {"expression": "crashed"}, says="SIGSEGV"),
    Case("sigkill_self", {"expression": "crashed"}, says="SIGKILL"),
    Case("deep_recursion", {"expression": "error"}, says="RecursionError"),
    Case("numpy_threads", {"expression": "error"}, says="threads=1, environ={}"),
    Case("unprintable_exception", {"expression": "error"}, says="Nasty"),
    Case("channel_garbage", {"expression": "crashed"}, says="garbled"),
    Case("forge_fd3_and_continue", {"expression": "crashed"}, says="garbled"),
    Case("forge_fd3_and_exit", {"expression": "wrong_forward"}, says="random instance"),
    Case("forge_stdout_and_fds", {"expression": "wrong_gradient"}),
    Case("nan_grads", {"expression": "wrong_gradient"}, says="inf"),
    Case("float_liar", {"expression": "wrong_gradient"}, says="a.grad is 0 but should be 6"),
    Case("thief", {"expression": "wrong_gradient"}),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.fixture)
def test_hostile_submission_gets_its_verdict(case: Case, grade_fixture, good_still_passes
                                             ) -> None:
    report = grade_fixture(f"hostile/{case.fixture}.py", tuple(case.verdicts) or
                           ("expression",), limits=case.limits,
                           replace={REPO_LINE: f"REPO = {str(ROOT)!r}"}
                           if case.fixture == "thief" else None)
    if case.invalid:
        assert report.status == "invalid"
        assert report.error["kind"] == case.invalid
        assert case.says in report.error["message"]
    else:
        assert report.status == "graded"
        got = {e.name: e.verdict for e in report.exercises}
        assert got == case.verdicts, [(e.name, e.message) for e in report.exercises]
        assert all(case.says in e.message for e in report.exercises
                   if e.verdict == case.verdicts[e.name] and e.verdict != "passed")
    json.loads(report.to_json())  # NaN, inf and garbage never break the report
    good_still_passes()


def test_a_forged_result_repeating_the_canonical_run_does_not_pass(grade_fixture,
                                                                   good_still_passes) -> None:
    """Forging needs the random instances' answers, i.e. a working engine, only if every
    (instance, graph) must be answered exactly once."""
    report = grade_fixture("hostile/forge_canonical_everywhere.py", k=3)
    good_still_passes()
    assert report.exercises[0].verdict != "passed"


def test_a_quirk_check_that_hangs_after_the_results_costs_no_verdict(grade_fixture,
                                                                    good_still_passes) -> None:
    """relu(0) loops forever, but only the checks after the result message ask for it."""
    report = grade_fixture("hostile/relu_hangs_at_zero.py", ("operators",), limits=FAST)
    good_still_passes()
    (ex,) = report.exercises
    assert ex.verdict == "passed", ex.message
    assert ex.warnings == [WARNINGS["checks_unfinished"].format(status="timed out")]


def test_timeouts_are_decided_by_the_wall_clock_outside(grade_fixture, good_still_passes
                                                         ) -> None:
    """A sleeping submission uses no CPU; only the supervisor's clock can stop it."""
    start = time.monotonic()
    report = grade_fixture("hostile/sleep_in_backward.py", limits=Limits(wall_s=0.5,
                                                                           import_s=5))
    assert report.exercises[0].verdict == "timeout"
    assert time.monotonic() - start < 60  # far below the sleep's hour, however slow the host
    good_still_passes()


def test_output_is_captured_and_truncated_at_64_kib(grade_fixture, good_still_passes) -> None:
    report = grade_fixture("hostile/output_flood.py")
    ex = report.exercises[0]
    assert ex.verdict == "passed"
    for stream, char in ((ex.stdout, "o"), (ex.stderr, "e")):
        kept, _, note = stream.rpartition("\n[output truncated at 64 KiB]")
        assert note == ""
        assert len(kept.encode()) <= 64 * KIB
        assert kept.startswith(char * 1000)
    good_still_passes()


def test_nothing_outlives_the_run(grade_fixture, good_still_passes, processes_with) -> None:
    """A double-forked new session that sleeps for ten minutes is gone once grading ends."""
    report = grade_fixture("hostile/escape_session.py")
    assert report.exercises[0].verdict == "passed"
    assert processes_with("micrograde-escapee-7f3a") == []
    good_still_passes()


@pytest.fixture(scope="module")
def listener() -> socket.socket:
    """A TCP port on the host's loopback that the host itself can reach."""
    server = socket.create_server(("127.0.0.1", 0))
    server.setblocking(False)
    with socket.create_connection(server.getsockname(), timeout=2):
        pass  # the host can connect, so a failure inside means isolation
    time.sleep(0.05)
    server.accept()[0].close()
    yield server
    server.close()


@pytest.fixture(scope="module")
def spy(grade_fixture, listener, good_still_passes) -> dict:
    """What the spy fixture saw from inside the jail."""
    port = listener.getsockname()[1]
    report = grade_fixture("hostile/spy.py", k=0, replace={
        REPO_LINE: f"REPO = {str(ROOT)!r}",
        "PORTS = [6379]": f"PORTS = [6379, {port}]"})
    ex = report.exercises[0]
    assert ex.verdict == "passed", ex.message
    line = next(x for x in ex.stdout.splitlines() if x.startswith("FACTS "))
    good_still_passes()
    return json.loads(line[len("FACTS "):])


def test_runs_as_nobody_without_capabilities(spy: dict) -> None:
    assert (spy["uid"], spy["gid"]) == (65534, 65534)
    assert spy["status"]["Uid"].split() == ["65534"] * 4
    for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(spy["status"][cap], 16) == 0, cap


def test_environment_is_empty_including_the_jail_init(spy: dict) -> None:
    assert spy["environ"] == {}
    assert spy["proc1_environ"] == ["ok", "b''"]


def test_network_is_absent(spy: dict, listener: socket.socket) -> None:
    assert spy["network"] and all(r[0] == "failed" for r in spy["network"].values())
    assert spy["network_dns"][0] == "failed"
    with pytest.raises(BlockingIOError):
        listener.accept()  # nothing from the jail ever reached the host's port


def test_project_and_host_files_are_invisible(spy: dict) -> None:
    assert sorted(eval(spy["root_listing"][1])) == [  # noqa: S307 - a repr of a list of str
        "box", "dev", "lib", "lib64", "proc", "root", "tmp", "usr"]
    for path, (outcome, detail) in spy["reads"].items():
        if path != "/proc/1/cmdline":
            assert outcome == "failed", (path, detail)
    cmdline = spy["reads"]["/proc/1/cmdline"][1]
    assert str(ROOT) not in cmdline and "micrograde-box" not in cmdline


def test_only_numpy_and_the_sandbox_copy_of_the_exercises_import(spy: dict) -> None:
    imports = {name: outcome for name, (outcome, _) in spy["imports"].items()}
    assert imports == {"reference": "failed", "grader": "failed", "exercises.base": "ok",
                       "worker": "failed", "flask": "failed", "celery": "failed",
                       "micrograd": "failed", "numpy": "ok"}
    assert not any(str(ROOT) in p or "site-packages" in p for p in spy["sys_path"])


def test_only_tmp_is_writable_and_it_is_bounded(spy: dict) -> None:
    writes = {path: outcome for path, (outcome, _) in spy["writes"].items()}
    assert writes.pop("/tmp/x") == "ok"
    assert set(writes.values()) == {"failed"}, writes
    written, error = spy["tmp_fill"]
    assert error == "OSError"
    assert written <= Limits().tmp_mb * 1024 * KIB
