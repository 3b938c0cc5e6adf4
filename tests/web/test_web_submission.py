"""The submission page, its status JSON, results fragment, diff SVGs and source; who sees what.

Every string a student controls (op names, stdout, stderr, exception text, the file name)
must come out escaped in the HTML and as plain text inside the SVG.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from datetime import timedelta
from html.parser import HTMLParser
from typing import Any

from flask import Flask
from sqlalchemy import select

from tests.web.webtools import (
    create_user,
    fixture_text,
    grade_now,
    signed_in_client,
    submit_source,
)

MARKUP = ['<script>alert(1)</script>', '"><svg onload=alert(2)>', '<b>tanh</b>',
          '<script>alert("stdout")</script>', '<img src=x onerror=alert("stderr")>',
          '<script>alert("exception")</script>', '<img src=x onerror=alert(9)>']


class Tags(HTMLParser):
    """Every element of a page: script sources and event-handler attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []
        self.scripts: list[str | None] = []
        self.handlers: list[tuple[str, str]] = []
        self.images: list[str | None] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.names.append(tag)
        found = dict(attrs)
        if tag == "script":
            self.scripts.append(found.get("src"))
        if tag == "img":
            self.images.append(found.get("src"))
        self.handlers += [(tag, a) for a, _ in attrs if a.lower().startswith("on")]


def owner_client(app: Flask, graded: dict) -> Any:
    return signed_in_client(app, graded["owner"])


def test_status_json_while_queued_then_graded(app: Flask, signed_in: Any) -> None:
    client, user = signed_in
    sid = submit_source(app, user.id, fixture_text("good/lecture.py"))
    state = client.get(f"/submissions/{sid}/status")
    assert state.headers["Cache-Control"] == "no-store"
    data = state.get_json()
    assert data["status"] == "queued" and data["label"] == "Queued" and not data["done"]
    assert data["queue_position"] >= 1 and ("line" in data["detail"] or "queue" in data["detail"])
    page = client.get(f"/submissions/{sid}").get_data(as_text=True)
    assert 'data-done="false"' in page and "is-live" in page
    assert client.get(f"/submissions/{sid}/results").status_code == 200
    grade_now(app, sid)
    data = client.get(f"/submissions/{sid}/status").get_json()
    assert data == {**data, "status": "graded", "label": "Graded", "done": True,
                    "score": 10.0, "max_score": 10.0, "queue_position": None}
    assert data["detail"] == "score 10 / 10"


def test_graded_buggy_submission_shows_all_feedback(app: Flask, graded: dict) -> None:
    client = owner_client(app, graded)
    page = client.get(f"/submissions/{graded['buggy']}").get_data(as_text=True)
    assert 'data-done="true"' in page
    for text in ("Wrong gradient", "Diagnosis", 'class="hints"',
                 "Every node: expected against yours", "Each operation on its own",
                 "Parameters after the SGD step",
                 "expected</th>", "yours</th>", "Operations:"):
        assert text in page, text
    assert page.count('class="row-wrong"') >= 3 and "cell-wrong" in page
    assert re.search(r'<span class="big-score" data-score>[\d.]+</span>', page)
    img = re.search(rf'<img src="(/submissions/{graded["buggy"]}/diff/expression\.svg)"', page)
    assert img, "the diff is shown inline"
    svg = client.get(img.group(1))
    assert svg.status_code == 200 and svg.mimetype == "image/svg+xml"
    policy = svg.headers["Content-Security-Policy"]
    assert "default-src 'none'" in policy and "sandbox" in policy and "script" not in policy
    assert svg.headers["X-Content-Type-Options"] == "nosniff"
    assert "#ffcdd2" in svg.get_data(as_text=True)  # a red (wrong) node
    fragment = client.get(f"/submissions/{graded['buggy']}/results").get_data(as_text=True)
    assert 'id="summary"' in fragment and "<html" not in fragment
    assert "Diagnosis" in fragment


def test_passed_exercises_fold_their_details(app: Flask, graded: dict) -> None:
    page = owner_client(app, graded).get(f"/submissions/{graded['good']}") \
        .get_data(as_text=True)
    assert "Wrong gradient" not in page and page.count("Passed") >= 4
    assert "<summary>Graph and values</summary>" in page


