"""Queue health: database, broker, live workers, queue depth, running, latency, stuck.

Shared by `GET /api/v1/health` and the instructor dashboard. Worker liveness comes from
heartbeat rows the workers write, so it works with Redis and the embedded broker alike.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta
from typing import Any

from flask import current_app
from sqlalchemy import delete, func, or_, select, text

from grader.extensions import db
from grader.models import Submission, WorkerHeartbeat, utcnow

log = logging.getLogger(__name__)


def beat(hostname: str, pid: int, queues: str, concurrency: int) -> None:
    """Record that a worker is alive now."""
    row = db.session.get(WorkerHeartbeat, hostname)
    now = utcnow()
    if row is None or row.pid != pid:
        row = row or WorkerHeartbeat(hostname=hostname)
        row.started_at = now
    row.pid, row.queues, row.concurrency, row.last_seen = pid, queues, concurrency, now
    db.session.add(row)
    db.session.commit()


def forget_worker(hostname: str) -> None:
    """Remove a worker that shut down cleanly."""
    db.session.execute(delete(WorkerHeartbeat).where(WorkerHeartbeat.hostname == hostname))
    db.session.commit()


def live_workers(now: datetime | None = None) -> list[WorkerHeartbeat]:
    """Workers seen within three heartbeat intervals."""
    now = now or utcnow()
    window = 3 * float(current_app.config.get("WORKER_HEARTBEAT", 10.0)) + 5
    return list(db.session.scalars(select(WorkerHeartbeat).where(
        WorkerHeartbeat.last_seen >= now - timedelta(seconds=window))
        .order_by(WorkerHeartbeat.hostname)))


def stuck_filter(now: datetime) -> Any:
    """SQL condition for submissions stuck in queued or running past their deadline."""
    conf = current_app.config
    queued_before = now - timedelta(seconds=float(conf["STUCK_QUEUED_AFTER"]))
    running_before = now - timedelta(seconds=float(conf["STUCK_RUNNING_AFTER"]))
    return or_(
        (Submission.status == "queued") & (Submission.enqueued_at < queued_before),
        (Submission.status == "running") & (Submission.started_at < running_before),
    )


def percentile(values: list[float], q: float) -> float | None:
    """The q-th percentile (0..100, nearest rank) of values, or None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def latencies(since: datetime) -> list[float]:
    """Submit-to-done seconds of fresh (not regraded) submissions finished since `since`."""
    rows = db.session.execute(select(Submission.created_at, Submission.graded_at).where(
        Submission.graded_at >= since, Submission.graded_at.is_not(None)))
    return [(done - made).total_seconds() for made, done in rows if made and done]


def broker_status() -> dict[str, Any]:
    """Can we reach the broker? With how long it took."""
    celery = current_app.extensions["celery"]
    start = time.monotonic()
    try:
        with celery.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
        return {"ok": True, "url": _safe_url(celery.conf.broker_url),
                "ms": round((time.monotonic() - start) * 1000, 1)}
    except Exception as exc:
        return {"ok": False, "url": _safe_url(celery.conf.broker_url),
                "error": str(exc)[:200]}


def _safe_url(url: str) -> str:
    """A broker URL without its password."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        return f"{scheme}://***@{rest.rsplit('@', 1)[1]}"
    return url


def database_ok() -> dict[str, Any]:
    """Can we query the database?"""
    try:
        db.session.execute(text("SELECT 1"))
        return {"ok": True, "dialect": db.engine.dialect.name}
    except Exception as exc:
        db.session.rollback()
        return {"ok": False, "error": str(exc)[:200]}


def queue_health(now: datetime | None = None) -> dict[str, Any]:
    """Queue depth, running jobs, live workers, latency p50/p95 over the last hour, stuck."""
    now = now or utcnow()
    counts = dict(db.session.execute(
        select(Submission.status, func.count()).where(
            Submission.status.in_(("queued", "running"))).group_by(Submission.status)).all())
    regrades = db.session.scalar(select(func.count()).select_from(Submission).where(
        Submission.status == "queued", Submission.regrade.is_(True))) or 0
    lat = latencies(now - timedelta(hours=1))
    workers = live_workers(now)
    return {
        "queue_depth": int(counts.get("queued", 0)) - int(regrades),
        "regrade_depth": int(regrades),
        "running": int(counts.get("running", 0)),
        "stuck": int(db.session.scalar(select(func.count()).select_from(Submission)
                                       .where(stuck_filter(now))) or 0),
        "workers": [{"hostname": w.hostname, "queues": w.queues,
                     "concurrency": w.concurrency, "last_seen": w.last_seen.isoformat()}
                    for w in workers],
        "worker_count": len(workers),
        "graded_last_hour": len(lat),
        "latency_p50_s": _round(percentile(lat, 50)),
        "latency_p95_s": _round(percentile(lat, 95)),
    }


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def health() -> dict[str, Any]:
    """Everything `GET /api/v1/health` reports; `status` is ok, degraded or down."""
    database = database_ok()
    broker = broker_status()
    out: dict[str, Any] = {"database": database, "broker": broker}
    if database["ok"]:
        out.update(queue_health())
    if not database["ok"]:
        out["status"] = "down"
    elif not broker["ok"] or not out.get("worker_count"):
        out["status"] = "degraded"
    else:
        out["status"] = "ok"
    return out
