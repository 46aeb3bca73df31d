"""Methods of tracked values: dict, list and set methods, context variables, register_*."""

from __future__ import annotations

import ast
from typing import cast

from routescope.analysis.engine.base import EngineBase
from routescope.analysis.engine.containers import (
    LIST_UNKNOWN,
    index_of,
    key_absent,
    key_value,
    new_list,
    seq_items,
    set_of,
    snapshot,
    unknown_list,
    update_view,
)
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import (
    Const,
    Instance,
    Unknown,
    UnknownKind,
    Value,
    describe,
)
from routescope.analysis.library.builtins import (
    ordered,
)


class DictMethod(Value):
    """A method of a dict literal the engine tracks key by key (keys stored as repr)."""

    def __init__(self, target: Instance, name: str) -> None:
        super().__init__()
        self.target = target
        self.name = name

    def call(self, st: PathState, args: list[Value], kwargs: dict[str, Value]) -> Value:
        f = st.fields(self.target)
        if self.name in ("update", "pop", "setdefault"):
            f = dict(f)  # this path's own copy: forks may share the old one
            st.replace_fields(self.target, f)
        key = repr(args[0].value) if args and isinstance(args[0], Const) else None
        if self.name == "update":
            if args and isinstance(args[0], Instance) and args[0].label == "dict":
                update_view(f, st.fields(args[0]))
            elif args:
                f[LIST_UNKNOWN] = Unknown(
                    "dict updated from an unknown value", kind=UnknownKind.UNSUPPORTED
                )
            f.update({repr(k): v for k, v in kwargs.items()})
            return Const(None)
        if self.name in ("get", "pop", "setdefault") and key is not None:
            default = args[1] if len(args) > 1 else Const(None)
            if self.name == "setdefault" and key not in f:
                f[key] = (
                    default
                    if key_absent(f, key)
                    else Unknown("dict of unknown contents", kind=UnknownKind.UNSUPPORTED)
                )
            missing = (
                default
                if key_absent(f, key)
                else Unknown("dict of unknown contents", kind=UnknownKind.UNSUPPORTED)
            )
            value = f.get(key, missing)
            if self.name == "pop":
                f.pop(key, None)
            return value
        if self.name == "get" and args and not f:  # an empty dict holds no key at all
            return args[1] if len(args) > 1 else Const(None)
        if self.name in ("keys", "values", "items") and LIST_UNKNOWN in f:
            return Unknown(
                f"dict.{self.name}() of a dict of unknown contents", kind=UnknownKind.UNSUPPORTED
            )
        if self.name == "keys":
            return Instance(None, {str(i): key_value(k) for i, k in enumerate(f)}, "tuple")
        if self.name == "values":
            return Instance(None, {str(i): v for i, v in enumerate(f.values())}, "tuple")
        if self.name == "items":
            pairs: dict[str, Value] = {
                str(i): Instance(None, {"0": key_value(k), "1": v}, "tuple")
                for i, (k, v) in enumerate(f.items())
            }
            return Instance(None, pairs, "tuple")
        return Unknown(f"dict.{self.name}()", kind=UnknownKind.UNSUPPORTED)


REGISTERS = {"register_buffer", "register_parameter", "add_module", "register_module"}


CONTEXT_VAR = "ContextVar"


