"""Checks made before any code runs: size, encoding, notebook extraction, syntax."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grader.grading import notebook
from worker.limits import Limits


@dataclass
class Valid:
    """Source ready for the sandbox."""

    code: str
    source: dict[str, Any]
    warnings: list[str] = field(default_factory=list)


@dataclass
class Invalid:
    """A submission that cannot be graded at all, and why."""

    kind: str
    message: str
    source: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict)


def check(source: str | bytes, filename: str, limits: Limits) -> Valid | Invalid:
    """Validate a submission; return its Python code or the reason it is invalid."""
    raw = source.encode("utf-8") if isinstance(source, str) else bytes(source)
    is_nb = filename.lower().endswith(".ipynb")
    info: dict[str, Any] = {"filename": filename[-200:], "bytes": len(raw),
                            "notebook": is_nb}
    cap = limits.notebook_bytes if is_nb else limits.upload_bytes
    if not raw.strip():
        return Invalid("empty", "the file is empty", info)
    if len(raw) > cap:
        return Invalid("too_large", f"the file is {len(raw) // 1024} KiB; the limit is "
                       f"{cap // 1024} KiB", info)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Invalid("not_utf8", f"the file is not UTF-8 text (byte {exc.start})", info)
    warnings: list[str] = []
    if is_nb:
        try:
            nb = notebook.extract(text)
        except notebook.NotebookError as exc:
            return Invalid("syntax_error", str(exc), info, {"line": None})
        text, warnings = nb.code, nb.warnings
        info["value_cell"] = nb.value_cell
        if nb.value_cell is not None:
            warnings.append(f"graded the Value class defined in code cell {nb.value_cell}")
        if len(text.encode()) > limits.upload_bytes:
            return Invalid("too_large", "the notebook's code is over the "
                           f"{limits.upload_bytes // 1024} KiB limit", info)
        if not text.strip():
            return Invalid("empty", "the notebook has no code defining Value", info)
    text = text.removeprefix("\ufeff")
    try:
        compile(text, filename, "exec", dont_inherit=True)
    except SyntaxError as exc:
        line = exc.lineno
        return Invalid("syntax_error", f"SyntaxError: {exc.msg} (line {line})", info,
                       {"line": line})
    except (ValueError, MemoryError, RecursionError) as exc:
        return Invalid("syntax_error", f"the file cannot be compiled: {exc}", info,
                       {"line": None})
    return Valid(text, info, warnings)
