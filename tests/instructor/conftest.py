"""Fixtures for the instructor area: the service fixtures plus the hand-computed class."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.instructor import klass
from tests.service.fixtures import *  # noqa: F403
from tests.service.fixtures import PASSWORD, Users, build_app


def csrf_of(html: str) -> str:
    """The CSRF token of the first form in a page."""
    match = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', html)
    assert match, "the page has no CSRF token"
    return match.group(1)


def sign_in(app: Flask, email: str, password: str = PASSWORD) -> FlaskClient:
    """A client signed in through the real login form."""
    client = app.test_client()
    token = csrf_of(client.get("/login").get_data(as_text=True))
    response = client.post("/login", data={"email": email, "password": password,
                                           "csrf_token": token})
    assert response.status_code == 302, response.get_data(as_text=True)[:500]
    return client


@pytest.fixture(scope="module")
def class_app(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A site holding the fixture class and an instructor (read-only tests share it)."""
    return _class_site(tmp_path_factory.mktemp("class"))


@pytest.fixture
def fresh_class_app(tmp_path: Path) -> dict[str, Any]:
    """The same, fresh for a test that changes things."""
    return _class_site(tmp_path / "class")


def _class_site(instance: Path) -> dict[str, Any]:
    app = build_app(instance)
    ids = klass.insert(app)
    users = Users(app)
    teacher = users.create("instructor", email="teacher@class.example.org")
    return {"app": app, "ids": ids, "instructor": teacher,
            "client": sign_in(app, teacher.email),
            "student_client": sign_in(app, "alice@class.example.org")}


@pytest.fixture
def as_instructor(class_app: dict[str, Any]) -> Callable[[str], Any]:
    """GET a path as the class's instructor."""
    return lambda path: class_app["client"].get(path)
