"""The --out page opened from disk in headless Chromium: red nodes, hints, no scripts."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from grader.cli import cli

BUGS = Path(__file__).resolve().parents[1] / "fixtures" / "submissions" / "bugs"


def write_out(fixture: str, out: Path, *extra: str) -> Path:
    """`micrograde grade FIXTURE --out OUT`; the index.html path."""
    result = CliRunner().invoke(cli, ["grade", str(BUGS / f"{fixture}.py"), "--seed", "8",
                                      "-k", "1", "--out", str(out), *extra])
    assert result.exit_code == 1, result.output
    return out / "index.html"


def texts(locator) -> list[str]:
    """The text of every matched element (SVG elements have no innerText)."""
    return [(t or "").strip() for t in locator.all_text_contents()]


def test_student_finds_the_red_node_and_the_hint(page, screenshot, tmp_path: Path) -> None:
    index = write_out("tanh_derivative", tmp_path)
    page.goto(index.as_uri())
    section = page.locator("#ex-neuron")
    assert "wrong gradient" in section.locator(".verdict").first.inner_text()
    red = section.locator("svg g.mg-wrong")
    assert red.count() >= 1 and red.first.is_visible()
    first_fields = [texts(red.nth(i).locator("text"))[0] for i in range(red.count())]
    assert "n" in first_fields
    n = red.nth(first_fields.index("n"))
    assert "grad 0.223181 (exp 0.5)" in texts(n.locator("text"))
    assert n.locator("polygon").first.get_attribute("fill") == "#ffcdd2"
    culprit = section.locator("svg g.mg-culprit")
    assert culprit.count() == 1 and texts(culprit.locator("text"))[0] == "o"
    hint = section.locator(".hint").first
    assert hint.is_visible()
    assert "The backward of Value.tanh() is wrong" in hint.inner_text()
    assert "tanh(x) at x=0.881374 alone" in section.locator(".shrunk").inner_text()
    section.scroll_into_view_if_needed()
    shot = screenshot("outdir_neuron_tanh_derivative")
    assert shot.exists() and shot.stat().st_size > 10_000


def test_hostile_labels_stay_text(page, screenshot, tmp_path: Path) -> None:
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    index = write_out("hostile_labels", tmp_path, "--exercise", "expression")
    page.goto(index.as_uri())
    page.wait_for_load_state("load")
    ops = texts(page.locator("#ex-expression svg g.mg-op text"))
    assert "<script>alert(1)</script>" in ops
    assert page.locator("script").count() == 0 and page.locator("img").count() == 0
    assert "<script>alert(3)</script>" in page.locator("#ex-expression details pre").last \
        .text_content()
    assert dialogs == []
    screenshot("outdir_hostile_labels")


def test_large_graph_page_shows_neighbourhood_and_parameters(page, tmp_path: Path) -> None:
    index = write_out("pow_derivative", tmp_path, "--exercise", "mlp_step")
    page.goto(index.as_uri())
    section = page.locator("#ex-mlp_step")
    assert 0 < section.locator("svg g.mg-node").count() <= 30
    assert section.locator("table.params tbody tr").count() == 41
    assert texts(section.locator("svg g.mg-culprit text"))[0].endswith("(yout-ygt)**2")
