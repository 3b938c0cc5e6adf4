"""Turn one exercise's sandbox result into an `Evaluation` (verdict, score, message, nodes)."""

from __future__ import annotations

from typing import Any

from exercises.base import Exercise
from grader.grading.compare import (
    FORWARD_SHARE,
    SEVERITY,
    Evaluation,
    RunOutcome,
    compare_run,
    first_problem,
    missing_message,
    node_rows,
    pick_focus,
)
from grader.grading.report import ExerciseResult
from worker.sandbox import SandboxResult

SANDBOX_VERDICTS = {"timeout": "timeout", "import_timeout": "timeout",
                    "memory_limit": "memory_limit", "crashed": "crashed"}
#: what each warning code from the harness means; codes not listed here are ignored
WARNINGS = {
    "int_grad": "your gradients are ints (`self.grad = 0`): accepted, but `0.0` keeps "
                "them floats",
    "relu_grad_at_zero": "`relu()` has gradient 1 at exactly 0, where micrograd and PyTorch "
                         "use 0: accepted (the graded inputs are never 0)",
    "tanh_overflow": "`tanh()` fails for large inputs (`Value(400.0).tanh()` overflows or "
                     "gives nan, as `exp(2x)` does beyond |x| ≈ 355; `math.tanh` does not): "
                     "accepted (the graded inputs are small)",
    "double_backward": "calling `backward()` twice on the same graph changes the gradients "
                       "(they add up, as in micrograd): set every `grad` to 0 before each "
                       "`backward()` when you train",
    "checks_unfinished": "your code {status} after all its results were in (the grader "
                         "checks `relu()` at 0, `tanh()` of large inputs and a second "
                         "`backward()` last): the verdict stands",
}
AFTER_RESULT = {"timeout": "timed out", "memory_limit": "ran out of memory",
                "crashed": "crashed"}
SANDBOX_MESSAGES = {
    "timeout": "did not finish within {wall:g} s (an endless loop, or a very slow backward?)",
    "memory_limit": "used more than {mem} MiB of memory",
    "crashed": "the process died without a result ({detail})",
}


def _result(ex: Exercise, verdict: str, message: str, sb: SandboxResult) -> ExerciseResult:
    return ExerciseResult(
        name=ex.name, title=ex.title, verdict=verdict, score=0.0,
        max_score=ex.points, message=message, stdout=sb.stdout, stderr=sb.stderr,
        feedback_only=ex.feedback_only, wall_s=sb.wall_s)


