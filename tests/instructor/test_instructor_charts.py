"""Server-side SVG charts: well-formed, axes and labels present, values written, escaped."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta

from grader import charts
from grader.stats import Bin, Bucket

NS = "{http://www.w3.org/2000/svg}"


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{NS}svg" and root.get("role") == "img"
    return root


def texts(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter(f"{NS}text")]


def bars(root: ET.Element) -> list[ET.Element]:
    return [r for r in root.iter(f"{NS}rect") if "bar" in (r.get("class") or "")]


def test_nice_ticks() -> None:
    assert charts.ticks_to(13, 5, integer=True) == [0, 5, 10, 15]
    assert charts.ticks_to(100, 5) == [0, 20, 40, 60, 80, 100]
    assert charts.ticks_to(1, 5, integer=True) == [0, 1]
    assert charts.ticks_to(0.3, 5) == [0, 0.1, 0.2, 0.3]
    assert charts.fmt_num(2.0) == "2" and charts.fmt_num(0.25) == "0.25"


def test_histogram_has_axes_ticks_and_counts() -> None:
    bins = [Bin(0, 5, 2), Bin(5, 10, 13)]
    root = parse(charts.histogram(bins, "Best score", x_label="score (of 10)"))
    words = texts(root)
    assert words[0] == "Best score" and root.find(f"{NS}title").text == "Best score"
    assert "score (of 10)" in words and "students" in words          # axis titles
    assert {"0", "5", "10", "15"} <= set(words)                      # y ticks and x edges
    assert "13" in words and "2" in words                             # counts on the bars
    heights = [float(r.get("height")) for r in bars(root)]
    assert len(heights) == 2 and heights[1] == max(heights) and heights[0] > 0


def test_bar_chart_writes_each_value_and_escapes_labels() -> None:
    hostile = '<script>x()</script> & "q"'
    svg = charts.bar_chart([charts.Bar(hostile, 50.0, "50% (2/4)", href="/x?a=1&b=2"),
                            charts.Bar("neuron", 100.0, "100% (4/4)")], "Pass rate")
    assert "<script>" not in svg
    root = parse(svg)
    words = texts(root)
    assert "50% (2/4)" in words and "100% (4/4)" in words and "neuron" in words
    assert hostile in words                     # shown as text, not markup
    assert "0%" in words and "100%" in words    # x axis ticks
    widths = [float(r.get("width")) for r in bars(root)]
    assert abs(widths[1] - 2 * widths[0]) < 0.01
    link = root.find(f"{NS}a")
    assert link is not None and link.get("href") == "/x?a=1&b=2"


def test_bar_chart_empty_says_so() -> None:
    root = parse(charts.bar_chart([], "Mistakes", empty="no mistakes yet"))
    assert "no mistakes yet" in texts(root) and not bars(root)


def test_time_series_marks_the_deadline_and_stacks_late() -> None:
    t0 = datetime(2027, 3, 1, tzinfo=UTC)
    buckets = [Bucket(t0 + timedelta(days=i), on, late)
               for i, (on, late) in enumerate([(3, 0), (5, 0), (1, 2)])]
    root = parse(charts.time_series(buckets, timedelta(days=1), "Submissions",
                                    marks=(("deadline", t0 + timedelta(days=2)),
                                           ("late window ends", None))))
    words = texts(root)
    assert "deadline" in words and "late window ends" not in words
    assert {"Mar 01", "Mar 02", "Mar 03"} <= set(words)
    assert "on time" in words and "late" in words and "submissions" in words
    late = [r for r in bars(root) if "late" in r.get("class")]
    assert len(late) == 1 and len(bars(root)) == 4
    mark = next(line for line in root.iter(f"{NS}line") if line.get("class") == "mark")
    first_bar_x = float(bars(root)[0].get("x")) - 1
    slot = float(bars(root)[1].get("x")) - 1 - first_bar_x
    assert abs(float(mark.get("x1")) - (first_bar_x + 2 * slot)) < 0.2


def test_time_series_with_no_data_is_still_a_chart() -> None:
    root = parse(charts.time_series([], timedelta(hours=1), "Submissions"))
    assert "Submissions" in texts(root)


def test_time_series_mark_labels_stay_inside_the_chart() -> None:
    t0 = datetime(2027, 3, 1, tzinfo=UTC)
    buckets = [Bucket(t0 + timedelta(hours=6 * i), 1, 0) for i in range(24)]
    width = 880
    root = parse(charts.time_series(buckets, timedelta(hours=6), "Submissions", width=width,
                                    marks=(("opened", t0),
                                           ("deadline", t0 + timedelta(days=3)),
                                           ("late window ends", t0 + timedelta(days=6)))))
    labels = {t.text: t for t in root.iter(f"{NS}text")
              if t.text in ("opened", "deadline", "late window ends")}
    assert labels["deadline"].get("text-anchor") == "middle"
    for name, t in labels.items():       # the extent of each label, at 7.5 px a character
        x, extent = float(t.get("x")), len(name) * 7.5
        lo, hi = {"start": (x, x + extent), "end": (x - extent, x),
                  "middle": (x - extent / 2, x + extent / 2)}[t.get("text-anchor")]
        assert lo >= 0 and hi <= width, (name, t.get("text-anchor"), lo, hi)
    assert labels["late window ends"].get("text-anchor") == "end"