def test_invalid_submission_explains_and_points_at_the_line(app: Flask, graded: dict) -> None:
    page = owner_client(app, graded).get(f"/submissions/{graded['invalid']}") \
        .get_data(as_text=True)
    assert "Not gradable" in page and "Syntax error" in page and "(line 5)" in page
    assert "Line 5 of your file" in page
    lines = re.findall(r'<span class="line( is-error)?">', page)
    assert lines[4] == " is-error" and lines.count(" is-error") == 1


def test_failed_submission_says_so(app: Flask, signed_in: Any) -> None:
    from grader.extensions import db
    from grader.models import Submission
    from worker.store import fail

    client, user = signed_in
    sid = submit_source(app, user.id, fixture_text("good/lecture.py"))
    with app.app_context():
        fail(db.session.get(Submission, sid), "too_many_attempts",
             "grading was interrupted 3 times; an instructor can regrade it")
    page = client.get(f"/submissions/{sid}").get_data(as_text=True)
    assert "Grading failed" in page and "interrupted 3 times" in page


def test_student_markup_is_escaped_in_html(app: Flask, graded: dict) -> None:
    client = owner_client(app, graded)
    sid = graded["hostile"]
    pages = [client.get(url).get_data(as_text=True) for url in (
        f"/submissions/{sid}", f"/submissions/{sid}/results", "/history",
        "/assignments/micrograd")]
    page = pages[0]
    for raw in MARKUP:
        for html in pages:
            assert raw not in html, raw
    for escaped in ("&lt;script&gt;alert(1)&lt;/script&gt;",          # op name
                    "&lt;script&gt;alert(&#34;stdout&#34;)&lt;/script&gt;",  # stdout
                    "&lt;img src=x onerror=alert(&#34;stderr&#34;)&gt;",     # stderr
                    "&lt;script&gt;alert(&#34;exception&#34;)&lt;/script&gt;",  # exception
                    "&lt;img src=x onerror=alert(9)&gt;.py"):                  # file name
        assert escaped in page, escaped
    assert "&lt;img src=x onerror=alert(9)&gt;.py" in pages[2]
    # parsed as a browser would: the only scripts are the site's own files, no handlers
    for html in pages:
        tags = Tags()
        tags.feed(html)
        assert tags.handlers == []
        assert all(src and src.startswith("/static/js/") for src in tags.scripts)
        assert "svg" not in tags.names and "iframe" not in tags.names
        assert all(src and (src.startswith("/static/") or re.fullmatch(
            rf"/submissions/{sid}/diff/\w+\.svg", src)) for src in tags.images)


def test_student_markup_is_text_inside_the_svg(app: Flask, graded: dict) -> None:
    client = owner_client(app, graded)
    for name in ("expression", "diamond", "neuron"):
        svg = client.get(f"/submissions/{graded['hostile']}/diff/{name}.svg") \
            .get_data(as_text=True)
        assert "<script" not in svg and "<svg onload" not in svg
        root = ET.fromstring(svg)
        texts = " ".join(t for el in root.iter() for t in (el.text or "",))
        assert "<script>alert(1)</script>" in texts  # shown, as text
        for el in root.iter():
            tag = el.tag.rsplit("}", 1)[-1]
            assert tag not in ("script", "foreignObject", "iframe"), tag
            assert not any(a.rsplit("}", 1)[-1].lower().startswith("on") for a in el.attrib)


def test_source_download_is_plain_text(app: Flask, graded: dict) -> None:
    response = owner_client(app, graded).get(f"/submissions/{graded['hostile']}/source")
    assert response.mimetype == "text/plain"
    assert response.headers["Content-Disposition"] == \
        'attachment; filename="_img_src_x_onerror_alert_9_.py"'
    assert "sandbox" in response.headers["Content-Security-Policy"]
    assert response.get_data(as_text=True) == fixture_text("hostile_markup.py")


def test_another_students_submission_is_404_everywhere(app: Flask, graded: dict,
                                                        signed_in: Any) -> None:
    other, _ = signed_in
    sid = graded["buggy"]
    for url in (f"/submissions/{sid}", f"/submissions/{sid}/status",
                f"/submissions/{sid}/results", f"/submissions/{sid}/diff/expression.svg",
                f"/submissions/{sid}/source", "/submissions/999999",
                "/submissions/999999/status", "/submissions/99999999999999999999"):
        response = other.get(url)
        assert response.status_code == 404, url
        assert "value.py" not in response.get_data(as_text=True)
    history = other.get("/history").get_data(as_text=True)
    assert f"/submissions/{sid}" not in history and "Nothing yet" in history


