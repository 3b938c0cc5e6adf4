"""Service throughput: N submissions through the HTTP API to real Redis and a real worker.

Starts its own Redis server (free loopback port), a fresh PostgreSQL database (or SQLite
with --sqlite), a `celery worker` with -c processes, and the site over HTTP; posts N
submissions (a mix of correct and buggy files from several students), waits until all
are graded and prints throughput, p50/p95 submit-to-graded latency, bytes stored per
submission, and the ratio to the CLI's single-process grading rate measured in the same
run on the same mix.

    .venv/bin/python tests/bench/service_bench.py [-n 200] [-c 2] [--sqlite]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from grader.api.client import Client  # noqa: E402
from tests.service.fixtures import (  # noqa: E402
    SOURCES,
    LiveServer,
    PgDatabases,
    RedisServer,
    Users,
    WorkerProcess,
    build_app,
)


def mix(n: int) -> list[tuple[str, str]]:
    """The submissions: alternating correct and buggy files."""
    names = ["correct", "buggy"]
    return [(names[i % 2], SOURCES[names[i % 2]]) for i in range(n)]


def cli_rate(sample: int, k: int) -> float:
    """Submissions per second of `grade()` in one process (what `micrograde grade` does)."""
    from grader.grading.pipeline import grade
    from worker.limits import Limits

    files = mix(sample)
    grade(files[0][1], k=k, limits=Limits())  # warm up imports
    start = time.monotonic()
    for _, source in files:
        grade(source, k=k, limits=Limits())
    return sample / (time.monotonic() - start)


def pct(values: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))]


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=200, help="submissions (default 200)")
    parser.add_argument("-c", "--concurrency", type=int, default=2, help="worker processes")
    parser.add_argument("-k", type=int, default=3, help="random instances per exercise")
    parser.add_argument("--students", type=int, default=20)
    parser.add_argument("--cli-sample", type=int, default=20,
                        help="submissions graded by the single-process CLI rate measure")
    parser.add_argument("--sqlite", action="store_true", help="SQLite instead of PostgreSQL")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="service-bench-"))
    redis = RedisServer(tmp / "redis").start()
    pg = None if args.sqlite else PgDatabases()
    overrides = {"BROKER_URL": redis.url, "INSTANCES_K": args.k}
    if pg is not None:
        overrides["DATABASE_URL"] = pg.create()
    app = build_app(tmp / "instance", **overrides)
    worker = WorkerProcess(app, tmp / "logs", concurrency=args.concurrency)
    server = LiveServer(app)
    try:
        worker.start()
        server.start()
        users = Users(app)
        students = [users.create() for _ in range(args.students)]
        clients = [Client(server.url, s.token) for s in students]

        t0 = time.monotonic()
        ids = [clients[i % len(clients)].submit(f"{name}.py", source.encode(),
                                                "micrograd")["id"]
               for i, (name, source) in enumerate(mix(args.n))]
        t_posted = time.monotonic() - t0
        from sqlalchemy import func, select

        from grader.extensions import db
        from grader.models import Result, Submission

        def done() -> int:
            with app.app_context():
                n = db.session.scalar(select(func.count()).select_from(Submission).where(
                    Submission.status.in_(("graded", "invalid", "failed"))))
                db.session.remove()
                return int(n or 0)

        while done() < len(ids):
            time.sleep(0.25)
        with app.app_context():
            rows = db.session.execute(select(Submission.created_at, Submission.graded_at,
                                             Submission.status)).all()
            statuses = {s for _, _, s in rows}
            latencies = [(g - c).total_seconds() for c, g, _ in rows]
            span = (max(g for _, g, _ in rows) - min(c for c, _, _ in rows)).total_seconds()
            stored = sum(len(json.dumps(r.data)) + len(r.diff_svg or "")
                         for r in db.session.scalars(select(Result)))
            stored += sum(len(s.source) + len(json.dumps(s.report))
                          for s in db.session.scalars(select(Submission)))
            db_bytes = None
            if pg is not None:
                db_bytes = db.session.scalar(select(
                    func.pg_total_relation_size("submission") +
                    func.pg_total_relation_size("result")))
            db.session.remove()
        throughput = len(ids) / span
    finally:
        server.stop()
        worker.stop()
        redis.stop()
        if pg is not None:
            from grader.extensions import db

            with app.app_context():
                db.engine.dispose()
            pg.drop_all()

    rate = cli_rate(args.cli_sample, args.k)
    print(f"service bench: {len(ids)} submissions (correct/buggy mix, K={args.k}), "
          f"{args.students} students, worker -c {args.concurrency}, "
          f"{'SQLite' if args.sqlite else 'PostgreSQL'} + Redis")
    print(f"  statuses           {sorted(statuses)}")
    print(f"  posting via API    {t_posted:.1f} s ({len(ids) / t_posted:.0f} submissions/s)")
    print(f"  throughput         {throughput:.2f} submissions/s "
          f"({span:.1f} s first submit to last graded)")
    print(f"  latency            p50 {pct(latencies, 50):.1f} s, p95 {pct(latencies, 95):.1f} s"
          f", mean {statistics.mean(latencies):.1f} s (submit to graded, queue included)")
    print(f"  CLI single process {rate:.2f} submissions/s (grade() on {args.cli_sample})")
    print(f"  ratio              {throughput / rate:.2f}x the single-process CLI rate")
    print(f"  stored             {stored / len(ids) / 1024:.0f} KiB per graded submission "
          "(source, report, results, SVGs)" + (
              f"; {db_bytes / len(ids) / 1024:.0f} KiB per submission in PostgreSQL tables"
              if db_bytes else ""))


if __name__ == "__main__":
    main()
