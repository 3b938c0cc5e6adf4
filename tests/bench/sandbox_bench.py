"""What the sandbox costs: start-up of an empty run (bwrap, weak, bare interpreter) and the
time to grade each exercise sandboxed, weakly isolated and in-process, measured in one run.

    .venv/bin/python tests/bench/sandbox_bench.py [N]

Prints medians over N repetitions (default 10) and their ratios; asserts nothing.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from exercises import EXERCISES, instances  # noqa: E402
from grader.grading.pipeline import grade, sandbox_files  # noqa: E402
from worker import harness, sandbox  # noqa: E402
from worker.limits import Limits  # noqa: E402

GOOD = ROOT / "tests/fixtures/submissions/good/lecture.py"
SUBMISSIONS = [GOOD, *sorted((ROOT / "tests/fixtures/submissions/good").glob("[!l]*.py"))]


def median_s(fn: Callable[[], object], n: int) -> float:
    """Median wall time of `fn` over `n` calls, after one warm-up call."""
    fn()
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def in_process(source: str, name: str, seed: int) -> None:
    """The same captures as one graded exercise, in this process, without any sandbox."""
    module = types.ModuleType("submission")
    exec(compile(source, "submission.py", "exec"), module.__dict__)  # noqa: S102 - trusted
    ex = EXERCISES[name]
    harness.probe(module.Value)
    for _, inputs in instances(ex, seed, 3):
        params = ex.params(inputs) if ex.params else None
        for g in ex.graphs:
            harness.capture(module.Value, g.build, inputs, ex.lr, params)


def main(n: int) -> None:
    """Measure and print."""
    limits = Limits()
    bare = [sandbox.interpreter(), "-I", "-S", "-c", "pass"]
    empty = {"m.py": "pass\n"}
    start_bare = median_s(lambda: subprocess.run(bare, check=True), n)
    start_weak = median_s(lambda: sandbox.run(empty, "m.py", [], limits, weak=True), n)
    has_bwrap = sandbox.bwrap_path() is not None
    start_bwrap = (median_s(lambda: sandbox.run(empty, "m.py", [], limits, weak=False), n)
                   if has_bwrap else float("nan"))
    print(f"start-up of an empty run, median of {n} (ms)")
    print(f"  python -I -S -c pass {start_bare * 1e3:8.1f}   1.00x")
    print(f"  sandbox, weak        {start_weak * 1e3:8.1f}   {start_weak / start_bare:.2f}x")
    print(f"  sandbox, bwrap       {start_bwrap * 1e3:8.1f}   {start_bwrap / start_bare:.2f}x")

    source = GOOD.read_text()
    print(f"\n{GOOD.name}, one exercise on 4 instances, median of {n} (ms): the harness's "
          "captures in-process,\nthe same job in the sandbox (weak, bwrap), and the whole "
          "grade() (reference, compare, diff)")
    print(f"  {'exercise':<11} {'in-process':>10} {'weak':>8} {'bwrap':>8} {'bwrap-in':>9} "
          f"{'grade()':>8}")
    for name in EXERCISES:
        ex = EXERCISES[name]
        job = {"submission": "submission.py", "exercise": name, "path": [".", "_site"],
               "instances": [x for _, x in instances(ex, 1, 3)]}
        files = sandbox_files(ex, source, job)
        inproc = median_s(lambda name=name: in_process(source, name, 1), n)
        weak = median_s(lambda f=files: sandbox.run(f, "harness.py", ["job.json"], limits,
                                                     weak=True), n)
        bwrap = (median_s(lambda f=files: sandbox.run(f, "harness.py", ["job.json"], limits,
                                                       weak=False), n)
                 if has_bwrap else float("nan"))
        whole = median_s(lambda name=name: grade(source, [name], seed=1), n)
        print(f"  {name:<11} {inproc * 1e3:10.1f} {weak * 1e3:8.1f} {bwrap * 1e3:8.1f} "
              f"{(bwrap - inproc) * 1e3:9.1f} {whole * 1e3:8.1f}")
    print(f"  (bwrap-in is the sandbox's cost per exercise; an empty bwrap run costs "
          f"{(start_bwrap - start_bare) * 1e3:.1f} ms more than a bare interpreter)")

    print(f"\ngrading {len(SUBMISSIONS)} submissions (all exercises, bwrap), once each (s)")
    total = time.perf_counter()
    for path in SUBMISSIONS:
        t = time.perf_counter()
        report = grade(path.read_bytes(), seed=1, filename=path.name)
        verdicts = ",".join(e.verdict for e in report.exercises)
        print(f"  {path.name:<28} {time.perf_counter() - t:6.2f}  {verdicts}")
    print(f"  {'total':<28} {time.perf_counter() - total:6.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
