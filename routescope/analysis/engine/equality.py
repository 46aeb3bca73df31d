"""Equality: `==` as Python computes it on the values a path holds (dataclass and struct
records field by field, NamedTuples as tuples, containers item by item)."""

from __future__ import annotations

from routescope.analysis.engine.containers import (
    UNTOLD,
    DictVal,
    ListVal,
    SetVal,
    TupleVal,
    key_of,
    new_tuple,
)
from routescope.analysis.engine.contents import (
    entries,
    field_names,
    named_tuple_items,
    seq_items,
    snapshot,
)
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.tensors import torch_dtype
from routescope.analysis.engine.values import (
    ClassVal,
    Const,
    EnumMember,
    Instance,
    Tensor,
    Unknown,
    Value,
)
from routescope.analysis.library.devices import same_device
from routescope.analysis.library.records import is_dataclass, is_struct


def record_eq(st: PathState, a: Value, b: Value, depth: int) -> bool | None:
    """`==` between two records (dataclasses, msgspec Structs) of one class that keeps the
    generated __eq__: field by field as this path sees them; None when it cannot say."""
    if not (isinstance(a, Instance) and isinstance(b, Instance) and a.cls is not None):
        return None
    if a is b:
        return True
    if depth <= 0 or not _generated_eq(a.cls):
        return None
    if b.cls is not a.cls:  # the generated __eq__ answers NotImplemented: identity decides
        return False if b.cls is not None and _generated_eq(b.cls) else None
    fa, fb = st.fields(a), st.fields(b)
    for name in field_names(a.cls):  # the fields, in order (not attributes set later)
        if name not in fa or name not in fb:
            return None
        got = equal(st, fa[name], fb[name], depth - 1)
        if got is not True:
            return got
    return True


# bases from outside the framework that keep object's == (identity); ABCs and Protocols too
_IDENTITY_BASES = frozenset(
    {
        "typing.Generic",
        "torch.nn.Module",
        "torch.nn.modules.module.Module",
    }
)


def _identity_eq(cls: ClassVal) -> bool:
    """A class whose instances compare by identity: no __eq__ of its own or its bases'."""
    return not any("__eq__" in c.attrs for c in cls.mro()) and all(
        b in _IDENTITY_BASES or b.endswith(("ABC", "Protocol")) for b in cls.external_bases()
    )


def _generated_eq(cls: ClassVal) -> bool:
    """A record class whose == is the generated field-by-field one."""
    return (is_dataclass(cls) or is_struct(cls)) and not any("__eq__" in c.attrs for c in cls.mro())


def named_tuple(st: PathState, v: Value) -> Value:
    """A NamedTuple instance as the tuple it is (its fields in order); anything else as is.
    (Its own comparison methods that take only their own class answer NotImplemented for a
    plain tuple, and Python then compares the two as tuples.)"""
    items = named_tuple_items(st, v) if isinstance(v, Instance) else None
    return new_tuple(items) if items is not None else v


def equal(st: PathState, a: Value, b: Value, depth: int = 6) -> bool | None:
    """`a == b` where Python's answer follows from what this path knows: constants, enum
    members, containers item by item, records field by field; None when it does not."""
    if a is b and not isinstance(a, (Const, Unknown, Tensor)):
        return True
    if isinstance(a, EnumMember) and isinstance(b, EnumMember):
        ka, kb = key_of(a), key_of(b)  # int and str enums' members: their values; others: one
        return None if ka is UNTOLD or kb is UNTOLD else bool(ka == kb)  # object per member
    if isinstance(a, EnumMember) and isinstance(b, Const):
        k = key_of(a)  # a member of an int or str enum equals its value; others no constant
        return bool(k == b.value) if k is not UNTOLD else None
    if isinstance(b, EnumMember) and isinstance(a, Const):
        return equal(st, b, a, depth)
    dtypes = torch_dtype(a), torch_dtype(b)
    if dtypes[0] and dtypes[1]:
        return dtypes[0] == dtypes[1]  # one object per dtype, whatever its name
    if depth <= 0:
        return None
    ka, kb = _set_keys(st, a), _set_keys(st, b)
    if ka is not None and kb is not None:  # sets: by members, as their hashes compare
        return ka == kb
    a, b = named_tuple(st, a), named_tuple(st, b)  # a NamedTuple compares as a tuple
    a, b = (
        snapshot(st, a) if isinstance(a, SetVal) else a,
        snapshot(st, b) if isinstance(b, SetVal) else b,
    )
    x, y = seq_items(st, a), seq_items(st, b)
    if x is not None and y is not None and _is_list(a) == _is_list(b):
        if len(x) != len(y):
            return False
        hits = [equal(st, i, j, depth - 1) for i, j in zip(x, y, strict=True)]
        return False if False in hits else (True if all(h is True for h in hits) else None)
    if isinstance(a, DictVal) and isinstance(b, DictVal):
        ea, eb = entries(st, a), entries(st, b)
        if not (ea.closed() and eb.closed()):
            return None
        if ea.items.keys() != eb.items.keys():
            return False
        hits = [equal(st, ea.items[k][1], eb.items[k][1], depth - 1) for k in ea.items]
        return False if False in hits else (True if all(h is True for h in hits) else None)
    rec = record_eq(st, a, b, depth)
    if rec is not None:
        return rec
    devices = same_device(st, a, b)
    if devices is not None:
        return devices
    for obj, const in ((a, b), (b, a)):
        if (
            isinstance(obj, Instance)
            and obj.cls is not None
            and isinstance(const, Const)
            and (_identity_eq(obj.cls) or _generated_eq(obj.cls))
        ):
            return False  # object's (or a record's) == holds only for its own class
    if isinstance(a, Const) and isinstance(b, Const):
        try:
            return bool(a.value == b.value)
        except Exception:
            return None
    if isinstance(a, (DictVal, ListVal, TupleVal)) or isinstance(b, (DictVal, ListVal, TupleVal)):
        other = b if isinstance(a, (DictVal, ListVal, TupleVal)) else a
        if isinstance(other, Const) and not isinstance(other.value, (list, tuple, dict)):
            return False  # a container equals no number, string or None
    return None


def _set_keys(st: PathState, v: Value) -> frozenset[object] | None:
    """A set's members as keys (`key_of`: an int or str enum's member is its value, a plain
    enum's member only itself), a set of enum members as well as a constant set; None for
    anything else or a set whose members are not all known."""
    if isinstance(v, Const) and isinstance(v.value, (set, frozenset)):
        return frozenset(v.value)
    if isinstance(v, SetVal):
        e = entries(st, v)
        return frozenset(e.items) if e.closed() and UNTOLD not in e.items else None
    return None


def _is_list(v: Value) -> bool:
    return isinstance(v, ListVal) or (isinstance(v, Const) and isinstance(v.value, list))
