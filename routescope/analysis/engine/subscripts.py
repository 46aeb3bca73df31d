"""Subscripts: `obj[idx]` and slices, on the contents a path holds (a dict's key, a list's
index, a tuple's or a constant's item, typing generics)."""

from __future__ import annotations

import ast

from routescope.analysis.engine.base import EngineBase, Paths
from routescope.analysis.engine.containers import (
    UNHASHABLE,
    DictVal,
    KeyedTuple,
    ListVal,
    TupleVal,
    from_python,
    key_of,
    new_tuple,
)
from routescope.analysis.engine.contents import (
    contains,
    dict_get,
    layout_of,
    perhaps_item,
    seq_items,
    snapshot,
)
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import (
    ClassVal,
    Const,
    External,
    FunctionVal,
    Instance,
    Tensor,
    Unknown,
    UnknownKind,
    Value,
    describe,
    may_raise,
    merge_origins,
    raises,
    unknown_from,
)
from routescope.analysis.library.records import ANNOTATED
from routescope.analysis.library.typing import LITERAL, annotated, literal


class SubscriptsMixin(EngineBase):
    def ev_Subscript(self, st: PathState, node: ast.Subscript) -> Paths:
        out: Paths = []
        for s, (obj, idx) in self.ev_seq(st, [node.value, node.slice]):
            if isinstance(obj, Instance) and obj.cls is not None:  # its own __getitem__, or
                out.extend(self.item_of(s, obj, idx, node))  # the dict a dict subclass holds
            else:
                out.append((s, self.subscript(s, obj, idx)))
        return out

    def ev_Slice(self, st: PathState, node: ast.Slice) -> Paths:
        parts = [
            p if p is not None else ast.Constant(None) for p in (node.lower, node.upper, node.step)
        ]
        out: Paths = []
        for s, vals in self.ev_seq(st, parts):
            if all(isinstance(v, Const) for v in vals):
                out.append((s, Const(slice(*(v.value for v in vals)))))  # type: ignore[attr-defined]
            else:
                out.append((s, Unknown("slice", kind=UnknownKind.UNSUPPORTED)))
        return out

    def subscript(self, st: PathState, obj: Value, idx: Value) -> Value:
        if isinstance(obj, DictVal):
            if key_of(idx) is UNHASHABLE:  # Python refuses the key before looking
                return raises("TypeError", f"unhashable dict key {describe(idx)}")
            got = dict_get(st, obj, idx)
            if got is None:
                return raises("KeyError", f"a dict lookup of a missing key {describe(idx)}")
            if isinstance(got, Unknown) and not self._surely_in(st, obj, idx):
                # the key may be missing; where it is there, a key a comprehension perhaps
                # kept holds its item
                return may_raise("KeyError", got, perhaps_item(st, obj, idx))
            return got
        if isinstance(obj, ListVal) and isinstance(idx, Const) and type(idx.value) is int:
            return self._list_item(st, obj, idx.value)
        if isinstance(obj, KeyedTuple) and isinstance(idx, Const):
            if isinstance(idx.value, str):
                got = obj.by_key.get(idx.value)
                return got if got is not None else raises("ValueError", obj.missing)
            at = idx.value
            if obj.copies and type(at) is int and -len(obj.items) <= at < len(obj.items):
                item = obj.items[at]
                if isinstance(item, Instance):
                    return Instance(item.cls, dict(st.fields(item)), item.label)
        obj = snapshot(st, obj)
        if isinstance(obj, Const) and isinstance(idx, Const):
            try:
                return from_python(obj.value[idx.value], merge_origins(obj, idx))
            except Exception as exc:
                return raises(type(exc).__name__, "subscript raised")
        if isinstance(obj, Tensor):
            return Tensor(producer=obj.producer, made_at=obj.made_at, role=obj.role)
        if isinstance(obj, TupleVal) and isinstance(idx, Const):
            at = idx.value
            if isinstance(at, slice):
                return new_tuple(obj.items[at])  # t[1:]
            if isinstance(at, int) and -len(obj.items) <= at < len(obj.items):
                return obj.items[at]
            return raises("IndexError", "a tuple index out of range")
        if isinstance(obj, FunctionVal):
            return obj  # kernel[grid]: the launcher is the kernel
        if isinstance(obj, External) and obj.name in ANNOTATED:
            return annotated(idx)
        if isinstance(obj, External) and obj.name in LITERAL:
            return literal(idx)
        if isinstance(obj, (External, ClassVal)):
            return obj  # typing generics, Optional[int]
        got = unknown_from("subscript of unknown", obj, idx)
        if isinstance(obj, (TupleVal, Const)) and isinstance(idx, Unknown):
            return may_raise("IndexError", got)  # a known sequence at an unknown index
        return got

    def _list_item(self, st: PathState, obj: ListVal, at: int) -> Value:
        """A list at a known index: its item where the list's items are known up to there
        (none perhaps absent), an IndexError past a known end; a list of unknown length may
        be too short, so the way that raises is kept beside the one that goes on."""
        items = seq_items(st, obj)
        if items is not None:
            if -len(items) <= at < len(items):
                return items[at]
            return raises("IndexError", "list index out of range")
        layout = layout_of(obj, st)
        why = st.contents(obj).why or Unknown("an item of a list of unknown length")
        got = unknown_from("an item of a list of unknown length", why)
        if layout is not None:
            sure = sum(1 for _, perhaps in layout if not perhaps)
            if 0 <= at < len(layout) and not any(p for _, p in layout[: at + 1]):
                return layout[at][0]
            if -sure <= at < sure:  # there on every way, which item it is depends
                return got
        return may_raise("IndexError", got)

    def _surely_in(self, st: PathState, d: DictVal, key: Value) -> bool:
        return contains(st, d, key) is True
