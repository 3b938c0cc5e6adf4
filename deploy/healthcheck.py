"""Container health checks for the micrograde roles: `python deploy/healthcheck.py ROLE`.

web     the site answers /api/v1/health and reaches its database
worker  bubblewrap can build a jail here (the container has the privileges it needs) and
        this container's Celery worker answers a ping through the broker
beat    the Celery beat clock that schedules the sweeper still ticks

Exit status 0 when healthy, 1 otherwise, with the reason on stderr (`docker inspect`
shows it under State.Health).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import socket
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

log = logging.getLogger(__name__)

#: what every graded exercise needs: the jail, the interpreter and numpy from `_site`
PROBE = "import sys\nsys.path.insert(0, '_site')\nimport numpy\nsys.stdout.write('jail ok')\n"


def web_port(bind: str) -> int:
    """The TCP port of a gunicorn bind address such as `0.0.0.0:8000` or `[::]:8000`."""
    return int(bind.rsplit(":", 1)[1])


def check_web() -> str | None:
    """None when the site serves its health page and its database answers."""
    port = web_port(os.environ.get("MICROGRADE_BIND", "0.0.0.0:8000"))
    url = f"http://127.0.0.1:{port}/api/v1/health"
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            body = resp.read()
    except urllib.error.HTTPError as exc:  # a degraded service answers 503 with details
        body = exc.read()
    except OSError as exc:
        return f"{url}: {exc}"
    try:
        database = json.loads(body)["database"]
    except (ValueError, KeyError, TypeError):
        return f"{url}: not a health report: {body[:200]!r}"
    return None if database.get("ok") else f"database: {database.get('error')}"


def check_jail() -> str | None:
    """None when bubblewrap can make a jail here and a jailed probe, under the configured
    limits, imports numpy as every graded exercise may."""
    from worker import sandbox
    from worker.limits import Limits

    if sandbox.bwrap_path() is None:  # it logs bwrap's own words on stderr
        return ("bubblewrap cannot make a jail here; the worker container needs the "
                "security_opt entries of docker-compose.yml (docs/deploying.md, "
                "'The worker and the host')")
    result = sandbox.run({"probe.py": PROBE}, "probe.py", [], Limits.from_env(), weak=False)
    if result.status == "ok" and result.stdout == "jail ok" and result.isolation == "bwrap":
        return None
    why = (result.stderr or result.detail).strip()[-300:]
    return (f"a jailed probe run failed ({result.status}: {why}); "
            "check the MICROGRADE_LIMIT_* settings")


def check_worker_ping() -> str | None:
    """None when this container's Celery worker (`celery@<hostname>`) answers a ping."""
    from worker.entry import celery_app

    node = f"celery@{socket.gethostname()}"
    replies = celery_app.control.ping(destination=[node], timeout=5.0)
    if any(node in reply for reply in replies):
        return None
    return f"{node} did not answer a ping through the broker"


def check_beat(schedule: Path, max_age_s: float) -> str | None:
    """None when beat has synced its schedule file within `max_age_s` seconds.

    Beat rewrites the file at most every 3 minutes and wakes at least every 5, so a file
    older than 10 minutes means a beat that no longer ticks.
    """
    files = list(schedule.parent.glob(schedule.name + "*"))  # dbm adds suffixes
    if not files:
        return f"no beat schedule at {schedule}"
    age = time.time() - max(f.stat().st_mtime for f in files)
    return None if age <= max_age_s else f"beat schedule not written for {age:.0f} s"


def main(argv: list[str] | None = None) -> int:
    """Run the check for one role; 0 when healthy."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("role", choices=("web", "worker", "beat"))
    parser.add_argument("--schedule", type=Path, default=Path("celerybeat-schedule"),
                        help="beat's --schedule file (beat only)")
    parser.add_argument("--max-age", type=float, default=600.0,
                        help="seconds since beat last wrote its schedule (beat only)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    if args.role == "web":
        problem = check_web()
    elif args.role == "worker":
        problem = check_jail() or check_worker_ping()
    else:
        problem = check_beat(args.schedule, args.max_age)
    if problem:
        print(f"unhealthy: {problem}", file=sys.stderr)
        return 1
    print("healthy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
