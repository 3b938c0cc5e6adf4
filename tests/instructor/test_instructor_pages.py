"""Instructor pages on the fixture class: dashboard, student table, student, submission."""

from __future__ import annotations

import re
from typing import Any

from tests.instructor import klass


def order(html: str) -> list[str]:
    """Student emails in table order."""
    return re.findall(r'<tr data-student="([^"]+)"', html)


def test_index_lists_the_assignment(as_instructor: Any) -> None:
    html = as_instructor("/instructor/").get_data(as_text=True)
    assert "micrograd: build your own autograd Value" in html
    assert 'href="/instructor/micrograd/"' in html and "Queue health" in html


def test_dashboard_shows_numbers_and_charts(as_instructor: Any) -> None:
    response = as_instructor("/instructor/micrograd/")
    assert response.status_code == 200
    html = response.get_data(as_text=True)
    for chart in ("chart-histogram", "chart-pass", "chart-timeline", "chart-diagnoses",
                  "chart-operations"):
        assert f'id="{chart}"' in html
    assert "Best score per student (4 graded)" in html
    assert "<strong>50%</strong> wrong tanh backward" in html
    assert "2 of 4 students, 1 still" in html
    assert "= instead of += (gradient overwritten)" in html
    assert "Submissions over time (8)" in html and ">deadline<" in html
    kpis = html[html.index('id="kpis"'):html.index('class="chart-grid"')]
    assert re.sub(r"\s+", " ", kpis).count("<dd>") == 6
    assert "6.25" in kpis and "5.5" in kpis
    assert "Content-Security-Policy" in response.headers
    assert "<script>" not in html.replace('<script src="', "")


def test_stats_json_matches_the_hand_computed_class(as_instructor: Any) -> None:
    data = as_instructor("/instructor/micrograd/stats.json").get_json()
    assert (data["enrolled"], data["submitted"], data["graded"], data["submissions"]) == \
        (6, 5, 4, 8)
    assert (data["mean"], data["median"], data["full_marks"], data["late_submissions"]) == \
        (6.25, 5.5, 1, 2)
    rates = {r["exercise"]: (r["passed"], r["of"]) for r in data["pass_rates"]}
    assert rates["mlp_step"] == (2, 4) and rates["diamond"] == (3, 4)
    top = data["by_operation"][0]
    assert (top["label"], top["pct"], top["pct_still"]) == ("wrong tanh backward", 50.0, 25.0)
    assert {"queue_depth", "running", "worker_count", "latency_p50_s", "latency_p95_s",
            "stuck"} <= set(data["queue"])


def test_student_table_search_and_sort(as_instructor: Any) -> None:
    html = as_instructor("/instructor/micrograd/students").get_data(as_text=True)
    emails = [f"{n}@class.example.org" for n in klass.STUDENTS]
    # by name: "=Dave Drop()" sorts first ('=' < 'A')
    assert order(html) == [emails[3], emails[0], emails[1], emails[2], emails[4], emails[5]]
    best = order(as_instructor("/instructor/micrograd/students?sort=best&dir=desc")
                 .get_data(as_text=True))
    assert best[:4] == [emails[0], emails[2], emails[1], emails[3]]   # 10, 7, 4 (b<d), 4
    assert set(best[4:]) == {emails[4], emails[5]}                     # never graded: last
    asc = order(as_instructor("/instructor/micrograd/students?sort=best&dir=asc")
                .get_data(as_text=True))
    assert asc[:4] == [emails[1], emails[3], emails[2], emails[0]]   # ties by email
    attempts = order(as_instructor("/instructor/micrograd/students?sort=attempts&dir=desc")
                     .get_data(as_text=True))
    assert attempts[0] == emails[2] and attempts[-1] == emails[4]
    found = order(as_instructor("/instructor/micrograd/students?q=CHEN")
                  .get_data(as_text=True))
    assert found == [emails[2]]
    assert order(as_instructor("/instructor/micrograd/students?q=class.example")
                 .get_data(as_text=True)) == order(html)


def test_student_table_late_column(as_instructor: Any) -> None:
    html = as_instructor("/instructor/micrograd/students").get_data(as_text=True)
    rows = dict(re.findall(r'<tr data-student="([^"]+)">(.*?)</tr>', html, re.S))
    assert 'badge-late">late<' in rows["bob@class.example.org"]
    assert "some late" in rows["carol@class.example.org"]        # c3, not the graded c2
    assert "on time" in rows["dave@class.example.org"]            # extension
    assert "extension to 2027-03-02 12:00 UTC" in rows["dave@class.example.org"]
    assert "never" in rows["erin@class.example.org"]


def test_student_table_filtered_by_a_mistake(as_instructor: Any) -> None:
    html = as_instructor("/instructor/micrograd/students?cause=local_derivative&op=tanh"
                         ).get_data(as_text=True)
    assert sorted(order(html)) == ["alice@class.example.org", "bob@class.example.org"]
    assert "wrong tanh backward" in html
    topo = as_instructor("/instructor/micrograd/students?cause=topo_order&op=")
    assert order(topo.get_data(as_text=True)) == ["dave@class.example.org"]


