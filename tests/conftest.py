"""Fixtures shared by the whole suite: where the test data lives and how to read it."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# pytest puts this folder on sys.path for this file; its tests/exercises, tests/reference
# and tests/worker would then shadow the real packages of the same names.
if sys.path[:1] != [str(ROOT)]:
    sys.path.insert(0, str(ROOT))

#: benchmarks print figures; they are run by hand, never collected
collect_ignore = ["bench"]

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    """The folder holding test data (`submissions/good`, `submissions/hostile`, ...)."""
    return FIXTURES


@pytest.fixture(scope="session")
def read_fixture() -> Callable[[str], str]:
    """Read a submission fixture by its path under `fixtures/submissions/`."""

    def read(name: str) -> str:
        return (FIXTURES / "submissions" / name).read_text(encoding="utf-8")

    return read
