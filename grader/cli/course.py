"""Course commands: export grades, run as Gradescope's autograder, seed a demo course."""

from __future__ import annotations

import json
import logging
import sys
import textwrap
from pathlib import Path

import click

log = logging.getLogger(__name__)


@click.command("export")
@click.argument("assignment")
@click.option("--format", "fmt", type=click.Choice(["csv", "gradescope"]), default="csv",
              show_default=True, help="CSV gradebook or Gradescope results.json data.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Write here instead of standard output.")
def export_cmd(assignment: str, fmt: str, output: Path | None) -> None:
    """Export ASSIGNMENT's grades: one CSV row per student, or Gradescope results."""
    from sqlalchemy import select

    from grader import create_app, export
    from grader.extensions import db
    from grader.instructor.data import load_course
    from grader.models import Assignment

    app = create_app()
    with app.app_context():
        a = db.session.scalar(select(Assignment).where(Assignment.slug == assignment))
        if a is None:
            known = ", ".join(db.session.scalars(select(Assignment.slug))) or "none"
            raise click.BadParameter(f"no assignment {assignment!r} (known: {known})",
                                     param_hint="ASSIGNMENT")
        course = load_course(a)
        text = export.gradebook_csv(course) if fmt == "csv" else export.gradescope_json(course)
        students = len(course.students)
    if output is None:
        click.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")
        click.echo(f"wrote {output} ({students} students)", err=True)


@click.command("gradescope")
@click.option("--submission", "submission_dir", default="/autograder/submission",
              show_default=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder holding the student's upload.")
@click.option("--results", default="/autograder/results/results.json", show_default=True,
              type=click.Path(dir_okay=False, path_type=Path), help="Where to write results.")
@click.option("--assignment", default="micrograd", show_default=True,
              help="Assignment of the manifest whose exercises and points to use.")
@click.option("--manifest", envvar="MICROGRADE_MANIFEST", default=None,
              type=click.Path(dir_okay=False, path_type=Path),
              help="Assignments manifest (default: the shipped one).")
def gradescope_cmd(submission_dir: Path, results: Path, assignment: str,
                   manifest: Path | None) -> None:
    """Act as Gradescope's run_autograder: grade the upload, write results.json."""
    from grader.gradescope import run_autograder

    try:
        data = run_autograder(submission_dir, results, assignment, manifest)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    click.echo(data.get("output", ""))
    for test in data.get("tests", []):
        click.echo(f"  {test['status']:<6} {test.get('score', 0):g}/{test.get('max_score', 0):g}"
                   f"  {test['name']}")
    click.echo(f"wrote {results}", err=True)


@click.command("demo")
@click.option("--students", default=24, show_default=True, type=click.IntRange(1, 500))
@click.option("--password", default=None, help="Password of every demo account.")
@click.option("--reset", is_flag=True, help="Remove an earlier demo's users and data first.")
@click.option("--url", default="http://127.0.0.1:5000", show_default=True,
              help="Where the site is reached, for the sign-in instructions.")
@click.option("--json", "as_json", is_flag=True, help="Print the accounts as JSON.")
def demo_cmd(students: int, password: str | None, reset: bool, url: str,
             as_json: bool) -> None:
    """Seed an instructor and a class with graded submissions, then say how to sign in.

    Run again, it seeds nothing and repeats how to sign in; --reset seeds afresh.
    """
    from grader import create_app, demo
    from grader.cli.service import ensure_schema

    app = create_app()
    ensure_schema(app)
    instance = Path(app.config["INSTANCE_PATH"])
    path = instance / demo.MANIFEST_NAME
    with app.app_context():
        if reset:
            demo.remove_demo()
        demo.install_manifest(path, renew=reset)
        info = demo.seeded(password or demo.PASSWORD)
        fresh = info is None
        if info is None:
            click.echo("micrograde demo: grading the class's submissions in the sandbox...",
                       err=True)
            info = demo.seed(students, password or demo.PASSWORD)
    if as_json:
        click.echo(json.dumps({**info, "manifest": str(path), "fresh": fresh}, indent=2))
        return
    click.echo(_demo_instructions(info, fresh, path, instance, url.rstrip("/"),
                                  app.config["DATABASE_URL"].startswith("sqlite")))
    sys.stdout.flush()


def _demo_instructions(info: dict, fresh: bool, manifest: Path, instance: Path, url: str,
                       local: bool) -> str:
    """What `micrograde demo` prints: what it made, and how to sign in."""
    from grader import demo

    password = info["password"] or "(the one given when the demo was seeded)"
    student = info["students"][0] if info["students"] else "(none)"
    head = (f"Seeded {len(info['students'])} students and {info['submissions']} graded "
            f"submissions in {instance}." if fresh else
            f"The demo is already seeded in {instance} ({len(info['students'])} students, "
            f"{info['submissions']} submissions); `micrograde demo --reset` seeds it afresh.")
    late = textwrap.fill(
        f"`{demo.LATE_SLUG}` copies the first assignment with a deadline that has passed "
        f"(late window open, {demo.LATE_PENALTY:.0%} penalty, two extensions), so its "
        f"dashboard shows late work. It is declared in the demo manifest {manifest}.", 88,
        break_on_hyphens=False, break_long_words=False)
    steps = []
    if local:
        steps.append(f"MICROGRADE_MANIFEST={manifest} micrograde serve\n"
                     f"     (plain `micrograde serve` loads the configured manifest and "
                     f"retires `{demo.LATE_SLUG}`)")
    steps.append(f"open {url}/login and sign in as\n"
                 f"       instructor: {info['instructor']}   password: {password}\n"
                 f"       a student:  {student}   password: {password}")
    steps.append(f"the dashboards are at {url}/instructor/ "
                 f"({', '.join(info['assignments']) or 'no assignment'})")
    body = "\n".join(f"  {i}. {step}" for i, step in enumerate(steps, 1))
    tail = ("" if local else f"\n\n`{demo.LATE_SLUG}` stays until the next `micrograde "
            "migrate` (which `docker compose up` runs) retires it.")
    return f"\n{head}\n\n{late}\n\n{body}{tail}"


COMMANDS = (export_cmd, gradescope_cmd, demo_cmd)
