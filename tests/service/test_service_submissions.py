"""create_submission: every refusal has a code and a message, and stores nothing."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from grader.extensions import db
from grader.models import Assignment, Submission, User, utcnow
from grader.submissions import SubmissionError, create_submission
from tests.service.fixtures import SOURCES


def count(app) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(Submission))


def submit(app, made, data, filename="value.py", slug="micrograd", **kw):
    with app.app_context():
        return create_submission(db.session.get(User, made.id), slug, data, filename, **kw)


@pytest.mark.parametrize(("data", "filename", "code", "status"), [
    (b"", "value.py", "empty", 400),
    (b"  \n\t\n", "value.py", "empty", 400),
    (b"x" * (256 * 1024 + 1), "value.py", "too_large", 413),
    (b"class Value: pass\n\xff\xfe", "value.py", "not_utf8", 400),
    (b"class Value: pass\n\x00", "value.py", "not_utf8", 400),
    (b"class Value: pass\n", "value.txt", "wrong_type", 415),
    (b"class Value: pass\n", "value.py.exe", "wrong_type", 415),
])
def test_bad_uploads_are_refused(app, users, data, filename, code, status) -> None:
    made = users.create()
    with pytest.raises(SubmissionError) as info:
        submit(app, made, data, filename)
    assert (info.value.code, info.value.status) == (code, status)
    assert info.value.message and count(app) == 0


def test_missing_and_closed_assignments(app, users) -> None:
    made = users.create()
    for slug, code in ((None, "no_assignment"), ("nope", "no_assignment")):
        with pytest.raises(SubmissionError) as info:
            submit(app, made, SOURCES["correct"], slug=slug)
        assert info.value.code == code
    with app.app_context():
        a = db.session.scalar(select(Assignment))
        a.deadline = utcnow() - timedelta(minutes=1)
        db.session.commit()
    with pytest.raises(SubmissionError) as info:
        submit(app, made, SOURCES["correct"])
    assert info.value.code == "assignment_closed" and "deadline" in info.value.message
    assert count(app) == 0


def test_a_good_upload_is_committed_with_seed_then_enqueued(app, users) -> None:
    made = users.create()
    sub = submit(app, made, SOURCES["correct"].encode(), "../../etc/my value.py")
    with app.app_context():
        row = db.session.get(Submission, sub.id)
        assert row.status == "queued" and row.filename == "my value.py"
        assert row.seed > 0 and row.sha256 and row.attempts == 0 and row.enqueued_at
        assert row.source == SOURCES["correct"] and not row.late
    # the in-memory broker holds exactly one grading message for it
    with app.app_context():
        celery = app.extensions["celery"]
        with celery.connection_for_read() as conn:
            msg = conn.SimpleQueue("grading", no_ack=True).get(timeout=1)
            assert msg.headers["task"] == "micrograde.grade" and \
                msg.headers["argsrepr"] == f"[{sub.id}]"


def test_cooldown_and_max_submissions(make_app, users) -> None:
    app = make_app(SUBMISSION_COOLDOWN=30)
    made = users.__class__(app).create()
    t0 = utcnow()
    submit(app, made, SOURCES["correct"], now=t0)
    with pytest.raises(SubmissionError) as info:
        submit(app, made, SOURCES["correct"], now=t0 + timedelta(seconds=10))
    assert info.value.code == "cooldown" and info.value.retry_after == 20
    assert "wait 20 s" in info.value.message
    submit(app, made, SOURCES["correct"], now=t0 + timedelta(seconds=31))
    staff = users.__class__(app).create(role="instructor")
    submit(app, staff, SOURCES["correct"], now=t0 + timedelta(seconds=32))
    submit(app, staff, SOURCES["correct"], now=t0 + timedelta(seconds=33))  # no cooldown
    with app.app_context():
        db.session.scalar(select(Assignment)).max_submissions = 2
        db.session.commit()
    with pytest.raises(SubmissionError) as info:
        submit(app, made, SOURCES["correct"], now=t0 + timedelta(seconds=100))
    assert info.value.code == "submission_limit"
    assert count(app) == 4


def test_notebooks_are_stored_without_outputs(app, users) -> None:
    made = users.create()
    nb = {"cells": [
        {"cell_type": "markdown", "source": "# hw", "attachments": {"x.png": "A" * 50_000}},
        {"cell_type": "code", "source": SOURCES["correct"],
         "outputs": [{"data": {"image/png": "B" * 500_000}}], "execution_count": 3},
    ], "metadata": {"kernelspec": {}}, "nbformat": 4, "nbformat_minor": 5}
    raw = json.dumps(nb).encode()
    sub = submit(app, made, raw, "homework.ipynb")
    with app.app_context():
        row = db.session.get(Submission, sub.id)
        stored = json.loads(row.source)
        assert row.size == len(raw) and len(row.source) < 5_000
        assert stored["cells"][1]["source"] == SOURCES["correct"]
        assert "outputs" not in stored["cells"][1]
