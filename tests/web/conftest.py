"""Fixtures for the site's pages (helpers live in `webtools`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.web.webtools import (
    build_app,
    create_user,
    fixture_text,
    grade_now,
    signed_in_client,
    submit_source,
)


@pytest.fixture(scope="session")
def app(tmp_path_factory: pytest.TempPathFactory) -> Flask:
    """One site for the session; tests keep apart by using their own users."""
    return build_app(tmp_path_factory.mktemp("web"))


@pytest.fixture
def make_app(tmp_path: Path) -> Callable[..., Flask]:
    """A fresh site with some settings changed."""
    return lambda **overrides: build_app(tmp_path, **overrides)


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    """A client that is not signed in."""
    return app.test_client()


@pytest.fixture
def student(app: Flask) -> Any:
    """A fresh student account."""
    return create_user(app)


@pytest.fixture
def signed_in(app: Flask, student: Any) -> tuple[FlaskClient, Any]:
    """A client signed in as a fresh student, and that student."""
    return signed_in_client(app, student), student


@pytest.fixture(scope="session")
def graded(app: Flask) -> dict[str, Any]:
    """One student's graded submissions: buggy, hostile markup, invalid, correct."""
    owner = create_user(app, name="Grace Graded")
    ids: dict[str, Any] = {"owner": owner}
    for key, name, filename in (
        ("buggy", "bugs/mul_derivative.py", "value.py"),
        ("hostile", "hostile_markup.py", "<img src=x onerror=alert(9)>.py"),
        ("invalid", "syntax_error.py", "broken.py"),
        ("good", "good/lecture.py", "lecture.py"),
    ):
        sid = submit_source(app, owner.id, fixture_text(name), filename)
        assert grade_now(app, sid) in ("graded", "invalid")
        ids[key] = sid
    return ids
