"""`micrograde demo`: a class of students, graded by the real pipeline, ready to sign in."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select

from grader import create_app, demo
from grader.cli import cli
from grader.extensions import db
from grader.models import Assignment, Extension, Result, Submission, User, utcnow
from tests.instructor.conftest import sign_in
from tests.instructor.demo_course import demo_course

pytestmark = pytest.mark.slow


def local_env(instance: str, **more: str) -> dict[str, str]:
    """The environment of a `micrograde` command on this instance's SQLite files only."""
    return {"MICROGRADE_INSTANCE_PATH": instance, "MICROGRADE_DATABASE_URL": "",
            "MICROGRADE_BROKER_URL": "", "MICROGRADE_MANIFEST": "", **more}


@pytest.fixture(scope="module")
def demo_site(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, str]:
    instance, output = demo_course(tmp_path_factory.getbasetemp())
    return create_app({"INSTANCE_PATH": str(instance)}), output


def test_demo_says_how_to_sign_in(demo_site: tuple) -> None:
    app, output = demo_site
    assert f"instructor: {demo.INSTRUCTOR}   password: {demo.PASSWORD}" in output
    manifest = Path(app.config["INSTANCE_PATH"]) / demo.MANIFEST_NAME
    assert f"MICROGRADE_MANIFEST={manifest} micrograde serve" in output
    assert "http://127.0.0.1:5000/instructor/ (micrograd, demo-late)" in output


def test_demo_class_is_graded_for_real(demo_site: tuple) -> None:
    app, _ = demo_site
    with app.app_context():
        roles = dict(db.session.execute(select(User.role, func.count()).group_by(User.role))
                     .all())
        assert roles == {"instructor": 1, "student": 24}
        statuses = dict(db.session.execute(select(Submission.status, func.count())
                                           .group_by(Submission.status)).all())
        assert set(statuses) == {"graded", "invalid"} and sum(statuses.values()) > 24
        verdicts = set(db.session.scalars(select(Result.verdict).distinct()))
        assert {"passed", "wrong_gradient", "wrong_forward", "missing_feature", "crashed",
                "memory_limit"} <= verdicts
        causes = set(db.session.scalars(select(Result.diagnosis_cause).distinct()))
        assert {"overwrite", "local_derivative", "forward_op", "missing_op", "topo_order",
                "unseeded", "recursion"} <= causes            # every diagnosed bug class
        kinds = set(db.session.scalars(select(Submission.error_kind).distinct()))
        assert {"syntax_error", "import_error"} <= kinds
        assert db.session.scalar(select(func.count()).select_from(Result).where(
            Result.diff_svg.is_not(None), Result.verdict != "passed")) > 0
        now = utcnow()
        for sub in db.session.scalars(select(Submission)):
            assert sub.created_at < now and sub.worker == "demo@localhost"
            assert timedelta(0) < sub.finished_at - sub.created_at < timedelta(minutes=2)
            assert len(sub.results) == (5 if sub.status == "graded" else 0)
        scores = list(db.session.scalars(select(Submission.score)))
        assert 0.0 in scores and 10.0 in scores and any(0 < s < 10 for s in scores)


def test_the_instructor_signs_in_and_sees_the_dashboard(demo_site: tuple) -> None:
    app, _ = demo_site
    client = sign_in(app, demo.INSTRUCTOR, demo.PASSWORD)
    html = client.get("/instructor/micrograd/").get_data(as_text=True)
    assert "Mistakes by operation" in html and 'id="chart-operations"' in html
    data = client.get("/instructor/micrograd/stats.json").get_json()
    assert data["enrolled"] == 24 and data["graded"] >= 20 and data["by_operation"]


