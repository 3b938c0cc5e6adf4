"""L = (a*b + c) * f — the first graph of the lecture."""

from exercises.base import Exercise, Graph, nice


def build(Value, x, tag):
    """Build e=a*b; d=e+c; L=d*f."""
    a = tag(Value(x["a"]), "a")
    b = tag(Value(x["b"]), "b")
    c = tag(Value(x["c"]), "c")
    f = tag(Value(x["f"]), "f")
    e = tag(a * b, "e")
    d = tag(e + c, "d")
    return tag(d * f, "L")


def random_inputs(rng):
    """Four random leaves."""
    return {k: nice(rng) for k in "abcf"}


EXERCISE = Exercise(
    name="expression",
    title="A first expression: L = (a*b + c) * f",
    summary="Forward values and gradients of every node of L = (a*b + c) * f.",
    points=2.0,
    graphs=(Graph("L", build, ("mul", "add", "backward"), "e=a*b; d=e+c; L=d*f"),),
    canonical={"a": 2.0, "b": -3.0, "c": 10.0, "f": -2.0},
    random_inputs=random_inputs,
    hints={
        "add": "The local derivative of + is 1 for both inputs: each gets out.grad.",
        "mul": "For out = a*b, a.grad gets b.data * out.grad and b.grad gets a.data * out.grad.",
    },
)
