"""`--out DIR`: report.json, one NAME.svg diff per exercise and an index.html to open from disk."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import graphviz
import jinja2
from markupsafe import Markup, escape

from grader.grading import diffviz
from grader.grading.compare import fmt
from grader.grading.report import Report

log = logging.getLogger(__name__)

TEMPLATES = Path(__file__).resolve().parent.parent / "templates" / "report"
CAUSES = {
    "overwrite": "gradient overwritten, not accumulated",
    "local_derivative": "wrong local derivative",
    "forward_op": "wrong forward value",
    "unseeded": "output gradient never seeded",
    "topo_order": "backward in the wrong order",
    "missing_op": "missing operation",
    "recursion": "recursion too deep",
    "exception": "exception",
    "timeout": "did not finish",
    "memory": "out of memory",
}


def svg_name(exercise: str) -> str:
    """The file name of an exercise's diff (exercise names are plain, but be sure)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", exercise) + ".svg"


def _number(x: Any) -> str:
    return "—" if x is None else fmt(x) if isinstance(x, int | float) else str(x)


def ticks(text: Any) -> Markup:
    """Escape `text`, then show its `backticked` spans as code."""
    return Markup(re.sub(r"`([^`]+)`", r"<code>\1</code>", str(escape(text))))


def environment() -> jinja2.Environment:
    """A plain Jinja environment for the report page (autoescaping everything)."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES),
                             autoescape=True, trim_blocks=True, lstrip_blocks=True,
                             undefined=jinja2.StrictUndefined)
    env.filters["num"] = _number
    env.filters["ticks"] = ticks
    return env


def render_index(report: Report, svgs: dict[str, str]) -> str:
    """The index.html text: verdicts, messages, hints, diffs and tables."""
    data = report.to_dict()
    name = str(data.get("source", {}).get("filename") or "submission")
    return environment().get_template("index.html").render(
        report=data, filename=name, svgs={k: Markup(v) for k, v in svgs.items()},
        causes=CAUSES, svg_name=svg_name)


def write(report: Report, out: Path,
          render: Callable[[str], str] = diffviz.render_svg) -> list[Path]:
    """Write report.json, NAME.svg per exercise with a diff, and index.html into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "report.json"]
    written[0].write_text(report.to_json(), encoding="utf-8")
    svgs: dict[str, str] = {}
    for ex in report.exercises:
        if not ex.diff_dot:
            continue
        try:
            svg = render(ex.diff_dot)
        except (graphviz.ExecutableNotFound, graphviz.CalledProcessError) as exc:
            log.warning("could not render the diff of %s: %s", ex.name, exc)
            continue
        if not diffviz.safe_svg(svg):
            log.error("the diff of %s is not a plain SVG; not written", ex.name)
            continue
        path = out / svg_name(ex.name)
        path.write_text(svg, encoding="utf-8")
        written.append(path)
        svgs[ex.name] = diffviz.inline_svg(svg)
    index = out / "index.html"
    index.write_text(render_index(report, svgs), encoding="utf-8")
    written.append(index)
    return written
