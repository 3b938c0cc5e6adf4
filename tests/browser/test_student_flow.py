"""A student in headless Chromium: register with the join code, submit, watch it get graded.

The whole path is real: the site over HTTP, the embedded SQLite broker, a `celery worker`
process grading in the bubblewrap sandbox, the database, and the page polling for status.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.service.fixtures import LiveServer, WorkerProcess, build_app

ROOT = Path(__file__).resolve().parents[2]
BUGGY = ROOT / "tests" / "fixtures" / "submissions" / "bugs" / "mul_derivative.py"
HOSTILE = ROOT / "tests" / "web" / "files" / "hostile_markup.py"
JOIN_CODE = "browser-join"
PASSWORD = "correct horse battery"
_emails = itertools.count(1)

#: counts strongly red pixels (the wrong nodes' #c62828 borders) of a diff <img>
RED_PIXELS = """async (img) => {
  if (!img.complete) await img.decode();
  const c = document.createElement("canvas");
  c.width = img.naturalWidth; c.height = img.naturalHeight;
  const ctx = c.getContext("2d");
  ctx.drawImage(img, 0, 0);
  const d = ctx.getImageData(0, 0, c.width, c.height).data;
  let red = 0;
  for (let i = 0; i < d.length; i += 4) {
    if (d[i] > 150 && d[i + 1] < 90 && d[i + 2] < 90 && d[i + 3] > 200) red++;
  }
  return red;
}"""

#: records every status the badge shows, and marks the window (a reload would lose it)
WATCH = """() => {
  window.__sameDocument = true;
  window.__seen = [document.querySelector("[data-status-badge]").textContent.trim()];
  new MutationObserver(() => {
    const text = document.querySelector("[data-status-badge]").textContent.trim();
    if (window.__seen[window.__seen.length - 1] !== text) window.__seen.push(text);
  }).observe(document.getElementById("live"), {subtree: true, childList: true,
                                               characterData: true, attributes: true});
}"""


@dataclass
class Site:
    """The site on real HTTP and its (lazily started) grading worker."""

    url: str
    worker: WorkerProcess

    def start_worker(self) -> None:
        """Start grading (waits until the worker has reported in)."""
        if self.worker.proc is None:
            self.worker.start()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """The embedded default: SQLite database, SQLite broker, one worker process."""
    instance = tmp_path_factory.mktemp("browser-site")
    app = build_app(instance, BROKER_URL=f"sqla+sqlite:///{instance / 'broker.sqlite'}",
                    JOIN_CODE=JOIN_CODE)
    server = LiveServer(app).start()
    worker = WorkerProcess(app, instance / "logs", concurrency=1)
    yield Site(server.url, worker)
    worker.stop()
    server.stop()


def register(page: Any, site: Site, name: str) -> str:
    """Create a student account through the form; return its email."""
    email = f"browser{next(_emails)}@students.example.edu"
    page.goto(f"{site.url}/register")
    page.fill("#name", name)
    page.fill("#email", email)
    page.fill("#password", PASSWORD)
    page.fill("#confirm", PASSWORD)
    page.fill("#join_code", JOIN_CODE)
    page.click("#submit")
    page.wait_for_url(f"{site.url}/")
    assert f"Welcome, {name}!" in page.inner_text(".flashes")
    return email


def test_register_submit_and_watch_it_get_graded(site: Site, page: Any,
                                                 screenshot: Any) -> None:
    register(page, site, "Ada Lovelace")
    page.get_by_role("link", name="Submit", exact=True).click()
    page.wait_for_url(f"{site.url}/assignments/micrograd")
    page.set_input_files("#file", str(BUGGY))
    page.click("#submit")
    page.wait_for_url(re.compile(r".*/submissions/\d+$"))

    # no worker yet: the submission waits, and the page says where it stands
    badge = page.locator("[data-status-badge]")
    assert badge.inner_text() == "Queued"
    assert page.inner_text("[data-status-detail]") == "next in line"
    page.evaluate(WATCH)
    screenshot("student_flow_queued")

    site.start_worker()
    page.wait_for_selector("#summary", timeout=120_000)
    assert badge.inner_text() == "Graded"
    assert page.evaluate("window.__sameDocument") is True  # updated in place, no reload
    seen = page.evaluate("window.__seen")
    assert seen[0] == "Queued" and seen[-1] == "Graded", seen
    assert page.locator('[data-step="done"].is-current').count() == 1

    # per-exercise feedback, with the red (wrong) nodes in the diff picture
    wrong = page.locator("article.exercise-wrong_gradient")
    assert wrong.count() >= 3
    first = wrong.first
    assert "Wrong gradient" in first.inner_text()
    assert first.locator(".diagnosis").inner_text().startswith("DIAGNOSIS")
    assert first.locator("tr.row-wrong").count() >= 1
    img = first.locator("img[data-diff]")
    img.scroll_into_view_if_needed()
    assert img.evaluate(RED_PIXELS) > 50
    screenshot("student_flow_graded")

    page.get_by_role("link", name="History", exact=True).click()
    assert "Graded" in page.inner_text("table.submissions")


def test_student_markup_never_runs(site: Site, page: Any, screenshot: Any) -> None:
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    register(page, site, "Mallory <b>Markup</b>")
    assert "Mallory <b>Markup</b>" in page.inner_text(".usernav")
    page.goto(f"{site.url}/assignments/micrograd")
    page.fill("#source", HOSTILE.read_text(encoding="utf-8"))  # the paste path
    page.click("#submit")
    page.wait_for_url(re.compile(r".*/submissions/\d+$"))
    site.start_worker()
    page.wait_for_selector("#summary", timeout=120_000)
    page.evaluate("document.querySelectorAll('#results details').forEach(d => d.open = true)")
    text = page.inner_text("#results")
    assert "<script>alert(1)</script>" in text          # op names, shown as text
    assert '<script>alert("stdout")</script>' in text   # captured output, as text
    assert '<script>alert("exception")</script>' in text
    assert page.locator("#results script, #results svg, #results [onerror]").count() == 0
    screenshot("student_flow_hostile")
    svg_url = page.locator("img[data-diff]").first.get_attribute("src")
    page.goto(f"{site.url}{svg_url}")  # the diff opened on its own: still only a picture
    page.wait_for_timeout(300)
    assert dialogs == []