class ContextVarMethod(Value):
    """get / set / reset of a contextvars.ContextVar: the value lives on the path (as a field
    the path writes), so a `with` block that sets it holds it until its reset."""

    def __init__(self, var: Instance, name: str) -> None:
        super().__init__()
        self.var, self.name = var, name

    def call(self, st: PathState, args: list[Value]) -> Value:
        view = st.fields(self.var)
        if self.name == "get":  # its value, else get()'s default, else its own default
            for got in (view.get("value"), args[0] if args else None, view.get("default")):
                if got is not None:
                    return got
            return Unknown(
                f"ContextVar {describe(view['name'])} has no value on this path",
                kind=UnknownKind.ABSENT,
            )
        if self.name == "set" and len(args) == 1:
            token = Instance(None, {"old": view["value"]} if "value" in view else {}, "Token")
            st.write(self.var, "value", args[0])
            return token
        if self.name == "reset" and len(args) == 1 and isinstance(args[0], Instance):
            old = st.fields(args[0]).get("old")
            fields = dict(view)
            if old is None:  # back to no value of its own: the default answers again
                fields.pop("value", None)
            else:
                fields["value"] = old
            st.replace_fields(self.var, fields)
            return Const(None)
        return Unknown(f"ContextVar.{self.name}()", kind=UnknownKind.UNSUPPORTED)


class Register(Value):
    """nn.Module.register_buffer / register_parameter / add_module of a module instance."""

    def __init__(self, target: Instance) -> None:
        super().__init__()
        self.target = target


class SetMethod(Value):
    """A method of a tracked set: changes go to the path's own copy of its items."""

    _CHANGES = frozenset(
        {
            "add",
            "discard",
            "remove",
            "update",
            "clear",
            "difference_update",
            "intersection_update",
            "symmetric_difference_update",
            "pop",
        }
    )
    _READS = frozenset(
        {
            "union",
            "intersection",
            "difference",
            "symmetric_difference",
            "issubset",
            "issuperset",
            "isdisjoint",
            "copy",
        }
    )

    def __init__(self, target: Instance, name: str) -> None:
        super().__init__()
        self.target = target
        self.name = name

    def call(self, st: PathState, args: list[Value]) -> Value:
        current = snapshot(st, self.target)
        name = self.name
        known = isinstance(current, Const) and all(isinstance(a, Const) for a in args)
        if name in self._READS:
            if not known:
                return Unknown(f"set.{name}() of unknowns", kind=UnknownKind.UNSUPPORTED)
            try:
                got = getattr(current.value, name)(*(a.value for a in args))  # type: ignore[attr-defined]
            except Exception as exc:
                return Unknown(f"set.{name}() raised {type(exc).__name__}", kind=UnknownKind.RAISED)
            return set_of([Const(x) for x in ordered(got)]) if isinstance(got, set) else Const(got)
        if name not in self._CHANGES:
            return Unknown(f"set.{name}()", kind=UnknownKind.UNSUPPORTED)
        if not known or name == "pop":
            st.replace_fields(
                self.target,
                {LIST_UNKNOWN: Unknown(f"set.{name}() of unknowns", kind=UnknownKind.UNSUPPORTED)},
            )
            return Unknown(f"set.{name}()", kind=UnknownKind.UNSUPPORTED)
        members = set(current.value)  # type: ignore[attr-defined]
        try:
            getattr(members, name)(*(a.value for a in args))  # type: ignore[attr-defined]
        except Exception as exc:
            return Unknown(f"set.{name}() raised {type(exc).__name__}", kind=UnknownKind.RAISED)
        st.replace_fields(self.target, {repr(x): Const(x) for x in members})
        return Const(None)


