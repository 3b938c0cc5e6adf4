"""Server-side SVG charts: histogram, horizontal bar chart, time series.

Real plots with axes, ticks, axis titles and the value written on every bar, so they
read without hovering and without JavaScript. Every text is escaped; the output is a
standalone `<svg>` element to inline in a page.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from html import escape

from grader.stats import Bin, Bucket

log = logging.getLogger(__name__)

FONT = "font-family=\"system-ui, -apple-system, 'Segoe UI', sans-serif\""
INK, GRID, MUTED = "#1f2933", "#e4e7eb", "#616e7c"
BLUE, ORANGE, RED, GREEN = "#2f6fde", "#e8892b", "#d64545", "#2f9e6e"


@dataclass(frozen=True)
class Bar:
    """One horizontal bar: label, value, the text written after it, an optional link."""

    label: str
    value: float
    text: str
    href: str | None = None
    color: str = BLUE


def nice_step(top: float, ticks: int = 5) -> float:
    """A 1/2/5 x 10^k step giving about `ticks` ticks up to `top`."""
    if top <= 0:
        return 1.0
    raw = top / ticks
    mag = 10 ** math.floor(math.log10(raw))
    return next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)


def ticks_to(top: float, ticks: int = 5, integer: bool = False) -> list[float]:
    """Tick values from 0 to at least `top`."""
    step = nice_step(top, ticks)
    if integer:
        step = max(1.0, math.ceil(step))
    n = max(1, math.ceil(top / step - 1e-9))
    return [round(i * step, 10) for i in range(n + 1)]


def fmt_num(x: float) -> str:
    """A tick or value label: integers plainly, else up to two decimals."""
    return f"{x:.0f}" if abs(x - round(x)) < 1e-9 else f"{x:.2f}".rstrip("0").rstrip(".")


def _svg(width: int, height: int, title: str, body: list[str], chart_id: str) -> str:
    tid = f"{chart_id}-title"
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="{escape(chart_id)}" '
            f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
            f'aria-labelledby="{escape(tid)}" {FONT} font-size="12">'
            f'<title id="{escape(tid)}">{escape(title)}</title>'
            f'<text x="{width / 2:.1f}" y="18" text-anchor="middle" font-size="14" '
            f'font-weight="600" fill="{INK}">{escape(title)}</text>'
            + "".join(body) + "</svg>")


def _text(x: float, y: float, s: str, anchor: str = "middle", fill: str = INK,
          extra: str = "") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" fill="{fill}"{extra}>'
            f"{escape(s)}</text>")


def _edge_text(x: float, y: float, s: str, width: float, fill: str = INK,
               extra: str = "", char_px: float = 7.5) -> str:
    """A label centred on x, or ending (starting) there when centring would cross the
    chart's right (left) edge; `char_px` is a generous width of one character."""
    half = len(s) * char_px / 2
    if x + half > width - 4:
        return _text(min(x, width - 4), y, s, "end", fill, extra)
    if x - half < 4:
        return _text(max(x, 4), y, s, "start", fill, extra)
    return _text(x, y, s, "middle", fill, extra)


def _y_axis(left: float, top: float, bottom: float, right: float, ticks: list[float],
            label: str) -> list[str]:
    """Horizontal grid lines with tick labels, and the rotated axis title."""
    out, span = [], ticks[-1] or 1.0
    for t in ticks:
        y = bottom - (bottom - top) * t / span
        out.append(f'<line x1="{left:.1f}" x2="{right:.1f}" y1="{y:.1f}" y2="{y:.1f}" '
                   f'stroke="{GRID}"/>')
        out.append(_text(left - 6, y + 4, fmt_num(t), "end", MUTED))
    mid = (top + bottom) / 2
    out.append(_text(14, mid, label, "middle", MUTED,
                     f' transform="rotate(-90 14 {mid:.1f})"'))
    out.append(f'<line x1="{left:.1f}" x2="{left:.1f}" y1="{top:.1f}" y2="{bottom:.1f}" '
               f'stroke="{MUTED}"/>')
    return out


