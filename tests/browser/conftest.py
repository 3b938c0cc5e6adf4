"""Headless Chromium through Playwright: a session-wide `browser` and a fresh `page` per test.

Uses the system Chromium (never `playwright install`). Screenshots go under
`test-artifacts/screenshots/` (see `screenshot`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test in this folder drives the browser."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    """One headless Chromium for the whole session."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                      headless=True)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: object) -> Iterator[object]:
    """A fresh page in its own context (no cookies or storage shared between tests)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})  # type: ignore[attr-defined]
    pg = context.new_page()
    yield pg
    context.close()


@pytest.fixture
def screenshot(page: object, request: pytest.FixtureRequest):
    """`screenshot(name=None)` saves a full-page PNG under test-artifacts/screenshots/."""

    def take(name: str | None = None) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", name or request.node.name)
        path = SCREENSHOTS / f"{stem}.png"
        page.screenshot(path=str(path), full_page=True)  # type: ignore[attr-defined]
        return path

    return take