class ListMethod(Value):
    """A method of a list the engine tracks item by item: a change goes to the path's own copy
    of the items (copy-on-write), so sibling paths never see it."""

    def __init__(self, target: Instance, name: str) -> None:
        super().__init__()
        self.target = target
        self.name = name

    def call(
        self, eng: EngineBase, st: PathState, args: list[Value], kwargs: dict[str, Value]
    ) -> Value:
        name = self.name
        items = seq_items(st, self.target)

        def store(new: list[Value] | None, why: str = "") -> None:
            st.replace_fields(
                self.target,
                {str(i): v for i, v in enumerate(new)}
                if new is not None
                else {LIST_UNKNOWN: Unknown(why or f"list.{name}()", kind=UnknownKind.UNSUPPORTED)},
            )

        if name == "clear" and not args:
            store([])
            return Const(None)
        if name == "copy" and not args:
            return new_list(items) if items is not None else unknown_list()
        if name in ("append", "extend", "insert", "pop", "remove", "reverse", "sort"):
            result = self._change(eng, st, items, args, kwargs)
            if result is None:
                store(None)
                return Unknown(f"list.{name}() of unknown contents", kind=UnknownKind.UNSUPPORTED)
            new, value = result
            store(new)
            return value
        if name in ("index", "count") and len(args) == 1 and items is not None:
            hits = [eng.compare(ast.Eq(), snapshot(st, v), snapshot(st, args[0])) for v in items]
            if not all(isinstance(h, Const) for h in hits):
                return Unknown(f"list.{name}() of unknowns", kind=UnknownKind.UNSUPPORTED)
            flags = [bool(h.value) for h in hits]  # type: ignore[attr-defined]
            if name == "count":
                return Const(sum(flags))
            return (
                Const(flags.index(True))
                if True in flags
                else Unknown("list.index() raised", kind=UnknownKind.RAISED)
            )
        return Unknown(f"list.{name}()", kind=UnknownKind.UNSUPPORTED)

    def _change(
        self,
        eng: EngineBase,
        st: PathState,
        items: list[Value] | None,
        args: list[Value],
        kwargs: dict[str, Value],
    ) -> tuple[list[Value], Value] | None:
        """The new items and the call's value; None when the contents are no longer known."""
        name = self.name
        if items is None:
            return None
        if name == "append" and len(args) == 1:
            return [*items, args[0]], Const(None)
        if name == "extend" and len(args) == 1:
            more = args[0]
            extra = (
                [Const(x, more.origins) for x in more.value]
                if isinstance(more, Const) and isinstance(more.value, (tuple, list, str))
                else seq_items(st, more)
            )
            return None if extra is None else ([*items, *extra], Const(None))
        if name == "insert" and len(args) == 2 and index_of(args[0]) is not None:
            new = list(items)
            new.insert(cast(int, index_of(args[0])), args[1])
            return new, Const(None)
        if name == "pop" and len(args) <= 1:
            at = index_of(args[0]) if args else -1
            if at is None or not items or not -len(items) <= at < len(items):
                return None
            new = list(items)
            value = new.pop(at)
            return new, value
        if name == "remove" and len(args) == 1:
            for i, v in enumerate(items):
                hit = eng.compare(ast.Eq(), snapshot(st, v), snapshot(st, args[0]))
                if not isinstance(hit, Const):
                    return None
                if hit.value:
                    return [*items[:i], *items[i + 1 :]], Const(None)
            return None  # ValueError
        if name == "reverse" and not args:
            return items[::-1], Const(None)
        if name == "sort" and not args and not kwargs and all(isinstance(i, Const) for i in items):
            try:
                order = sorted(items, key=lambda i: cast(Const, i).value)
            except TypeError:
                return None
            return order, Const(None)
        return None


class Partial(Value):
    """functools.partial(fn, *args, **kwargs)."""

    def __init__(self, fn: Value, args: list[Value], kwargs: dict[str, Value]) -> None:
        super().__init__()
        self.fn = fn
        self.args = args
        self.kwargs = kwargs


class ConfigToDict(Value):
    """`config.to_dict` of the checkpoint's config (a transformers PretrainedConfig)."""

    def __init__(self, config: Instance) -> None:
        super().__init__()
        self.config = config


def config_dict(st: PathState, config: Instance, depth: int) -> Value:
    """PretrainedConfig.to_dict(): its attributes as a dict, sub-configs as dicts."""
    if depth <= 0:
        return Unknown("to_dict() of a deeply nested config", kind=UnknownKind.BUDGET)
    fields: dict[str, Value] = {}
    for k, v in st.fields(config).items():
        if isinstance(v, Instance) and v.cls is None and v.label == "config":
            v = config_dict(st, v, depth - 1)
        fields[repr(k)] = v
    return Instance(None, fields, "dict")
