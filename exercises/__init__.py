"""The exercise registry: every exercise module under its name, in teaching order."""

from exercises import diamond, expression, mlp_step, neuron, operators, single_op
from exercises.base import Exercise, Graph, instances

EXERCISES: dict[str, Exercise] = {
    m.EXERCISE.name: m.EXERCISE for m in (expression, diamond, neuron, mlp_step, operators)
}
#: modules whose source is copied into the sandbox, by exercise name (single_op replays one
#: operation alone when a failure is shrunk; it is not part of any assignment)
MODULES = {m.EXERCISE.name: m
           for m in (expression, diamond, neuron, mlp_step, operators, single_op)}

__all__ = ["EXERCISES", "MODULES", "Exercise", "Graph", "instances"]
