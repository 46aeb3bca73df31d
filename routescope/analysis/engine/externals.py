"""Calls of functions from outside the framework tree: library models, platform facts, sinks."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import PurePosixPath
from typing import cast

from routescope.analysis.engine.base import EngineBase, Paths
from routescope.analysis.engine.containers import (
    LIST_UNKNOWN,
    SEQ_LIMIT,
    is_dict,
    iteration,
    key_value,
    new_list,
    new_set,
    seq_items,
    set_of,
    snapshot,
    tuple_of,
)
from routescope.analysis.engine.exceptions import builtin_exception
from routescope.analysis.engine.imports import ImportFailure
from routescope.analysis.engine.methods import (
    CONTEXT_VAR,
    DictMethod,
    ListMethod,
    Partial,
)
from routescope.analysis.engine.sinks import producer_of
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.tensors import (
    FACTORIES,
    NON_TENSOR_TORCH,
    PARAMETER,
    made_tensor,
)
from routescope.analysis.engine.values import (
    ClassVal,
    Const,
    EnumMember,
    External,
    FunctionVal,
    Instance,
    ModuleVal,
    OpenKeys,
    Tensor,
    Unknown,
    UnknownKind,
    Value,
    merge_origins,
)
from routescope.analysis.library import records
from routescope.analysis.library.builtins import (
    BoundConst,
    call_builtin,
    ordered,
)
from routescope.analysis.library.typing import typing_call

_PATH_TYPES = {"pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath", "pathlib.PurePosixPath"}
PATH_METHODS = {"exists": "exists", "is_file": "file", "is_dir": "dir"}
_FS_QUERIES = {
    "os.path.exists": "exists",
    "os.path.isfile": "file",
    "os.path.isdir": "dir",
    "os.path.lexists": "exists",
}

IDENTITY_DECORATORS = {
    "functools.lru_cache",
    "functools.cache",
    "functools.wraps",
    "functools.cached_property",
    "typing.overload",
    "typing.final",
}


class ExternalsMixin(EngineBase):
    def call_external(
        self,
        st: PathState,
        fn: External,
        args: list[Value],
        kwargs: dict[str, Value],
        node: ast.AST | None,
    ) -> Paths:
        name = fn.name
        special = self._special_builtin(st, name, args, kwargs)
        if special is not None:
            return special
        if name in self.facts.calls:
            return [(st, self.facts.calls[name])]
        typed = typing_call(name, [self.resolved(a) for a in args])
        if typed is not None:
            return [(st, typed)]
        if name in records.TYPE_HINTS and args and isinstance(self.resolved(args[0]), ClassVal):
            return [(st, self.type_hints(cast(ClassVal, self.resolved(args[0]))))]
        if name in records.NAMES:
            rec = records.call(
                name,
                [self.resolved(a) for a in args],
                kwargs,
                st,
                self.ctx[-1].module.name if self.ctx else "",
            )
            if rec is not None:
                return [(st, rec)]
        if name == "routescope.namespace":  # summaries build plain objects with it
            return [(st, Instance(None, dict(kwargs), "object"))]
        if name in IDENTITY_DECORATORS:
            fn_args = [
                a for a in args if isinstance(self.resolved(a), (FunctionVal, Partial, ClassVal))
            ]
            return [(st, fn_args[0] if fn_args else External(f"{name}#decorator"))]
        if name.endswith("#decorator") and len(args) == 1:
            return [(st, args[0])]
        if name == "property" and args and isinstance(self.resolved(args[0]), FunctionVal):
            getter = cast(
                FunctionVal, self.resolved(args[0])
            )  # property(getter), built at run time
            return [(st, dataclasses.replace(getter, decorators=(*getter.decorators, "property")))]
        if name == "functools.partial" and args:
            return [(st, Partial(self.resolved(args[0]), list(args[1:]), dict(kwargs)))]
        if name == "contextvars.ContextVar" and args:
            # a context variable: its value on this path, else its default
            default = {"default": kwargs["default"]} if "default" in kwargs else {}
            return [(st, Instance(None, {"name": args[0], **default}, CONTEXT_VAR))]
        if name in ("re.match", "re.search", "re.fullmatch") and all(
            isinstance(a, Const) for a in args
        ):
            import re as _re

            try:
                m = getattr(_re, name[3:])(*(a.value for a in args))  # type: ignore[attr-defined]
            except Exception:
                return [(st, Unknown(f"{name}() raised", kind=UnknownKind.RAISED))]
            return [(st, Const(m, merge_origins(*args)))]
        env_value = self._env_call(name, args, kwargs, node)
        if env_value is not None:
            return [(st, env_value)]
        if (
            name == "importlib.util.find_spec"
            and args
            and isinstance(args[0], Const)
            and isinstance(args[0].value, str)
        ):
            found = self.index.has_module(args[0].value) or self.facts.package_available(
                args[0].value
            )
            if found is False:
                return [(st, Const(None, (f"package {args[0].value} not importable",)))]
            if found:
                return [(st, External(f"{args[0].value}#spec"))]
        target = args[0].value if len(args) == 1 and isinstance(args[0], Const) else None
        if name == "importlib.import_module" and isinstance(target, str) and target[:1] != ".":
            mod = self.import_module(target)
            if isinstance(mod, ImportFailure):
                return self.returned(st, [(st, "raise", mod.exc)], f"import of {target} fails")
            return [(st, self.resolved(mod))]
        if name in ("copy.copy", "copy.deepcopy") and len(args) == 1:
            return [(st, copied(st, self.resolved(args[0]), name == "copy.deepcopy", 4))]
        if name in ("dataclasses.replace", "msgspec.structs.replace") and len(args) == 1:
            obj = self.resolved(args[0])
            if isinstance(obj, Instance) and obj.cls is not None and records.is_record(obj.cls):
                # a new record of the same class: its fields, the changes over them, and
                # the class's own __init__ / __post_init__ run again, as replace() does
                view = st.fields(obj)
                given = {n: view[n] for n in records.field_names(obj.cls) if n in view}
                return self.call(st, obj.cls, [], {**given, **kwargs}, node)
        fs_value = self._fs_call(name, args)
        if fs_value is not None:
            return [(st, fs_value)]
        if builtin_exception(name) is not None:  # ValueError("...") stands for its class
            return [(st, External(name))]
        over = over_containers(st, name, args, kwargs)
        if over is not None:
            return [(st, over)]
        if name != "isinstance":  # a list reads as its items on this path (isinstance: as a list)
            args = [snapshot(st, a) for a in args]
        builtin = call_builtin(name, args, kwargs)
        if builtin is not None:
            return [(st, builtin)]
        rule = self.facts.sink_for_external(name)
        if rule is not None:
            return [(st, self.hit_sink(st, name, rule, node, args, kwargs))]
        if name.startswith(NON_TENSOR_TORCH):
            return [(st, Unknown(f"result of {name}()", kind=UnknownKind.OPAQUE))]
        if name in PARAMETER and args and isinstance(args[0], Tensor):
            return [(st, args[0])]  # a parameter is its data
        if name in FACTORIES:
            made = made_tensor(name, args, kwargs, self.made_at(node))
            made.dtype = made.dtype or self.default_dtype
            return [(st, made)]
        if name == "torch.get_default_dtype" and self.default_dtype:
            return [(st, External(self.default_dtype))]
        if name.startswith("torch.") or name.startswith("triton"):
            inherited = producer_of([*args, *kwargs.values()], st.claims)
            return [(st, Tensor(producer=inherited, made_at=self.made_at(node)))]
        return [(st, Unknown(f"result of {name}()", kind=UnknownKind.OPAQUE))]

    def _special_builtin(
        self, st: PathState, name: str, args: list[Value], kwargs: dict[str, Value]
    ) -> Paths | None:
        if name in ("getattr", "hasattr") and len(args) >= 2 and isinstance(args[1], Const):
            results = self.attribute(st, args[0], str(args[1].value))
            out: Paths = []
            for s, v in results:
                missing = isinstance(v, Unknown) and v.kind is UnknownKind.ABSENT
                if name == "hasattr":
                    if isinstance(args[0], External):
                        full = f"{args[0].name}.{args[1].value}"
                        known = self.facts.attributes.get(f"hasattr({full})")
                        out.append(
                            (s, known or Unknown(f"hasattr({full})", kind=UnknownKind.OPAQUE))
                        )
                    else:
                        out.append(
                            (s, Const(not missing) if missing or not isinstance(v, Unknown) else v)
                        )
                else:
                    out.append((s, args[2] if missing and len(args) > 2 else v))
            return out
        if name in ("object.__getattribute__", "builtins.object.__getattribute__") and (
            len(args) == 2 and isinstance(args[1], Const)
        ):
            return self.attribute(st, args[0], str(args[1].value), hook=False)
        if name in ("object.__setattr__", "builtins.object.__setattr__") and (
            len(args) == 3 and isinstance(args[1], Const)
        ):
            name = "setattr"
        if name == "setattr" and len(args) == 3 and isinstance(args[1], Const):
            self.set_attribute(st, args[0], str(args[1].value), args[2])
            return [(st, Const(None))]
        if name == "super":
            return [(st, self.super_proxy())]
        if name == "callable" and len(args) == 1:
            a = self.resolved(args[0])
            if isinstance(a, (FunctionVal, ClassVal, BoundConst, DictMethod, ListMethod)):
                return [(st, Const(True))]
            if isinstance(a, Const):
                return [(st, Const(callable(a.value)))]
            if isinstance(a, Instance) and a.cls is not None:
                return [
                    (
                        st,
                        Const(a.cls.lookup("__call__") is not None or bool(a.cls.external_bases())),
                    )
                ]
        if name == "dict" and (
            not args or (isinstance(args[0], Instance) and args[0].label == "dict")
        ):
            fields = dict(st.fields(args[0])) if args and isinstance(args[0], Instance) else {}
            fields.update({repr(k): v for k, v in kwargs.items()})
            return [(st, Instance(None, fields, "dict"))]
        if name in ("list", "tuple") and len(args) <= 1 and not kwargs:
            items = seq_items(st, args[0]) if args else []
            if name == "list" and items is not None:
                return [(st, new_list(items))]  # a new list this path can change
            if name == "tuple" and items is not None and args and not isinstance(args[0], Const):
                if all(isinstance(i, Const) for i in items):
                    return [(st, Const(tuple(i.value for i in items), merge_origins(*items)))]  # type: ignore[attr-defined]
                return [(st, Instance(None, {str(i): v for i, v in enumerate(items)}, "tuple"))]
        if name == "type" and len(args) == 1:
            a = self.resolved(args[0])
            return [
                (
                    st,
                    a.cls
                    if isinstance(a, Instance) and a.cls
                    else Unknown("type()", kind=UnknownKind.UNSUPPORTED),
                )
            ]
        return None

    def _fs_call(self, name: str, args: list[Value]) -> Value | None:
        """pathlib paths of known text are values; the server's filesystem queries about its
        model path are answered from the checkpoint routescope read (else Unknown)."""
        if name in _PATH_TYPES:
            if args and all(
                isinstance(a, Const) and isinstance(a.value, (str, PurePosixPath)) for a in args
            ):
                return Const(PurePosixPath(*(a.value for a in args)), merge_origins(*args))  # type: ignore[attr-defined]
            return None
        if name == "glob.glob" and args and isinstance(args[0], Const):
            return self.listing(str(args[0].value), str)
        kind = _FS_QUERIES.get(name)
        if kind is None or len(args) != 1:
            return None
        return self.fs_query(kind, args[0], name)

    def listing(self, pattern: str, kind: type) -> Value | None:
        """The checkpoint paths matching a glob pattern as a new list of `kind` (str for
        glob.glob, a path for Path.glob); None when the listing is not known."""
        cp = self.facts.checkpoint
        found = cp.listing(pattern) if cp is not None else None
        if found is None:
            return None
        origin = (f"checkpoint {cp.root}: {cp.origin}",)  # type: ignore[union-attr]
        return new_list([Const(kind(f), origin) for f in found])

    def fs_query(self, kind: str, arg: Value, what: str) -> Value:
        cp = self.facts.checkpoint
        if (
            cp is not None
            and isinstance(arg, Const)
            and isinstance(arg.value, (str, PurePosixPath))
        ):
            found = cp.query(kind, str(arg.value))
            if found is not None:
                return Const(found, (f"checkpoint {cp.root}: {cp.origin}",))
        return Unknown(f"result of {what}()", kind=UnknownKind.OPAQUE)

    def _env_call(
        self, name: str, args: list[Value], kwargs: dict[str, Value], node: ast.AST | None
    ) -> Value | None:
        if name not in (
            "os.getenv",
            "os.environ.get",
            "os.environ.__getitem__",
            "os.environ.setdefault",
        ):
            return None
        if not args or not isinstance(args[0], Const):
            return Unknown("environment variable with an unknown name", kind=UnknownKind.INPUT)
        var = str(args[0].value)
        if var in self.facts.env:
            return Const(self.facts.env[var], (f"--env {var}",))
        default = args[1] if len(args) > 1 else kwargs.get("default")
        if default is None and self.facts.env_unset_means_absent:
            return Const(None, (f"env {var} unset (assumed; give --env {var}=... to change)",))
        if default is None:
            return Unknown(
                f"environment variable {var} has no default (give --env {var}=...)",
                (f"env {var}",),
                kind=UnknownKind.INPUT,
            )
        where = f"{self.current_file()}:{getattr(node, 'lineno', 0)}"
        if isinstance(default, Const):
            return Const(default.value, (f"env {var} unset: default at {where}",))
        return default


SEQUENCE_BUILTINS = frozenset(
    {
        "list",
        "tuple",
        "reversed",
        "set",
        "frozenset",
        "sorted",
        "enumerate",
        "zip",
        "len",
        "any",
        "all",
        "min",
        "max",
        "sum",
    }
)


def over_containers(
    st: PathState, name: str, args: list[Value], kwargs: dict[str, Value]
) -> Value | None:
    """A sequence builtin over tracked containers (lists, tuples, dicts whose items this path
    knows): on their items as constants when every item is one, else structurally (a new list,
    a tuple of the same objects). None when the pure builtin (or nothing) applies."""
    if name in ("list", "set") and not args and not kwargs:
        return new_list([]) if name == "list" else new_set([])  # mutable: tracked
    if name == "set" and len(args) == 1 and isinstance(args[0], Const):
        if not isinstance(args[0].value, (tuple, list, set, frozenset, str, range)):
            return None
        return set_of([Const(x, args[0].origins) for x in ordered(args[0].value)])
    if (
        name == "set"
        and len(args) == 1
        and isinstance(args[0], Instance)
        and is_dict(args[0])
        and not kwargs
    ):
        view = st.fields(args[0])
        rest = view.get(LIST_UNKNOWN)
        if isinstance(rest, OpenKeys):  # the keys of a joined dict: some only perhaps there
            members = {k: key_value(k) for k in view if k != LIST_UNKNOWN}
            return Instance(None, {**members, LIST_UNKNOWN: rest}, "set")
    if name not in SEQUENCE_BUILTINS or not args:
        return None
    if name != "list" and all(isinstance(a, Const) for a in args):
        return None
    seqs = [iteration(a, st) for a in args]
    if any(seq is None or len(seq) > SEQ_LIMIT for seq in seqs):
        return None
    items = [cast(list[Value], seq) for seq in seqs]
    if name == "list" and len(items) == 1 and not kwargs:
        return new_list(list(items[0]))
    if name == "set" and len(items) == 1 and not kwargs:
        return set_of(items[0])
    if all(isinstance(i, Const) for seq in items for i in seq):
        consts = [Const(tuple(i.value for i in seq), merge_origins(*seq)) for seq in items]  # type: ignore[attr-defined]
        return call_builtin(name, cast(list[Value], consts), kwargs)
    if kwargs:
        return None
    first = items[0]
    if name == "len" and len(items) == 1:
        return Const(len(first))
    if name == "list" and len(items) == 1:
        return new_list(list(first))
    if name in ("tuple", "reversed") and len(items) == 1:
        return tuple_of(first if name == "tuple" else first[::-1])
    if name == "enumerate" and len(items) == 1:
        return tuple_of([tuple_of([Const(i), v]) for i, v in enumerate(first)])
    if name == "zip":
        return tuple_of([tuple_of(list(row)) for row in zip(*items, strict=False)])
    return None


def copied(st: PathState, v: Value, deep: bool, depth: int) -> Value:
    """copy.copy / copy.deepcopy of a tracked object: a new object with this path's fields
    (deep: nested objects copied too, `depth` levels down); values are shared as Python does."""
    if not isinstance(v, Instance):
        if isinstance(v, (Const, EnumMember, External, FunctionVal, ClassVal, ModuleVal)):
            return v  # immutable, or copied as itself (copy of a class, a function, a module)
        return Unknown("copy of an unknown value", v.origins, kind=UnknownKind.UNSUPPORTED)
    fields = st.fields(v)  # this path's view (its own writes included)
    if deep:
        if depth <= 0:
            return Unknown("deepcopy nested too deeply", kind=UnknownKind.BUDGET)
        fields = {k: copied(st, x, True, depth - 1) for k, x in fields.items()}
    return Instance(v.cls, dict(fields), v.label)
