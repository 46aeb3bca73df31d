"""A transformers config class called with known values (a framework's config class
building its text config from the file's table: `TextModelConfig(**text_config)`): the object
transformers builds, as intake builds the checkpoint's own (the class run on those values, its
attributes read back), a config object like the checkpoint's. Values routescope cannot read as
plain data leave the call unknown, as before."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from routescope.analysis.engine.containers import DictVal, ListVal, TupleVal, str_dict
from routescope.analysis.engine.contents import entries, seq_items
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import Const, Instance, Unknown, UnknownKind, Value
from routescope.analysis.library import heterogeneous
from routescope.analysis.library.registry import Paths, models, one

if TYPE_CHECKING:
    from routescope.analysis.engine.base import EngineBase

_DEPTH = 4


class _NotPlain(Exception):
    pass


@models("transformers.")
def _config_class(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    class_name = name.rsplit(".", 1)[-1]
    if args or not class_name.endswith("Config"):
        return None
    try:
        given = {k: _plain(st, eng.resolved(v), _DEPTH) for k, v in kwargs.items()}
    except _NotPlain:
        return None
    from routescope.intake.transformers_view import class_view

    view = class_view(given, "", class_name)
    if isinstance(view, str):
        return None  # (no such class, or it rejects the values: not told here)
    fields: dict[str, Value] = {}
    for key, value in view.readable.items():
        if key == "per_layer_config":  # (heterogeneous: the spec transformers keeps)
            heterogeneous.install(fields, value, f"transformers {class_name}.{key}")
            continue
        passed = kwargs.get(key)
        if passed is not None and key in given and given[key] == value:
            fields[key] = passed  # handed in and kept: the caller's value, with its origin
        else:
            fields[key] = _value(value, f"transformers {class_name}.{key}")
    return one(st, Instance(None, fields, "config"))


def _plain(st: PathState, v: Value, depth: int) -> Any:
    """The Python data a value stands for (constants, and dicts, lists and tuples of them)."""
    if isinstance(v, Const) and isinstance(v.value, (int, float, str, bool, type(None))):
        return v.value
    if depth <= 0:
        raise _NotPlain
    if isinstance(v, DictVal):
        e = entries(st, v)
        if e.rest is not None:
            raise _NotPlain
        out: dict[str, Any] = {}
        for key, item in e.items.values():
            k = _plain(st, key, depth - 1)
            if not isinstance(k, str):
                raise _NotPlain
            out[k] = _plain(st, item, depth - 1)
        return out
    if isinstance(v, (ListVal, TupleVal)):
        items = seq_items(st, v)
        if items is None:
            raise _NotPlain
        got = [_plain(st, x, depth - 1) for x in items]
        return got if isinstance(v, ListVal) else tuple(got)
    if isinstance(v, Const) and isinstance(v.value, (list, tuple)):
        return v.value
    raise _NotPlain


def _value(value: Any, origin: str) -> Value:
    if isinstance(value, (int, float, str, bool, type(None))):
        return Const(value, (origin,))
    if isinstance(value, (list, tuple)) and all(
        isinstance(x, (int, float, str, bool, type(None))) for x in value
    ):
        return Const(tuple(value) if isinstance(value, tuple) else value, (origin,))
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return str_dict({k: _value(v, origin) for k, v in value.items()})
    return Unknown(origin, kind=UnknownKind.INPUT)
