"""The trusted reference autograd engine; student code never sees it."""

from reference.engine import Value

__all__ = ["Value"]
