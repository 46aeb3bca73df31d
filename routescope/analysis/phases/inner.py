"""Models a wrapper builds by name: a multimodal model whose constructor asks the framework's
registry for its language model by architecture (`init_model(..., architectures=["X"])`, the
rules' `models.inner_model`), rather than calling the class."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from routescope.analysis.engine.core import Engine
from routescope.analysis.engine.values import ClassVal, FunctionVal, Value
from routescope.analysis.phases.trace import resolve_entry

# a call that builds a model by name: (the call, the constructor body it is in, its module,
# the keyword the function hands on as the built model's module path), by (parent, child)
InnerCalls = dict[tuple[str, str], tuple[ast.Call, ast.AST, Any, str]]


def inner_models(
    engine: Engine,
    rule: dict[str, str] | None,
    look_up: Callable[[str], ClassVal | None],
    static_values: Callable[[Engine, Any, Any, ast.expr], list[Value]],
    bodies: Callable[[ClassVal], list[tuple[ast.AST, Any]]],
    calls: InnerCalls | None = None,
) -> Callable[[ClassVal], list[ClassVal]]:
    """For the model search: the classes a constructor builds through the rules' inner-model
    function, each architecture it names (a literal list) looked up as the release looks it
    up; nothing when the rules name no such function or the release has none. Each call found
    is kept in `calls` (the prefix it hands on is the built model's module path: the rules'
    `prefix` keyword, which the function passes through to the constructor)."""
    fn = resolve_entry(engine, rule["function"]) if rule else None
    if rule is None or not isinstance(fn, FunctionVal) or fn.node is None:
        return lambda cls: []
    keyword = rule.get("architectures", "architectures")
    handed = rule.get("prefix", "")

    def built(cls: ClassVal) -> list[ClassVal]:
        from routescope.analysis.engine.state import PathState

        out: list[ClassVal] = []
        for node, module in bodies(cls):
            if module is None:
                continue
            st = PathState(envs=[module.globals])
            for call in (c for c in ast.walk(node) if isinstance(c, ast.Call)):
                if not any(
                    isinstance(v, FunctionVal) and v.node is fn.node
                    for v in static_values(engine, module, st, call.func)
                ):
                    continue
                for name in _names(call, keyword):
                    found = look_up(name)
                    if found is not None and found not in out and found is not cls:
                        out.append(found)
                        if calls is not None and handed:
                            calls[cls.qualname, found.qualname] = (call, node, module, handed)
        return out

    return built


def _names(call: ast.Call, keyword: str) -> list[str]:
    """The architecture names a call passes as a literal list or tuple of strings."""
    for kw in call.keywords:
        if kw.arg == keyword:
            try:
                value = ast.literal_eval(kw.value)
            except ValueError:
                return []
            if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
                return list(value)
    return []
