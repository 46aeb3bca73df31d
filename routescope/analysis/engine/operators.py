"""Operators: arithmetic, comparison, identity, as Python computes them on known values."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Any, cast

from routescope.analysis.engine.base import EngineBase, Paths
from routescope.analysis.engine.containers import (
    LIST_UNKNOWN,
    key_absent,
    snapshot,
)
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.tensors import (
    torch_dtype,
)
from routescope.analysis.engine.values import (
    AtLeast,
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
    describe,
    merge_origins,
    unknown_from,
)
from routescope.analysis.library.builtins import (
    SENTINEL,
)

BINOPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
}
CMPOPS: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}


_FLIPPED: dict[type, type] = {
    ast.Lt: ast.Gt,
    ast.Gt: ast.Lt,
    ast.LtE: ast.GtE,
    ast.GtE: ast.LtE,
    ast.Eq: ast.Eq,
    ast.NotEq: ast.NotEq,
}


def record_eq(st: PathState, a: Value, b: Value, depth: int) -> bool | None:
    """`==` between two records (dataclasses, msgspec Structs) of one class that keeps the
    generated __eq__: field by field as this path sees them; None when it cannot say."""
    from routescope.analysis.library.records import is_dataclass, is_struct

    if not (isinstance(a, Instance) and isinstance(b, Instance) and a.cls is not None):
        return None
    if a is b:
        return True
    if b.cls is not a.cls or depth <= 0:
        return None
    if not (is_dataclass(a.cls) or is_struct(a.cls)) or any(
        "__eq__" in c.attrs for c in a.cls.mro()
    ):
        return None
    fa, fb = st.fields(a), st.fields(b)
    if fa.keys() != fb.keys():
        return None
    for key in fa:
        x, y = snapshot(st, fa[key]), snapshot(st, fb[key])
        if x is y:
            continue
        if isinstance(x, Const) and isinstance(y, Const):
            if repr(x.value) != repr(y.value):
                return False
            continue
        sub = record_eq(st, x, y, depth - 1)
        if sub is not True:
            return sub
    return True


def bounded_compare(op: ast.cmpop, a: Value, b: Value) -> Value | None:
    """`x OP c` for x known to be at least `low`: decided when every such x answers alike."""
    if isinstance(b, AtLeast) and not isinstance(a, AtLeast) and type(op) in _FLIPPED:
        return bounded_compare(_FLIPPED[type(op)](), b, a)
    if (
        not (isinstance(a, AtLeast) and isinstance(b, Const))
        or isinstance(b.value, bool)
        or not isinstance(b.value, (int, float))
    ):
        return None
    c, low = b.value, a.low
    known: dict[type, bool | None] = {
        ast.Eq: False if c < low else None,
        ast.NotEq: True if c < low else None,
        ast.Gt: True if c < low else None,
        ast.GtE: True if c <= low else None,
        ast.Lt: False if c <= low else None,
        ast.LtE: False if c < low else None,
    }
    got = known.get(type(op))
    return Const(got, a.origins) if got is not None else None


class OperatorsMixin(EngineBase):
    def ev_Compare(self, st: PathState, node: ast.Compare) -> Paths:
        out: Paths = []
        for s, vals in self.ev_seq(st, [node.left, *node.comparators]):
            result: Value = Const(True)
            views = [snapshot(s, v) for v in vals]  # lists compare by their items on this path
            for i, op in enumerate(node.ops):
                same = isinstance(op, (ast.Is, ast.IsNot))
                a, b = (vals if same else views)[i], (vals if same else views)[i + 1]
                eq = record_eq(s, a, b, 3) if isinstance(op, (ast.Eq, ast.NotEq)) else None
                r = (
                    Const(eq == isinstance(op, ast.Eq))
                    if eq is not None
                    else self.compare(op, a, b)
                )
                if isinstance(r, Const) and not r.value:
                    result = r
                    break
                if not isinstance(r, Const):
                    result = r
            out.append(
                (
                    s,
                    result
                    if isinstance(result, Unknown)
                    else Const(cast(Const, result).value, merge_origins(*vals)),
                )
            )
        return out

    def compare(self, op: ast.cmpop, a: Value, b: Value) -> Value:
        if isinstance(op, (ast.Is, ast.IsNot)):
            same = self.identical(a, b)
            if same is None:
                return unknown_from("identity of unknowns", a, b)
            return Const(same if isinstance(op, ast.Is) else not same, merge_origins(a, b))
        bounded = bounded_compare(op, a, b)
        if bounded is not None:
            return bounded
        if isinstance(op, (ast.Eq, ast.NotEq)) and any(
            isinstance(x, Instance) and x.label == SENTINEL for x in (a, b)
        ):  # object() compares by identity
            same = self.identical(a, b)
            if same is not None:
                return Const(same == isinstance(op, ast.Eq))
        if (
            isinstance(op, (ast.In, ast.NotIn))
            and isinstance(a, Instance)
            and a.label == SENTINEL
            and isinstance(b, Const)
        ):
            return Const(isinstance(op, ast.NotIn))  # no constant holds a fresh object()
        if isinstance(a, EnumMember) and isinstance(b, EnumMember):
            eq = a.cls is b.cls and a.name == b.name
            if isinstance(op, ast.Eq):
                return Const(eq)
            if isinstance(op, ast.NotEq):
                return Const(not eq)
        if (
            isinstance(op, (ast.Eq, ast.NotEq))
            and isinstance(a, Instance)
            and isinstance(b, Instance)
            and a.cls is None
            and b.cls is None
            and {a.label, b.label} <= {"dict", "tuple"}
            and LIST_UNKNOWN not in a.fields
            and LIST_UNKNOWN not in b.fields
        ):  # containers compare item by item (the views of this path: see ev_Compare)
            if a.label != b.label or a.fields.keys() != b.fields.keys():
                return Const(isinstance(op, ast.NotEq))
            hits = [self.compare(ast.Eq(), a.fields[k], b.fields[k]) for k in a.fields]
            if any(isinstance(h, Const) and not h.value for h in hits):
                return Const(isinstance(op, ast.NotEq))
            if all(isinstance(h, Const) for h in hits):
                return Const(isinstance(op, ast.Eq))
            return Unknown("compare of containers with unknown items", kind=UnknownKind.UNSUPPORTED)
        dtypes = torch_dtype(a), torch_dtype(b)
        if dtypes[0] and dtypes[1] and isinstance(op, (ast.Eq, ast.NotEq)):
            return Const((dtypes[0] == dtypes[1]) == isinstance(op, ast.Eq), merge_origins(a, b))
        if isinstance(a, EnumMember) and isinstance(b, Const):
            a = a.value
        if isinstance(b, EnumMember) and isinstance(a, Const):
            b = b.value
        if (
            isinstance(op, (ast.In, ast.NotIn))
            and isinstance(b, External)
            and b.name == "os.environ"
            and isinstance(a, Const)
            and (a.value in self.facts.env or self.facts.env_unset_means_absent)
        ):
            found = a.value in self.facts.env
            return Const(
                found if isinstance(op, ast.In) else not found,
                (f"env {a.value} " + ("given" if found else "unset (assumed)"),),
            )
        if (
            isinstance(op, (ast.In, ast.NotIn))
            and isinstance(b, Instance)
            and b.label in ("tuple", "dict")
        ):
            if isinstance(a, Const) and b.label == "dict":
                found = repr(a.value) in b.fields
                if not found and not key_absent(b.fields, repr(a.value)):
                    return unknown_from("key of a dict of unknown contents", b.fields[LIST_UNKNOWN])
                return Const(found if isinstance(op, ast.In) else not found)
            hits = [self.compare(ast.Eq(), a, v) for v in b.fields.values()]
            if any(isinstance(h, Const) and h.value for h in hits):
                return Const(isinstance(op, ast.In))
            if all(isinstance(h, Const) for h in hits):
                return Const(not isinstance(op, ast.In))
        fn = CMPOPS.get(type(op))
        if isinstance(a, Const) and isinstance(b, Const) and fn is not None:
            try:
                return Const(bool(fn(a.value, b.value)), merge_origins(a, b))
            except Exception:
                return Unknown("comparison raised", kind=UnknownKind.RAISED)
        if isinstance(op, (ast.Eq, ast.NotEq)) and isinstance(
            a, (FunctionVal, ClassVal, ModuleVal)
        ):
            same = self.identical(a, b)
            if same is not None:
                return Const(same if isinstance(op, ast.Eq) else not same)
        return unknown_from(f"compare {describe(a)} with {describe(b)}", a, b)

    def identical(self, a: Value, b: Value) -> bool | None:
        if isinstance(a, Const) and isinstance(b, Const):
            if a.value is None or b.value is None or isinstance(a.value, bool):
                return a.value is b.value
            return None
        if isinstance(b, Const) and b.value is None:
            if isinstance(a, (FunctionVal, ClassVal, ModuleVal, Instance, EnumMember, Tensor)):
                return False
            if isinstance(a, External):
                return False  # an imported name exists
        if isinstance(a, Const) and a.value is None:
            return self.identical(b, a)
        for x, y in ((a, b), (b, a)):  # a fresh object() is none of the values made without it
            if isinstance(x, Instance) and x.label == SENTINEL and not isinstance(y, Unknown):
                return x is y
        if torch_dtype(a) and torch_dtype(b):
            return torch_dtype(a) == torch_dtype(b)  # one object per dtype
        if isinstance(a, External) and isinstance(b, External):
            # imports name objects by their full dotted path: one name, one object (a sentinel
            # such as msgspec.NODEFAULT); two names, two objects (dtype aliases are above)
            return a.name == b.name
        framework = (Const, FunctionVal, ClassVal, Instance, EnumMember, Tensor)
        if (isinstance(a, External) and isinstance(b, framework)) or (
            isinstance(b, External) and isinstance(a, framework)
        ):
            return False  # an object from outside the framework is none of its values
        objects = (FunctionVal, ClassVal, ModuleVal, Instance, EnumMember)
        if isinstance(a, objects) and isinstance(b, objects):
            if isinstance(a, EnumMember) and isinstance(b, EnumMember):
                return a.cls is b.cls and a.name == b.name
            return a is b
        return None
