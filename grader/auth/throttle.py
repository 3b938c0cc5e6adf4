"""Failed-attempt throttling for sign-in (and join-code guesses), shared by every web process.

A key (say, email + client address) may fail `limit` times within `window` seconds; after
that it is refused until its oldest failure leaves the window. The failures live in Redis
when the broker is Redis (so every web container sees them), else in a small SQLite file in
the instance folder (every process on the machine sees it). Keys are stored hashed. When
the store cannot be reached the throttle lets the request through and logs it: a broken
Redis must not lock every student out.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from flask import Flask, current_app

log = logging.getLogger(__name__)

DEFAULT_LIMIT = 5
DEFAULT_WINDOW = 300.0


class Store(Protocol):
    """Where failure times are kept."""

    def failures(self, key: str, since: float) -> list[float]: ...
    def add(self, key: str, at: float, window: float) -> None: ...
    def clear(self, key: str) -> None: ...


class SqliteStore:
    """Failures in a SQLite file (one machine, any number of processes)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._db() as con:
            con.execute("CREATE TABLE IF NOT EXISTS failure (key TEXT NOT NULL, at REAL NOT "
                        "NULL)")
            con.execute("CREATE INDEX IF NOT EXISTS failure_key ON failure (key, at)")

    def _db(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=10, isolation_level=None)

    def failures(self, key: str, since: float) -> list[float]:
        with self._db() as con:
            rows = con.execute("SELECT at FROM failure WHERE key = ? AND at >= ? ORDER BY at",
                               (key, since)).fetchall()
        return [r[0] for r in rows]

    def add(self, key: str, at: float, window: float) -> None:
        with self._db() as con:
            con.execute("DELETE FROM failure WHERE at < ?", (at - window,))
            con.execute("INSERT INTO failure (key, at) VALUES (?, ?)", (key, at))

    def clear(self, key: str) -> None:
        with self._db() as con:
            con.execute("DELETE FROM failure WHERE key = ?", (key,))


class RedisStore:
    """Failures in a Redis sorted set per key, expiring with the window."""

    def __init__(self, url: str) -> None:
        import redis

        self.client = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)

    @staticmethod
    def _name(key: str) -> str:
        return f"micrograde:throttle:{key}"

    def failures(self, key: str, since: float) -> list[float]:
        return [float(s) for _, s in self.client.zrangebyscore(
            self._name(key), since, "+inf", withscores=True)]

    def add(self, key: str, at: float, window: float) -> None:
        name = self._name(key)
        pipe = self.client.pipeline()
        pipe.zremrangebyscore(name, "-inf", at - window)
        pipe.zadd(name, {f"{at:.6f}:{time.monotonic_ns()}": at})
        pipe.expire(name, int(window) + 1)
        pipe.execute()

    def clear(self, key: str) -> None:
        self.client.delete(self._name(key))


@dataclass
class Throttle:
    """At most `limit` failures per key within `window` seconds."""

    store: Store
    limit: int = DEFAULT_LIMIT
    window: float = DEFAULT_WINDOW

    @staticmethod
    def key(*parts: str) -> str:
        """A stored key for these parts (hashed: no addresses in the store)."""
        return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:40]

    def retry_after(self, key: str, now: float | None = None) -> int:
        """Seconds until `key` may try again; 0 when it may try now."""
        now = time.time() if now is None else now
        try:
            recent = self.store.failures(key, now - self.window)
        except Exception as exc:
            log.warning("login throttle store unavailable (%s): not throttling", exc)
            return 0
        if len(recent) < self.limit:
            return 0
        oldest_that_counts = recent[-self.limit]
        return max(1, int(oldest_that_counts + self.window - now + 0.999))

    def fail(self, key: str, now: float | None = None) -> None:
        """Record one failure for `key`."""
        try:
            self.store.add(key, time.time() if now is None else now, self.window)
        except Exception as exc:
            log.warning("login throttle store unavailable (%s): failure not recorded", exc)

    def clear(self, key: str) -> None:
        """Forget `key`'s failures (after a successful sign-in)."""
        try:
            self.store.clear(key)
        except Exception as exc:
            log.warning("login throttle store unavailable (%s)", exc)


def make_store(config: Any) -> Store:
    """Redis when `LOGIN_THROTTLE_URL` or the broker is Redis, else SQLite in the instance."""
    url = str(config.get("LOGIN_THROTTLE_URL") or "")
    broker = str(config.get("BROKER_URL") or "")
    if not url and broker.startswith(("redis://", "rediss://")):
        url = broker
    if url.startswith(("redis://", "rediss://")):
        return RedisStore(url)
    return SqliteStore(Path(config["INSTANCE_PATH"]) / "throttle.sqlite")


def init_app(app: Flask) -> None:
    """Create the app's sign-in throttle (`app.extensions['login_throttle']`)."""
    conf = app.config
    app.extensions["login_throttle"] = Throttle(
        make_store(conf), limit=int(conf.get("LOGIN_MAX_FAILURES") or DEFAULT_LIMIT),
        window=float(conf.get("LOGIN_WINDOW_S") or DEFAULT_WINDOW))


def throttle() -> Throttle:
    """The current app's sign-in throttle."""
    return current_app.extensions["login_throttle"]


def describe(seconds: int) -> str:
    """'45 s' or '4 min' for a wait."""
    return f"{seconds} s" if seconds < 90 else f"{(seconds + 59) // 60} min"
