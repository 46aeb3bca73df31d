"""Which values are never None, whatever the facts: `x is None` of them is false."""

from __future__ import annotations

from routescope.analysis.engine.containers import DictVal, ListVal, SetVal, TupleVal
from routescope.analysis.engine.values import (
    ClassVal,
    Const,
    EnumMember,
    External,
    FunctionVal,
    Instance,
    ModuleVal,
    Tensor,
    Unknown,
    UnknownKind,
    Value,
)

# objects, containers, tensors, callables; an imported name exists, a bound method too
_NEVER_NONE = (
    FunctionVal,
    ClassVal,
    ModuleVal,
    Instance,
    EnumMember,
    Tensor,
    ListVal,
    DictVal,
    SetVal,
    TupleVal,
    External,
)


def never_none(v: Value | None) -> bool:
    """A constant other than None; a value of a kind that is never None; an unknown known to
    be true (None is false), or joined from paths none of which held None."""
    if v is None:
        return False
    if isinstance(v, Const):
        return v.value is not None
    if isinstance(v, Unknown):
        return v.truthy is True or v.not_none or v.never_none
    return isinstance(v, _NEVER_NONE) or v.never_none


def opaque_not_none(reason: str) -> Unknown:
    """What a library gives that routescope does not model but knows is no None (a number, a
    bool, a tuple, a storage)."""
    got = Unknown(reason, kind=UnknownKind.OPAQUE)
    got.not_none = True
    return got
