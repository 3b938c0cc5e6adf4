"""The graph diff: a draw_dot-style Graphviz graph of one run, expected beside actual.

One record per Value ``{ name | data act (exp) | grad act (exp) }``, a small circle per op,
edges child -> op -> parent, left to right; right nodes green, wrong ones red, nodes missing
from the student's graph dashed. The student's own structure (`_prev`, `_op`) is drawn when
it has one, else the reference's. Every string is escaped for DOT, and Graphviz escapes it
again for SVG, so an op named ``<script>`` is only ever text. Graphs larger than
`MAX_NODES` show the neighbourhood of the node of interest.
"""

from __future__ import annotations

import logging
import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import graphviz

from grader.grading.compare import RunOutcome, close, fmt

log = logging.getLogger(__name__)

MAX_NODES = 60        #: above this, draw a neighbourhood instead of the whole graph
NEIGHBOURHOOD = 30    #: at most this many values in a neighbourhood
MAX_HOPS = 3
MAX_TEXT = 60
MAX_OP = 30          #: op names longer than this are cut (the circle grows with them)
STYLE = {  # status -> (fill, border)
    "ok": ("#e8f5e9", "#2e7d32"),
    "wrong": ("#ffcdd2", "#c62828"),
    "unknown": ("#f5f5f5", "#9e9e9e"),
    "other": ("#eceff1", "#90a4ae"),
}
RECORD_SPECIAL = set('\\"{}|<>')


