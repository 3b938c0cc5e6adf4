"""One training step of the lecture's MLP(3, [4, 4, 1]): loss, backward, SGD update."""

from exercises.base import Exercise, Graph

SIZES = (3, 4, 4, 1)
LR = 0.05


def param_names():
    """The 41 parameter names, layer by layer, neuron by neuron: weights then bias."""
    names = []
    for layer, (nin, nout) in enumerate(zip(SIZES, SIZES[1:], strict=False)):
        for n in range(nout):
            names += [f"L{layer}.N{n}.w{i}" for i in range(nin)] + [f"L{layer}.N{n}.b"]
    return names


def build(Value, x, tag):
    """Forward pass over the four samples and the squared-error loss, as in the lecture."""
    weights = iter(x["params"])
    layers = []
    for layer, (nin, nout) in enumerate(zip(SIZES, SIZES[1:], strict=False)):
        neurons = []
        for n in range(nout):
            w = [tag(Value(next(weights)), f"L{layer}.N{n}.w{i}") for i in range(nin)]
            b = tag(Value(next(weights)), f"L{layer}.N{n}.b")
            neurons.append((w, b))
        layers.append(neurons)

    preds = []
    for s, xs in enumerate(x["xs"]):
        acts = xs  # plain numbers into the first layer: Value * number
        for layer, neurons in enumerate(layers):
            outs = []
            for n, (w, b) in enumerate(neurons):
                at = f"s{s}.L{layer}.N{n}"
                act = b  # sum((wi*xi for ...), b), unrolled so every node is named
                for i, (wi, xi) in enumerate(zip(w, acts, strict=True)):
                    act = tag(act + tag(wi * xi, f"{at}.w{i}*x{i}"), f"{at}.sum{i}")
                outs.append(tag(act.tanh(), f"{at}.out"))
            acts = outs
        preds.append(acts[0])

    loss = 0  # sum((yout - ygt)**2 for ...): the first term is 0 + Value, i.e. __radd__
    for s, (yout, ygt) in enumerate(zip(preds, x["ys"], strict=True)):
        diff = tag(yout - ygt, f"s{s}.yout-ygt")
        loss = tag(loss + tag(diff**2, f"s{s}.(yout-ygt)**2"), f"loss.sum{s}")
    return tag(loss, "loss")


def params(_inputs):
    """Every parameter node of the network."""
    return param_names()


def weights(rng, count=41):
    """Initial weights, uniform(-1, 1) as in the lecture's Neuron."""
    return [rng.uniform(-1, 1) for _ in range(count)]


def random_inputs(rng):
    """Random weights, inputs in [-2, 2] and targets of ±1."""
    return {
        "params": weights(rng),
        "xs": [[round(rng.uniform(-2, 2), 2) for _ in range(3)] for _ in range(4)],
        "ys": [rng.choice((-1.0, 1.0)) for _ in range(4)],
    }


def _canonical():
    import random

    return {
        "params": weights(random.Random(0)),
        "xs": [[2.0, 3.0, -1.0], [3.0, -1.0, 0.5], [0.5, 1.0, 1.0], [1.0, 1.0, -1.0]],
        "ys": [1.0, -1.0, -1.0, 1.0],
    }


EXERCISE = Exercise(
    name="mlp_step",
    title="One MLP training step",
    summary="MLP(3, [4, 4, 1]) on the lecture's four samples: loss, all 41 gradients and "
            "the parameters after one SGD step (lr 0.05).",
    points=3.0,
    graphs=(Graph("training step", build,
                  ("mul", "mul_number", "add", "sub_number", "radd", "pow", "tanh", "backward"),
                  "loss = sum((MLP(x) - y)**2); loss.backward(); p.data -= 0.05 * p.grad"),),
    canonical=_canonical(),
    random_inputs=random_inputs,
    lr=LR,
    params=params,
    hints={
        "pow": "For out = x**k, x.grad gets k * x.data**(k-1) * out.grad.",
        "radd": "sum() starts from 0, so 0 + Value needs __radd__.",
        "sub_number": "Value - number needs __sub__ to wrap the number in a Value.",
    },
)
