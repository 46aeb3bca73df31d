"""Models of library functions the engine does not read, registered by the function's dotted
name, as astroid's brain modules register inference tips and pytype's overlays register
classes: the engine looks a callee up here instead of branching on its name.

A model is called with the engine, the path, the name called, the call's arguments and its
node, and returns the paths of the call, or None when it does not apply (the next model, the
sink rules or the engine's default answer then)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeAlias

from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import Value

if TYPE_CHECKING:
    from routescope.analysis.engine.base import EngineBase

Paths: TypeAlias = list[tuple[PathState, Value]]
Model: TypeAlias = Callable[
    ["EngineBase", PathState, str, list[Value], dict[str, Value], ast.AST | None], Paths | None
]

_EXACT: dict[str, list[Model]] = {}
_PREFIX: list[tuple[str, Model]] = []


def models(*names: str) -> Callable[[Model], Model]:
    """Register a model for each dotted name (`torch.` with a trailing dot: every name under
    it, after the exact models and the framework's sink rules)."""

    def add(fn: Model) -> Model:
        for name in names:
            if name.endswith("."):
                _PREFIX.append((name, fn))
                _PREFIX.sort(key=lambda p: -len(p[0]))  # the most specific prefix first
            else:
                _EXACT.setdefault(name, []).append(fn)
        return fn

    return add


def exact(name: str) -> list[Model]:
    return _EXACT.get(name, [])


def by_prefix(name: str) -> list[Model]:
    return [fn for prefix, fn in _PREFIX if name.startswith(prefix)]


def one(st: PathState, v: Value) -> Paths:
    """The paths of a call that stays on its path and gives `v`."""
    return [(st, v)]
