"""Helpers for the sandbox suites: grade a fixture through the real pipeline and sandbox,
and check that a good submission still passes right after a hostile one."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from grader.grading.pipeline import grade
from grader.grading.report import Report
from worker import cgroups, sandbox
from worker.limits import Limits

Grader = Callable[..., Report]


@pytest.fixture(scope="session")
def grade_fixture(read_fixture) -> Grader:
    """grade(fixtures/submissions/<name>) on a few exercises, one random instance each."""

    def run(name: str, exercises: tuple[str, ...] = ("expression",), *,
            limits: Limits | None = None, weak: bool | None = None, k: int = 1,
            replace: dict[str, str] | None = None) -> Report:
        source = read_fixture(name)
        for old, new in (replace or {}).items():
            assert old in source, old
            source = source.replace(old, new)
        return grade(source, list(exercises), seed=2024, limits=limits, k=k, weak=weak)

    return run


@pytest.fixture(scope="session")
def good_still_passes(grade_fixture) -> Callable[..., None]:
    """Assert that a correct submission graded now passes (the grader survived)."""

    def check(weak: bool | None = None) -> None:
        report = grade_fixture("good/lecture.py", ("expression", "neuron"), weak=weak)
        assert report.status == "graded"
        assert [e.verdict for e in report.exercises] == ["passed", "passed"], [
            (e.name, e.verdict, e.message) for e in report.exercises]

    return check


def _descendants(pid: int) -> set[int]:
    """Every live process below `pid`, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found: set[int] = set()
    stack = [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def _processes_with(marker: str) -> list[int]:
    """Live processes whose command line contains `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.fixture(scope="session")
def descendants() -> Callable[[int], set[int]]:
    """descendants(pid): every live process below `pid`, read from /proc."""
    return _descendants


@pytest.fixture(scope="session")
def processes_with() -> Callable[[str], list[int]]:
    """processes_with(marker): live processes whose command line contains `marker`."""
    return _processes_with


@pytest.fixture
def tracked_runs(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, list]]:
    """Record every box directory and cgroup the sandbox makes (they stay real)."""
    made: dict[str, list] = {"boxes": [], "groups": []}
    prepare, create = sandbox._prepare_box, cgroups.create

    def recording_prepare(*args, **kwargs):
        box = prepare(*args, **kwargs)
        made["boxes"].append(box)
        return box

    def recording_create(*args, **kwargs):
        group = create(*args, **kwargs)
        if group is not None:
            made["groups"].append(group)
        return group

    monkeypatch.setattr(sandbox, "_prepare_box", recording_prepare)
    monkeypatch.setattr(cgroups, "create", recording_create)
    yield made


@pytest.fixture(scope="session")
def cgroups_available() -> bool:
    """Whether this host lets the sandbox make a cgroup (root with v1 or v2 here)."""
    group = cgroups.create(64 << 20, 8)
    if group is None:
        return False
    group.remove()
    return True