def test_instructors_can_open_any_submission(app: Flask, graded: dict) -> None:
    staff = signed_in_client(app, create_user(app, role="instructor", name="Prof"))
    page = staff.get(f"/submissions/{graded['buggy']}")
    assert page.status_code == 200
    assert graded["owner"].email in page.get_data(as_text=True)
    assert staff.get(f"/submissions/{graded['buggy']}/diff/diamond.svg").status_code == 200


def test_history_lists_own_submissions_with_scores(app: Flask, graded: dict) -> None:
    page = owner_client(app, graded).get("/history").get_data(as_text=True)
    for key in ("buggy", "hostile", "invalid", "good"):
        assert f'href="/submissions/{graded[key]}"' in page
    assert "Not gradable" in page and '<span class="score">10<span class="of"> / 10' in page
    assert owner_client(app, graded).get("/history?page=99").status_code == 404


def test_hidden_exercises_wait_for_the_late_window_to_close(make_app: Any) -> None:
    from grader.extensions import db
    from grader.models import Assignment, utcnow

    app = make_app()
    with app.app_context():
        a = db.session.scalar(select(Assignment))
        a.hidden, a.deadline = ["diamond"], utcnow() + timedelta(days=2)
        db.session.commit()
    user = create_user(app)
    sid = submit_source(app, user.id, fixture_text("bugs/overwrite.py"))
    grade_now(app, sid)
    client = signed_in_client(app, user)
    page = client.get(f"/submissions/{sid}").get_data(as_text=True)
    assert "shown after the deadline" in page
    assert "/diff/diamond.svg" not in page and "/diff/expression.svg" in page
    assert client.get(f"/submissions/{sid}/diff/diamond.svg").status_code == 404
    with app.app_context():  # past the deadline but still inside the late window
        a = db.session.scalar(select(Assignment))
        a.deadline, a.late_until = utcnow() - timedelta(minutes=2), utcnow() + timedelta(days=1)
        db.session.commit()
    assert client.get(f"/submissions/{sid}/diff/diamond.svg").status_code == 404
    with app.app_context():
        db.session.scalar(select(Assignment)).late_until = utcnow() - timedelta(minutes=1)
        db.session.commit()
    assert client.get(f"/submissions/{sid}/diff/diamond.svg").status_code == 200


def test_pages_carry_a_strict_content_security_policy(app: Flask, graded: dict) -> None:
    client = owner_client(app, graded)
    for url in ("/", "/history", "/profile", "/assignments/micrograd",
                f"/submissions/{graded['buggy']}"):
        response = client.get(url)
        policy = response.headers["Content-Security-Policy"]
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy, url
        assert "frame-ancestors 'none'" in policy
        assert response.headers["X-Content-Type-Options"] == "nosniff"


def test_each_warning_shows_once_naming_its_exercises(app: Flask, graded: dict) -> None:
    """A legitimate quirk (grads adding up over a second backward()) comes up in every
    exercise; the page says it once, with the exercises, not on every card."""
    from grader.extensions import db
    from grader.models import Submission

    page = owner_client(app, graded).get(f"/submissions/{graded['good']}") \
        .get_data(as_text=True)
    with app.app_context():
        entries = db.session.get(Submission, graded["good"]).report_dict()["exercises"]
    distinct = {w for e in entries for w in e["warnings"]}
    assert distinct, "lecture.py has at least the double backward() quirk"
    assert page.count('class="alert alert-warning small exercise-warning"') == len(distinct)
    twice = next(e["warnings"][0] for e in entries if e["warnings"])
    names = [e["name"] for e in entries if twice in e["warnings"]]
    assert f'({", ".join(names)})' in page


def test_a_random_instance_failure_names_the_replay_seed(app: Flask) -> None:
    from grader.extensions import db
    from grader.models import Submission

    user = create_user(app)
    sid = submit_source(app, user.id, fixture_text("hostile/hardcoded_canonical.py"))
    grade_now(app, sid)
    page = signed_in_client(app, user).get(f"/submissions/{sid}").get_data(as_text=True)
    with app.app_context():
        seed = db.session.get(Submission, sid).seed
    assert "on random instance" in page
    assert f"--exercise expression --seed {seed}</code>" in page
