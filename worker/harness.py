"""The harness that runs INSIDE the sandbox: load a submission, probe it, build graphs.

Standard library only, and importable outside the sandbox too: the grader runs the very
same `capture` with the reference `Value` to get the expected numbers, so expected and
actual always come from one code path. It never sets an attribute on a student's object
except `grad` (zeroing before an SGD step) and `data` (the step itself), and only ever
calls `Value(x)` with one positional number.

Protocol (inside): ``python -I -S harness.py JOB.json`` with the result channel on fd 3.
It writes JSON lines: ``{"event": "loaded"}`` once the submission imported, then one
``{"event": "result", ...}`` (or ``{"event": "invalid", ...}``), then one
``{"event": "checks", "warnings": [...]}`` naming the legitimate quirks it found.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import json
import math
import os
import sys
import types
from collections.abc import Callable
from typing import Any

CHILD_ATTRS = ("_prev", "prev", "_children", "children", "parents")
OP_ATTRS = ("_op", "op", "operation")
STUBBED = ("graphviz", "matplotlib", "torch", "sklearn", "pandas", "IPython")
MISSING_ERRORS = (TypeError, AttributeError, NotImplementedError)
MAX_NODES = 5000
MAX_STR = 80
SUBMISSION_MODULE = "submission"
CHANNEL_FD = 3

#: one probe per operation, each on fresh Value(2.0) / Value(3.0)
PROBES: dict[str, Callable[[type], Any]] = {
    "add": lambda V: V(2.0) + V(3.0),
    "add_number": lambda V: V(2.0) + 3.0,
    "radd": lambda V: 3.0 + V(2.0),
    "mul": lambda V: V(2.0) * V(3.0),
    "mul_number": lambda V: V(2.0) * 3.0,
    "rmul": lambda V: 3.0 * V(2.0),
    "sub": lambda V: V(2.0) - V(3.0),
    "sub_number": lambda V: V(2.0) - 3.0,
    "rsub": lambda V: 3.0 - V(2.0),
    "neg": lambda V: -V(2.0),
    "pow": lambda V: V(2.0) ** 3,
    "truediv": lambda V: V(2.0) / V(3.0),
    "rtruediv": lambda V: 3.0 / V(2.0),
    "tanh": lambda V: V(2.0).tanh(),
    "exp": lambda V: V(2.0).exp(),
    "relu": lambda V: V(2.0).relu(),
    "backward": lambda V: V(2.0).backward(),
}
#: how each probe reads in a message to a student
OP_TEXT = {
    "add": "Value + Value", "add_number": "Value + number", "radd": "number + Value (__radd__)",
    "mul": "Value * Value", "mul_number": "Value * number", "rmul": "number * Value (__rmul__)",
    "sub": "Value - Value", "sub_number": "Value - number", "rsub": "number - Value (__rsub__)",
    "neg": "-Value (__neg__)", "pow": "Value ** number (__pow__)",
    "truediv": "Value / Value", "rtruediv": "number / Value (__rtruediv__)",
    "tanh": "Value.tanh()", "exp": "Value.exp()", "relu": "Value.relu()",
    "backward": "Value.backward()",
}


# --- stubs for heavy imports --------------------------------------------------------------

class Stub(types.ModuleType):
    """A permissive stand-in: any attribute, any call, any iteration of length zero."""

    def __init__(self, name: str = "stub") -> None:
        super().__init__(name)
        self.__path__: list[str] = []

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return Stub(f"{self.__name__}.{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return Stub(f"{self.__name__}()")

    def __iter__(self):  # noqa: ANN204 - `for x in stub` runs zero times
        return iter(())

    def __bool__(self) -> bool:
        return False

    def __enter__(self) -> Stub:
        return self

    def __exit__(self, *exc: object) -> bool:
        return False

    def __mro_entries__(self, bases: tuple) -> tuple:
        return (object,)


class StubFinder:
    """Answers imports of the heavy libraries (and their submodules) with stubs: a meta path
    finder and loader by protocol (importing importlib.abc costs 15 ms a run)."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname.split(".")[0] in STUBBED:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: Any) -> types.ModuleType:
        return Stub(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        return None


def install_stubs() -> None:
    """Make graphviz, matplotlib, torch, sklearn, pandas and IPython importable stubs."""
    sys.meta_path.insert(0, StubFinder())


# --- reading a student's objects -----------------------------------------------------------

def read_number(node: Any, attrs: tuple[str, ...]) -> float:
    """float() of the first attribute of `attrs` that exists; NaN when unreadable."""
    for attr in attrs:
        try:
            raw = getattr(node, attr)
        except AttributeError:
            continue
        try:
            return float(raw)
        except Exception:  # noqa: BLE001 - a non-number reads as NaN, which never matches
            return math.nan
    return math.nan


def read_children(node: Any) -> list[Any] | None:
    """The node's children from the first structure attribute present, or None."""
    for attr in CHILD_ATTRS:
        try:
            kids = getattr(node, attr)
        except Exception:  # noqa: BLE001
            continue
        if isinstance(kids, set | frozenset | tuple | list):
            return list(kids)
    return None


def read_op(node: Any) -> str | None:
    """The node's op name (shortened) from `_op`, `op` or `operation`, or None."""
    for attr in OP_ATTRS:
        try:
            op = getattr(node, attr)
        except Exception:  # noqa: BLE001
            continue
        if isinstance(op, str):
            return op[:MAX_STR]
        return None
    return None


def short_traceback(exc: BaseException, limit: int = 4) -> str:
    """The last frames of a traceback, with sandbox paths shortened to the file name."""
    import traceback  # only on errors: its imports cost every run a few milliseconds

    lines = traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-limit)
    text = "".join(lines)
    for prefix in ("/box/", os.path.dirname(os.path.abspath(__file__)) + os.sep,
                   os.path.dirname(os.__file__) + os.sep):  # the stdlib: json/decoder.py
        text = text.replace(prefix, "")
    return text[-4000:]


