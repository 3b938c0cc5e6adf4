"""The demo course, seeded once per test session by the real `micrograde demo` command."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

_made: dict[str, tuple[Path, str]] = {}


def demo_course(base: Path) -> tuple[Path, str]:
    """Run `micrograde demo` into `base/demo` (once per session); return (instance, output)."""
    if "demo" not in _made:
        from grader.cli import cli

        instance = base / "demo"
        result = CliRunner().invoke(cli, ["demo"], env={
            "MICROGRADE_INSTANCE_PATH": str(instance), "MICROGRADE_DATABASE_URL": "",
            "MICROGRADE_BROKER_URL": "", "MICROGRADE_MANIFEST": ""})
        assert result.exit_code == 0, result.output + repr(result.exception)
        _made["demo"] = (instance, result.output)
    return _made["demo"]
