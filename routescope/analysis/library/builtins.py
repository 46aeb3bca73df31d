"""Pure builtins and methods of known Python values, evaluated for real on constants."""

from __future__ import annotations

import fnmatch
import hashlib
import math
import operator
import posixpath
import re
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

from routescope.analysis.engine.containers import (
    UNHASHABLE,
    UNTOLD,
    from_python,
    key_of,
)
from routescope.analysis.engine.intervals import some_bool
from routescope.analysis.engine.values import (
    Const,
    External,
    Instance,
    Tensor,
    Unknown,
    UnknownKind,
    Value,
    ordered,
    raises,
)
from routescope.analysis.library.isinstance_of import isinstance_of
from routescope.analysis.library.paths import PATH_RETURNING, PathMethod

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
    "math.lcm": math.lcm,
    # (posix: fnmatch is fnmatchcase; the target is a Linux server)
    "fnmatch.fnmatch": fnmatch.fnmatchcase,
    "fnmatch.fnmatchcase": fnmatch.fnmatchcase,
    "os.path.join": posixpath.join,
    "os.path.basename": posixpath.basename,
    "os.path.dirname": posixpath.dirname,
    "os.path.splitext": posixpath.splitext,
    "os.path.normpath": posixpath.normpath,
    "os.fspath": str,
    # triton's host-side integer helpers (kernel launch geometry)
    "triton.next_power_of_2": lambda n: 1 << (n - 1).bit_length() if n > 0 else 1,
    "triton.cdiv": lambda a, b: -(-a // b),
    # the operator module's functions of numbers (a reduce's or an accumulate's step)
    **{
        f"operator.{op}": getattr(operator, op)
        for op in (
            "add",
            "sub",
            "mul",
            "truediv",
            "floordiv",
            "mod",
            "pow",
            "neg",
            "and_",
            "or_",
            "xor",
            "lshift",
            "rshift",
            "eq",
            "ne",
            "lt",
            "le",
            "gt",
            "ge",
            "not_",
            "truth",
        )
    },
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
        # the rest of str's pure methods: each a function of the text and its arguments
        *("rsplit", "removeprefix", "removesuffix", "casefold", "capitalize", "title"),
        *("swapcase", "zfill", "ljust", "rjust", "center", "index", "rfind", "rindex"),
        *("splitlines", "expandtabs", "isalpha", "isalnum", "isspace", "islower", "isupper"),
        *("isidentifier", "isnumeric", "isdecimal", "istitle", "isascii", "isprintable"),
    },
    dict: {"get", "keys", "values", "items"},
    list: {"index", "count"},
    tuple: {"index", "count"},
    float: {"is_integer", "as_integer_ratio", "hex"},
    int: {"bit_length", "bit_count", "to_bytes"},
    bool: set(),
    re.Match: {"group", "groups", "start", "end", "span", "groupdict"},
    re.Pattern: {"match", "fullmatch", "search", "sub", "subn", "split", "findall"},
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


class BoundConst(Value):
    """`"12.8".split` — a method of a known value, callable with known arguments."""

    never_none = True

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
    if (
        isinstance(v.value, PurePosixPath)
        and not hasattr(PurePosixPath, name)
        and hasattr(Path, name)
    ):  # a concrete path's query
        # of the server's filesystem (resolve, read_bytes, stat, ...): the value stands for
        # pathlib.Path as well as the pure class, and what the disk holds is not known
        why = f"result of Path.{name} (the server's filesystem)"
        return PathMethod(why) if name in PATH_RETURNING else Unknown(why)
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
        return raises(type(exc).__name__, f"{fn.name}() raised {type(exc).__name__}")
    if not isinstance(
        result, (str, int, float, bool, tuple, list, type(None), PurePosixPath, re.Match)
    ):
        try:
            result = list(result)
        except TypeError:
            return Unknown(f"{fn.name}() result", kind=UnknownKind.UNSUPPORTED)
    return Const(result, _origins([fn.target, *args]))


def call_builtin(name: str, args: list[Value], kwargs: dict[str, Value]) -> Value | None:
    """The value of builtin `name` on these arguments, or None when it is not a builtin here."""
    if name == "isinstance" and len(args) == 2:
        got = isinstance_of(args[0], args[1])  # (a bool, whether or not it is known)
        if type(got) is Unknown and got.exc is None and got.kind is not UnknownKind.JOINED:
            return some_bool(got)
        return got
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
        return raises(type(exc).__name__, f"{name}() raised {type(exc).__name__}")
    if isinstance(result, (range, zip, enumerate, map, filter, reversed)) or type(
        result
    ).__name__.endswith("iterator"):
        result = tuple(result)
    return from_python(result, _origins(args))


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
    if name == "hash" and len(args) == 1 and not kwargs:
        return _hash(args[0])
    return Unknown(f"{name}()", kind=UnknownKind.UNSUPPORTED)


def _hash(v: Value) -> Value:
    """hash() of a value made of numbers, strings, bytes and tuples of them (a memo keyed by
    the hash of its inputs): equal values hash alike, as in Python. Strings hash by a digest
    (Python's own is salted per process), so a report reads the same on every run; an object
    hashed by identity stays unknown."""
    k = key_of(v)
    if k is UNHASHABLE:
        return raises("TypeError", "unhashable type")
    stable = _stable_hash(k) if k is not UNTOLD else None
    if stable is None:
        return Unknown("hash() of a value hashed by identity or unknown", v.origins,
                       kind=UnknownKind.UNSUPPORTED)  # fmt: skip
    return Const(stable, v.origins)


def _stable_hash(k: object) -> int | None:
    if k is None:
        return 0x5EED
    if isinstance(k, (bool, int, float, complex)):
        return hash(k)  # (numbers hash the same in every process; 1, 1.0 and True alike)
    if isinstance(k, (str, bytes)):
        data = k.encode() if isinstance(k, str) else b"b" + k
        return int.from_bytes(hashlib.sha256(data).digest()[:7], "big")
    if isinstance(k, (tuple, frozenset)):
        parts = [_stable_hash(x) for x in k]
        if any(p is None for p in parts):
            return None
        ordered_parts = sorted(parts) if isinstance(k, frozenset) else parts  # type: ignore[type-var]
        return _stable_hash(repr((type(k).__name__, ordered_parts)))
    return None


def _map(fname: str, seq: Const) -> Value:
    try:
        return Const(tuple(_PURE[fname](x) for x in seq.value), seq.origins)
    except Exception as exc:
        return raises(type(exc).__name__, f"map({fname}) raised {type(exc).__name__}")


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


def evaluated_names() -> set[str]:
    """Every name `call_builtin` evaluates: the builtins and the pure library functions
    (math.*, os.path.*, triton's integer helpers)."""
    return builtin_names() | set(_PURE)
