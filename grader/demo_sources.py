"""The demo class's sources: a correct lecture-style `Value`, and one variant per bug class.

Each variant is a list of text replacements applied to the correct source, so every demo
file is one a student could have written (the bug classes the diagnosis names, plus a few
hostile or broken files).
"""

from __future__ import annotations

BASE = '''import math


class Value:
    def __init__(self, data, _children=(), _op=""):
        self.data = data
        self.grad = 0.0
        self._backward = lambda: None
        self._prev = set(_children)
        self._op = _op

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data + other.data, (self, other), "+")

        def _backward():
            self.grad += out.grad
            other.grad += out.grad
        out._backward = _backward
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data * other.data, (self, other), "*")

        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out._backward = _backward
        return out

    def __pow__(self, k):
        out = Value(self.data ** k, (self,), f"**{k}")

        def _backward():
            self.grad += k * self.data ** (k - 1) * out.grad
        out._backward = _backward
        return out

    def __radd__(self, other):
        return self + other

    def __rmul__(self, other):
        return self * other

    def __neg__(self):
        return self * -1

    def __sub__(self, other):
        return self + (-other)

    def __rsub__(self, other):
        return other + (-self)

    def __truediv__(self, other):
        return self * other ** -1

    def __rtruediv__(self, other):
        return other * self ** -1

    def tanh(self):
        x = self.data
        t = (math.exp(2 * x) - 1) / (math.exp(2 * x) + 1)
        out = Value(t, (self,), "tanh")

        def _backward():
            self.grad += (1 - t ** 2) * out.grad
        out._backward = _backward
        return out

    def exp(self):
        out = Value(math.exp(self.data), (self,), "exp")

        def _backward():
            self.grad += out.data * out.grad
        out._backward = _backward
        return out

    def relu(self):
        out = Value(max(0.0, self.data), (self,), "relu")

        def _backward():
            self.grad += (out.data > 0) * out.grad
        out._backward = _backward
        return out

    def backward(self):
        topo, seen = [], set()

        def build(v):
            if v not in seen:
                seen.add(v)
                for child in v._prev:
                    build(child)
                topo.append(v)
        build(self)
        self.grad = 1.0
        for v in reversed(topo):
            v._backward()
'''
COERCE = "        other = other if isinstance(other, Value) else Value(other)\n"
BFS = '''    def backward(self):
        self.grad = 1.0
        queue = [self]
        while queue:
            v = queue.pop(0)
            v._backward()
            queue.extend(v._prev)
'''
#: variant -> replacements applied to BASE (each must match)
VARIANTS: dict[str, list[tuple[str, str]]] = {
    "correct": [],
    "overwrite": [("self.grad += out.grad\n            other.grad += out.grad",
                   "self.grad = out.grad\n            other.grad = out.grad")],
    "mul_backward": [("self.grad += other.data * out.grad", "self.grad += self.data * out.grad")],
    "tanh_backward": [("(1 - t ** 2)", "(1 - x ** 2)")],
    "tanh_forward": [("(math.exp(2 * x) - 1) / (math.exp(2 * x) + 1)",
                      "(math.exp(x) - 1) / (math.exp(x) + 1)")],
    "pow_backward": [("k * self.data ** (k - 1)", "self.data ** (k - 1)")],
    "rsub_sign": [("return other + (-self)", "return self + (-other)")],
    "no_radd": [("    def __radd__(self, other):\n        return self + other\n\n", "")],
    "no_coercion": [(COERCE, ""), (COERCE, "")],
    "unseeded": [("        self.grad = 1.0\n        for v", "        for v")],
    "topo_bfs": [(BASE[BASE.index("    def backward(self):"):], BFS)],
    "radd_recursion": [("def __radd__(self, other):\n        return self + other",
                        "def __radd__(self, other):\n        return other + self")],
    "hostile_exit": [("        topo, seen = [], set()", "        import os\n        os._exit(3)")],
    "hostile_memory": [("        topo, seen = [], set()",
                        "        hog = [bytearray(1 << 20) for _ in range(4096)]\n"
                        "        topo, seen = [], set()")],
    "syntax_error": [("def tanh(self):", "def tanh(self)")],
    "import_crash": [("import math\n", "import math\nraise SystemExit('training run')\n")],
}
BUGS = [v for v in VARIANTS if v not in ("correct", "hostile_exit", "hostile_memory",
                                          "syntax_error", "import_crash")]
HOSTILE = ["hostile_exit", "hostile_memory", "syntax_error", "import_crash"]


def variant_source(name: str) -> str:
    """The demo source of a variant."""
    text = BASE
    for old, new in VARIANTS[name]:
        if old not in text:
            raise ValueError(f"demo variant {name}: {old[:40]!r} not found")
        text = text.replace(old, new, 1)
    return f'"""A micrograd Value ({name.replace("_", " ")})."""\n' + text
