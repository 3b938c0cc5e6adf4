"""`micrograde grade FILE`: grade one submission locally, no services needed."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from exercises import EXERCISES
from grader.grading import outdir
from grader.grading.pipeline import WEAK_WARNING, grade
from grader.grading.report import Report, grouped_warnings
from worker.limits import Limits
from worker.sandbox import bwrap_path


@click.command("grade")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON document.")
@click.option("--exercise", "exercises", multiple=True, type=click.Choice(list(EXERCISES)),
              help="Grade only this exercise (repeatable).")
@click.option("--seed", type=click.IntRange(min=0), help="Seed of the random instances.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Write report.json, NAME.svg diffs and index.html into this folder.")
@click.option("-k", "--instances", "k", type=click.IntRange(0, 20), default=3, show_default=True,
              help="Random instances per exercise besides the canonical one.")
def grade_command(file: Path, as_json: bool, exercises: tuple[str, ...], seed: int | None,
                  out: Path | None, k: int) -> None:
    """Grade FILE (a .py defining class Value, or a .ipynb notebook).

    Exit status: 0 when every exercise passed, 1 otherwise, 2 on a usage error.
    """
    try:
        limits = Limits.from_env()
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    if out is not None:
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise click.BadParameter(f"cannot write there: {exc}", param_hint="'--out'") \
                from exc
    weak = bwrap_path() is None
    if weak:
        click.secho(f"WARNING: {WEAK_WARNING}", fg="red", bold=True, err=True)
    report = grade(file.read_bytes(), exercises or None, seed, limits,
                   filename=file.name, k=k, weak=weak)
    if out is not None:
        write_out(report, out)
    if as_json:
        click.echo(report.to_json())
    else:
        click.echo(terminal_safe(render_table(report)))
    sys.exit(0 if report.passed else 1)


def write_out(report: Report, out: Path) -> None:
    """Write report.json, one NAME.svg diff per exercise and index.html into `out`."""
    outdir.write(report, out)
    click.echo(f"wrote {out / 'index.html'}", err=True)


def terminal_safe(text: str) -> str:
    """`text` with control characters (a submission's escape sequences) shown, not obeyed."""
    return "".join(ch if ch.isprintable() or ch == "\n" else
                   ch.encode("unicode_escape").decode("ascii") for ch in text)


def render_table(report: Report) -> str:
    """The report as a plain-text table for a terminal."""
    name = report.source.get("filename", "submission")
    lines = [f"micrograde: {name} (seed {report.seed})", ""]
    if report.status == "invalid":
        err = report.error or {}
        lines.append(f"NOT GRADED ({err.get('kind')}): {err.get('message')}")
        if err.get("traceback"):
            lines += ["", err["traceback"].rstrip()]
        return "\n".join(lines)
    width = max(len(e.name) for e in report.exercises) if report.exercises else 10
    lines.append(f"  {'exercise':<{width}}  {'verdict':<15}  {'score':>9}  message")
    for e in report.exercises:
        score = "feedback" if e.feedback_only else f"{e.score:g}/{e.max_score:g}"
        lines.append(f"  {e.name:<{width}}  {e.verdict:<15}  {score:>9}  {e.message}")
        for hint in e.hints:
            lines.append(f"  {'':<{width}}  {'':<15}  {'':>9}  hint: {hint}")
        for row in e.table:
            if row["verdict"] != "passed":
                lines.append(f"  {'':<{width}}  {'':<15}  {'':>9}  {row['graph']}: "
                             f"{row['verdict']}: {row['message']}")
    lines += ["", f"  total {report.score:g}/{report.max_score:g}"]
    lines += [f"  note: {w}" for w in report.warnings]
    lines += [f"  note ({', '.join(names)}): {w}" for w, names in grouped_warnings(
        (e.name, e.warnings) for e in report.exercises)]
    return "\n".join(lines)