def histogram(bins: Sequence[Bin], title: str, x_label: str = "score",
              y_label: str = "students", chart_id: str = "histogram",
              width: int = 560, height: int = 280) -> str:
    """Vertical bars over [lo, hi) score bins, count written on each bar."""
    left, right, top, bottom = 56.0, width - 16.0, 36.0, height - 48.0
    top_count = max([b.count for b in bins] + [1])
    ticks = ticks_to(top_count, 5, integer=True)
    body = _y_axis(left, top, bottom, right, ticks, y_label)
    n = max(1, len(bins))
    slot = (right - left) / n
    for i, b in enumerate(bins):
        h = (bottom - top) * b.count / ticks[-1]
        x = left + i * slot
        body.append(f'<rect class="bar" x="{x + 2:.1f}" y="{bottom - h:.1f}" '
                    f'width="{slot - 4:.1f}" height="{h:.1f}" fill="{BLUE}">'
                    f"<title>{escape(f'{fmt_num(b.lo)}–{fmt_num(b.hi)}: {b.count}')}</title>"
                    "</rect>")
        if b.count:
            body.append(_text(x + slot / 2, bottom - h - 4, str(b.count)))
        body.append(_text(x, bottom + 16, fmt_num(b.lo), "middle", MUTED))
    if bins:
        body.append(_text(right, bottom + 16, fmt_num(bins[-1].hi), "middle", MUTED))
    body.append(f'<line x1="{left:.1f}" x2="{right:.1f}" y1="{bottom:.1f}" y2="{bottom:.1f}" '
                f'stroke="{MUTED}"/>')
    body.append(_text((left + right) / 2, height - 10, x_label, "middle", MUTED))
    return _svg(width, height, title, body, chart_id)


def bar_chart(bars: Sequence[Bar], title: str, top: float = 100.0, unit: str = "%",
              x_label: str = "", chart_id: str = "bars", width: int = 560,
              label_width: int = 220, empty: str = "nothing to show yet") -> str:
    """Horizontal bars with their label on the left and `text` at the bar's end."""
    row, head, foot = 26.0, 34.0, 44.0
    height = int(head + foot + row * max(1, len(bars)))
    left, right, bottom = float(label_width), width - 96.0, head + row * max(1, len(bars))
    top = max([top] + [b.value for b in bars])
    ticks = ticks_to(top, 5)
    span = ticks[-1] or 1.0
    body = []
    for t in ticks:
        x = left + (right - left) * t / span
        body.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{head:.1f}" y2="{bottom:.1f}" '
                    f'stroke="{GRID}"/>')
        body.append(_text(x, bottom + 16, fmt_num(t) + unit, "middle", MUTED))
    if not bars:
        body.append(_text((left + right) / 2, head + row / 2 + 4, empty, "middle", MUTED))
    for i, b in enumerate(bars):
        y = head + i * row
        w = (right - left) * max(0.0, b.value) / span
        label = b.label if len(b.label) <= 34 else b.label[:33] + "…"
        text = _text(left - 8, y + row / 2 + 4, label, "end")
        if b.href:
            text = f'<a href="{escape(b.href)}">{text}</a>'
        body.append(text)
        body.append(f'<rect class="bar" x="{left:.1f}" y="{y + 4:.1f}" width="{w:.1f}" '
                    f'height="{row - 8:.1f}" fill="{b.color}"><title>{escape(b.label)}: '
                    f"{escape(b.text)}</title></rect>")
        body.append(_text(left + w + 6, y + row / 2 + 4, b.text, "start"))
    body.append(f'<line x1="{left:.1f}" x2="{left:.1f}" y1="{head:.1f}" y2="{bottom:.1f}" '
                f'stroke="{MUTED}"/>')
    if x_label:
        body.append(_text((left + right) / 2, height - 8, x_label, "middle", MUTED))
    return _svg(width, height, title, body, chart_id)


