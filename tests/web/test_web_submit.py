"""The assignment list and submitting by upload or paste, with every bad input refused."""

from __future__ import annotations

import io
import json
from datetime import timedelta
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import select

from tests.web.webtools import (
    count_submissions,
    create_user,
    csrf_token,
    fixture_text,
    grade_now,
    signed_in_client,
)

GOOD = fixture_text("good/lecture.py")


def post(client: Any, slug: str = "micrograd", *, source: str = "",
         file: tuple[bytes, str] | None = None, token: str | None = None) -> Any:
    """Submit through the real form (its CSRF token unless one is given)."""
    if token is None:
        token = csrf_token(client.get(f"/assignments/{slug}").get_data(as_text=True))
    data: dict[str, Any] = {"csrf_token": token, "source": source}
    if file is not None:
        data["file"] = (io.BytesIO(file[0]), file[1])
    return client.post(f"/assignments/{slug}/submit", data=data,
                       content_type="multipart/form-data")


def stored(app: Flask, user_id: int) -> Any:
    from grader.extensions import db
    from grader.models import Submission

    with app.app_context():
        sub = db.session.scalar(select(Submission).where(Submission.user_id == user_id)
                                .order_by(Submission.id.desc()).limit(1))
        db.session.expunge(sub)
        return sub


def test_assignment_list_shows_deadline_best_score_attempts(app: Flask,
                                                            signed_in: Any) -> None:
    client, user = signed_in
    page = client.get("/").get_data(as_text=True)
    assert "micrograd: build your own autograd Value" in page
    assert "not submitted" in page and "Submit" in page
    post(client, source=fixture_text("bugs/mul_derivative.py"))
    grade_now(app, stored(app, user.id).id)
    post(client, source=GOOD)
    page = client.get("/").get_data(as_text=True)
    assert "Queued" in page  # the latest, not graded yet
    row = page.split('href="/assignments/micrograd"', 1)[1]
    assert '<td class="num">2</td>' in row.replace("\n", "")  # attempts
    assert '<span class="score">' in row and "/ 10" in row


def test_submit_by_paste(app: Flask, signed_in: Any) -> None:
    client, user = signed_in
    response = post(client, source=GOOD.replace("\n", "\r\n"))
    assert response.status_code == 303
    sub = stored(app, user.id)
    assert response.headers["Location"] == f"/submissions/{sub.id}"
    assert sub.filename == "value.py" and sub.status == "queued"
    assert sub.source == GOOD  # the browser's CRLF line ends are undone
    page = client.get(response.headers["Location"]).get_data(as_text=True)
    assert "Queued" in page and "next in line" in page or "in the queue" in page


def test_submit_by_file_upload(app: Flask, signed_in: Any) -> None:
    client, user = signed_in
    response = post(client, file=(GOOD.encode(), "my_value.py"))
    assert response.status_code == 303
    sub = stored(app, user.id)
    assert sub.filename == "my_value.py" and sub.source == GOOD and sub.size == len(GOOD)


