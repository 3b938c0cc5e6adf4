"""The JSON API of SPEC §8: shapes, bearer tokens, errors, ownership (no worker needed)."""

from __future__ import annotations

import io

import pytest
from sqlalchemy import func, select

from grader.extensions import db
from grader.models import Submission
from tests.service.fixtures import SOURCES


def n_submissions(app) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(Submission))


def test_assignments_lists_open_assignments(client, users) -> None:
    made = users.create()
    body = client.get("/api/v1/assignments", headers=made.auth).get_json()
    (a,) = body["assignments"]
    assert (a["slug"], a["deadline"], a["open"], a["max_score"]) == \
        ("micrograd", None, True, 10.0)
    assert [e["name"] for e in a["exercises"]] == \
        ["expression", "diamond", "neuron", "mlp_step", "operators"]
    assert [e["feedback_only"] for e in a["exercises"]] == [False] * 4 + [True]


@pytest.mark.parametrize(("header", "code"), [
    (None, "missing_token"), ("Bearer", "missing_token"), ("Basic abc", "missing_token"),
    ("Bearer mg_not-a-token", "bad_token"), ("Bearer " + "x" * 5000, "bad_token"),
])
def test_bad_tokens_get_401_json(client, header, code) -> None:
    headers = {"Authorization": header} if header else {}
    for method, url in (("get", "/api/v1/assignments"), ("post", "/api/v1/submissions"),
                        ("get", "/api/v1/submissions/1")):
        response = getattr(client, method)(url, headers=headers)
        assert response.status_code == 401 and response.get_json()["error"]["code"] == code
        assert response.headers["WWW-Authenticate"].startswith("Bearer")


def test_expired_token_says_so(app, client, users) -> None:
    from datetime import timedelta

    from grader.models import User, utcnow

    made = users.create()
    with app.app_context():
        db.session.get(User, made.id).token_expires_at = utcnow() - timedelta(days=1)
        db.session.commit()
    response = client.get("/api/v1/assignments", headers=made.auth)
    assert response.status_code == 401
    assert response.get_json()["error"]["code"] == "token_expired"


def test_submit_multipart_and_json_then_read_back(app, client, users) -> None:
    made = users.create()
    r1 = client.post("/api/v1/submissions", headers=made.auth, data={
        "assignment": "micrograd", "file": (io.BytesIO(SOURCES["correct"].encode()), "v.py")})
    assert r1.status_code == 202, r1.get_json()
    b1 = r1.get_json()
    assert b1["status"] == "queued" and b1["url"].endswith(f"/api/v1/submissions/{b1['id']}")
    assert r1.headers["Location"] == b1["url"] and b1["queue_position"] == 1
    r2 = client.post("/api/v1/submissions", headers=made.auth,
                     json={"assignment": "micrograd", "source": SOURCES["buggy"]})
    assert r2.status_code == 202 and r2.get_json()["queue_position"] == 2
    got = client.get(f"/api/v1/submissions/{b1['id']}", headers=made.auth).get_json()
    assert (got["status"], got["filename"], got["assignment"]) == ("queued", "v.py",
                                                                    "micrograd")
    assert "report" not in got and got["queue_position"] == 1
    listed = client.get("/api/v1/submissions", headers=made.auth).get_json()["submissions"]
    assert [s["id"] for s in listed] == [r2.get_json()["id"], b1["id"]]


@pytest.mark.parametrize(("kwargs", "status", "code"), [
    ({"json": {"assignment": "micrograd", "source": ""}}, 400, "empty"),
    ({"json": {"assignment": "micrograd", "source": "x" * 300_000}}, 413, "too_large"),
    ({"json": {"assignment": "nope", "source": "class Value: pass"}}, 404, "no_assignment"),
    ({"json": {"source": "class Value: pass"}}, 400, "no_assignment"),
    ({"json": {"assignment": ["micrograd"], "source": "class Value: pass"}}, 400,
     "no_assignment"),
    ({"json": {"assignment": 7, "source": "class Value: pass"}}, 400, "no_assignment"),
    ({"json": {"assignment": "micrograd", "source": "x", "filename": "a.sh"}}, 415,
     "wrong_type"),
    ({"json": {"assignment": "micrograd"}}, 400, "bad_request"),
    ({"json": ["not", "an", "object"]}, 400, "bad_request"),
    ({"data": "source=x", "content_type": "text/plain"}, 400, "bad_request"),
    ({"data": {"assignment": "micrograd", "file": (io.BytesIO(b"\xff\xfe\x00"), "v.py")}},
     400, "not_utf8"),
    ({"data": {"assignment": "micrograd", "other": (io.BytesIO(b"x"), "v.py")}}, 400,
     "no_file"),
    ({"data": {"assignment": "micrograd",
               "file": (io.BytesIO(b"x" * (9 * 1024 * 1024)), "v.ipynb")}}, 413,
     "too_large"),
])
def test_bad_submissions_are_json_errors_and_store_nothing(app, client, users, kwargs,
                                                           status, code) -> None:
    made = users.create()
    response = client.post("/api/v1/submissions", headers=made.auth, **kwargs)
    assert response.status_code == status
    err = response.get_json()["error"]
    assert err["code"] == code and err["message"]
    assert n_submissions(app) == 0


def test_cooldown_is_429_with_retry_after(make_app) -> None:
    from tests.service.fixtures import Users

    app = make_app(SUBMISSION_COOLDOWN=60)
    made, client = Users(app).create(), app.test_client()
    body = {"assignment": "micrograd", "source": SOURCES["correct"]}
    assert client.post("/api/v1/submissions", headers=made.auth, json=body).status_code == 202
    again = client.post("/api/v1/submissions", headers=made.auth, json=body)
    assert again.status_code == 429 and again.get_json()["error"]["code"] == "cooldown"
    assert 58 <= int(again.headers["Retry-After"]) <= 60


