"""Markup everywhere a student controls a string: op names, stdout, stderr, an exception.

`*` also has the classic swapped derivative, so diffs have red nodes to show.
"""
import math
import sys

print('<script>alert("stdout")</script>')
print('<img src=x onerror=alert("stderr")>', file=sys.stderr)

MUL_OP = '<script>alert(1)</script>'
ADD_OP = '"><svg onload=alert(2)>&amp;'


class Value:

    def __init__(self, data, _children=(), _op=''):
        self.data = data
        self.grad = 0.0
        self._backward = lambda: None
        self._prev = set(_children)
        self._op = _op

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data + other.data, (self, other), ADD_OP)

        def _backward():
            self.grad += out.grad
            other.grad += out.grad
        out._backward = _backward
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data * other.data, (self, other), MUL_OP)

        def _backward():
            self.grad += self.data * out.grad
            other.grad += other.data * out.grad
        out._backward = _backward
        return out

    def tanh(self):
        t = math.tanh(self.data)
        out = Value(t, (self,), '<b>tanh</b>')

        def _backward():
            self.grad += (1 - t ** 2) * out.grad
        out._backward = _backward
        return out

    def exp(self):
        raise ValueError('<script>alert("exception")</script>')

    def backward(self):
        topo, seen, stack = [], set(), [(self, False)]
        while stack:
            node, done = stack.pop()
            if done:
                topo.append(node)
            elif node not in seen:
                seen.add(node)
                stack.append((node, True))
                stack.extend((child, False) for child in node._prev)
        self.grad = 1.0
        for node in reversed(topo):
            node._backward()
