"""Gradescope: turn a report into their `results.json`, and run as their `run_autograder`.

Format: https://gradescope-autograders.readthedocs.io/en/latest/specs/ — a top-level
`score` (it overrides the tests' total), `execution_time`, `output`, `visibility`,
`stdout_visibility`, `extra_data`, and `tests[]` with `name`, `number`, `score`,
`max_score`, `status` (passed | failed), `output`, `tags`, `visibility` (hidden |
after_due_date | after_published | visible). Hidden exercises become `after_due_date`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

SUBMISSION_DIR = Path("/autograder/submission")
RESULTS_FILE = Path("/autograder/results/results.json")
MAX_OUTPUT = 6000  #: characters of one test's output
VERDICT_WORDS = {
    "passed": "Passed", "wrong_forward": "Wrong forward values",
    "wrong_gradient": "Wrong gradients", "missing_feature": "Missing operation",
    "error": "Raised an exception", "timeout": "Time limit exceeded",
    "memory_limit": "Memory limit exceeded", "crashed": "Crashed",
}


def _clip(text: str, n: int) -> str:
    if len(text) <= n:
        return text
    return text[: n - 40] + f"\n… ({len(text) - n + 40} more characters)"


def exercise_output(ex: dict[str, Any], filename: str = "value.py",
                    seed: int | None = None) -> str:
    """What a student reads under one test: verdict, message, diagnosis, hints, output."""
    parts = [VERDICT_WORDS.get(ex.get("verdict", ""), ex.get("verdict", "")) + "."]
    if ex.get("message"):
        parts.append(str(ex["message"]))
    diagnosis = ex.get("diagnosis") or {}
    if isinstance(diagnosis, dict) and diagnosis.get("summary"):
        parts.append("Diagnosis: " + str(diagnosis["summary"]))
    parts += [f"Hint: {h}" for h in ex.get("hints") or []]
    if ex.get("verdict") != "passed" and seed is not None:
        parts.append(f"Replay locally: micrograde grade {filename} --exercise {ex['name']} "
                     f"--seed {seed}")
    parts += [f"Note: {w}" for w in ex.get("warnings") or []]
    if ex.get("traceback"):
        parts.append("Traceback:\n" + str(ex["traceback"]))
    for stream in ("stdout", "stderr"):
        if ex.get(stream):
            parts.append(f"{stream}:\n{_clip(str(ex[stream]), 1500)}")
    return _clip("\n\n".join(parts), MAX_OUTPUT)


def results_json(report: dict[str, Any], *, hidden: Iterable[str] = (),
                 score: float | None = None, notes: Iterable[str] = (),
                 filename: str = "value.py") -> dict[str, Any]:
    """Gradescope's results.json for one report (SPEC §5 dict); `score` overrides the total."""
    hidden = set(hidden)
    tests: list[dict[str, Any]] = []
    if report.get("status") != "graded":
        err = report.get("error") or {}
        tests.append({
            "name": "Your file can be graded", "number": "0", "score": 0.0,
            "max_score": float(report.get("max_score") or 0.0), "status": "failed",
            "output": _clip(f"{err.get('kind', 'invalid')}: {err.get('message', '')}",
                            MAX_OUTPUT), "tags": ["invalid"], "visibility": "visible"})
    for i, ex in enumerate(report.get("exercises") or [], 1):
        tags = [ex.get("verdict", "")] + (["feedback only"] if ex.get("feedback_only") else [])
        tests.append({
            "name": f"{ex.get('title') or ex['name']} ({ex['name']})", "number": str(i),
            "score": float(ex.get("score") or 0.0), "max_score": float(ex.get("max_score") or 0.0),
            "status": "passed" if ex.get("verdict") == "passed" else "failed",
            "output": exercise_output(ex, filename, report.get("seed")), "tags": tags,
            "visibility": "after_due_date" if ex["name"] in hidden else "visible"})
    total = float(report.get("score") or 0.0) if score is None else float(score)
    lines = [f"micrograde: {total:g} / {float(report.get('max_score') or 0.0):g} points"
             + (f" (grading seed {report['seed']})" if report.get("seed") is not None else "")]
    lines += list(notes) + [str(w) for w in report.get("warnings") or []]
    return {
        "score": round(total, 4),
        "execution_time": int(round(float((report.get("timing") or {}).get("wall_s") or 0))),
        "output": "\n".join(lines),
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": {"micrograde": {"schema": report.get("schema"),
                                      "status": report.get("status"),
                                      "seed": report.get("seed"),
                                      "max_score": report.get("max_score"),
                                      "isolation": report.get("isolation")}},
    }


def find_submission(directory: Path) -> Path | None:
    """value.py, else a .py (then .ipynb) defining class Value, else the only candidate."""
    files = sorted((p for p in directory.rglob("*") if p.is_file()
                    and p.suffix.lower() in (".py", ".ipynb")
                    and not any(part.startswith((".", "__MACOSX")) for part in
                                p.relative_to(directory).parts)),
                   key=lambda p: (len(p.relative_to(directory).parts), str(p)))
    for p in files:
        if p.name == "value.py":
            return p
    for suffix in (".py", ".ipynb"):
        for p in files:
            if p.suffix.lower() == suffix and "class Value" in p.read_text("utf-8", "replace"):
                return p
    return files[0] if len(files) == 1 else None


def run_autograder(submission_dir: Path = SUBMISSION_DIR, results: Path = RESULTS_FILE,
                   slug: str = "micrograd", manifest_path: str | Path | None = None
                   ) -> dict[str, Any]:
    """Grade the submission folder with the core pipeline and write results.json."""
    from exercises import manifest
    from grader.grading.pipeline import grade

    specs = {s.slug: s for s in manifest.load(manifest_path)}
    if slug not in specs:
        raise ValueError(f"no assignment {slug!r} in the manifest (have: {', '.join(specs)})")
    spec = specs[slug]
    path = find_submission(submission_dir) if submission_dir.is_dir() else None
    if path is None:
        found = sorted(p.name for p in submission_dir.rglob("*") if p.is_file()) \
            if submission_dir.is_dir() else []
        data = {"score": 0.0, "output": "micrograde: no submission to grade.", "tests": [{
            "name": "Your file can be graded", "number": "0", "score": 0.0,
            "max_score": float(spec.max_score), "status": "failed", "visibility": "visible",
            "output": "Upload value.py (or one .py / .ipynb file that defines class Value). "
                      f"Found: {', '.join(found) or 'nothing'}."}]}
    else:
        report = grade(path.read_bytes(), list(spec.exercises), None, filename=path.name,
                       points=spec.points, feedback_only=spec.feedback_only)
        data = results_json(report.to_dict(), hidden=spec.hidden, filename=path.name)
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(json.dumps(data, indent=2, allow_nan=False), encoding="utf-8")
    return data