def _time_label(t: datetime, width: timedelta) -> str:
    return t.strftime("%b %d") if width >= timedelta(days=1) else t.strftime("%b %d %H:%M")


def time_series(buckets: Sequence[Bucket], width_td: timedelta, title: str,
                marks: Sequence[tuple[str, datetime | None]] = (),
                y_label: str = "submissions", chart_id: str = "timeline",
                width: int = 880, height: int = 300) -> str:
    """Stacked on-time/late bars per time bucket, with labelled vertical lines at `marks`."""
    left, right, top, bottom = 56.0, width - 16.0, 48.0, height - 56.0
    top_count = max([b.total for b in buckets] + [1])
    ticks = ticks_to(top_count, 5, integer=True)
    body = _y_axis(left, top, bottom, right, ticks, y_label)
    n = max(1, len(buckets))
    slot = (right - left) / n
    start = buckets[0].start if buckets else None
    for i, b in enumerate(buckets):
        x = left + i * slot
        h_on = (bottom - top) * b.on_time / ticks[-1]
        h_late = (bottom - top) * b.late / ticks[-1]
        tip = escape(f"{_time_label(b.start, width_td)}: {b.on_time} on time, {b.late} late")
        body.append(f'<rect class="bar" x="{x + 1:.1f}" y="{bottom - h_on:.1f}" '
                    f'width="{max(1.0, slot - 2):.1f}" height="{h_on:.1f}" fill="{BLUE}">'
                    f"<title>{tip}</title></rect>")
        if b.late:
            body.append(f'<rect class="bar late" x="{x + 1:.1f}" '
                        f'y="{bottom - h_on - h_late:.1f}" width="{max(1.0, slot - 2):.1f}" '
                        f'height="{h_late:.1f}" fill="{ORANGE}"><title>{tip}</title></rect>')
        if b.total and slot >= 14:
            body.append(_text(x + slot / 2, bottom - h_on - h_late - 4, str(b.total),
                              extra=' font-size="10"'))
    every = max(1, math.ceil(n / 8))
    for i in range(0, len(buckets), every):
        x = left + i * slot
        body.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{bottom:.1f}" y2="{bottom + 4:.1f}" '
                    f'stroke="{MUTED}"/>')
        body.append(_text(x, bottom + 17, _time_label(buckets[i].start, width_td), "middle",
                          MUTED, ' font-size="11"'))
    body.append(f'<line x1="{left:.1f}" x2="{right:.1f}" y1="{bottom:.1f}" y2="{bottom:.1f}" '
                f'stroke="{MUTED}"/>')
    if start is not None:
        total = width_td * n
        for j, (label, when) in enumerate(marks):
            if when is None:
                continue
            x = left + (right - left) * ((when - start) / total)
            body.append(f'<line class="mark" x1="{x:.1f}" x2="{x:.1f}" y1="{top - 6:.1f}" '
                        f'y2="{bottom:.1f}" stroke="{RED}" stroke-width="2" '
                        'stroke-dasharray="5 3"/>')
            body.append(_edge_text(x, top - 10 - 12 * (j % 2), label, width, RED,
                                   ' font-weight="600"'))
    body.append(f'<rect x="{right - 190:.1f}" y="{height - 22:.1f}" width="10" height="10" '
                f'fill="{BLUE}"/>')
    body.append(_text(right - 176, height - 13, "on time", "start", MUTED))
    body.append(f'<rect x="{right - 110:.1f}" y="{height - 22:.1f}" width="10" height="10" '
                f'fill="{ORANGE}"/>')
    body.append(_text(right - 96, height - 13, "late", "start", MUTED))
    per = _time_label(start, width_td) if start else ""
    step = (f"{int(width_td.total_seconds() // 3600)} h" if width_td < timedelta(days=1)
            else f"{width_td.days} d")
    body.append(_text(left, height - 13, f"one bar = {step}" + (f", from {per} UTC" if per
                                                                  else ""), "start", MUTED))
    return _svg(width, height, title, body, chart_id)
