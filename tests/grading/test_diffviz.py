"""The graph diff: golden DOT, escaping of hostile strings, real `dot` for every exercise."""

from __future__ import annotations

import copy
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reference
from exercises import EXERCISES
from grader.grading import diffviz
from grader.grading.compare import RunOutcome, compare_run
from grader.grading.pipeline import grade
from worker import harness

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "golden"
SUBMISSIONS = Path(__file__).resolve().parents[1] / "fixtures" / "submissions"
SVG = "{http://www.w3.org/2000/svg}"
HOSTILE_OP = '<script>alert(1)</script>'
NASTY_OP = '|{}"\\ \\N &amp; <b>'


def reference_run(name: str, graph: int = 0) -> RunOutcome:
    """A run of an exercise's canonical instance whose 'actual' is the reference itself."""
    ex = EXERCISES[name]
    params = ex.params(ex.canonical) if ex.params else None
    exp = harness.capture(reference.Value, ex.graphs[graph].build, ex.canonical, ex.lr, params)
    return RunOutcome(0, ex.graphs[graph].name, exp, copy.deepcopy(exp))


def buggy_expression() -> RunOutcome:
    """expression with hostile op names, two wrong grads and `c` missing from the graph."""
    run = reference_run("expression")
    act = run.actual
    assert act is not None
    act["nodes"]["e"]["op"] = HOSTILE_OP
    act["nodes"]["d"]["op"] = NASTY_OP
    act["nodes"]["d"]["children"] = ["e"]      # the student's `+` forgot `c`
    act["grad"]["a"], act["grad"]["b"] = 12.0, 8.0
    compare_run(run)
    return run


def svg_texts(svg: str) -> list[str]:
    """Every text element of an SVG, in document order."""
    return [t.text or "" for t in ET.fromstring(svg).iter(f"{SVG}text")]


def node_classes(svg: str) -> dict[str, str]:
    """SVG node group id -> its class attribute."""
    return {g.get("id", ""): g.get("class", "") for g in ET.fromstring(svg).iter(f"{SVG}g")
            if "node" in g.get("class", "").split()}


def test_expression_dot_matches_golden() -> None:
    dot = diffviz.diff_dot(buggy_expression(), highlight="e",
                           title="expression: L · canonical instance")
    golden = GOLDEN / "expression.dot"
    if os.environ.get("MICROGRADE_UPDATE_GOLDEN"):
        golden.write_text(dot, encoding="utf-8")
    assert dot == golden.read_text(encoding="utf-8")


def test_expression_dot_is_deterministic_and_coloured() -> None:
    dots = {diffviz.diff_dot(buggy_expression(), highlight="e") for _ in range(3)}
    assert len(dots) == 1
    dot = dots.pop()
    lines = {m.group(1): line for line in dot.splitlines()
             if (m := re.search(r'label="\{ ([^ |]*) \|', line))}
    assert 'fillcolor="#ffcdd2"' in lines["a"] and "grad 12 (exp 6)" in lines["a"]
    assert 'fillcolor="#e8f5e9"' in lines["f"] and "(exp" not in lines["f"]
    assert 'style="filled,dashed"' in lines["c"]
    assert "mg-culprit" in lines["e"] and "penwidth" in lines["e"]
    assert "rankdir=LR" in dot


def test_hostile_op_names_render_as_text_only() -> None:
    svg = diffviz.render_svg(diffviz.diff_dot(buggy_expression()))
    root = ET.fromstring(svg)
    assert not [el for el in root.iter() if el.tag.endswith("script")]
    texts = svg_texts(svg)
    assert HOSTILE_OP in texts
    assert " ".join(NASTY_OP.split()) in [" ".join(t.split()) for t in texts]
    assert diffviz.safe_svg(svg)
    assert "<script" not in diffviz.inline_svg(svg)


def test_safe_svg_rejects_active_content() -> None:
    ok = diffviz.render_svg("digraph { a; }")
    assert diffviz.safe_svg(ok)
    assert not diffviz.safe_svg(ok.replace("<title>", '<script>x()</script><title>', 1))
    assert not diffviz.safe_svg(ok.replace('class="graph"', 'class="graph" onload="x()"'))
    assert not diffviz.safe_svg("<svg")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)),
               max_size=30))
def test_any_op_name_gives_valid_svg_showing_it_literally(op: str) -> None:
    run = reference_run("expression")
    assert run.actual is not None
    run.actual["nodes"]["L"]["op"] = op
    compare_run(run)
    svg = diffviz.render_svg(diffviz.diff_dot(run))
    assert diffviz.safe_svg(svg)
    shown = diffviz.clean(op, diffviz.MAX_OP)
    if shown.strip():
        assert shown in [" ".join(t.replace("\xa0", " ").split()) for t in svg_texts(svg)]


def test_without_structure_the_reference_graph_is_drawn() -> None:
    run = reference_run("operators", graph=2)      # a - b = a + (b * -1) in the reference
    assert run.actual is not None
    run.actual.update(nodes={}, has_structure=False)
    dot = diffviz.diff_dot(run)
    assert dot.count("shape=record") == len(run.expected["nodes"]) == 5
    assert "exp" not in dot


def test_run_without_numbers_is_drawn_grey() -> None:
    run = reference_run("neuron")
    run.actual = None
    run.missing = ["tanh"]
    dot = diffviz.diff_dot(run)
    assert "mg-unknown" in dot and "mg-wrong" not in dot and "mg-ok" not in dot


@pytest.fixture(scope="module")
def graded() -> dict[str, object]:
    """Real gradings (sandbox) of a correct and two buggy submissions, all exercises."""
    correct = Path(reference.__file__).with_name("engine.py").read_text(encoding="utf-8")
    return {
        "correct": grade(correct, seed=11, k=1),
        "overwrite": grade((SUBMISSIONS / "bugs" / "overwrite.py").read_text(), seed=11, k=1),
        "pow": grade((SUBMISSIONS / "bugs" / "pow_derivative.py").read_text(), seed=11, k=1,
                     exercises=["mlp_step"]),
    }


@pytest.mark.parametrize("which", ["correct", "overwrite"])
def test_every_exercise_renders_with_real_dot(graded: dict, which: str) -> None:
    report = graded[which]
    assert [e.name for e in report.exercises] == list(EXERCISES)
    for ex in report.exercises:
        assert ex.diff_dot, ex.name
        svg = diffviz.render_svg(ex.diff_dot)
        assert diffviz.safe_svg(svg)
        classes = list(node_classes(svg).values())
        records = [c for c in classes if "mg-node" in c]
        assert records, ex.name
        assert len(records) <= diffviz.MAX_NODES
        wrong = [c for c in records if "mg-wrong" in c]
        assert bool(wrong) == (ex.verdict != "passed"), (ex.name, ex.verdict)


def test_large_graph_shows_the_neighbourhood_of_the_culprit(graded: dict) -> None:
    (ex,) = graded["pow"].exercises
    node = ex.diagnosis["node"]
    assert re.fullmatch(r"s\d\.\(yout-ygt\)\*\*2", node)
    records = re.findall(r'label="\{ ([^|]*?) \|', ex.diff_dot)
    assert node in records
    assert len(records) <= diffviz.NEIGHBOURHOOD
    assert f"around {node} (of " in ex.diff_dot
    culprit = [line for line in ex.diff_dot.splitlines() if "mg-culprit" in line]
    assert len(culprit) == 1 and f"{{ {node} |" in culprit[0]