def clean(text: Any, limit: int = MAX_TEXT) -> str:
    """Printable text on one line, whitespace collapsed, at most `limit` characters."""
    s = "".join(ch if ch.isprintable() else " " for ch in str(text))
    s = " ".join(s.split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def escape_record(text: Any) -> str:
    """`text` as one field of a quoted DOT record label (a literal, nothing special)."""
    return "".join("\\" + ch if ch in RECORD_SPECIAL else "&amp;" if ch == "&" else ch
                   for ch in clean(text))


def escape_label(text: Any, limit: int = MAX_TEXT) -> str:
    """`text` as a quoted DOT label (no ``\\N``-style escapes, no entities)."""
    return "".join("\\" + ch if ch in '\\"' else "&amp;" if ch == "&" else ch
                   for ch in clean(text, limit))


@dataclass
class Vertex:
    """One Value in the drawing."""

    key: str
    tagged: bool
    op: str = ""
    children: list[str] = field(default_factory=list)
    exp: dict[str, float] | None = None
    act: dict[str, float] | None = None
    updated: tuple[float, float | None] | None = None   #: (expected, actual) after SGD
    status: str = "other"
    dashed: bool = False


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None


def _field(name: str, act: float | None, exp: float | None) -> str:
    if exp is None:
        return f"{name} {fmt(act)}"
    if act is None:
        return f"{name} {fmt(exp)}"
    if close(act, exp):
        return f"{name} {fmt(act)}"
    return f"{name} {fmt(act)} (exp {fmt(exp)})"


class Drawing:
    """The vertices of one run's diff, in a deterministic order."""

    def __init__(self, run: RunOutcome) -> None:
        exp, act = run.expected, run.actual
        self.student = bool(act and act.get("has_structure") and isinstance(
            act.get("nodes"), dict) and act["nodes"])
        src = act if self.student else exp
        self.struct = src.get("nodes") if isinstance(src.get("nodes"), dict) else {}
        self.extra = src.get("extra") if isinstance(src.get("extra"), dict) else {}
        struct, extra = self.struct, self.extra
        self.order = {name: i for i, name in enumerate(exp["data"])}
        self.output = str(src.get("output") or exp["output"])
        self.v: dict[str, Vertex] = {}
        wrong = set(run.data_wrong) | set(run.grad_wrong) | set(run.update_wrong)
        for key in self._walk(self.output):
            raw = struct.get(key) if isinstance(struct.get(key), dict) else {}
            kids = [str(k) for k in raw.get("children") or [] if isinstance(k, str)]
            op = raw.get("op") if isinstance(raw.get("op"), str) else None
            self.v[key] = self._vertex(key, op, kids, run, extra, wrong)
        for key in exp["nodes"]:  # tagged values the student's graph does not reach
            if key in self.order and key not in self.v:
                vert = self._vertex(key, None, [], run, {}, wrong)
                vert.dashed = True
                self.v[key] = vert
        self.dashed_edges = [(kid, key) for key, node in exp["nodes"].items()
                             for kid in node["children"] if kid in self.v and key in self.v
                             and (self.v[kid].dashed or self.v[key].dashed)]

    def _sort_key(self, key: str) -> tuple:
        """Tagged values in build order first, then the others by op and value."""
        if key in self.order:
            return (0, self.order[key], "", 0.0)
        raw = self.struct.get(key) if isinstance(self.struct.get(key), dict) else {}
        nums = self.extra.get(key) if isinstance(self.extra.get(key), dict) else {}
        data = _num(nums.get("data"))
        return (1, 0, str(raw.get("op") or ""), data if data is not None else math.inf)

    def _walk(self, root: str) -> list[str]:
        """Post-order from the output (children first), children in a stable order."""
        seen: set[str] = set()
        out: list[str] = []
        stack: list[tuple[str, bool]] = [(root, False)]
        while stack:
            key, done = stack.pop()
            if done:
                out.append(key)
                continue
            if key in seen:
                continue
            seen.add(key)
            stack.append((key, True))
            raw = self.struct.get(key) if isinstance(self.struct.get(key), dict) else {}
            kids = sorted({k for k in raw.get("children") or [] if isinstance(k, str)},
                          key=self._sort_key, reverse=True)
            stack.extend((k, False) for k in kids if k not in seen)
        return out

    def _vertex(self, key: str, op: str | None, kids: list[str], run: RunOutcome,
                extra: dict[str, Any], wrong: set[str]) -> Vertex:
        exp, act = run.expected, run.actual
        if key in self.order:
            vert = Vertex(key, True, children=kids,
                          exp={"data": exp["data"][key], "grad": exp["grad"][key]})
            ref_op = (exp["nodes"].get(key) or {}).get("op") or ""
            vert.op = op if op is not None else ref_op
            if act is not None:
                vert.act = {k: _num((act.get(k) or {}).get(key)) for k in ("data", "grad")}
                vert.status = "wrong" if key in wrong else "ok"
            else:
                vert.status = "unknown"
            if key in exp.get("updated", {}):
                got = _num((act or {}).get("updated", {}).get(key)) if act else None
                vert.updated = (exp["updated"][key], got)
            return vert
        nums = extra.get(key) if isinstance(extra.get(key), dict) else {}
        vals = {k: _num(nums.get(k)) for k in ("data", "grad")}
        vert = Vertex(key, False, op or "", kids)
        if self.student:
            vert.act = vals
        else:
            vert.exp = vals
        return vert

    def edges(self, keys: set[str]) -> Iterable[tuple[str, str, bool]]:
        """(child, parent, dashed) for every edge between the given vertices."""
        for key, vert in self.v.items():
            for kid in vert.children:
                if key in keys and kid in keys:
                    yield kid, key, False
        for kid, key in self.dashed_edges:
            if key in keys and kid in keys:
                yield kid, key, True

    def neighbourhood(self, centre: str) -> list[str]:
        """The vertices within a few hops of `centre`, in drawing order."""
        adj: dict[str, set[str]] = {k: set() for k in self.v}
        for kid, key, _ in self.edges(set(self.v)):
            adj[kid].add(key)
            adj[key].add(kid)
        keep, ring = {centre}, [centre]
        for _ in range(MAX_HOPS):
            nxt = sorted({n for k in ring for n in adj[k]} - keep,
                         key=self._sort_key)
            if len(keep) + len(nxt) > NEIGHBOURHOOD and len(keep) > 1:
                break
            keep.update(nxt[: NEIGHBOURHOOD - len(keep)])
            ring = nxt
        return [k for k in self.v if k in keep]


def _record(vert: Vertex, name: str) -> str:
    a, e = vert.act or {}, vert.exp or {}
    fields = [escape_record(name),
              escape_record(_field("data", a.get("data"), e.get("data"))),
              escape_record(_field("grad", a.get("grad"), e.get("grad")))]
    if vert.updated is not None:
        fields.append(escape_record(_field("after step", vert.updated[1], vert.updated[0])))
    return "{ " + " | ".join(fields) + " }"


def diff_dot(run: RunOutcome, *, highlight: str | None = None, title: str = "") -> str:
    """The DOT source of one run's diff; a neighbourhood of `highlight` for large graphs."""
    d = Drawing(run)
    keys = list(d.v)
    note = ""
    if len(keys) > MAX_NODES:
        centre = highlight if highlight in d.v else next(
            (k for k in keys if d.v[k].status == "wrong"), d.output)
        keys = d.neighbourhood(centre)
        note = f"the {len(keys)} values around {centre} (of {len(d.v)})"
    ids = {k: f"v{i}" for i, k in enumerate(keys)}
    label = " · ".join(escape_label(t) for t in (title, note) if t)
    lines = ["digraph diff {",
             f'  graph [rankdir=LR, fontname="Helvetica", fontsize=11, labelloc=t, '
             f'labeljust=l, label="{label}"];',
             '  node [fontname="Helvetica", fontsize=10];',
             '  edge [color="#607d8b", arrowsize=0.6];']
    with_op = {p for _, p, _ in d.edges(set(keys))}
    for k in keys:
        vert, vid = d.v[k], ids[k]
        fill, border = STYLE[vert.status]
        style = "filled,dashed" if vert.dashed else "filled"
        classes = f"mg-node mg-{'missing' if vert.dashed else vert.status}"
        extra = ""
        if k == highlight:
            classes += " mg-culprit"
            extra = ", penwidth=2.5"
        name = k if vert.tagged else ""
        lines.append(f'  {vid} [shape=record, id="{vid}", class="{classes}", style="{style}", '
                     f'fillcolor="{fill}", color="{border}"{extra}, '
                     f'label="{_record(vert, name)}"];')
        if k in with_op:
            dash = ', style="dashed"' if vert.dashed else ""
            op = escape_label(vert.op or " ", MAX_OP)
            lines.append(f'  {vid}op [shape=circle, id="{vid}op", class="mg-op", '
                         f'label="{op}", fontsize=9, margin=0.02, width=0.3{dash}];')
            lines.append(f"  {vid}op -> {vid}{' [style=dashed]' if vert.dashed else ''};")
    for kid, key, dashed in d.edges(set(keys)):
        lines.append(f"  {ids[kid]} -> {ids[key]}op{' [style=dashed]' if dashed else ''};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render_svg(dot: str) -> str:
    """SVG text of a DOT graph, rendered by the real `dot`."""
    return graphviz.Source(dot).pipe(format="svg", encoding="utf-8")


def inline_svg(svg: str) -> str:
    """An SVG document as an element to embed in HTML (no prolog, doctype or comments)."""
    svg = re.sub(r"<\?xml[^>]*\?>|<!DOCTYPE[^>]*>|<!--.*?-->", "", svg, flags=re.S)
    return svg.strip()


def safe_svg(svg: str) -> bool:
    """True when the SVG is only drawing: no script, handler, link or foreign content."""
    try:
        root = ET.fromstring(svg)
    except ET.ParseError:
        return False
    for el in root.iter():
        tag = str(el.tag).rsplit("}", 1)[-1].lower()
        if tag in ("script", "foreignobject", "iframe", "object", "embed", "use", "image"):
            return False
        for attr, value in el.attrib.items():
            name = attr.rsplit("}", 1)[-1].lower()
            if name.startswith("on") or (name == "href" and not value.startswith("#")):
                return False
    return True
