"""Authorization: every instructor route sends anonymous visitors to sign in, students get 403."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from sqlalchemy import select

from tests.instructor.conftest import csrf_of, sign_in

#: every instructor route (a test below fails when one is added without being listed here)
ROUTES = [
    ("GET", "/instructor/"),
    ("GET", "/instructor/{slug}/"),
    ("GET", "/instructor/{slug}/stats.json"),
    ("GET", "/instructor/{slug}/students"),
    ("GET", "/instructor/{slug}/students/{user_id}"),
    ("GET", "/instructor/submissions/{submission_id}"),
    ("GET", "/instructor/submissions/{submission_id}/report.json"),
    ("POST", "/instructor/submissions/{submission_id}/regrade"),
    ("POST", "/instructor/{slug}/regrade"),
    ("GET", "/instructor/{slug}/regrade/progress"),
    ("POST", "/instructor/{slug}/extensions"),
    ("POST", "/instructor/{slug}/extensions/{extension_id}/delete"),
    ("GET", "/instructor/{slug}/export.csv"),
    ("GET", "/instructor/{slug}/gradescope.json"),
]


def test_the_list_covers_every_instructor_route(class_app: dict[str, Any]) -> None:
    app: Flask = class_app["app"]
    actual = set()
    for rule in app.url_map.iter_rules():
        if rule.endpoint.startswith("instructor."):
            path = rule.rule.replace("<slug>", "{slug}")
            for conv in ("int:", ""):
                for name in ("submission_id", "user_id", "extension_id"):
                    path = path.replace(f"<{conv}{name}>", "{" + name + "}")
            for method in rule.methods - {"HEAD", "OPTIONS"}:
                actual.add((method, path))
    assert actual == set(ROUTES)


def fill(path: str, site: dict[str, Any]) -> str:
    from grader.extensions import db
    from grader.models import Extension

    app = site["app"]
    with app.app_context():
        ext = db.session.scalar(select(Extension.id))
    return path.format(slug="micrograd", user_id=site["ids"]["users"]["bob"],
                       submission_id=site["ids"]["subs"]["b1"], extension_id=ext)


def call(client: Any, method: str, path: str, token: str) -> Any:
    if method == "POST":
        return client.post(path, data={"csrf_token": token})
    return client.get(path)


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_anonymous_visitors_are_sent_to_sign_in(class_app: dict[str, Any], method: str,
                                                path: str) -> None:
    client = class_app["app"].test_client()
    token = csrf_of(client.get("/login").get_data(as_text=True))  # a real form's token
    url = fill(path, class_app)
    response = call(client, method, url, token)
    assert response.status_code == 302
    assert response.headers["Location"].startswith("/login?next=")


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_students_are_refused(class_app: dict[str, Any], method: str, path: str) -> None:
    client = sign_in(class_app["app"], "carol@class.example.org")
    token = csrf_of(client.get("/").get_data(as_text=True))
    response = call(client, method, fill(path, class_app), token)
    assert response.status_code == 403
    assert "csv" not in response.content_type and "application/json" not in \
        response.content_type


@pytest.mark.parametrize(("method", "path"), [r for r in ROUTES if r[0] == "GET"])
def test_instructors_get_every_page(class_app: dict[str, Any], method: str,
                                    path: str) -> None:
    response = class_app["client"].get(fill(path, class_app))
    assert response.status_code == 200, response.get_data(as_text=True)[:300]
