"""A framework class's own `__getitem__` and `__contains__`, called for `obj[key]` and
`key in obj`; and instances of a framework class derived from dict, each of which holds a dict
(its items on each path) that what the class does not define itself reads, as CPython's dict
does: `in`, `[]`, `.get()`, `.items()`, truth, and the `super()` calls of the class's own
methods (`super().__getitem__(key)`, `super().__init__(**kw)`).

A registry of config classes by name whose `__getitem__` imports the one asked for is such a
dict; before, every lookup in it was unknown."""

from __future__ import annotations

import ast

from routescope.analysis.engine.base import EngineBase, Paths
from routescope.analysis.engine.bound import BoundOperation
from routescope.analysis.engine.containers import DictVal, Entries, new_tuple
from routescope.analysis.engine.contents import contains, entries, named_tuple_items, truth_in
from routescope.analysis.engine.methods import ContainerMethod
from routescope.analysis.engine.sequences import over_containers
from routescope.analysis.engine.state import PathState, class_of
from routescope.analysis.engine.values import (
    ClassVal,
    Const,
    FunctionVal,
    Instance,
    Unknown,
    UnknownKind,
    Value,
)

# the builtin bases whose instances are dicts
DICT_BASES = frozenset({"dict", "collections.OrderedDict"})
# what `super().<name>` of a dict subclass reaches through to its dict
_DICT_METHODS = frozenset(
    {"get", "keys", "values", "items", "pop", "setdefault", "update", "clear", "copy"}
)


def is_dict_class(cls: ClassVal) -> bool:
    return any(b in DICT_BASES for b in cls.external_bases())


class DictOperation(BoundOperation):
    """`super().__init__(...)`, `super().__getitem__(key)`, `super().__contains__(key)` or
    `super().__setitem__(key, value)` of a dict subclass: on the dict it holds."""

    def __init__(self, engine: EngineBase, data: DictVal, name: str) -> None:
        super().__init__()
        self.engine, self.data, self.name = engine, data, name

    def call_with(self, st: PathState, args: list[Value], kwargs: dict[str, Value]) -> Value:
        if self.name == "__init__":  # its items, as dict(*args, **kwargs) makes them
            made = over_containers(st, "dict", args, kwargs)
            got = entries(st, made) if isinstance(made, DictVal) else Entries({}, _unread())
            st.store(self.data, got)
            return Const(None)
        if self.name == "__getitem__" and len(args) == 1:
            return self.engine.subscript(st, self.data, args[0])
        if self.name == "__contains__" and len(args) == 1:
            found = contains(st, self.data, args[0])
            return Const(found) if found is not None else _unread()
        if self.name == "__setitem__" and len(args) == 2:
            st.store(self.data, entries(st, self.data).with_item(args[0], args[1]))
            return Const(None)
        return Unknown(f"dict.{self.name} with these arguments", kind=UnknownKind.UNSUPPORTED)

    def call(self, st: PathState, args: list[Value]) -> Value:
        return self.call_with(st, args, {})


def _unread() -> Unknown:
    return Unknown("a dict's items routescope cannot read", kind=UnknownKind.UNSUPPORTED)


class MappingsMixin(EngineBase):
    dict_data: dict[int, DictVal]

    def dict_of(self, v: Value) -> DictVal | None:
        """The dict an instance of a dict subclass holds (None for any other value)."""
        return self.dict_data.get(id(v)) if isinstance(v, Instance) else None

    def new_dict_instance(self, inst: Instance) -> DictVal:
        """An instance of a dict subclass being built: the (empty) dict it holds."""
        data = DictVal()
        self.dict_data[id(inst)] = data
        self._memo_keep.append(inst)  # its id stays its own
        return data

    def own_dunder(self, st: PathState, obj: Instance, name: str) -> FunctionVal | None:
        """The framework class's own `name` method (a dunder the class defines itself)."""
        if obj.cls is None:
            return None
        found = class_of(st, obj).lookup(name)
        return found if isinstance(found, FunctionVal) else None

    def item_of(self, st: PathState, obj: Instance, idx: Value, node: ast.AST | None) -> Paths:
        """`obj[idx]`: the class's own `__getitem__`, else the dict it holds, else the
        subscript of any other object."""
        method = self.own_dunder(st, obj, "__getitem__")
        if method is not None:
            return self.call(st, method.bind(obj), [idx], {}, node)
        data = self.dict_of(obj)
        if data is not None:
            return [(st, self.subscript(st, data, idx))]
        items = named_tuple_items(st, obj)  # a NamedTuple indexes as the tuple it is
        if items is not None:
            return [(st, self.subscript(st, new_tuple(items), idx))]
        return [(st, self.subscript(st, obj, idx))]

    def membership_of(
        self, st: PathState, item: Value, obj: Instance, node: ast.AST | None
    ) -> Paths | None:
        """`item in obj` (as a bool): the class's own `__contains__` (its result's truth), else
        the dict it holds; None where neither applies."""
        method = self.own_dunder(st, obj, "__contains__")
        if method is not None:
            out: Paths = []
            for s, v in self.call(st, method.bind(obj), [item], {}, node):
                t = truth_in(s, v) if s.raising is None else None
                out.append((s, Const(t) if t is not None else v))
            return out
        data = self.dict_of(obj)
        if data is None:
            return None
        found = contains(st, data, item)
        return [(st, Const(found) if found is not None else _unread())]

    def dict_attribute(self, obj: Instance, name: str) -> Value | None:
        """A dict method of a dict subclass's instance its class does not define."""
        data = self.dict_of(obj)
        if data is None or name not in _DICT_METHODS:
            return None
        return ContainerMethod(data, name)

    def dict_super(self, receiver: Value, name: str) -> Value | None:
        """`super().<name>` reaching a dict subclass's builtin base."""
        data = self.dict_of(receiver)
        if data is None:
            return None
        if name in ("__init__", "__getitem__", "__contains__", "__setitem__"):
            return DictOperation(self, data, name)
        return ContainerMethod(data, name) if name in _DICT_METHODS else None

    def truth_of(self, st: PathState, v: Value) -> bool | None:
        """Truthiness, a dict subclass's instance (with no `__bool__` or `__len__` of its own)
        by the dict it holds."""
        data = self.dict_of(v)
        if (
            data is not None
            and isinstance(v, Instance)
            and not self.own_dunder(st, v, "__bool__")
            and not self.own_dunder(st, v, "__len__")
        ):
            return truth_in(st, data)
        return truth_in(st, v)