def test_others_submissions_are_404_but_instructors_see_all(client, users) -> None:
    alice, bob, prof = users.create(), users.create(), users.create(role="instructor")
    sid = client.post("/api/v1/submissions", headers=alice.auth, json={
        "assignment": "micrograd", "source": SOURCES["correct"]}).get_json()["id"]
    for url in (f"/api/v1/submissions/{sid}", "/api/v1/submissions/999999",
                "/api/v1/submissions/99999999999999999999"):  # beyond any row id
        response = client.get(url, headers=bob.auth)
        assert response.status_code == 404
        assert response.get_json()["error"]["code"] == "not_found"
    assert client.get("/api/v1/submissions", headers=bob.auth).get_json() == \
        {"submissions": []}
    assert client.get(f"/api/v1/submissions/{sid}", headers=prof.auth).status_code == 200


def test_unknown_api_routes_and_methods_are_json(client, users) -> None:
    made = users.create()
    response = client.get("/api/v1/nothing-here", headers=made.auth)
    assert response.status_code == 404 and response.get_json()["error"]["code"] == "not_found"
    response = client.delete("/api/v1/assignments", headers=made.auth)
    assert response.status_code == 405
    assert response.get_json()["error"]["code"] == "method_not_allowed"


def test_api_needs_no_csrf_token(app, users) -> None:
    assert app.config.get("WTF_CSRF_ENABLED", True)
    made = users.create()
    response = app.test_client().post("/api/v1/submissions", headers=made.auth, json={
        "assignment": "micrograd", "source": SOURCES["correct"]})
    assert response.status_code == 202


def test_health_without_workers_is_degraded(client) -> None:
    response = client.get("/api/v1/health")
    body = response.get_json()
    assert response.status_code == 200
    assert body["database"]["ok"] and body["broker"]["ok"] and body["status"] == "degraded"
    assert (body["queue_depth"], body["running"], body["worker_count"], body["stuck"]) == \
        (0, 0, 0, 0)


def test_hidden_exercises_show_details_only_once_the_late_window_closed(make_app, tmp_path) -> None:
    from datetime import timedelta

    from grader.models import Assignment, utcnow
    from tests.service.fixtures import Users
    from worker import tasks

    app = make_app(INSTANCES_K=1)
    student, prof = Users(app).create(), Users(app).create(role="instructor")
    client = app.test_client()
    sid = client.post("/api/v1/submissions", headers=student.auth, json={
        "assignment": "micrograd", "source": SOURCES["buggy"]}).get_json()["id"]
    with app.app_context():
        a = db.session.scalar(select(Assignment))
        a.hidden, a.deadline = ["diamond"], utcnow() + timedelta(days=1)
        db.session.commit()
        tasks.run(sid, "t")

    def diamond(user) -> dict:
        report = client.get(f"/api/v1/submissions/{sid}", headers=user.auth).get_json()
        return next(e for e in report["report"]["exercises"] if e["name"] == "diamond")

    hidden = diamond(student)
    assert hidden["hidden"] and hidden["verdict"] == "wrong_gradient"
    assert "nodes" not in hidden and "diff_dot" not in hidden and "hints" not in hidden
    assert diamond(prof)["nodes"]  # staff see everything
    with app.app_context():  # past the deadline, still inside the late window: as the pages
        a = db.session.scalar(select(Assignment))
        a.deadline, a.late_until = utcnow() - timedelta(seconds=1), utcnow() + timedelta(days=1)
        db.session.commit()
    assert diamond(student)["hidden"]
    with app.app_context():
        db.session.scalar(select(Assignment)).late_until = utcnow() - timedelta(seconds=1)
        db.session.commit()
    assert diamond(student)["nodes"]


def test_client_wait_rides_out_a_server_restart(make_app, tmp_path) -> None:
    import threading

    from click.testing import CliRunner
    from werkzeug.serving import make_server

    from grader.api.client import Client
    from grader.cli import cli
    from tests.service.fixtures import Users, free_port
    from worker import tasks

    app = make_app(INSTANCES_K=1)
    made, port = Users(app).create(), free_port()
    first = make_server("127.0.0.1", port, app, threaded=True)
    threading.Thread(target=first.serve_forever, daemon=True).start()
    client = Client(f"http://127.0.0.1:{port}", made.token, timeout=5)
    sid = client.submit("v.py", SOURCES["correct"].encode(), "micrograd")["id"]
    # `submit --wait` that gives up still says where the stored submission is
    path = tmp_path / "value.py"
    path.write_text(SOURCES["correct"])
    out = CliRunner().invoke(cli, ["submit", str(path), "--server", client.base, "--token",
                                   made.token, "--wait", "--timeout", "0"])
    assert out.exit_code == 2 and f"submission {sid + 1} is saved; see http" in out.stderr
    first.shutdown()
    first.server_close()  # the site is down: polls are refused from here on
    with app.app_context():
        tasks.run(sid, "t")
    serving, restarted = threading.Event(), []

    def come_back() -> None:  # a second later, as a restarted site would
        serving.wait(1.0)
        restarted.append(make_server("127.0.0.1", port, app, threaded=True))
        serving.set()
        restarted[0].serve_forever()

    threading.Thread(target=come_back, daemon=True).start()
    try:
        assert client.wait(sid, timeout=60, interval=0.2)["status"] == "graded"
    finally:
        serving.wait()
        restarted[0].shutdown()
        restarted[0].server_close()
