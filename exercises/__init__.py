"""The exercise registry: every exercise module under its name, in teaching order."""

from exercises import diamond, expression, mlp_step, neuron, operators
from exercises.base import Exercise, Graph, instances

EXERCISES: dict[str, Exercise] = {
    m.EXERCISE.name: m.EXERCISE for m in (expression, diamond, neuron, mlp_step, operators)
}
#: modules whose source is copied into the sandbox, by exercise name
MODULES = {m.EXERCISE.name: m for m in (expression, diamond, neuron, mlp_step, operators)}

__all__ = ["EXERCISES", "MODULES", "Exercise", "Graph", "instances"]
