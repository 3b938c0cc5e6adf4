"""Helpers for the site's page tests: a real app on SQLite with the embedded (SQLite) broker.

Grading here runs the real pipeline in-process through the worker's own task body
(`worker.tasks.run`), so pages show real reports and real diff SVGs; the whole
web -> broker -> worker path runs in tests/browser/test_student_flow.py.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from werkzeug.security import generate_password_hash

JOIN_CODE = "hello-micrograd"
PASSWORD = "correct horse battery"
HERE = Path(__file__).parent
FILES = HERE / "files"
SUBMISSIONS = HERE.parent / "fixtures" / "submissions"
#: line 5 lacks its colon (kept inline: the linter checks files under tests/web)
SYNTAX_ERROR = ("class Value:\n    def __init__(self, data):\n        self.data = data\n"
                "        self.grad = 0.0\n    def __add__(self, other)\n"
                "        return Value(self.data + other.data)\n")
_counter = itertools.count(1)


def build_app(instance: Path, **overrides: Any) -> Flask:
    """A migrated app with the default manifest loaded, its state in `instance`."""
    from flask_migrate import upgrade

    from exercises import manifest
    from grader import create_app
    from grader.submissions import sync_manifest

    config = {
        "INSTANCE_PATH": str(instance),
        "DATABASE_URL": f"sqlite:///{instance / 'site.sqlite'}",
        "BROKER_URL": f"sqla+sqlite:///{instance / 'broker.sqlite'}",
        "SECRET_KEY": "test-secret",
        "JOIN_CODE": JOIN_CODE,
        "SUBMISSION_COOLDOWN": 0,
        "INSTANCES_K": 1,
        **overrides,
    }
    app = create_app(config)
    with app.app_context():
        upgrade()
        sync_manifest(manifest.load(app.config["MANIFEST"]))
    return app


def csrf_token(html: str) -> str:
    """The CSRF token of the first form in a page."""
    match = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', html)
    assert match, "page has no CSRF token"
    return match.group(1)


def unique_email(prefix: str = "student") -> str:
    """An email no other test uses."""
    return f"{prefix}{next(_counter)}@students.example.edu"


def create_user(app: Flask, email: str | None = None, role: str = "student",
                password: str = PASSWORD, name: str = "Ada Student") -> Any:
    """A user in the database (returned detached, with its id)."""
    from grader.extensions import db
    from grader.models import User

    with app.app_context():
        user = User(email=email or unique_email(), name=name, role=role)
        # a cheap hash keeps the tests fast; sign-in reads any werkzeug hash
        user.password_hash = generate_password_hash(password, "pbkdf2:sha256:1000")
        db.session.add(user)
        db.session.commit()
        db.session.refresh(user)
        db.session.expunge(user)
        return user


def login(client: FlaskClient, email: str, password: str = PASSWORD) -> Any:
    """Sign in through the real form (with its CSRF token)."""
    page = client.get("/login")
    return client.post("/login", data={"email": email, "password": password,
                                       "csrf_token": csrf_token(page.get_data(as_text=True))})


def signed_in_client(app: Flask, user: Any) -> FlaskClient:
    """A client signed in as `user`."""
    client = app.test_client()
    response = login(client, user.email)
    assert response.status_code == 302, response.get_data(as_text=True)
    return client


def grade_now(app: Flask, submission_id: int) -> str:
    """Grade a queued submission now with the worker's task body (real sandbox, real dot)."""
    from worker.tasks import run

    with app.app_context():
        return run(submission_id, "tests@web")


def submit_source(app: Flask, user_id: int, source: str | bytes, filename: str = "value.py",
                  assignment: str = "micrograd") -> int:
    """Create a submission through the shared path (`create_submission`); return its id."""
    from grader.extensions import db
    from grader.models import User
    from grader.submissions import create_submission

    with app.test_request_context():
        user = db.session.get(User, user_id)
        return create_submission(user, assignment, source, filename).id


def fixture_text(name: str) -> str:
    """Submission source: tests/web/files/<name>, else tests/fixtures/submissions/<name>."""
    if name == "syntax_error.py":
        return SYNTAX_ERROR
    local = FILES / name
    return (local if local.exists() else SUBMISSIONS / name).read_text(encoding="utf-8")


def count_submissions(app: Flask, user_id: int) -> int:
    """How many submissions this user has stored."""
    from sqlalchemy import func, select

    from grader.extensions import db
    from grader.models import Submission

    with app.app_context():
        return int(db.session.scalar(select(func.count()).select_from(Submission)
                                     .where(Submission.user_id == user_id)) or 0)
