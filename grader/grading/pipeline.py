"""`grade(...)`: the one grading pipeline that the CLI, the Celery task and the tests call."""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import reference
from exercises import EXERCISES, MODULES, instances
from exercises.base import Exercise
from grader.grading import validate
from grader.grading.compare import Evaluation
from grader.grading.feedback import annotate
from grader.grading.report import Report, invalid
from grader.grading.verdicts import evaluate
from worker import harness, sandbox
from worker.limits import Limits

log = logging.getLogger(__name__)

DEFAULT_K = 3
WEAK_WARNING = ("bubblewrap (bwrap) is not installed: the submission ran with resource "
                "limits only, NOT isolated from this machine. Install bwrap to grade "
                "untrusted code.")


def new_seed() -> int:
    """A fresh per-submission seed."""
    return random.SystemRandom().randrange(1, 2**31)


def expected_runs(ex: Exercise, inputs: Sequence[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The reference engine's numbers for every instance × graph, via the harness's capture."""
    params = ex.params(inputs[0]) if ex.params else None
    return [[harness.capture(reference.Value, g.build, x, ex.lr, params) for g in ex.graphs]
            for x in inputs]


def sandbox_files(ex: Exercise, code: str, job: dict[str, Any]) -> dict[str, str]:
    """What the sandbox sees: the harness, this exercise's module, the submission, the job."""
    ex_dir = Path(MODULES[ex.name].__file__).parent
    return {
        "harness.py": Path(harness.__file__).read_text(encoding="utf-8"),
        "exercises/__init__.py": '"""Exercise builders (sandbox copy)."""\n',
        "exercises/base.py": (ex_dir / "base.py").read_text(encoding="utf-8"),
        f"exercises/{ex.name}.py": Path(MODULES[ex.name].__file__).read_text(encoding="utf-8"),
        "submission.py": code,
        "job.json": json.dumps(job),
    }


def run_exercise(ex: Exercise, code: str, seed: int, k: int, limits: Limits,
                 weak: bool | None) -> tuple[Evaluation, dict[str, Any] | None]:
    """Grade one exercise in its own sandbox; also return the harness's `invalid` message."""
    insts = instances(ex, seed, k)
    inputs = [x for _, x in insts]
    seeds = [s for s, _ in insts]
    job = {"submission": "submission.py", "exercise": ex.name, "instances": inputs,
           "path": [".", "_site"]}
    result = sandbox.run(sandbox_files(ex, code, job), "harness.py", ["job.json"], limits,
                         weak=weak)
    bad = next((m for m in result.messages if m.get("event") == "invalid"), None)
    evaluation = evaluate(ex, result, expected_runs(ex, inputs), seeds, limits, seed)
    evaluation.result.stdout, evaluation.result.stderr = result.stdout, result.stderr
    evaluation.isolation = result.isolation  # type: ignore[attr-defined]
    if result.status == "import_timeout":
        bad = {"kind": "import_timeout"}
    return evaluation, bad


def grade(source: str | bytes, exercises: Sequence[str] | None = None, seed: int | None = None,
          limits: Limits | None = None, *, filename: str = "value.py", k: int = DEFAULT_K,
          points: Mapping[str, float] | None = None, feedback_only: Collection[str] = (),
          weak: bool | None = None,
          on_evaluation: Callable[[Evaluation], None] | None = None) -> Report:
    """Grade a submission on the named exercises (all by default) and return its report.

    `points` overrides exercises' points; exercises named in `feedback_only` are graded
    and reported but worth nothing (as `operators` is by default).
    """
    start = time.monotonic()
    limits = limits or Limits()
    seed = new_seed() if seed is None else seed
    names = list(dict.fromkeys(exercises)) if exercises else list(EXERCISES)  # each once
    unknown = [n for n in names if n not in EXERCISES]
    if unknown:
        raise ValueError(f"unknown exercise(s): {', '.join(unknown)}")
    plan = [_configured(EXERCISES[n], points, feedback_only) for n in names]
    possible = round(sum(ex.points for ex in plan if not ex.feedback_only), 4)

    checked = validate.check(source, filename, limits)
    if isinstance(checked, validate.Invalid):
        report = invalid(seed, checked.kind, checked.message, **checked.extra)
        report.source, report.max_score = checked.source, possible
        report.timing = {"wall_s": round(time.monotonic() - start, 3)}
        return report

    report = Report(status="graded", seed=seed, source=checked.source,
                    warnings=list(checked.warnings))
    for ex in plan:
        evaluation, bad = run_exercise(ex, checked.code, seed, k, limits, weak)
        if bad is not None:
            out = _invalid_from_harness(report, bad, limits, start)
            out.max_score = possible
            return out
        annotate(evaluation, seed=seed, filename=filename,
                 replay=lambda one: run_exercise(one, checked.code, seed, 0, limits, weak)[0])
        if on_evaluation:
            on_evaluation(evaluation)
        report.exercises.append(evaluation.result)
        report.isolation = getattr(evaluation, "isolation", "bwrap")
        if not report.features and evaluation.features:
            report.features = {op: ok is True for op, ok in evaluation.features.items()
                               if not op.startswith("_")}
    if report.isolation == "weak":
        report.warnings.append(WEAK_WARNING)
    graded = [e for e in report.exercises if not e.feedback_only]
    report.score = round(sum(e.score for e in graded), 4)
    report.max_score = round(sum(e.max_score for e in graded), 4)
    report.timing = {"wall_s": round(time.monotonic() - start, 3)}
    return report


def _configured(ex: Exercise, points: Mapping[str, float] | None,
                feedback_only: Collection[str]) -> Exercise:
    """The exercise with the assignment's points, or as feedback only (0 points)."""
    if ex.name in feedback_only:
        return replace(ex, points=0.0, feedback_only=True)
    if points and ex.name in points:
        return replace(ex, points=float(points[ex.name]))
    return ex


def _invalid_from_harness(report: Report, bad: dict[str, Any], limits: Limits,
                          start: float) -> Report:
    """The whole submission is invalid: it failed to import (or define Value) at all."""
    kind = bad.get("kind")
    if kind == "import_timeout":
        msg = (f"importing your file took more than {limits.import_s:g} s: move training "
               "loops and demos under `if __name__ == \"__main__\":`")
        extra: dict[str, Any] = {}
    elif kind == "no_value_class":
        looks = [str(x)[:60] for x in bad.get("lookalikes") or []]
        msg = "your file does not define a class named `Value`"
        if looks:
            msg += f" (found {', '.join(looks)}: rename it to `Value`)"
        extra = {"lookalikes": looks}
    elif kind == "syntax_error":
        msg, extra = str(bad.get("message", "syntax error"))[:300], {"line": bad.get("line")}
    else:
        kind = "import_error"
        msg = (f"importing your file raised {str(bad.get('message', ''))[:300]}. Top-level "
               "demo code (plots, training) should go under `if __name__ == \"__main__\":`")
        extra = {"traceback": str(bad.get("traceback", ""))[:4000]}
    out = invalid(report.seed, kind, msg, **extra)
    out.source, out.warnings = report.source, report.warnings
    out.timing = {"wall_s": round(time.monotonic() - start, 3)}
    return out
