"""Submissions that cannot be graded at all: every invalid kind of SPEC §5, each from a
real file, through `validate.check` and through the whole `grade()` pipeline."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from grader.grading import validate
from grader.grading.pipeline import grade
from worker.limits import Limits

KIB = 1024


@pytest.fixture(scope="module")
def invalid_dir(fixtures_dir: Path) -> Path:
    return fixtures_dir / "submissions" / "invalid"


def graded_invalid(source: bytes | str, kind: str) -> dict:
    """Grade `source` and return the report's error, checking the report is invalid."""
    report = grade(source, ["expression"], seed=5, k=0, filename="value.py")
    data = report.to_dict()
    assert (data["status"], data["error"]["kind"]) == ("invalid", kind), data["error"]
    assert data["exercises"] == [] and data["score"] == 0
    assert data["seed"] == 5
    return data["error"]


@pytest.mark.parametrize("name", ["empty.txt", "blank.txt"])
def test_empty_files(invalid_dir: Path, name: str) -> None:
    assert graded_invalid((invalid_dir / name).read_bytes(), "empty")["message"]


def test_too_large_is_checked_before_anything_else(read_fixture) -> None:
    good = read_fixture("good/lecture.py")
    padded = good + "#" * (256 * KIB - len(good.encode()) - 1) + "\n"
    assert len(padded.encode()) == 256 * KIB
    assert isinstance(validate.check(padded, "value.py", Limits()), validate.Valid)
    error = graded_invalid(padded + "#", "too_large")
    assert "256 KiB" in error["message"]


def test_the_upload_limit_is_configurable() -> None:
    checked = validate.check("class Value:\n    pass\n" * 100, "value.py",
                             Limits(upload_bytes=1000))
    assert isinstance(checked, validate.Invalid) and checked.kind == "too_large"


def test_not_utf8_names_the_byte(invalid_dir: Path) -> None:
    raw = (invalid_dir / "not_utf8.txt").read_bytes()
    error = graded_invalid(raw, "not_utf8")
    assert f"byte {raw.index(0xE9)}" in error["message"]


def test_syntax_error_reports_its_line(invalid_dir: Path) -> None:
    error = graded_invalid((invalid_dir / "syntax_error.txt").read_text(), "syntax_error")
    assert error["line"] == 12
    assert "line 12" in error["message"]


def test_a_syntax_error_raised_while_importing_is_an_import_error() -> None:
    """eval() of bad text at import is the file's runtime error, not its syntax (line 1)."""
    error = graded_invalid('import json\neval("1 +")\nclass Value:\n    pass\n',
                           "import_error")
    assert "SyntaxError" in error["message"] and "line" not in error
    assert 'File "submission.py", line 2' in error["traceback"]


def test_a_byte_order_mark_is_not_a_syntax_error(read_fixture) -> None:
    checked = validate.check(b"\xef\xbb\xbf" + read_fixture("good/lecture.py").encode(),
                             "value.py", Limits())
    assert isinstance(checked, validate.Valid)
    assert checked.code.startswith('"""')


def test_no_value_class_names_the_lookalike_only(read_fixture) -> None:
    error = graded_invalid(read_fixture("invalid/no_value_class.py"), "no_value_class")
    assert error["lookalikes"] == ["Tensor"]
    assert "Tensor" in error["message"] and "Helper" not in error["message"]


def test_demo_code_breaking_on_a_stub_is_an_import_error_with_advice(read_fixture) -> None:
    error = graded_invalid(read_fixture("invalid/plt_subplots_at_import.py"), "import_error")
    assert "not enough values to unpack" in error["message"]
    assert 'if __name__ == "__main__":' in error["message"]


def test_tracebacks_name_library_files_without_the_hosts_paths() -> None:
    error = graded_invalid('import json\njson.loads("{")\nclass Value:\n    pass\n',
                           "import_error")
    assert 'File "json/decoder.py"' in error["traceback"]
    stdlib = os.path.dirname(os.path.realpath(os.__file__))
    assert stdlib not in error["traceback"] and "/box/" not in error["traceback"]
    assert 'File "submission.py", line' in error["traceback"]
    assert "/box/" not in error["traceback"]  # sandbox paths shortened


def test_a_library_the_sandbox_lacks_is_an_import_error(read_fixture) -> None:
    error = graded_invalid(read_fixture("invalid/missing_library.py"), "import_error")
    assert "No module named 'scipy'" in error["message"]


def test_valid_source_is_returned_with_its_description(read_fixture) -> None:
    checked = validate.check(read_fixture("good/lecture.py"), "my_value.py", Limits())
    assert isinstance(checked, validate.Valid)
    assert checked.source == {"filename": "my_value.py",
                              "bytes": len(read_fixture("good/lecture.py").encode()),
                              "notebook": False}
