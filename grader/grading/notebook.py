"""Turn a Jupyter notebook into the code that defines `Value` (SPEC §3, notebooks)."""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field


class NotebookError(ValueError):
    """The file is not a readable notebook."""


@dataclass
class Extracted:
    """The kept code, which cell the graded `Value` came from, and what was skipped."""

    code: str
    value_cell: int | None
    warnings: list[str] = field(default_factory=list)


def _is_literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _keep(stmt: ast.stmt) -> bool:
    """Imports, definitions and assignments of literal constants survive; nothing else."""
    if isinstance(stmt, ast.Import | ast.ImportFrom | ast.FunctionDef | ast.AsyncFunctionDef
                  | ast.ClassDef):
        return True
    if isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None:
        return _is_literal(stmt.value)
    return False


def _strip_magics(source: str) -> str:
    """Blank out IPython magics and shell escapes, keeping line numbers."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line
                     for line in source.splitlines())


def extract(raw: str) -> Extracted:
    """The Python code of a notebook's code cells, filtered per SPEC §3."""
    try:
        nb = json.loads(raw)
        cells = nb["cells"]
    except (ValueError, KeyError, TypeError, RecursionError) as exc:  # deep [[[...]]] too
        raise NotebookError(f"not a Jupyter notebook: {exc}") from exc
    if not isinstance(cells, list):
        raise NotebookError("not a Jupyter notebook: 'cells' is not a list")
    kept: list[str] = []
    future: list[str] = []  #: `from __future__` imports must open the file, from any cell
    warnings: list[str] = []
    value_cell = None
    code_index = 0
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        code_index += 1
        src = cell.get("source", "")
        src = "".join(src) if isinstance(src, list) else str(src)
        try:
            tree = ast.parse(_strip_magics(src))
        except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
            warnings.append(f"cell {code_index} skipped: it does not parse ({exc})")
            continue
        lines = _strip_magics(src).splitlines()
        for stmt in tree.body:
            if not _keep(stmt):
                continue
            start = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
            text = "\n".join(lines[start - 1: stmt.end_lineno])
            is_future = isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__"
            (future if is_future else kept).append(text)
            if isinstance(stmt, ast.ClassDef) and stmt.name == "Value":
                value_cell = code_index
    return Extracted(code="\n\n".join(future + kept) + "\n", value_cell=value_cell,
                     warnings=warnings)
