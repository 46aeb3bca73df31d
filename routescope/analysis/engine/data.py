"""The (kind, JSON value) a report gives a program for each value the trace read."""

from __future__ import annotations

from typing import Any

from routescope.analysis.engine.values import (
    ClassVal,
    Const,
    EnumMember,
    External,
    FunctionVal,
    ModuleVal,
    Tensor,
    Unknown,
    Value,
    describe,
)


def as_data(v: Value) -> tuple[str, Any]:
    """(kind, JSON value) of a value as a report gives it to a program: a known constant is
    itself (lists as tuples, so the pair hashes), an enum member its "Class.NAME", a function,
    class, module or external its name; a tensor, an unknown or an object has no JSON value
    (None) and says so by its kind. `describe` stays the text a person reads."""
    if isinstance(v, Const):
        plain = _plain(v.value)
        return ("constant", plain) if plain is not _NOT_PLAIN else ("object", None)
    kinds: tuple[tuple[type, str], ...] = (
        (Unknown, "unknown"), (Tensor, "tensor"), (EnumMember, "enum"),
        (FunctionVal, "function"), (ClassVal, "class"), (ModuleVal, "module"),
        (External, "external"),
    )  # fmt: skip
    kind = next((k for t, k in kinds if isinstance(v, t)), "object")
    named = kind in ("enum", "function", "class", "module", "external")
    text = describe(v)
    return kind, (text.removeprefix("class ").removeprefix("module ") if named else None)


_NOT_PLAIN = object()


def _plain(value: Any) -> Any:
    """A Python constant as JSON can hold it (tuples for lists), else _NOT_PLAIN."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return (
            value if value == value and value not in (float("inf"), float("-inf")) else (_NOT_PLAIN)
        )
    if isinstance(value, (tuple, list)):
        items = tuple(_plain(x) for x in value)
        return _NOT_PLAIN if any(x is _NOT_PLAIN for x in items) else items
    return _NOT_PLAIN
