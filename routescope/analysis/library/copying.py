"""copy.copy and copy.deepcopy of the objects a path holds."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from routescope.analysis.engine.containers import DictVal, ListVal, Seq, SetVal, TupleVal
from routescope.analysis.engine.contents import entries, seq_items
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import (
    ClassVal,
    Const,
    EnumMember,
    External,
    FunctionVal,
    Instance,
    ModuleVal,
    Unknown,
    UnknownKind,
    Value,
)
from routescope.analysis.library.registry import Paths, models, one

if TYPE_CHECKING:
    from routescope.analysis.engine.base import EngineBase


@models("copy.copy", "copy.deepcopy")
def _copy(
    eng: EngineBase,
    st: PathState,
    name: str,
    args: list[Value],
    kwargs: dict[str, Value],
    node: ast.AST | None,
) -> Paths | None:
    if len(args) != 1:
        return None
    return one(st, copied(st, eng.resolved(args[0]), name == "copy.deepcopy", COPY_DEPTH))


# how deep copy.deepcopy follows nested containers and objects (a checkpoint's quantization
# config nests four dicts: config_groups.group_0.weights.group_size)
COPY_DEPTH = 16


def copied(
    st: PathState, v: Value, deep: bool, depth: int, memo: dict[int, Value] | None = None
) -> Value:
    """copy.copy / copy.deepcopy of a tracked object: a new object with this path's contents
    (deep: nested objects copied too, `depth` levels down, each one once, so what the original
    shares the copy shares too, as deepcopy's memo does; a cycle runs out of depth); values are
    shared as Python does. An unknown value stays what it is."""
    if depth <= 0:
        return Unknown("deepcopy nested too deeply", kind=UnknownKind.BUDGET)
    if isinstance(v, (Const, EnumMember, External, FunctionVal, ClassVal, ModuleVal, Unknown)):
        return v  # immutable, or copied as itself (copy of a class, a function, a module)
    memo = {} if memo is None else memo
    if id(v) in memo:
        return memo[id(v)]

    def inner(x: Value) -> Value:
        return copied(st, x, True, depth - 1, memo) if deep else x

    if (
        isinstance(v, Instance)
        and v.cls is not None
        and (
            v.cls.lookup("__deepcopy__" if deep else "__copy__") is not None
            or v.cls.lookup("__reduce_ex__") is not None
        )
    ):
        return Unknown(
            f"a copy by {v.cls.qualname}'s own copy method", kind=UnknownKind.UNSUPPORTED
        )
    made: Value
    if isinstance(v, ListVal):
        items = seq_items(st, v)
        if items is None:
            why = Unknown("a copy of a list of unknown contents", kind=UnknownKind.UNSUPPORTED)
            return ListVal(None, why)
        made = memo[id(v)] = ListVal([])  # in the memo before its items: a cycle keeps it
        made.base = Seq([inner(i) for i in items])
    elif isinstance(v, TupleVal):
        made = TupleVal([inner(i) for i in v.items], v.origins) if deep else v
    elif isinstance(v, (DictVal, SetVal)):
        e = entries(st, v)
        made = memo[id(v)] = type(v)(type(e)({}, e.rest))
        made.base = type(e)({k: (kv, inner(x)) for k, (kv, x) in e.items.items()}, e.rest)
    elif isinstance(v, Instance):
        fields = st.fields(v)  # this path's view (its own writes included)
        made = memo[id(v)] = Instance(v.cls, {}, v.label)
        made.fields.update({k: inner(x) for k, x in fields.items()})
    else:
        return Unknown("copy of an unknown value", v.origins, kind=UnknownKind.UNSUPPORTED)
    memo[id(v)] = made
    return made
