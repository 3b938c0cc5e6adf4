"""The weak fallback (no bubblewrap): it still grades, says so loudly, and enforces every
limit that rlimits (and a cgroup, where the host gives one) can enforce."""

from __future__ import annotations

import pytest

from grader.grading.pipeline import WEAK_WARNING
from worker.limits import Limits

FAST = Limits(wall_s=1.0, import_s=1.0)


def test_a_good_submission_passes_and_the_report_says_it_was_not_isolated(grade_fixture
                                                                          ) -> None:
    report = grade_fixture("good/lecture.py", ("expression", "mlp_step"), weak=True)
    assert [e.verdict for e in report.exercises] == ["passed", "passed"]
    assert report.isolation == "weak"
    assert WEAK_WARNING in report.warnings


@pytest.mark.parametrize(("fixture", "verdicts", "limits"), [
    ("loop_on_tanh", {"expression": "passed", "neuron": "timeout"}, FAST),
    ("sleep_in_backward", {"expression": "timeout"}, FAST),
    ("memory_hog", {"expression": "memory_limit"}, None),
    ("fork_bomb_backward", {"expression": "passed"}, None),
    ("segfault", {"expression": "crashed"}, None),
    ("forge_fd3_and_continue", {"expression": "crashed"}, None),
    ("output_flood", {"expression": "passed"}, None),
])
def test_limits_still_hold(fixture: str, verdicts: dict[str, str], limits: Limits | None,
                           grade_fixture, good_still_passes, cgroups_available: bool) -> None:
    if fixture == "fork_bomb_backward" and not cgroups_available:
        pytest.skip("without a cgroup only RLIMIT_NPROC bounds forks, which root ignores")
    report = grade_fixture(f"hostile/{fixture}.py", tuple(verdicts), limits=limits, weak=True)
    assert {e.name: e.verdict for e in report.exercises} == verdicts
    assert all(len(e.stdout) <= 64 * 1024 + 40 for e in report.exercises)
    good_still_passes(weak=True)


def test_memory_is_bounded_per_process_without_a_cgroup(grade_fixture, monkeypatch) -> None:
    """The address-space rlimit alone stops a hog (as a MemoryError the harness reports)."""
    monkeypatch.setenv("MICROGRADE_NO_CGROUP", "1")
    report = grade_fixture("hostile/memory_hog.py", weak=True)
    assert report.exercises[0].verdict == "memory_limit"
    assert "MemoryError" in report.exercises[0].message


def test_an_import_loop_is_an_import_timeout(grade_fixture) -> None:
    report = grade_fixture("hostile/import_loop.py", limits=FAST, weak=True)
    assert (report.status, report.error["kind"]) == ("invalid", "import_timeout")
