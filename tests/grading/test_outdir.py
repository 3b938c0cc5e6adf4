"""`micrograde grade FILE --out DIR`: report.json, NAME.svg per exercise and index.html."""

from __future__ import annotations

import html.parser
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from exercises import EXERCISES
from grader.cli import cli
from grader.grading import outdir
from grader.grading.report import Report, invalid
from grader.grading.verdicts import WARNINGS

BUGS = Path(__file__).resolve().parents[1] / "fixtures" / "submissions" / "bugs"


class Tags(html.parser.HTMLParser):
    """Collects every start tag and attribute name of an HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs += [name for name, _ in attrs]


def run_cli(*args: str) -> tuple[int, str]:
    """Run `micrograde` in-process; exit code and stdout."""
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout


@pytest.fixture(scope="module")
def hostile_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """--out for a submission whose op names and output are markup."""
    out = tmp_path_factory.mktemp("hostile")
    code, _ = run_cli("grade", str(BUGS / "hostile_labels.py"), "--seed", "3", "-k", "1",
                      "--json", "--out", str(out))
    assert code == 1
    return out


def test_out_writes_report_svgs_and_index(hostile_out: Path) -> None:
    report = json.loads((hostile_out / "report.json").read_text())
    assert report["schema"] == "micrograde.report/1" and report["status"] == "graded"
    names = [e["name"] for e in report["exercises"]]
    assert names == list(EXERCISES)
    for name in names:
        ET.fromstring((hostile_out / f"{name}.svg").read_text())   # well-formed SVG
    assert all("<svg" not in json.dumps(e) for e in report["exercises"])  # DOT only
    page = (hostile_out / "index.html").read_text()
    for name in names:
        assert f'id="ex-{name}"' in page and f'href="{name}.svg"' in page
    assert page.count("<svg") == len(names)


def test_index_has_no_active_content_from_the_submission(hostile_out: Path) -> None:
    page = (hostile_out / "index.html").read_text()
    parser = Tags()
    parser.feed(page)
    assert "script" not in parser.tags and "img" not in parser.tags
    assert not [a for a in parser.attrs if a.startswith("on")]
    assert "&lt;script&gt;alert(3)&lt;/script&gt;" in page      # stdout, shown as text
    assert "alert(1)" in page                                   # the op name, as SVG text
    assert "Content-Security-Policy" in page


def test_index_shows_diagnosis_hints_tables(hostile_out: Path) -> None:
    page = (hostile_out / "index.html").read_text()
    report = json.loads((hostile_out / "report.json").read_text())
    expression = report["exercises"][0]
    assert expression["diagnosis"]["cause"] == "local_derivative"
    assert "wrong local derivative" in page
    assert "Replay it: <code>micrograde grade hostile_labels.py --seed 3 --exercise" in page
    assert 'class="nodes"' in page and 'class="params"' in page and 'class="ops"' in page
    assert page.count('<li class="hint">') == sum(len(e["hints"]) for e in report["exercises"])


def test_index_shows_each_exercise_warning_as_text(hostile_out: Path) -> None:
    report = json.loads((hostile_out / "report.json").read_text())
    page = (hostile_out / "index.html").read_text()
    neuron = page[page.index('id="ex-neuron"'):page.index('id="ex-mlp_step"')]
    assert report["exercises"][2]["warnings"] == [WARNINGS["tanh_overflow"],
                                                  WARNINGS["double_backward"]]
    assert neuron.count('<li class="warning">') == 2
    assert "calling <code>backward()</code> twice" in neuron
    assert "<code>Value(400.0).tanh()</code> overflows" in neuron


def test_json_stdout_is_still_one_document(tmp_path: Path) -> None:
    code, stdout = run_cli("grade", str(BUGS / "unseeded.py"), "--exercise", "expression",
                           "--json", "--out", str(tmp_path))
    assert code == 1
    assert json.loads(stdout)["exercises"][0]["diagnosis"]["cause"] == "unseeded"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["expression.svg", "index.html",
                                                          "report.json"]


def test_invalid_submission_page(tmp_path: Path) -> None:
    report = invalid(1, "syntax_error", "SyntaxError: invalid syntax (line 3)", line=3)
    written = outdir.write(report, tmp_path)
    assert [p.name for p in written] == ["report.json", "index.html"]
    page = (tmp_path / "index.html").read_text()
    assert "Not graded: syntax_error" in page and "(line 3)" in page


def test_a_diff_that_cannot_render_is_left_out(tmp_path: Path) -> None:
    from grader.grading.report import ExerciseResult

    report = Report(status="graded", seed=1, exercises=[ExerciseResult(
        name="expression", title="t", verdict="passed", score=2, max_score=2, message="ok",
        diff_dot="digraph { this is not dot")])
    written = outdir.write(report, tmp_path)
    assert [p.name for p in written] == ["report.json", "index.html"]
    assert "<svg" not in (tmp_path / "index.html").read_text()


def test_ticks_escape_before_marking_code() -> None:
    assert str(outdir.ticks("use `+=` not <b>")) == "use <code>+=</code> not &lt;b&gt;"
