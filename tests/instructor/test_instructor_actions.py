"""Instructor actions on a fresh copy of the fixture class: regrades, progress, extensions."""

from __future__ import annotations

import csv
import io
from typing import Any

from sqlalchemy import select

from grader.extensions import db
from grader.models import Extension, Submission
from grader.models_course import RegradeBatch
from tests.instructor.conftest import csrf_of


def post(site: dict[str, Any], path: str, **data: Any) -> Any:
    client = site["client"]
    token = csrf_of(client.get("/instructor/micrograd/").get_data(as_text=True))
    return client.post(path, data={"csrf_token": token, **data})


def test_regrade_one(fresh_class_app: dict[str, Any]) -> None:
    site, app = fresh_class_app, fresh_class_app["app"]
    sid = site["ids"]["subs"]["b1"]
    response = post(site, f"/instructor/submissions/{sid}/regrade")
    assert response.status_code == 302
    assert response.headers["Location"] == f"/instructor/submissions/{sid}"
    with app.app_context():
        sub = db.session.get(Submission, sid)
        assert (sub.status, sub.regrade, sub.regrades, sub.score) == ("queued", True, 1, 8.0)
    page = site["client"].get(f"/instructor/submissions/{sid}").get_data(as_text=True)
    assert "is queued for regrading" in page and "regrade queue" in page
    again = post(site, f"/instructor/submissions/{sid}/regrade")
    assert again.status_code == 302
    with app.app_context():
        assert db.session.get(Submission, sid).regrades == 1   # not queued twice
    # the grade stays the previous one until the regrade is done
    rows = {r["email"]: r for r in csv.DictReader(io.StringIO(
        site["client"].get("/instructor/micrograd/export.csv").get_data(as_text=True)))}
    assert rows["bob@class.example.org"]["best_score"] == "4"
    assert post(site, "/instructor/submissions/99999/regrade").status_code == 404


def test_regrade_all_and_its_progress(fresh_class_app: dict[str, Any]) -> None:
    from worker.tasks import run

    site, app = fresh_class_app, fresh_class_app["app"]
    response = post(site, "/instructor/micrograd/regrade")
    assert response.status_code == 302 and response.headers["Location"].endswith("#regrade")
    progress = site["client"].get("/instructor/micrograd/regrade/progress").get_json()
    batch = progress["batch"]
    assert (batch["total"], batch["done"], batch["queued"], batch["finished"]) == \
        (8, 0, 8, False)
    assert progress["queue"]["regrade_depth"] == 8 and progress["queue"]["queue_depth"] == 0
    with app.app_context():
        stored = db.session.scalar(select(RegradeBatch))
        assert stored.requested_by == site["instructor"].id
        assert sorted(stored.submission_ids) == sorted(site["ids"]["subs"].values())
        # the worker's own task body grades one of them, for real
        assert run(site["ids"]["subs"]["a1"], "test-worker") == "graded"
        db.session.remove()
    batch = site["client"].get("/instructor/micrograd/regrade/progress").get_json()["batch"]
    assert (batch["done"], batch["queued"], batch["finished"]) == (1, 7, False)
    html = site["client"].get("/instructor/micrograd/").get_data(as_text=True)
    assert 'data-progress="done">1<' in html and 'data-finished="false"' in html


def test_extensions_change_lateness(fresh_class_app: dict[str, Any]) -> None:
    site, app = fresh_class_app, fresh_class_app["app"]
    bob = site["ids"]["users"]["bob"]

    def bobs_row() -> dict[str, str]:
        text = site["client"].get("/instructor/micrograd/export.csv").get_data(as_text=True)
        return next(r for r in csv.DictReader(io.StringIO(text))
                    if r["email"] == "bob@class.example.org")

    assert (bobs_row()["best_score"], bobs_row()["late"]) == ("4", "yes")
    response = post(site, "/instructor/micrograd/extensions", user_id=bob,
                    deadline="2027-03-03T12:00", reason="flu")
    assert response.status_code == 302
    assert response.headers["Location"] == f"/instructor/micrograd/students/{bob}"
    row = bobs_row()
    assert (row["best_score"], row["late"], row["extension_until"]) == \
        ("8", "no", "2027-03-03T12:00:00Z")
    with app.app_context():
        ext = db.session.scalar(select(Extension).where(Extension.user_id == bob))
        assert ext.reason == "flu"
        ext_id = ext.id
    page = site["client"].get(f"/instructor/micrograd/students/{bob}").get_data(as_text=True)
    assert "2027-03-03 12:00 UTC" in page and "late window to 2027-03-05 12:00 UTC" in page
    assert post(site, f"/instructor/micrograd/extensions/{ext_id}/delete").status_code == 302
    assert bobs_row()["late"] == "yes"
    bad = post(site, "/instructor/micrograd/extensions", user_id=bob, deadline="")
    assert bad.status_code == 302
    with app.app_context():
        assert db.session.scalar(select(Extension).where(Extension.user_id == bob)) is None


def test_actions_need_the_csrf_token(fresh_class_app: dict[str, Any]) -> None:
    client = fresh_class_app["client"]
    assert client.post("/instructor/micrograd/regrade").status_code == 400
    with fresh_class_app["app"].app_context():
        assert db.session.scalar(select(RegradeBatch)) is None