def test_submit_a_notebook(app: Flask, signed_in: Any) -> None:
    client, user = signed_in
    nb = {"cells": [{"cell_type": "code", "source": GOOD, "outputs": [{"text": "x" * 1000}],
                     "metadata": {}, "execution_count": 1}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    response = post(client, file=(json.dumps(nb).encode(), "homework.ipynb"))
    assert response.status_code == 303
    sub = stored(app, user.id)
    assert sub.filename == "homework.ipynb" and "x" * 1000 not in sub.source
    assert grade_now(app, sub.id) == "graded"


@pytest.mark.parametrize(("kwargs", "status", "message"), [
    ({}, 400, "Choose a .py or .ipynb file to upload, or paste your code."),
    ({"source": "   \n\t\n"}, 400, "The pasted code is empty."),
    ({"file": (b"", "value.py")}, 400, "the file is empty"),
    ({"file": (b"x = 1\n" * 50_000, "value.py")}, 413, "the limit is 256 KiB"),
    ({"file": (b"class Value:\n    pass  # caf\xe9\n", "value.py")}, 400, "not UTF-8"),
    ({"file": (b"class Value: pass\n", "value.txt")}, 415, "is not a Python file"),
    ({"file": (b"class Value: pass\n", "value.py"), "source": "class Value: pass"}, 400,
     "Upload a file or paste your code, not both."),
])
def test_bad_input_is_refused_with_a_message_and_nothing_stored(
        app: Flask, signed_in: Any, kwargs: dict, status: int, message: str) -> None:
    client, user = signed_in
    response = post(client, **kwargs)
    body = response.get_data(as_text=True)
    assert response.status_code == status, body
    assert message.replace("'", "&#39;") in body
    assert 'id="submit-error"' in body
    assert count_submissions(app, user.id) == 0


def test_a_pasted_file_keeps_its_text_after_an_error(signed_in: Any) -> None:
    client, _ = signed_in
    response = post(client, source="print('<b>hi</b>')\n",
                    file=(b"class Value: pass\n", "v.py"))
    assert "print(&#39;&lt;b&gt;hi&lt;/b&gt;&#39;)" in response.get_data(as_text=True)


def test_upload_over_the_request_limit_gets_a_page(app: Flask, signed_in: Any) -> None:
    client, user = signed_in
    token = csrf_token(client.get("/assignments/micrograd").get_data(as_text=True))
    big = b"#" * (app.config["MAX_CONTENT_LENGTH"] + 1)
    response = post(client, file=(big, "huge.ipynb"), token=token)
    assert response.status_code == 413
    assert "That upload is too large" in response.get_data(as_text=True)
    assert count_submissions(app, user.id) == 0


def test_submit_without_csrf_token_is_refused(app: Flask, signed_in: Any) -> None:
    client, user = signed_in
    for token in ("", "forged"):
        response = post(client, source=GOOD, token=token)
        assert response.status_code == 400
        assert "security token" in response.get_data(as_text=True)
    assert count_submissions(app, user.id) == 0


def test_missing_assignment_is_404(signed_in: Any) -> None:
    client, _ = signed_in
    assert client.get("/assignments/nope").status_code == 404
    token = csrf_token(client.get("/assignments/micrograd").get_data(as_text=True))
    assert post(client, "nope", source=GOOD, token=token).status_code == 404


def test_closed_assignment(make_app: Any) -> None:
    from grader.extensions import db
    from grader.models import Assignment, utcnow

    app = make_app()
    with app.app_context():
        a = db.session.scalar(select(Assignment).where(Assignment.slug == "micrograd"))
        a.deadline = utcnow() - timedelta(days=1)
        db.session.commit()
    user = create_user(app)
    client = signed_in_client(app, user)
    assert "closed" in client.get("/").get_data(as_text=True)
    page = client.get("/assignments/micrograd").get_data(as_text=True)
    assert "This assignment is closed" in page and "<fieldset disabled>" in page
    response = post(client, source=GOOD, token=csrf_token(page))
    assert response.status_code == 403
    assert "micrograd is closed: the deadline has passed" in response.get_data(as_text=True)
    assert count_submissions(app, user.id) == 0


def test_cooldown_says_how_long_to_wait(make_app: Any) -> None:
    app = make_app(SUBMISSION_COOLDOWN=600)
    user = create_user(app)
    client = signed_in_client(app, user)
    assert "One submission every 600 s." in client.get("/assignments/micrograd") \
        .get_data(as_text=True)
    assert post(client, source=GOOD).status_code == 303
    response = post(client, source=GOOD)
    body = response.get_data(as_text=True)
    assert response.status_code == 429
    assert "please wait" in body and " s before submitting again" in body
    assert 590 <= int(response.headers["Retry-After"]) <= 600
    assert count_submissions(app, user.id) == 1


def test_submission_limit(make_app: Any) -> None:
    from grader.extensions import db
    from grader.models import Assignment

    app = make_app()
    with app.app_context():
        db.session.scalar(select(Assignment)).max_submissions = 1
        db.session.commit()
    user = create_user(app)
    client = signed_in_client(app, user)
    assert post(client, source=GOOD).status_code == 303
    page = client.get("/assignments/micrograd").get_data(as_text=True)
    assert "1 of 1 submissions used." in page
    response = post(client, source=GOOD, token=csrf_token(page))
    assert response.status_code == 403
    assert "you have used all 1 submissions" in response.get_data(as_text=True)


def test_broker_down_says_so_and_stores_nothing(make_app: Any) -> None:
    # a closed port on loopback: the broker is down, the site stays up
    app = make_app(BROKER_URL="redis://127.0.0.1:1/0")
    user = create_user(app)
    client = signed_in_client(app, user)
    response = post(client, source=GOOD)
    assert response.status_code == 503
    body = response.get_data(as_text=True)
    assert "the grading queue is unavailable right now; nothing was stored" in body
    assert count_submissions(app, user.id) == 0
    assert client.get("/").status_code == 200
