"""Service commands in-process: migrate, create-user, sweep, and the sandbox refusal."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from grader.cli import cli


@pytest.fixture
def instance(tmp_path, monkeypatch):
    for key in [k for k in __import__("os").environ if k.startswith("MICROGRADE_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("MICROGRADE_INSTANCE_PATH", str(tmp_path / "inst"))
    monkeypatch.setenv("MICROGRADE_BROKER_URL", "memory://localhost/")
    return tmp_path / "inst"


def test_migrate_then_create_user_prints_only_the_token(instance) -> None:
    runner = CliRunner()
    out = runner.invoke(cli, ["migrate"])
    assert out.exit_code == 0, out.output
    assert "up to date; 1 assignment(s) loaded" in out.stdout
    assert (instance / "micrograde.sqlite").exists()
    made = runner.invoke(cli, ["create-user", "Prof@Example.org", "--role", "instructor",
                               "--password", "pw-123456"])
    assert made.exit_code == 0, made.output
    token = made.stdout.strip()
    assert made.stdout == token + "\n" and token.startswith("mg_")
    from grader import create_app
    from grader.extensions import db
    from grader.models import User

    app = create_app()
    with app.app_context():
        user = User.from_token(token)
        assert (user.email, user.role) == ("prof@example.org", "instructor")
        assert user.check_password("pw-123456")
        assert db.session.query(User).count() == 1
    again = runner.invoke(cli, ["create-user", "prof@example.org", "--role", "student"])
    assert again.exit_code == 1 and "already exists" in again.stderr
    bad = runner.invoke(cli, ["create-user", "not-an-email", "--role", "student"])
    assert bad.exit_code == 2 and bad.stdout == ""
    norole = runner.invoke(cli, ["create-user", "a@example.org"])
    assert norole.exit_code == 2


def test_sweep_command_reports_nothing_stuck(instance) -> None:
    runner = CliRunner()
    assert runner.invoke(cli, ["migrate"]).exit_code == 0
    out = runner.invoke(cli, ["sweep"])
    assert out.exit_code == 0 and out.stdout.strip() == "nothing stuck"


def test_no_jail_no_worker_unless_weak_mode_is_allowed(instance, monkeypatch) -> None:
    # bwrap cannot be removed from this machine, so its absence is simulated here
    import worker.sandbox
    from grader import create_app
    from worker import celery_app

    monkeypatch.setattr(worker.sandbox, "bwrap_path", lambda: None)
    app = create_app()
    assert "bubblewrap" in celery_app.sandbox_ready(app)
    with pytest.raises(SystemExit, match="MICROGRADE_ALLOW_WEAK_SANDBOX=1"):
        celery_app._refuse_without_sandbox()
    refused = CliRunner().invoke(cli, ["serve", "--port", "1"])
    assert refused.exit_code == 1 and "bubblewrap" in refused.stderr
    assert celery_app.sandbox_ready(create_app({"ALLOW_WEAK_SANDBOX": "1"})) is None
