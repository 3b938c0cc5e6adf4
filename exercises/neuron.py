"""A single tanh neuron: o = tanh(x1*w1 + x2*w2 + b)."""

from exercises.base import Exercise, Graph, nice


def build(Value, x, tag):
    """The neuron of the lecture, every intermediate node named."""
    x1 = tag(Value(x["x1"]), "x1")
    x2 = tag(Value(x["x2"]), "x2")
    w1 = tag(Value(x["w1"]), "w1")
    w2 = tag(Value(x["w2"]), "w2")
    b = tag(Value(x["b"]), "b")
    x1w1 = tag(x1 * w1, "x1*w1")
    x2w2 = tag(x2 * w2, "x2*w2")
    s = tag(x1w1 + x2w2, "x1*w1 + x2*w2")
    n = tag(s + b, "n")
    return tag(n.tanh(), "o")


def random_inputs(rng):
    """Inputs that keep n in tanh's interesting range."""
    return {"x1": nice(rng, -2, 2), "x2": nice(rng, -2, 2), "w1": nice(rng, -1.5, 1.5),
            "w2": nice(rng, -1.5, 1.5), "b": nice(rng, -1, 1)}


EXERCISE = Exercise(
    name="neuron",
    title="A tanh neuron",
    summary="o = tanh(x1*w1 + x2*w2 + b), with the lecture's weights and random ones.",
    points=2.0,
    graphs=(Graph("o", build, ("mul", "add", "tanh", "backward"), "o = tanh(x1*w1 + x2*w2 + b)"),),
    canonical={"x1": 2.0, "x2": 0.0, "w1": -3.0, "w2": 1.0, "b": 6.8813735870195432},
    random_inputs=random_inputs,
    hints={
        "tanh": "d/dn tanh(n) = 1 - tanh(n)**2, using the OUTPUT value t = tanh(n).",
    },
)