def _safe_str(obj: object) -> str:
    """str() of a student's object (an exception), which may itself raise or lie."""
    try:
        text = str(obj)
    except BaseException:  # noqa: BLE001 - a hostile __str__
        return "<unprintable>"
    return text if isinstance(text, str) else "<unprintable>"


def describe_error(exc: BaseException) -> dict[str, Any]:
    """A JSON-safe description of an exception raised by student code."""
    kind = "error"
    if isinstance(exc, RecursionError):
        kind = "recursion"
    elif isinstance(exc, MemoryError):
        kind = "memory"
    try:
        tb = short_traceback(exc)
    except BaseException:  # noqa: BLE001 - formatting runs the exception's own __str__
        tb = ""
    msg = f"{type(exc).__name__}: {_safe_str(exc)}"
    return {"kind": kind, "type": type(exc).__name__, "message": msg[:500], "traceback": tb}


# --- probing and capturing ------------------------------------------------------------------

def probe(V: type, ops: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Try each operation on fresh values: True, False (missing) or an error message."""
    features: dict[str, Any] = {}
    for op in ops or tuple(PROBES):
        try:
            PROBES[op](V)
            features[op] = True
        except MISSING_ERRORS as exc:
            features[op] = False
            features.setdefault("_why", {})[op] = f"{type(exc).__name__}: {_safe_str(exc)}"[:300]
        except Exception as exc:  # noqa: BLE001 - decided later by the exercise itself
            features[op] = f"{type(exc).__name__}: {_safe_str(exc)}"[:300]
    return features


def _relu_grad_at_zero(V: type) -> bool:
    """relu's gradient at exactly 0 is 1 (micrograd's, like PyTorch's, is 0)."""
    x = V(0.0)
    x.relu().backward()
    return read_number(x, ("grad",)) == 1.0


def _tanh_overflow(V: type) -> bool:
    """tanh(±400) raises or is not finite: exp(2x) overflows beyond |x| ≈ 355."""
    for x in (400.0, -400.0):
        try:
            out = V(x).tanh()
        except ArithmeticError:  # OverflowError from math.exp, FloatingPointError (numpy)
            return True
        if not math.isfinite(read_number(out, ("data", "value"))):
            return True
    return False


def _double_backward(V: type) -> bool:
    """A second backward() on the same small graph changes the gradients (they add up)."""
    a = V(2.0)
    y = a * V(3.0)
    y.backward()
    first = read_number(a, ("grad",))
    y.backward()
    second = read_number(a, ("grad",))
    return math.isfinite(first) and not math.isclose(first, second, rel_tol=1e-9)


#: surprising but legitimate behaviours (SPEC §3): warnings, never verdicts. Each is
#: checked on fresh values in the exercises using its first operation, once all the
#: operations it needs probed fine.
QUIRKS: dict[str, tuple[tuple[str, ...], Callable[[type], bool]]] = {
    "relu_grad_at_zero": (("relu", "backward"), _relu_grad_at_zero),
    "tanh_overflow": (("tanh",), _tanh_overflow),
    "double_backward": (("backward", "mul"), _double_backward),
}


def quirks(V: type, ops: tuple[str, ...], features: dict[str, Any]) -> list[str]:
    """The QUIRKS `V` shows among those concerning `ops`; a check that fails says nothing."""
    found = []
    for code, (needs, check) in QUIRKS.items():
        if needs[0] not in ops or any(features.get(op) is not True for op in needs):
            continue
        try:
            if check(V):
                found.append(code)
        except BaseException:  # noqa: BLE001, S112 - a broken op is the exercise's business
            continue
    return found


def capture(V: type, build: Callable, inputs: dict[str, Any], lr: float | None = None,
            params: list[str] | None = None) -> dict[str, Any]:
    """Build one graph with `V`, backpropagate (and step), and read every node as numbers."""
    tagged: dict[str, Any] = {}

    def tag(node: Any, name: str) -> Any:
        tagged[name] = node
        return node

    out = build(V, inputs, tag)
    data = {name: read_number(n, ("data", "value")) for name, n in tagged.items()}
    if lr is not None and params:
        for name in params:
            tagged[name].grad = 0.0
    out.backward()
    grad = {name: read_number(n, ("grad",)) for name, n in tagged.items()}
    warnings = []
    if any(isinstance(getattr(n, "grad", None), int) for n in tagged.values()):
        warnings.append("int_grad")
    updated = {}
    if lr is not None and params:
        for name in params:
            p = tagged[name]
            p.data -= lr * p.grad
            updated[name] = read_number(p, ("data", "value"))
    result = {"data": data, "grad": grad, "updated": updated, "warnings": warnings}
    result.update(structure(tagged, out))
    return result


def structure(tagged: dict[str, Any], out: Any) -> dict[str, Any]:
    """The graph as the student's objects record it: op and children per node.

    Nodes the builder did not name (e.g. the `-1` constant of `a - b`) get `#k` names and
    their numbers too. `has_structure` is False when no children attribute exists.
    Children are an unordered multiset (often a set, whose order changes from run to
    run), so they are sorted: a seed always reproduces the same report.
    """
    names = {id(n): name for name, n in tagged.items()}
    named = dict(names)

    def order(kid: Any) -> tuple:
        if id(kid) in named:
            return (0, named[id(kid)])
        return (1, str(read_number(kid, ("data", "value"))), str(read_number(kid, ("grad",))),
                read_op(kid) or "")

    nodes: dict[str, Any] = {}
    extra: dict[str, dict[str, float]] = {}
    has_structure = read_children(out) is not None
    stack = [out] + list(tagged.values())
    seen: set[int] = set()
    while stack and len(seen) < MAX_NODES:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        name = names.setdefault(id(node), f"#{len(names)}")
        kids = sorted(read_children(node) or [], key=order)
        for kid in kids:
            names.setdefault(id(kid), f"#{len(names)}")
        nodes[name] = {"op": read_op(node), "children": [names[id(k)] for k in kids][:64]}
        if name.startswith("#"):
            extra[name] = {"data": read_number(node, ("data", "value")),
                           "grad": read_number(node, ("grad",))}
        stack.extend(kids)
    return {"nodes": nodes, "extra": extra, "has_structure": has_structure,
            "output": names[id(out)]}


# --- inside the sandbox ---------------------------------------------------------------------

def find_value_class(module: types.ModuleType) -> tuple[type | None, list[str]]:
    """The module's `Value` class, or None and the names of classes that look like one."""
    cls = getattr(module, "Value", None)
    if isinstance(cls, type):
        return cls, []
    lookalikes = [
        name for name, obj in vars(module).items()
        if isinstance(obj, type) and hasattr(obj, "backward") and hasattr(obj, "__add__")
        and obj.__module__ == module.__name__
    ]
    return None, lookalikes[:5]


def compile_submission(path: str) -> types.CodeType:
    """The submission's code object; a SyntaxError here is the file's own."""
    with open(path, encoding="utf-8") as fh:
        return compile(fh.read(), os.path.basename(path), "exec")


def load_submission(code: types.CodeType, path: str) -> types.ModuleType:
    """Execute the submission as module `submission` (its __main__ block not run)."""
    module = types.ModuleType(SUBMISSION_MODULE)
    module.__file__ = os.path.basename(path)
    sys.modules[SUBMISSION_MODULE] = module
    exec(code, module.__dict__)  # noqa: S102 - the whole point, inside the sandbox
    return module


def run_job(job: dict[str, Any], send: Callable[[dict[str, Any]], None]) -> None:
    """Load the submission, then probe and capture every (instance, graph) of the job."""
    sys.setrecursionlimit(10_000)
    install_stubs()
    try:
        code = compile_submission(job["submission"])
    except SyntaxError as exc:
        send({"event": "invalid", "kind": "syntax_error", "line": exc.lineno,
              "message": f"SyntaxError: {exc.msg} (line {exc.lineno})"})
        return
    try:
        module = load_submission(code, job["submission"])
    except BaseException as exc:  # noqa: BLE001 - SystemExit, and a SyntaxError from eval()
        send({"event": "invalid", "kind": "import_error", **describe_error(exc)})
        return
    V, lookalikes = find_value_class(module)
    if V is None:
        send({"event": "invalid", "kind": "no_value_class", "lookalikes": lookalikes})
        return
    send({"event": "loaded"})

    ex_module = importlib.import_module(f"exercises.{job['exercise']}")
    exercise = ex_module.EXERCISE
    result: dict[str, Any] = {"event": "result", "features": probe(V), "runs": []}
    try:
        V(2.0)
    except BaseException as exc:  # noqa: BLE001
        result["constructor_error"] = describe_error(exc)
        send(result)
        return
    params = exercise.params(job["instances"][0]) if exercise.params else None
    for index, inputs in enumerate(job["instances"]):
        for graph in exercise.graphs:
            run: dict[str, Any] = {"instance": index, "graph": graph.name}
            missing = [op for op in graph.ops if result["features"].get(op) is False]
            if missing:
                run["missing"] = missing
            else:
                try:
                    run.update(capture(V, graph.build, inputs, exercise.lr, params))
                except BaseException as exc:  # noqa: BLE001
                    run["error"] = describe_error(exc)
            result["runs"].append(run)
    send(result)
    # after the result: a check that hangs or crashes the process cannot cost a verdict
    send({"event": "checks", "warnings": quirks(V, exercise.ops, result["features"])})


def main(argv: list[str]) -> int:
    """Entry point inside the sandbox: run the job file and report on fd 3."""
    os.environ.clear()  # nothing to read there (the jail's own PWD, Python's LC_CTYPE)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        # numpy's BLAS would start a thread per host core against the process limit;
        # putenv sets the C environment only, so os.environ stays empty for the submission
        os.putenv(var, "1")
    with open(argv[1], encoding="utf-8") as fh:
        job = json.load(fh)
    for extra in job.get("path", []):
        sys.path.insert(0, extra)
    with open(CHANNEL_FD, "w", encoding="utf-8", closefd=True) as channel:
        os.set_inheritable(CHANNEL_FD, False)  # a program the submission starts never has it

        def send(message: dict[str, Any]) -> None:
            channel.write(json.dumps(message) + "\n")
            channel.flush()

        run_job(job, send)
    try:  # noqa: SIM105 - contextlib would cost an import in every run
        sys.stdout.flush()
    except BaseException:  # noqa: BLE001, S110 - the submission may have replaced stdout
        pass
    os._exit(0)  # skip atexit handlers and finalizers the submission may have registered


if __name__ == "__main__":
    sys.exit(main(sys.argv))
