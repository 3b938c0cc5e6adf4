"""Limits from settings: every field overridable, bad values refused by name."""

from __future__ import annotations

import pytest

from worker.limits import Limits


def test_settings_override_fields_with_their_types() -> None:
    got = Limits.from_mapping({"X_WALL_S": "7.5", "X_CPU_S": "2", "X_MEMORY_MB": 256,
                               "X_PROCESSES": "", "OTHER": "1"}, "X_")
    assert got == Limits(wall_s=7.5, cpu_s=2, memory_mb=256)


@pytest.mark.parametrize(("key", "raw"), [("X_CPU_S", "2.5"), ("X_WALL_S", "-1"),
                                          ("X_WALL_S", "nan"), ("X_WALL_S", "inf"),
                                          ("X_MEMORY_MB", "0"), ("X_TMP_MB", "lots")])
def test_a_bad_setting_is_refused_by_name(key: str, raw: str) -> None:
    with pytest.raises(ValueError, match=f"{key} must be a positive .*{raw!r}"):
        Limits.from_mapping({key: raw}, "X_")