def evaluate(ex: Exercise, sb: SandboxResult, expected: list[list[dict[str, Any]]],
             seeds: list[int | None], limits: Any, seed: int | None = None) -> Evaluation:
    """Decide the exercise's verdict from the sandbox's messages and the reference numbers."""
    result_msg = next((m for m in sb.messages if m.get("event") == "result"), None)
    codes: list[str] = []
    if result_msg is not None and sb.status in AFTER_RESULT and _after_result(sb):
        codes.append("checks_unfinished")
    elif sb.status != "ok" or result_msg is None:
        status = sb.status if sb.status != "ok" else "crashed"
        verdict = SANDBOX_VERDICTS.get(status, "crashed")
        detail = sb.detail or "no result was reported"
        msg = SANDBOX_MESSAGES[verdict if verdict in SANDBOX_MESSAGES else "crashed"].format(
            wall=limits.wall_s, mem=limits.memory_mb, detail=detail)
        return Evaluation(ex, _result(ex, verdict, msg, sb), seeds=seeds)

    features = result_msg.get("features") or {}
    if "constructor_error" in result_msg:
        err = result_msg["constructor_error"]
        res = _result(ex, "error", f"Value(2.0) raised {err.get('message', '')}", sb)
        res.traceback = err.get("traceback")
        return Evaluation(ex, res, features=features, seeds=seeds)

    runs: list[RunOutcome] = []
    seen: set[tuple[int, str]] = set()
    for raw in result_msg.get("runs") or []:
        try:
            index, graph = int(raw["instance"]), str(raw["graph"])
            if not 0 <= index < len(expected) or (index, graph) in seen:
                raise ValueError("instance out of range or reported twice")
            exp = expected[index][[g.name for g in ex.graphs].index(graph)]
        except (KeyError, ValueError, IndexError, TypeError):
            continue  # a forged or garbled run is ignored; a missing one means `crashed`
        seen.add((index, graph))
        run = RunOutcome(instance=index, graph=graph, expected=exp)
        if raw.get("missing"):
            run.missing = [str(op) for op in raw["missing"]]
        elif raw.get("error"):
            run.error = raw["error"] if isinstance(raw["error"], dict) else {"message": "?"}
        else:
            run.actual = raw
            compare_run(run)
        runs.append(run)
    expected_runs = len(expected) * len(ex.graphs)
    if len(runs) < expected_runs:
        res = _result(ex, "crashed", "the harness reported fewer results than expected", sb)
        return Evaluation(ex, res, runs, features=features, seeds=seeds)

    focus = pick_focus(runs)
    verdict = focus.verdict if focus else "crashed"
    res = _result(ex, verdict, "", sb)
    res.graph, res.instance = focus.graph, focus.instance
    res.instance_seed = seeds[focus.instance] if focus.instance < len(seeds) else None
    if verdict == "missing_feature":
        res.message = missing_message(focus.missing, features)
    elif verdict in ("error", "memory_limit"):
        res.message = f"raised {focus.error.get('message', 'an exception')}"
        res.traceback = focus.error.get("traceback")
    else:
        res.nodes = node_rows(focus)
        res.message = first_problem(focus) if verdict != "passed" else "all values match"
        if verdict != "passed" and len(ex.graphs) > 1:
            res.message = f"{focus.graph}: {res.message}"
        if verdict != "passed" and focus.instance > 0:
            res.message += f" (random instance {focus.instance}"
            res.message += (f"; --exercise {ex.name} --seed {seed} replays it)"
                            if seed is not None else ")")
    if verdict == "passed":
        res.score = ex.points
    elif verdict == "wrong_gradient" and all(not r.data_wrong for r in runs):
        res.score = round(ex.points * FORWARD_SHARE, 4)
    if ex.per_graph_table:
        res.table = graph_table(runs, features)
    codes += [w for r in runs if r.actual and isinstance(r.actual.get("warnings"), list)
              for w in r.actual["warnings"]]
    checks = next((m for m in sb.messages if m.get("event") == "checks"), {})
    if isinstance(checks.get("warnings"), list):
        codes += checks["warnings"]
    res.warnings = warning_texts(codes, sb.status)
    return Evaluation(ex, res, runs, focus, features, seeds)


def _after_result(sb: SandboxResult) -> bool:
    """True when the run failed only after its one result was in (in the quirk checks):
    never for a garbled channel, where a forged result may hide the real one."""
    results = sum(1 for m in sb.messages if m.get("event") == "result")
    return results == 1 and sb.detail != "garbled result"


def warning_texts(codes: list[Any], status: str = "ok") -> list[str]:
    """The readable warnings for the harness's codes, each once, in WARNINGS order."""
    known = set(c for c in codes if isinstance(c, str))
    return [text.format(status=AFTER_RESULT.get(status, status))
            for code, text in WARNINGS.items() if code in known]


def graph_table(runs: list[RunOutcome], features: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per graph (operators): its worst verdict over all instances and why."""
    rows: dict[str, dict[str, Any]] = {}
    for run in runs:
        row = rows.setdefault(run.graph, {"graph": run.graph, "verdict": "passed",
                                          "message": "forward and backward match"})
        if SEVERITY.index(run.verdict) < SEVERITY.index(row["verdict"]):
            row["verdict"] = run.verdict
            if run.missing:
                row["message"] = missing_message(run.missing, features)
            elif run.error:
                row["message"] = f"raised {run.error.get('message', '')}"
            else:
                row["message"] = first_problem(run)
    return list(rows.values())
