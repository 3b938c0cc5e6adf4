"""Notebook submissions (SPEC §3): which code survives, which `Value` is graded, limits."""

from __future__ import annotations

import json
from typing import Any

import pytest

from grader.grading import notebook, validate
from grader.grading.pipeline import grade
from worker.limits import Limits

MiB = 1024 * 1024


def nb(*cells: str | tuple[str, str], **extra: Any) -> str:
    """A notebook with these code cells (or (cell_type, source) pairs)."""
    out = []
    for cell in cells:
        kind, src = cell if isinstance(cell, tuple) else ("code", cell)
        out.append({"cell_type": kind, "metadata": {}, "source": src.splitlines(True),
                    **({"outputs": [], "execution_count": None} if kind == "code" else {})})
    return json.dumps({"cells": out, "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
                       **extra})


def test_only_imports_definitions_and_literal_assignments_are_kept() -> None:
    got = notebook.extract(nb(
        "import math\nfrom random import uniform as u\n",
        "LR = 0.05\nxs = [[2.0, 3.0], [1.0, -1.0]]\nNAME: str = 'mlp'\nw = u(-1, 1)\n",
        "@staticmethod\ndef f(x):\n    return 3 * x**2 - 4 * x + 5\n\nf(3.0)\nprint(f(2))\n",
        "class Value:\n    pass\n\na = Value()\nfor k in range(10):\n    a = Value()\n"
        "if __name__ == '__main__':\n    print(a)\n",
    ))
    code = got.code
    for kept in ("import math", "from random import uniform as u", "LR = 0.05",
                 "xs = [[2.0, 3.0], [1.0, -1.0]]", "NAME: str = 'mlp'", "@staticmethod",
                 "def f(x):", "return 3 * x**2", "class Value:"):
        assert kept in code, kept
    for dropped in ("w = u(", "f(3.0)", "print(", "a = Value()", "for k in", "__main__"):
        assert dropped not in code, dropped
    assert got.value_cell == 4 and got.warnings == []
    compile(code, "value.py", "exec")


def test_a_future_import_in_a_later_cell_still_opens_the_code() -> None:
    got = notebook.extract(nb("import math\n",
                              "from __future__ import annotations\nclass Value:\n    pass\n"))
    assert got.code.startswith("from __future__ import annotations\n")
    compile(got.code, "value.py", "exec")


def test_magics_and_shell_escapes_are_dropped() -> None:
    got = notebook.extract(nb(
        "%matplotlib inline\n!pip install micrograd\n  %load_ext autoreload\nimport math\n",
        "%%time\ndef g():\n    return 1\n",
    ))
    assert "import math" in got.code and "def g():" in got.code
    assert "%" not in got.code and "!" not in got.code and "pip" not in got.code


def test_a_cell_that_does_not_parse_is_skipped_with_a_warning() -> None:
    got = notebook.extract(nb("import math\n", ("markdown", "# not code"),
                              "def broken(:\n    pass\n", "class Value:\n    pass\n"))
    assert "broken" not in got.code and "class Value" in got.code
    assert len(got.warnings) == 1 and got.warnings[0].startswith("cell 2 skipped")
    assert got.value_cell == 3  # code cells are counted, markdown ones are not


@pytest.mark.parametrize("raw", ["not json", "[]", json.dumps({"cells": "nope"}),
                                 json.dumps({"nbformat": 4}), "[" * 100_000 + "]" * 100_000])
def test_a_file_that_is_not_a_notebook_is_refused(raw: str) -> None:
    with pytest.raises(notebook.NotebookError):
        notebook.extract(raw)
    checked = validate.check(raw, "work.ipynb", Limits())
    assert isinstance(checked, validate.Invalid) and checked.kind == "syntax_error"


def test_the_last_of_three_values_is_graded_and_its_cell_reported(read_fixture) -> None:
    """The fixture defines Value in code cells 2 (no backward), 4 (overwrites grads) and 6
    (right); a cell that does not parse (`files = !ls`), magics, plots and a training
    loop surround them."""
    report = grade(read_fixture("good/three_values.ipynb"), ["expression", "diamond"],
                   seed=3, k=1, filename="three_values.ipynb")
    assert report.status == "graded"
    assert [e.verdict for e in report.exercises] == ["passed", "passed"]
    assert report.source["value_cell"] == 6 and report.source["notebook"] is True
    assert "graded the Value class defined in code cell 6" in report.warnings
    assert any(w.startswith("cell 3 skipped") for w in report.warnings)


def test_the_grade_follows_the_last_definition(read_fixture) -> None:
    """Moving the broken (overwriting) definition last makes the notebook fail diamond."""
    cells = json.loads(read_fixture("good/three_values.ipynb"))
    code = [c for c in cells["cells"] if c["cell_type"] == "code"]
    second, third = cells["cells"].index(code[3]), cells["cells"].index(code[5])
    cells["cells"][second], cells["cells"][third] = code[5], code[3]
    report = grade(json.dumps(cells), ["diamond"], seed=3, k=0, filename="swapped.ipynb")
    assert report.exercises[0].verdict == "wrong_gradient"
    assert report.source["value_cell"] == 6


def test_notebooks_may_be_8_mib_with_outputs_but_code_must_fit_256_kib(read_fixture) -> None:
    source = read_fixture("good/lecture.py")
    outputs = [{"output_type": "stream", "name": "stdout", "text": "x" * (7 * MiB)}]
    big = json.loads(nb(source))
    big["cells"][0]["outputs"] = outputs
    raw = json.dumps(big)
    assert 7 * MiB < len(raw) < 8 * MiB
    assert isinstance(validate.check(raw, "big.ipynb", Limits()), validate.Valid)
    assert validate.check(raw, "big.py", Limits()).kind == "too_large"  # .py: 256 KiB
    big["cells"][0]["outputs"][0]["text"] = "x" * (8 * MiB)
    too_big = validate.check(json.dumps(big), "big.ipynb", Limits())
    assert isinstance(too_big, validate.Invalid) and too_big.kind == "too_large"
    long_code = nb(source, "\n".join(f"C{i} = {i}" for i in range(40_000)))
    too_much_code = validate.check(long_code, "long.ipynb", Limits())
    assert isinstance(too_much_code, validate.Invalid) and too_much_code.kind == "too_large"
    assert "code" in too_much_code.message


def test_a_notebook_without_value_is_invalid() -> None:
    report = grade(nb("import math\n", "x = math.pi\nprint(x)\n"), ["expression"], seed=1,
                   k=0, filename="empty.ipynb")
    assert (report.status, report.error["kind"]) == ("invalid", "no_value_class")
    report = grade(nb("import math\n", "class Tensor:\n    def backward(self):\n"
                      "        pass\n\n    def __add__(self, o):\n        return self\n"),
                   ["expression"], seed=1, k=0, filename="tensor.ipynb")
    assert (report.error["kind"], report.error["lookalikes"]) == ("no_value_class", ["Tensor"])
