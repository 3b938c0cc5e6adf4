"""Each operation on its own, reported as a table (feedback only by default)."""

from exercises.base import Exercise, Graph, nice


def _binary(fn):
    def build(Value, x, tag):
        a = tag(Value(x["a"]), "a")
        b = tag(Value(x["b"]), "b")
        return tag(fn(a, b), "out")
    return build


def _unary(fn, key="a"):
    def build(Value, x, tag):
        a = tag(Value(x[key]), "a")
        return tag(fn(a), "out")
    return build


def _sum(Value, x, tag):
    a = tag(Value(x["a"]), "a")
    b = tag(Value(x["b"]), "b")
    return tag(sum([a, b]), "out")


CASES = (
    ("a+a", _unary(lambda a: a + a), ("add",)),
    ("a*a", _unary(lambda a: a * a), ("mul",)),
    ("a-b", _binary(lambda a, b: a - b), ("sub",)),
    ("1.0-a", _unary(lambda a: 1.0 - a), ("rsub",)),
    ("a/b", _binary(lambda a, b: a / b), ("truediv",)),
    ("4.0/a", _unary(lambda a: 4.0 / a), ("rtruediv",)),
    ("a**3", _unary(lambda a: a**3), ("pow",)),
    ("a**0.5", _unary(lambda a: a**0.5, "pos"), ("pow",)),
    ("a**-1", _unary(lambda a: a**-1), ("pow",)),
    ("exp", _unary(lambda a: a.exp()), ("exp",)),
    ("tanh", _unary(lambda a: a.tanh()), ("tanh",)),
    ("relu", _unary(lambda a: a.relu()), ("relu",)),
    ("sum([a, b])", _sum, ("radd", "add")),
    ("-a", _unary(lambda a: -a), ("neg",)),
)


def random_inputs(rng):
    """Two nonzero inputs and a positive one for the square root."""
    return {"a": nice(rng, -2, 2), "b": nice(rng, -2, 2), "pos": abs(nice(rng, 0.5, 4))}


EXERCISE = Exercise(
    name="operators",
    title="Every operation on its own",
    summary="Each operation checked alone, forward and backward; a table, not a grade.",
    points=0.0,
    graphs=tuple(Graph(name, fn, (*ops, "backward"), name) for name, fn, ops in CASES),
    canonical={"a": 1.5, "b": -0.5, "pos": 2.25},
    random_inputs=random_inputs,
    feedback_only=True,
    per_graph_table=True,
    hints={
        "rsub": "1.0 - a calls a.__rsub__(1.0), which must compute 1.0 - a, not a - 1.0.",
        "rtruediv": "4.0 / a calls a.__rtruediv__(4.0), which must compute 4.0 / a.",
    },
)