def test_the_demo_late_assignment_shows_late_work(demo_site: tuple) -> None:
    app, _ = demo_site
    client = sign_in(app, demo.INSTRUCTOR, demo.PASSWORD)
    with app.app_context():
        a = db.session.scalar(select(Assignment).where(Assignment.slug == demo.LATE_SLUG))
        assert a.active and a.deadline < utcnow() < a.late_until
        assert (a.late_penalty, a.hidden) == (demo.LATE_PENALTY, ["mlp_step"])
        assert db.session.scalar(select(func.count()).select_from(Extension).where(
            Extension.assignment_id == a.id)) == 2
    data = client.get(f"/instructor/{demo.LATE_SLUG}/stats.json").get_json()
    assert data["late_submissions"] > 0 and data["graded"] >= 20
    gradebook = client.get(f"/instructor/{demo.LATE_SLUG}/export.csv").get_data(as_text=True)
    assert ",yes," in gradebook                       # some grade carries the late penalty
    assert client.get("/instructor/micrograd/stats.json").get_json()["late_submissions"] == 0


def test_a_second_run_seeds_nothing_and_says_how_to_sign_in(demo_site: tuple) -> None:
    app, _ = demo_site
    env = local_env(app.config["INSTANCE_PATH"])
    with app.app_context():
        before = db.session.scalar(select(func.count()).select_from(Submission))
    result = CliRunner().invoke(cli, ["demo", "--url", "http://grader.test:8000/"], env=env)
    assert result.exit_code == 0, result.output
    assert "already seeded" in result.output and "--reset" in result.output
    assert f"instructor: {demo.INSTRUCTOR}   password: {demo.PASSWORD}" in result.output
    assert "open http://grader.test:8000/login" in result.output
    other = CliRunner().invoke(cli, ["demo", "--password", "not it"], env=env)
    assert "password: (the one given when the demo was seeded)" in other.output
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Submission)) == before


def test_serving_the_demo_manifest_keeps_the_demo_late_assignment(demo_site: tuple) -> None:
    app, output = demo_site
    instance = app.config["INSTANCE_PATH"]
    manifest = Path(instance) / demo.MANIFEST_NAME

    def active_after(*cmd: str, **env: str) -> bool:
        result = CliRunner().invoke(cli, list(cmd), env=local_env(instance, **env))
        assert result.exit_code == 0, result.output
        with app.app_context():
            return db.session.scalar(select(Assignment.active).where(
                Assignment.slug == demo.LATE_SLUG))

    assert active_after("migrate", MICROGRADE_MANIFEST=str(manifest))   # what serve runs
    assert not active_after("migrate")                                   # the shipped one
    assert active_after("demo")                                          # brings it back


def test_instructions_for_a_site_already_running_elsewhere(tmp_path: Path) -> None:
    from grader.cli.course import _demo_instructions

    info = {"instructor": demo.INSTRUCTOR, "students": ["s@x"], "submissions": 3,
            "password": "pw", "assignments": ["micrograd", demo.LATE_SLUG]}
    text = _demo_instructions(info, True, tmp_path / "m.toml", tmp_path, "https://g.test",
                              local=False)
    assert "micrograde serve" not in text and "1. open https://g.test/login" in text
    assert "until the next `micrograde migrate`" in text


def test_remove_demo_removes_only_demo_accounts(app, users) -> None:
    keep = users.create("student")
    with app.app_context():
        db.session.add(User(email=f"x@{demo.DOMAIN}", role="student"))
        db.session.commit()
        assert demo.remove_demo() == 1
        assert db.session.get(User, keep.id) is not None
        assert db.session.scalar(select(func.count()).select_from(User)) == 1


def test_every_variant_applies() -> None:
    sources = {name: demo.variant_source(name) for name in demo.VARIANTS}
    assert len(set(sources.values())) == len(sources)
    assert "self.grad = out.grad" in sources["overwrite"]
    assert "queue.pop(0)" in sources["topo_bfs"] and "build(self)" not in sources["topo_bfs"]
    plan = demo.stories(24, __import__("random").Random(1))
    used = {v for story in plan for v in story}
    assert set(demo.BUGS) | set(demo.HOSTILE) | {"correct"} <= used
    assert sum(1 for story in plan if not story) == 2


def test_demo_sources_are_files_a_student_could_write(tmp_path: Path) -> None:
    path = tmp_path / "value.py"
    path.write_text(demo.variant_source("correct"))
    result = CliRunner().invoke(cli, ["grade", str(path), "--exercise", "expression"])
    assert result.exit_code == 0, result.output
