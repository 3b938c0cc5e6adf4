"""Shared nodes: a gradient must accumulate over every path, in topological order."""

from exercises.base import Exercise, Graph, nice


def build_diamond(Value, x, tag):
    """c=a+b; d=a*b; e=c*d — a and b each feed two nodes."""
    a = tag(Value(x["a"]), "a")
    b = tag(Value(x["b"]), "b")
    c = tag(a + b, "c")
    d = tag(a * b, "d")
    return tag(c * d, "e")


def build_double(Value, x, tag):
    """y = x + x — the same node twice in one op."""
    v = tag(Value(x["x"]), "x")
    return tag(v + v, "y")


def build_product(Value, x, tag):
    """(a*b + c) * (a + c) — a and c are shared between the two factors."""
    a = tag(Value(x["p"]), "a")
    b = tag(Value(x["q"]), "b")
    c = tag(Value(x["r"]), "c")
    left = tag(a * b + c, "ab+c")
    right = tag(a + c, "a+c")
    return tag(left * right, "out")


def build_reuse(Value, x, tag):
    """b=a*t; c=b+o; d=b*c — a NON-leaf node b is reused, which catches bad topo orders."""
    a = tag(Value(x["s"]), "a")
    t = tag(Value(3.0), "t")
    o = tag(Value(1.0), "o")
    b = tag(a * t, "b")
    c = tag(b + o, "c")
    return tag(b * c, "d")


def random_inputs(rng):
    """Random leaves for all four graphs."""
    return {"a": nice(rng), "b": nice(rng), "x": nice(rng), "p": nice(rng),
            "q": nice(rng), "r": nice(rng), "s": nice(rng)}


OPS = ("add", "mul", "backward")
EXERCISE = Exercise(
    name="diamond",
    title="Shared nodes and reuse",
    summary="Graphs where one node feeds several others: gradients must accumulate.",
    points=3.0,
    graphs=(
        Graph("e", build_diamond, OPS, "c=a+b; d=a*b; e=c*d"),
        Graph("x+x", build_double, OPS, "y=x+x"),
        Graph("(a*b+c)*(a+c)", build_product, OPS, "(a*b+c)*(a+c)"),
        Graph("non-leaf reuse", build_reuse, OPS, "b=a*3; c=b+1; d=b*c"),
    ),
    canonical={"a": 3.0, "b": 4.0, "x": 5.0, "p": 2.0, "q": -3.0, "r": 10.0, "s": 2.0},
    random_inputs=random_inputs,
    hints={
        "accumulate": "A node that feeds several others must add up (+=) the gradient "
                      "from every path, never overwrite it (=).",
        "topo": "Call each node's _backward only after every node that uses it has "
                "finished: walk a topological order of the whole graph in reverse.",
    },
)
