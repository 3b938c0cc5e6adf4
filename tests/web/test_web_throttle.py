"""The sign-in throttle on both stores: SQLite in the instance folder and a real Redis."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from grader.auth.throttle import RedisStore, SqliteStore, Throttle, describe, make_store

REDIS_URL = "redis://127.0.0.1:6379/15"


def redis_store() -> RedisStore:
    store = RedisStore(REDIS_URL)
    try:
        store.client.ping()
    except Exception as exc:  # scripts/services.sh starts it for the suite
        pytest.fail(f"Redis is not running on 127.0.0.1:6379 ({exc}); run scripts/services.sh")
    return store


@pytest.fixture(params=["sqlite", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> object:
    return SqliteStore(tmp_path / "throttle.sqlite") if request.param == "sqlite" \
        else redis_store()


def test_five_failures_lock_until_the_oldest_leaves_the_window(store: object) -> None:
    t = Throttle(store, limit=5, window=300)
    key = Throttle.key("login", f"{uuid.uuid4()}@x", "10.0.0.1")
    start = 1_000_000.0
    for i in range(4):
        t.fail(key, now=start + i)
        assert t.retry_after(key, now=start + i + 0.5) == 0
    t.fail(key, now=start + 10)
    assert t.retry_after(key, now=start + 20) == 280   # the first failure ends at +300
    assert t.retry_after(key, now=start + 299.5) == 1
    assert t.retry_after(key, now=start + 300.5) == 0  # one has left: 4 in the window
    other = Throttle.key("login", "someone@else", "10.0.0.1")
    assert t.retry_after(other, now=start + 20) == 0
    t.clear(key)
    assert t.retry_after(key, now=start + 20) == 0


def test_sqlite_store_is_shared_between_processes_through_the_file(tmp_path: Path) -> None:
    first = Throttle(SqliteStore(tmp_path / "t.sqlite"), limit=2, window=60)
    second = Throttle(SqliteStore(tmp_path / "t.sqlite"), limit=2, window=60)
    first.fail("k", now=100.0)
    second.fail("k", now=101.0)
    assert first.retry_after("k", now=102.0) == 58


def test_keys_are_hashed() -> None:
    key = Throttle.key("login", "ada@uni.edu", "10.0.0.1")
    assert "ada" not in key and "10.0.0.1" not in key and len(key) == 40


def test_store_choice(tmp_path: Path) -> None:
    assert isinstance(make_store({"BROKER_URL": "sqla+sqlite:///x", "INSTANCE_PATH": tmp_path}),
                      SqliteStore)
    assert isinstance(make_store({"BROKER_URL": REDIS_URL, "INSTANCE_PATH": tmp_path}),
                      RedisStore)
    assert isinstance(make_store({"BROKER_URL": "sqla+sqlite:///x", "INSTANCE_PATH": tmp_path,
                                  "LOGIN_THROTTLE_URL": REDIS_URL}), RedisStore)


def test_an_unreachable_store_lets_people_in() -> None:
    t = Throttle(RedisStore("redis://127.0.0.1:1/0"), limit=1, window=60)
    t.fail("k")
    assert t.retry_after("k") == 0


def test_describe() -> None:
    assert describe(45) == "45 s"
    assert describe(280) == "5 min"