def test_one_students_history(as_instructor: Any, class_app: dict) -> None:
    uid = class_app["ids"]["users"]["carol"]
    html = as_instructor(f"/instructor/micrograd/students/{uid}").get_data(as_text=True)
    assert html.count('href="/instructor/submissions/') >= 3
    assert "after the late window" in html and "row-best" in html
    assert "Carol Chen" in html


def test_submission_full_view(as_instructor: Any, class_app: dict) -> None:
    sid = class_app["ids"]["subs"]["a1"]
    html = as_instructor(f"/instructor/submissions/{sid}").get_data(as_text=True)
    assert 'id="seed">1000<' in html
    assert "micrograde grade value.py --seed 1000" in html
    assert "printed by a1/neuron" in html and "warned by a1/neuron" in html   # stdout/stderr
    assert "waited in queue" in html and "1.000 s" in html and "0.800 s" in html
    assert "mlp_step is wrong" in html            # hidden exercises: instructors see them
    assert "# a1" in html                         # the source
    assert "attempt 1 of 2" in html and 'rel="next"' in html
    report = as_instructor(f"/instructor/submissions/{sid}/report.json").get_json()
    assert report["seed"] == 4242 and len(report["exercises"]) == 5


def test_invalid_and_failed_submissions_render(as_instructor: Any, class_app: dict) -> None:
    for key in ("c1", "f1"):
        response = as_instructor(f"/instructor/submissions/{class_app['ids']['subs'][key]}")
        assert response.status_code == 200
    assert as_instructor("/instructor/submissions/99999").status_code == 404
    assert as_instructor("/instructor/nope/").status_code == 404


def test_a_new_course_with_no_submissions(app, users) -> None:
    from tests.instructor.conftest import sign_in

    teacher = users.create("instructor")
    client = sign_in(app, teacher.email)
    html = client.get("/instructor/micrograd/").get_data(as_text=True)
    assert "no mistakes in any operation yet" in html and "Nothing diagnosed yet." in html
    assert "Best score per student (0 graded)" in html and "No extensions." in html
    assert client.get("/instructor/micrograd/students").status_code == 200
    csv_text = client.get("/instructor/micrograd/export.csv").get_data(as_text=True)
    assert csv_text.splitlines()[0].startswith("email,name,attempts")
    assert client.get("/instructor/micrograd/gradescope.json").get_json()["students"] == []
    progress = client.get("/instructor/micrograd/regrade/progress").get_json()
    assert progress["batch"] is None and progress["queue"]["queue_depth"] == 0


def test_dashboard_policy_names_the_manifest_in_use(fresh_class_app: dict[str, Any],
                                                    tmp_path: Any) -> None:
    from grader.extensions import db
    from grader.models import Assignment

    app, client = fresh_class_app["app"], fresh_class_app["client"]
    app.config["MANIFEST"] = str(tmp_path / "course.toml")
    html = client.get("/instructor/micrograd/").get_data(as_text=True)
    assert f'<code id="manifest-path">{tmp_path / "course.toml"}</code>; edit it' in html
    with app.app_context():
        a = db.session.get(Assignment, fresh_class_app["ids"]["assignment"])
        a.active, a.deadline, a.late_until = False, None, None
        db.session.commit()
    html = client.get("/instructor/micrograd/").get_data(as_text=True)
    assert "Retired: the manifest" in html and "students cannot submit" in html
    policy = re.sub(r"\s+", " ", html[html.index('id="policy"'):html.index('id="extensions"')])
    assert "<dt>Late window</dt><dd>none</dd>" in policy


def test_staff_submissions_are_not_the_class(fresh_class_app: dict[str, Any]) -> None:
    """An instructor trying the grader out changes no statistic and no gradebook row."""
    from sqlalchemy import select

    from grader.extensions import db
    from grader.models import Assignment, Submission

    app, teacher = fresh_class_app["app"], fresh_class_app["instructor"]
    with app.app_context():
        a = db.session.scalar(select(Assignment).where(Assignment.slug == "micrograd"))
        db.session.add(Submission(
            user_id=teacher.id, assignment_id=a.id, filename="value.py",
            source="class Value:\n    pass\n", size=23, sha256="1" * 64, seed=7,
            status="graded", score=10.0, max_score=10.0, created_at=klass.D,
            enqueued_at=klass.D, attempts=1, late=False, report=None))
        db.session.commit()
        staff_sub = db.session.scalar(select(Submission.id).where(
            Submission.user_id == teacher.id))
    client = fresh_class_app["client"]
    data = client.get("/instructor/micrograd/stats.json").get_json()
    assert (data["enrolled"], data["submitted"], data["submissions"]) == (6, 5, 8)
    assert (data["full_marks"], data["mean"]) == (1, 6.25)
    csv = client.get("/instructor/micrograd/export.csv").get_data(as_text=True)
    assert "alice@class.example.org" in csv and "teacher@class.example.org" not in csv
    # still openable by id from the instructor area
    assert client.get(f"/instructor/submissions/{staff_sub}").status_code == 200
