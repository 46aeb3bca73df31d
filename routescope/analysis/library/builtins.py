"""Pure builtins and methods of known Python values, evaluated for real on constants."""

from __future__ import annotations

import collections.abc
import math
import posixpath
import re
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Any

from routescope.analysis.engine.values import (
    ClassVal,
    Const,
    EnumMember,
    External,
    FunctionVal,
    Instance,
    Tensor,
    Unknown,
    UnknownKind,
    Value,
)

_PURE: dict[str, Callable[..., Any]] = {
    "len": len,
    "int": int,
    "float": float,
    "str": str,
    "bool": bool,
    "tuple": tuple,
    "list": list,
    "min": min,
    "max": max,
    "abs": abs,
    "any": any,
    "all": all,
    "sorted": sorted,
    "round": round,
    "divmod": divmod,
    "sum": sum,
    "range": range,
    "set": set,
    "frozenset": frozenset,
    "reversed": reversed,
    "enumerate": enumerate,
    "zip": zip,
    "math.log2": math.log2,
    "math.ceil": math.ceil,
    "math.floor": math.floor,
    "math.sqrt": math.sqrt,
    "math.log": math.log,
    "math.isclose": math.isclose,
    "math.prod": math.prod,
    "math.gcd": math.gcd,
    "os.path.join": posixpath.join,
    "os.path.basename": posixpath.basename,
    "os.path.dirname": posixpath.dirname,
    "os.path.splitext": posixpath.splitext,
    "os.path.normpath": posixpath.normpath,
    "os.fspath": str,
    # triton's host-side integer helpers (kernel launch geometry)
    "triton.next_power_of_2": lambda n: 1 << (n - 1).bit_length() if n > 0 else 1,
    "triton.cdiv": lambda a, b: -(-a // b),
}
_SAFE_METHODS = {
    str: {
        "split",
        "startswith",
        "endswith",
        "lower",
        "upper",
        "strip",
        "replace",
        "rstrip",
        "lstrip",
        "partition",
        "rpartition",
        "isdigit",
        "join",
        "format",
        "find",
        "count",
    },
    dict: {"get", "keys", "values", "items"},
    list: {"index", "count"},
    tuple: {"index", "count"},
    float: {"is_integer", "as_integer_ratio", "hex"},
    int: {"bit_length", "bit_count", "to_bytes"},
    bool: set(),
    re.Match: {"group", "groups", "start", "end", "span", "groupdict"},
    # pure path arithmetic; the filesystem queries (exists, is_file, is_dir, glob) go to the
    # engine
    PurePosixPath: {
        "joinpath",
        "with_suffix",
        "with_name",
        "is_absolute",
        "as_posix",
        "relative_to",
        "match",
        "exists",
        "is_file",
        "is_dir",
        "glob",
    },
}
_PATH_ATTRS = {"name", "suffix", "suffixes", "stem", "parent", "parts", "anchor"}
_MISSING = object()
SENTINEL = "object()"
# Builtins whose result depends on the order they iterate a set in.
_ORDER_SENSITIVE = {"list", "tuple", "enumerate", "zip"}


def set_text(value: set[Any] | frozenset[Any]) -> str:
    """str() of a set with its items in the order `ordered` gives them."""
    items = ", ".join(repr(x) for x in ordered(value))
    if isinstance(value, frozenset):
        return f"frozenset({{{items}}})" if value else "frozenset()"
    return f"{{{items}}}" if value else "set()"


def ordered(value: Any) -> Any:
    """A set's items in one fixed order (by repr): CPython iterates a set of strings in an
    order that changes with PYTHONHASHSEED, and a trace must not change with it."""
    if isinstance(value, (set, frozenset)):
        return tuple(sorted(value, key=repr))
    return value


class BoundConst(Value):
    """`"12.8".split` — a method of a known value, callable with known arguments."""

    __slots__ = ("name", "target")

    def __init__(self, target: Const, name: str) -> None:
        super().__init__(target.origins)
        self.target = target
        self.name = name


def const_attribute(v: Const, name: str) -> Value:
    allowed = _SAFE_METHODS.get(type(v.value), set())
    if name in allowed:
        return BoundConst(v, name)
    if name in _PATH_ATTRS and isinstance(v.value, PurePosixPath):
        return Const(getattr(v.value, name), v.origins)
    if name in ("real", "imag") and isinstance(v.value, (int, float)):
        return Const(getattr(v.value, name), v.origins)
    if not hasattr(v.value, name):  # a constant is a real Python value: this is exact
        return Unknown(f"{type(v.value).__name__} has no attribute {name}", kind=UnknownKind.ABSENT)
    return Unknown(f"attribute {name} of {type(v.value).__name__}", kind=UnknownKind.OPAQUE)


def _origins(vals: list[Value]) -> tuple[str, ...]:
    out: list[str] = []
    for v in vals:
        out.extend(o for o in v.origins if o not in out)
    return tuple(out)


def call_bound_const(fn: BoundConst, args: list[Value], kwargs: dict[str, Value]) -> Value:
    if not all(isinstance(a, Const) for a in [*args, *kwargs.values()]):
        return Unknown(f"{fn.name}() of unknown arguments", kind=UnknownKind.UNSUPPORTED)
    try:
        result = getattr(fn.target.value, fn.name)(
            # "".join(a_set) joins in one order; other methods take their arguments as given
            *((ordered(a.value) if fn.name == "join" else a.value) for a in args),  # type: ignore[attr-defined]
            **{k: a.value for k, a in kwargs.items()},  # type: ignore[attr-defined]
        )
    except Exception as exc:
        return Unknown(f"{fn.name}() raised {type(exc).__name__}", kind=UnknownKind.RAISED)
    if not isinstance(result, (str, int, float, bool, tuple, list, type(None), PurePosixPath)):
        try:
            result = list(result)
        except TypeError:
            return Unknown(f"{fn.name}() result", kind=UnknownKind.UNSUPPORTED)
    return Const(result, _origins([fn.target, *args]))


def call_builtin(name: str, args: list[Value], kwargs: dict[str, Value]) -> Value | None:
    """The value of builtin `name` on these arguments, or None when it is not a builtin here."""
    if name == "isinstance" and len(args) == 2:
        return _isinstance(args[0], args[1])
    if name in (
        "hasattr",
        "callable",
        "id",
        "print",
        "type",
        "getattr",
        "setattr",
        "super",
        "map",
        "filter",
        "iter",
        "next",
        "repr",
        "hash",
        "object",
        "dict",
    ):
        return _special(name, args, kwargs)
    fn = _PURE.get(name)
    if fn is None:
        return None
    if (
        name == "len"
        and args
        and isinstance(args[0], Instance)
        and args[0].label in ("tuple", "dict", "set")
        and "*" not in args[0].fields
    ):
        return Const(len(args[0].fields))
    if not all(isinstance(a, Const) for a in [*args, *kwargs.values()]):
        if name in ("int", "float", "bool", "str") and args and isinstance(args[0], Tensor):
            return Unknown(f"{name}() of a tensor (a host sync)", kind=UnknownKind.UNSUPPORTED)
        return Unknown(
            f"{name}() of unknown arguments", _origins(args), kind=UnknownKind.UNSUPPORTED
        )
    values = [a.value for a in args]  # type: ignore[attr-defined]
    if name in _ORDER_SENSITIVE:
        values = [ordered(v) for v in values]
    if name == "str" and len(values) == 1 and isinstance(values[0], (set, frozenset)):
        return Const(set_text(values[0]), _origins(args))
    try:
        result = fn(*values, **{k: a.value for k, a in kwargs.items()})  # type: ignore[attr-defined]
    except Exception as exc:
        return Unknown(f"{name}() raised {type(exc).__name__}", kind=UnknownKind.RAISED)
    if isinstance(result, (range, zip, enumerate, map, filter, reversed)) or type(
        result
    ).__name__.endswith("iterator"):
        result = tuple(result)
    return Const(result, _origins(args))


def _special(name: str, args: list[Value], kwargs: dict[str, Value]) -> Value:
    if name == "map" and len(args) == 2 and isinstance(args[1], Const):
        fn = args[0]
        if (
            isinstance(fn, External)
            and fn.name in _PURE
            and isinstance(args[1].value, (list, tuple))
        ):
            return _map(fn.name, args[1])
    if name == "print":
        return Const(None)
    if name == "object" and not args and not kwargs:
        return Instance(None, {}, SENTINEL)  # a fresh object: identical to itself only
    return Unknown(f"{name}()", kind=UnknownKind.UNSUPPORTED)


def _map(fname: str, seq: Const) -> Value:
    try:
        return Const(tuple(_PURE[fname](x) for x in seq.value), seq.origins)
    except Exception as exc:
        return Unknown(f"map({fname}) raised {type(exc).__name__}", kind=UnknownKind.RAISED)


def _isinstance(obj: Value, cls: Value) -> Value:
    classes = cls.value if isinstance(cls, Const) and isinstance(cls.value, tuple) else None
    targets: list[Value] = [cls] if classes is None else [Const(c) for c in classes]
    if isinstance(cls, Instance) and cls.label == "tuple":
        targets = list(cls.fields.values())
    for t in targets:
        builtin_types = {
            "int": int,
            "float": float,
            "str": str,
            "bool": bool,
            "tuple": tuple,
            "list": list,
            "dict": dict,
            "set": set,
            "frozenset": frozenset,
        }
        if isinstance(t, External) and isinstance(obj, Instance) and t.name in builtin_types:
            if obj.label == t.name or (obj.label == "tuple" and t.name in ("tuple", "list")):
                return Const(True)
            continue  # a framework object or a config is none of the builtin types
        if (
            isinstance(t, External)
            and isinstance(obj, (FunctionVal, ClassVal, EnumMember))
            and t.name in builtin_types
        ):
            continue
        if isinstance(t, External) and t.name == "type":
            if isinstance(obj, ClassVal):
                return Const(True)
            if isinstance(obj, (Const, FunctionVal, EnumMember, Instance, Tensor)):
                continue
        if isinstance(t, External) and isinstance(obj, Const):
            py = builtin_types.get(t.name)
            if py is not None:
                if isinstance(obj.value, py):
                    return Const(True, obj.origins)
                continue
            if t.name in _PATH_CLASSES:
                if isinstance(obj.value, PurePosixPath):
                    return Const(True, obj.origins)
                continue
            if not t.name.startswith(_ABSTRACT_NAMESPACES):
                continue  # a plain value (str, number, tuple...) is no library class's instance
            abc = _collection_abc(t)
            if abc is not None:  # a real Python value against a real ABC: exact
                if isinstance(obj.value, abc):
                    return Const(True, obj.origins)
                continue
            return Unknown(f"isinstance against {t.name}", kind=UnknownKind.UNSUPPORTED)
        if isinstance(t, ClassVal):
            if isinstance(obj, Instance) and obj.cls is not None:
                if t in obj.cls.mro():
                    return Const(True)
                continue
            if isinstance(obj, Instance) and obj.label == "config":
                # the checkpoint's config: a config class is the one for its model_type (as
                # AutoConfig and the framework's own config registry pick it)
                mine, theirs = obj.fields.get("model_type"), t.lookup("model_type")
                if isinstance(mine, Const) and isinstance(theirs, Const):
                    if mine.value == theirs.value:
                        return Const(True, mine.origins)
                    continue
            if isinstance(obj, EnumMember):
                if t in obj.cls.mro():
                    return Const(True)
                continue
            if not isinstance(obj, (Instance, Unknown, External, Tensor)):
                continue  # constants, functions, modules, field specs: no framework instance
            return Unknown(
                f"isinstance of {type(obj).__name__} against {t.qualname}",
                kind=UnknownKind.UNSUPPORTED,
            )
        if isinstance(t, External) and t.name == "torch.Tensor":
            if isinstance(obj, Tensor):
                return Const(True)
            if isinstance(obj, Const):
                continue
        abc = _collection_abc(t)
        if abc is not None and isinstance(obj, Instance) and obj.cls is None:
            kind = _CONTAINERS.get(obj.label)  # a tracked dict, list, tuple or set
            if kind is not None:
                if issubclass(kind, abc):
                    return Const(True)
                continue
            if obj.label == "config" and abc in (
                collections.abc.Mapping,
                collections.abc.MutableMapping,
            ):
                continue  # a transformers config is read by attribute, not a mapping
        if isinstance(t, External) and t.name in _PRETRAINED_CONFIG and isinstance(obj, Instance):
            if obj.label == "config" and obj.cls is None:
                return Const(True)  # the checkpoint's config: a PretrainedConfig
            if obj.cls is None:
                continue  # a tracked dict, list, tuple or set
        return Unknown("isinstance against an unknown class", kind=UnknownKind.UNSUPPORTED)
    return Const(False, obj.origins)


_PRETRAINED_CONFIG = {
    "transformers.PretrainedConfig",
    "transformers.PreTrainedConfig",
    "transformers.configuration_utils.PretrainedConfig",
    "transformers.configuration_utils.PreTrainedConfig",
}
_CONTAINERS: dict[str, type] = {"dict": dict, "list": list, "tuple": tuple, "set": set}


def _collection_abc(t: Value) -> type | None:
    """collections.abc.Mapping and the typing aliases of the collection ABCs (typing.Mapping,
    typing.Sequence...) as Python classes; None for anything else."""
    if not isinstance(t, External):
        return None
    module, _, short = t.name.rpartition(".")
    if module not in ("collections.abc", "typing", "typing_extensions"):
        return None
    found = getattr(collections.abc, short, None)
    return found if isinstance(found, type) else None


_PATH_CLASSES = {
    "pathlib.Path",
    "pathlib.PurePath",
    "pathlib.PosixPath",
    "pathlib.PurePosixPath",
    "os.PathLike",
}
# abstract classes a plain value may be registered under
_ABSTRACT_NAMESPACES = ("collections.abc.", "numbers.", "typing.", "typing_extensions.", "abc.")


def builtin_names() -> set[str]:
    return {n for n in _PURE if "." not in n} | {
        "isinstance",
        "hasattr",
        "callable",
        "id",
        "print",
        "type",
        "getattr",
        "setattr",
        "super",
        "map",
        "filter",
        "iter",
        "next",
        "repr",
        "hash",
        "object",
        "dict",
    }


MISSING: Any = _MISSING
