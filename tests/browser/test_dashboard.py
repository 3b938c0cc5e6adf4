"""The instructor in headless Chromium, on the course `micrograde demo` seeds.

The site runs over real HTTP on a copy of the demo's instance; the dashboard's charts are
server-side SVG and must render (visible, with bars) with no console errors under the
site's Content-Security-Policy. Screenshots land in test-artifacts/screenshots/.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from grader import create_app, demo
from tests.instructor.demo_course import demo_course
from tests.service.fixtures import LiveServer

CHARTS = ("chart-histogram", "chart-pass", "chart-timeline", "chart-diagnoses",
          "chart-operations")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The demo course served over HTTP (a copy: this test regrades it)."""
    source, _ = demo_course(tmp_path_factory.getbasetemp())
    instance = tmp_path_factory.mktemp("dashboard") / "instance"
    shutil.copytree(source, instance)
    server = LiveServer(create_app({"INSTANCE_PATH": str(instance)})).start()
    yield server.url
    server.stop()


@pytest.fixture
def errors(page: Any) -> list[str]:
    """Console errors and uncaught exceptions of the page."""
    seen: list[str] = []
    page.on("console", lambda m: seen.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: seen.append(str(e)))
    return seen


def sign_in(page: Any, url: str) -> None:
    page.goto(f"{url}/login")
    page.fill("input[name=email]", demo.INSTRUCTOR)
    page.fill("input[name=password]", demo.PASSWORD)
    page.click("input[type=submit], button[type=submit]")
    page.wait_for_url(f"{url}/instructor/")


def test_dashboard_renders_its_charts(site: str, page: Any, errors: list[str],
                                      screenshot: Any) -> None:
    sign_in(page, site)
    assert page.locator("#assignments").inner_text().count("micrograd") >= 1
    page.click("text=Dashboard")
    page.wait_for_url(f"{site}/instructor/micrograd/")
    for chart in CHARTS:
        svg = page.locator(f"svg#{chart}")
        svg.scroll_into_view_if_needed()
        assert svg.is_visible(), chart
        box = svg.bounding_box()
        assert box["width"] > 300 and box["height"] > 80, (chart, box)
        assert svg.locator("rect.bar").count() > 0, chart
        assert svg.locator("text").count() > 5, chart              # axes, ticks, values
    heights = page.eval_on_selector_all(
        "svg#chart-histogram rect.bar", "els => els.map(e => e.getBBox().height)")
    assert max(heights) > 20                                       # real bars, drawn
    mistakes = page.locator("#mistakes .mistake-list li").all_inner_texts()
    assert mistakes and all("%" in m for m in mistakes)
    assert page.locator("#queue [data-health=queue_depth]").inner_text() == "0"
    screenshot("instructor_dashboard")
    page.goto(f"{site}/instructor/{demo.LATE_SLUG}/")     # deadline passed, late window open
    timeline = page.locator("svg#chart-timeline")
    timeline.scroll_into_view_if_needed()
    assert timeline.locator("rect.bar.late").count() > 0
    assert timeline.locator("line.mark").count() == 2     # deadline, end of the late window
    assert page.locator("#extensions tbody tr").count() == 2
    screenshot("instructor_dashboard_late_work")
    assert errors == []


def test_students_search_sort_and_a_submission(site: str, page: Any, errors: list[str],
                                               screenshot: Any) -> None:
    sign_in(page, site)
    page.goto(f"{site}/instructor/micrograd/students")
    rows = page.locator("#students tbody tr")
    assert rows.count() == 24
    page.click("a[data-sort=best]")
    page.wait_for_url("**sort=best**")
    best = page.locator("#students tbody tr td[data-col=best]").all_inner_texts()
    numbers = [float(b) for b in best if b.strip() not in ("—", "")]
    assert numbers == sorted(numbers, reverse=True) and numbers
    page.fill("#q", "Ada")
    page.press("#q", "Enter")
    page.wait_for_url("**q=Ada**")
    assert page.locator("#students tbody tr").count() == 1
    screenshot("instructor_students")
    page.goto(f"{site}/instructor/micrograd/students?sort=attempts&dir=desc")
    page.locator("#students tbody tr td[data-col=best] a").first.click()
    page.wait_for_url("**/instructor/submissions/**")
    assert page.locator("#seed").inner_text().isdigit()
    assert page.locator("#timings").is_visible()
    screenshot("instructor_submission")
    assert errors == []


def test_regrade_all_shows_live_progress(site: str, page: Any, errors: list[str],
                                         screenshot: Any) -> None:
    sign_in(page, site)
    page.goto(f"{site}/instructor/micrograd/")
    page.on("dialog", lambda d: d.accept())
    page.click("#regrade-all")
    page.wait_for_url("**/instructor/micrograd/#regrade")
    total = int(page.locator("[data-progress=total]").inner_text())
    assert total > 24
    with page.expect_response(lambda r: "/regrade/progress" in r.url) as info:
        pass
    assert info.value.ok and info.value.json()["batch"]["total"] == total
    assert page.locator("#regrade-progress").get_attribute("max") == str(total)
    assert "queued for regrading" in page.locator(".flashes").inner_text()
    screenshot("instructor_regrade_progress")
    assert errors == []
