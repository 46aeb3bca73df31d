"""The trace engine's interpreter: path-sensitive abstract evaluation of a Python subset.

Expressions evaluate to a list of (path, value) pairs: most give one, a call into framework code
gives one per way the callee can return, and an undecided condition forks the path in two.
"""

from __future__ import annotations

import ast
import operator
import time
from collections.abc import Callable
from typing import Any, cast

from routescope.analysis.builtins import SENTINEL, call_builtin, const_attribute, ordered
from routescope.analysis.facts import Facts
from routescope.analysis.records import ANNOTATED
from routescope.analysis.state import Decision, Input, Part, PathState
from routescope.analysis.values import (
    AtLeast,
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
    Value,
    describe,
    rest_of_dicts,
    truth,
)  # fmt: skip

Paths = list[tuple[PathState, Value]]

BINOPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow, ast.BitAnd: operator.and_, ast.BitOr: operator.or_,
    ast.BitXor: operator.xor, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
}  # fmt: skip
CMPOPS: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge, ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}  # fmt: skip


class BudgetExceeded(Exception):
    """A path outgrew a budget; it ends as Unknown with this reason."""


class Budget:
    """Limits that end a path as Unknown. Work is counted in evaluation steps (expressions and
    statements), not seconds, so the same inputs give the same report on a loaded machine; a
    wall-clock deadline remains only as a last guard against a runaway analysis."""

    def __init__(self, max_paths: int = 256, max_depth: int = 28, seconds: float = 120.0,
                 loop_limit: int = 64) -> None:  # fmt: skip
        self.max_paths = max_paths
        self.max_depth = max_depth
        self.deadline = time.monotonic() + seconds
        self.loop_limit = loop_limit
        self.seconds = seconds
        self.steps = 0
        self.local: list[tuple[int, str]] = []  # nested step limits, innermost last
        # live paths beyond this are joined (set-up phases use 1: their forks are settled anyway)
        self.merge_at = 24

    def check_time(self) -> None:
        self.steps += 1
        if self.local and self.steps > self.local[-1][0]:
            raise BudgetExceeded(self.local[-1][1])
        if self.steps % 4096 == 0 and time.monotonic() > self.deadline:
            raise BudgetExceeded(f"time budget of {self.seconds:g} s exhausted")

    def push(self, steps: int, reason: str) -> None:
        self.local.append((self.steps + steps, reason))

    def pop(self) -> None:
        self.local.pop()


def merge_origins(*vals: Value) -> tuple[str, ...]:
    out: list[str] = []
    for v in vals:
        for o in v.origins:
            if o not in out:
                out.append(o)
    return tuple(out)


# torch's dtypes: one object each, several names for some (torch.float is torch.float32).
_DTYPE_ALIASES = {
    "float": "float32", "double": "float64", "half": "float16", "cfloat": "complex64",
    "cdouble": "complex128", "long": "int64", "int": "int32", "short": "int16",
}  # fmt: skip
_DTYPES = {
    "float32", "float64", "float16", "bfloat16", "complex64", "complex128", "int64", "int32",
    "int16", "int8", "uint8", "bool", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
    "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2", "uint16", "uint32", "uint64",
}  # fmt: skip


def _torch_dtype(v: Value) -> str | None:
    """The canonical dtype name of `torch.<dtype>` (an External), else None."""
    if not isinstance(v, External) or not v.name.startswith("torch."):
        return None
    name = v.name[len("torch.") :]
    name = _DTYPE_ALIASES.get(name, name)
    return name if name in _DTYPES else None


# A for loop or comprehension over known items runs item by item up to this many items (the
# step budgets still bound the work); beyond, a loop's body runs once with what it changes
# havoced and a comprehension is Unknown.
SEQ_LIMIT = 2048
LIST_UNKNOWN = "*"  # a list field that says its contents are no longer known


def is_list(v: Value) -> bool:
    """A mutable list the engine tracks item by item (fields "0".."n-1" in the path's view)."""
    return isinstance(v, Instance) and v.cls is None and v.label == "list"


def new_list(items: list[Value]) -> Instance:
    return Instance(None, {str(i): v for i, v in enumerate(items)}, "list")


def seq_items(st: PathState, v: Value) -> list[Value] | None:
    """The items of a tracked tuple or list as this path sees them; None when not known."""
    if isinstance(v, Instance) and v.cls is None and v.label in ("tuple", "list"):
        f = st.fields(v) if v.label == "list" else v.fields
        if LIST_UNKNOWN in f:
            return None
        return list(f.values())
    return None


def is_set(v: Value) -> bool:
    """A mutable set the engine tracks by its items (fields keyed by each item's repr)."""
    return isinstance(v, Instance) and v.cls is None and v.label == "set"


def new_set(items: list[Value]) -> Value:
    """A tracked set of these items; a set of unknown items is an unknown set."""
    if not all(isinstance(i, Const) for i in items):
        return Instance(None, {LIST_UNKNOWN: Unknown("set of unknown items")}, "set")
    return Instance(None, {repr(i.value): i for i in items}, "set")  # type: ignore[attr-defined]


def set_items(st: PathState, v: Value) -> list[Value] | None:
    """A tracked set's items as this path sees them, in one fixed order; None if unknown."""
    f = st.fields(v) if isinstance(v, Instance) else {}
    if LIST_UNKNOWN in f or not all(isinstance(v, Const) for v in f.values()):
        return None  # (a join of paths whose sets differ leaves Unknown members)
    return [f[k] for k in sorted(f)]


def is_dict(v: Value) -> bool:
    return isinstance(v, Instance) and v.cls is None and v.label == "dict"


def _open_set_minus(st: PathState, a: Value, b: Value) -> Value | None:
    """`a - b` where `a` is a set with members only perhaps there (OpenKeys: the keys of a
    joined dict) and `b` a known set: the same kind of set, closed when every perhaps-member
    is removed. None when the operands are not of that kind."""
    view = st.fields(a) if isinstance(a, Instance) else {}
    rest = view.get(LIST_UNKNOWN)
    if not isinstance(rest, OpenKeys) or not (
        isinstance(b, Const) and isinstance(b.value, (set, frozenset))
    ):
        return None
    gone = {repr(x) for x in b.value}
    fields = {k: v for k, v in view.items() if k != LIST_UNKNOWN and k not in gone}
    maybe = rest.keys - gone
    if maybe:
        fields[LIST_UNKNOWN] = OpenKeys(maybe, rest.reason)
    return Instance(None, fields, "set")


def update_view(view: dict[str, Value], other: dict[str, Value]) -> None:
    """`view.update(other)` for two dicts' path views: what either may also hold ("*") is
    combined, not overwritten by `other`'s."""
    rest = rest_of_dicts([view.get(LIST_UNKNOWN), other.get(LIST_UNKNOWN)])
    view.update(other)
    if rest is not None:
        view[LIST_UNKNOWN] = rest


def key_absent(view: dict[str, Value], key: str) -> bool:
    """Is `key` (a repr) known to be absent from a dict this path sees as `view`?"""
    if key in view:
        return False
    rest = view.get(LIST_UNKNOWN)
    return rest is None or (isinstance(rest, OpenKeys) and key not in rest.keys)


def _items_of(st: PathState, v: Value) -> list[Value] | None:
    """The items of a list, tuple or constant sequence, as this path sees them."""
    if isinstance(v, Const) and isinstance(v.value, (list, tuple)):
        return [Const(x, v.origins) for x in v.value]
    return seq_items(st, v)


def snapshot(st: PathState, v: Value) -> Value:
    """A list as this path sees it now, as an immutable value (a Const list when every item is
    known, else a tuple object); a dict this path changed, as a copy of its view; every other
    value as it is."""
    if is_dict(v):
        assert isinstance(v, Instance)
        view = st.fields(v)
        return v if view is v.fields else Instance(None, dict(view), "dict")
    if is_set(v):
        members = set_items(st, v)
        if members is None:
            return Unknown("set of unknown contents")
        return Const({m.value for m in members}, merge_origins(*members))  # type: ignore[attr-defined]
    if not is_list(v):
        return v
    items = seq_items(st, v)
    if items is None:
        return Unknown("list of unknown contents")
    if all(isinstance(i, Const) for i in items):
        return Const([i.value for i in items], merge_origins(*items))  # type: ignore[attr-defined]
    return Instance(None, {str(i): x for i, x in enumerate(items)}, "tuple")


def truth_in(st: PathState, v: Value) -> bool | None:
    """Truthiness as this path sees it: a tracked list is false when empty."""
    if is_list(v):
        items = seq_items(st, v)
        return None if items is None else bool(items)
    if is_dict(v) or is_set(v):
        assert isinstance(v, Instance)
        view = st.fields(v)
        if LIST_UNKNOWN in view:
            return True if len(view) > 1 and is_dict(v) else None  # a known key is there
        return bool(view)
    return truth(v)


def annotated(idx: Value) -> Value:
    """`Annotated[T, meta...]`: the type with its metadata (what get_origin/get_args read)."""
    if isinstance(idx, Const) and isinstance(idx.value, tuple):
        items: list[Value] = [Const(x, idx.origins) for x in idx.value]
    elif isinstance(idx, Instance) and idx.cls is None and idx.label == "tuple":
        items = list(idx.fields.values())
    else:
        return Unknown("Annotated[] of unknown arguments")
    return Instance(None, {"__origin__": items[0],
                           "__metadata__": Instance(None, {str(i): v for i, v in
                                                           enumerate(items[1:])}, "tuple")},
                    "typing.Annotated")  # fmt: skip


def typing_call(name: str, args: list[Value]) -> Value | None:
    """typing.get_origin / typing.get_args of an annotation value."""
    if name not in ("typing.get_origin", "typing.get_args", "typing_extensions.get_origin",
                    "typing_extensions.get_args") or len(args) != 1:  # fmt: skip
        return None
    tp = args[0]
    origin = name.endswith("get_origin")
    if isinstance(tp, Instance) and tp.label == "typing.Annotated":
        if origin:
            return External("typing.Annotated")
        meta = list(tp.fields["__metadata__"].fields.values())  # type: ignore[attr-defined]
        return Instance(None, {str(i): v for i, v in enumerate([tp.fields["__origin__"], *meta])},
                        "tuple")  # fmt: skip
    plain = isinstance(tp, (ClassVal, Const)) or (
        isinstance(tp, External) and "." not in tp.name  # bool, int, str: no origin, no args
    )
    if plain:
        return Const(None) if origin else Const(())
    if origin and isinstance(tp, External) and tp.name in _TYPING_ORIGINS:
        # `Optional[X]` is kept as typing.Optional: its origin is known, its arguments are not
        found = _TYPING_ORIGINS[tp.name]
        return External(found) if found else Const(None)
    return None


_TYPING_ORIGINS = {
    "typing.Optional": "typing.Union", "typing.Union": "typing.Union", "typing.List": "list",
    "typing.Dict": "dict", "typing.Tuple": "tuple", "typing.Set": "set",
    "typing.FrozenSet": "frozenset", "typing.Literal": "typing.Literal",
    "typing.Callable": "collections.abc.Callable", "typing.Type": "type", "typing.Any": "",
}  # fmt: skip


_FLIPPED: dict[type, type] = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE,
                              ast.Eq: ast.Eq, ast.NotEq: ast.NotEq}  # fmt: skip


def _record_eq(st: PathState, a: Value, b: Value, depth: int) -> bool | None:
    """`==` between two records (dataclasses, msgspec Structs) of one class that keeps the
    generated __eq__: field by field as this path sees them; None when it cannot say."""
    from routescope.analysis.records import is_dataclass, is_struct

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
        sub = _record_eq(st, x, y, depth - 1)
        if sub is not True:
            return sub
    return True


def _bounded_compare(op: ast.cmpop, a: Value, b: Value) -> Value | None:
    """`x OP c` for x known to be at least `low`: decided when every such x answers alike."""
    if isinstance(b, AtLeast) and not isinstance(a, AtLeast) and type(op) in _FLIPPED:
        return _bounded_compare(_FLIPPED[type(op)](), b, a)
    if not (isinstance(a, AtLeast) and isinstance(b, Const)) or isinstance(b.value, bool) \
            or not isinstance(b.value, (int, float)):  # fmt: skip
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


def _unknown_from(reason: str, *vals: Value) -> Unknown:
    unknowns = [v for v in vals if isinstance(v, Unknown)]
    if unknowns:
        return Unknown(unknowns[0].reason, merge_origins(*vals))
    return Unknown(reason, merge_origins(*vals))


class ExprMixin:
    """Expressions. Needs `call`, `attribute`, `lookup_name`, `module_of_frame` from the engine."""

    facts: Facts
    budget: Budget

    # provided by the engine (Engine overrides every one of these)
    def call(
        self, st: PathState, fn: Value, args: list[Value], kwargs: dict[str, Value], node: ast.AST
    ) -> Paths:
        raise NotImplementedError

    def attribute(self, st: PathState, obj: Value, name: str) -> Paths:
        raise NotImplementedError

    def lookup_name(self, st: PathState, name: str) -> Value:
        raise NotImplementedError

    def current_file(self) -> str:
        raise NotImplementedError

    def current_function(self) -> str:
        raise NotImplementedError

    def source_text(self, node: ast.AST) -> str:
        raise NotImplementedError

    def ev(self, st: PathState, node: ast.expr) -> Paths:
        self.budget.check_time()
        method = getattr(self, f"ev_{type(node).__name__}", None)
        if method is None:
            return [(st, Unknown(f"unsupported expression {type(node).__name__}"))]
        result: Paths = method(st, node)
        return result

    def ev_seq(self, st: PathState, nodes: list[ast.expr]) -> list[tuple[PathState, list[Value]]]:
        acc: list[tuple[PathState, list[Value]]] = [(st, [])]
        for n in nodes:
            nxt: list[tuple[PathState, list[Value]]] = []
            for s, vals in acc:
                if isinstance(n, ast.Starred):
                    from routescope.analysis.stmts import iteration

                    for s2, v in self.ev(s, n.value):
                        seq = iteration(v, s2)  # *a_list, *a_set, *a_dict (its keys), ...
                        if seq is not None:
                            nxt.append((s2, [*vals, *seq]))
                        elif is_list(v) or is_set(v):
                            nxt.append((s2, [*vals, Unknown("starred list of unknown contents")]))
                        else:
                            nxt.append((s2, [*vals, Unknown("starred argument")]))
                    continue
                for s2, v in self.ev(s, n):
                    nxt.append((s2, [*vals, v]))
            acc = nxt
        return acc

    def ev_Constant(self, st: PathState, node: ast.Constant) -> Paths:
        return [(st, Const(node.value))]

    def ev_JoinedStr(self, st: PathState, node: ast.JoinedStr) -> Paths:
        parts = [v.value if isinstance(v, ast.FormattedValue) else v for v in node.values]
        out: Paths = []
        for s, vals in self.ev_seq(st, parts):
            literal = any(isinstance(v, ast.Constant) and v.value for v in node.values)
            if all(isinstance(v, Const) for v in vals) and not any(
                isinstance(v, ast.FormattedValue) and (v.format_spec or v.conversion != -1)
                for v in node.values
            ):
                out.append((s, Const("".join(str(v.value) for v in vals), merge_origins(*vals))))  # type: ignore[attr-defined]
            else:
                out.append((s, Unknown("f-string", truthy=True if literal else None)))
        return out

    def ev_Name(self, st: PathState, node: ast.Name) -> Paths:
        return [(st, self.lookup_name(st, node.id))]

    def ev_Attribute(self, st: PathState, node: ast.Attribute) -> Paths:
        out: Paths = []
        for s, obj in self.ev(st, node.value):
            out.extend(self.attribute(s, obj, node.attr))
        return out

    def ev_Tuple(self, st: PathState, node: ast.Tuple | ast.List) -> Paths:
        out: Paths = []
        for s, vals in self.ev_seq(st, list(node.elts)):
            if isinstance(node, ast.List) and (not vals or not all(isinstance(v, Const)
                                                                   for v in vals)):  # fmt: skip
                out.append((s, new_list(vals)))  # mutable: append and friends go to the path
            elif all(isinstance(v, Const) for v in vals):
                seq = tuple(v.value for v in vals)  # type: ignore[attr-defined]
                out.append((s, Const(seq if isinstance(node, ast.Tuple) else list(seq),
                                     merge_origins(*vals))))  # fmt: skip
            else:
                out.append((s, Instance(None, {str(i): v for i, v in enumerate(vals)}, "tuple")))
        return out

    ev_List = ev_Tuple

    def ev_Set(self, st: PathState, node: ast.Set) -> Paths:
        out: Paths = []
        for s, vals in self.ev_seq(st, list(node.elts)):
            try:
                out.append((s, new_set(vals)))
            except TypeError:  # an unhashable item: the real code raises
                out.append((s, Unknown("set of unhashable items")))
        return out

    def ev_Dict(self, st: PathState, node: ast.Dict) -> Paths:
        keys = [k for k in node.keys if k is not None]
        if len(keys) != len(node.keys):
            return self._dict_with_unpacking(st, node)
        out: Paths = []
        for s, vals in self.ev_seq(st, [*keys, *node.values]):
            ks, vs = vals[: len(keys)], vals[len(keys) :]
            if all(isinstance(k, Const) for k in ks):
                fields = {repr(k.value): v for k, v in zip(ks, vs, strict=False)}  # type: ignore[attr-defined]
                inst = Instance(None, fields, "dict")
                out.append((s, inst))
            else:
                out.append((s, Unknown("dict with unknown keys")))
        return out

    def _dict_with_unpacking(self, st: PathState, node: ast.Dict) -> Paths:
        """`{**a, "k": v, **b}`: items in order, later ones win; unknown when a part is."""
        fields: dict[str, Value] = {}
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:
                part = self._one(st, value)
                if not (isinstance(part, Instance) and part.label == "dict" and part.cls is None):
                    return [(st, Unknown("dict with ** of an unknown mapping"))]
                update_view(fields, st.fields(part))
                continue
            k, v = self._one(st, key), self._one(st, value)
            if not isinstance(k, Const) or v is None:
                return [(st, Unknown("dict with unknown keys"))]
            fields[repr(k.value)] = v
        return [(st, Instance(None, fields, "dict"))]

    def ev_BinOp(self, st: PathState, node: ast.BinOp) -> Paths:
        out: Paths = []
        for s, (a, b) in self.ev_seq(st, [node.left, node.right]):
            fn = BINOPS.get(type(node.op))
            if isinstance(node.op, ast.Sub) and is_set(a):
                less = _open_set_minus(s, a, snapshot(s, b))
                if less is not None:
                    out.append((s, less))
                    continue
            if is_set(a) or is_set(b):  # set algebra on this path's members: a new set
                a, b = snapshot(s, a), snapshot(s, b)
                if isinstance(a, Const) and isinstance(b, Const) and fn is not None:
                    try:
                        got = fn(a.value, b.value)
                    except Exception as exc:
                        out.append(
                            (s, Unknown(f"{type(exc).__name__} in {self.source_text(node)}"))
                        )
                        continue
                    made = new_set([Const(x) for x in ordered(got)]) if isinstance(got, set) \
                        else Const(got, merge_origins(a, b))  # fmt: skip
                    out.append((s, made))
                    continue
            if isinstance(node.op, ast.Add) and (is_list(a) or is_list(b)):
                left, right = _items_of(s, a), _items_of(s, b)
                joined = new_list(left + right) if left is not None and right is not None else \
                    Unknown("concatenation of a list of unknown contents")  # fmt: skip
                out.append((s, joined))
                continue
            if isinstance(a, Const) and isinstance(b, Const) and fn is not None:
                try:
                    out.append((s, Const(fn(a.value, b.value), merge_origins(a, b))))
                    continue
                except Exception as exc:
                    out.append((s, Unknown(f"{type(exc).__name__} in {self.source_text(node)}")))
                    continue
            if isinstance(a, Tensor):
                out.append((s, Tensor(producer=a.producer, made_at=a.made_at)))
            elif isinstance(b, Tensor):
                out.append((s, Tensor(producer=b.producer, made_at=b.made_at)))
            else:
                out.append((s, _unknown_from(f"{self.source_text(node)}", a, b)))
        return out

    def ev_UnaryOp(self, st: PathState, node: ast.UnaryOp) -> Paths:
        out: Paths = []
        for s, v in self.ev(st, node.operand):
            if isinstance(node.op, ast.Not):
                t = truth_in(s, v)
                out.append(
                    (s, Const(not t, v.origins) if t is not None else _unknown_from("not", v))
                )
            elif isinstance(v, Const):
                ops: dict[type[ast.unaryop], Callable[[Any], Any]] = {
                    ast.USub: operator.neg,
                    ast.UAdd: operator.pos,
                    ast.Invert: operator.invert,
                }
                try:
                    out.append((s, Const(ops[type(node.op)](v.value), v.origins)))
                except Exception:
                    out.append((s, Unknown("unary op")))
            else:
                out.append((s, _unknown_from("unary op", v)))
        return out

    def ev_Compare(self, st: PathState, node: ast.Compare) -> Paths:
        out: Paths = []
        for s, vals in self.ev_seq(st, [node.left, *node.comparators]):
            result: Value = Const(True)
            views = [snapshot(s, v) for v in vals]  # lists compare by their items on this path
            for i, op in enumerate(node.ops):
                same = isinstance(op, (ast.Is, ast.IsNot))
                a, b = (vals if same else views)[i], (vals if same else views)[i + 1]
                eq = _record_eq(s, a, b, 3) if isinstance(op, (ast.Eq, ast.NotEq)) else None
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
            out.append((s, result if isinstance(result, Unknown) else
                        Const(result.value, merge_origins(*vals))))  # type: ignore[attr-defined]  # fmt: skip
        return out

    def compare(self, op: ast.cmpop, a: Value, b: Value) -> Value:
        if isinstance(op, (ast.Is, ast.IsNot)):
            same = self.identical(a, b)
            if same is None:
                return _unknown_from("identity of unknowns", a, b)
            return Const(same if isinstance(op, ast.Is) else not same, merge_origins(a, b))
        bounded = _bounded_compare(op, a, b)
        if bounded is not None:
            return bounded
        if isinstance(op, (ast.Eq, ast.NotEq)) and any(
            isinstance(x, Instance) and x.label == SENTINEL for x in (a, b)
        ):  # object() compares by identity
            same = self.identical(a, b)
            if same is not None:
                return Const(same == isinstance(op, ast.Eq))
        if isinstance(op, (ast.In, ast.NotIn)) and isinstance(a, Instance) and \
                a.label == SENTINEL and isinstance(b, Const):  # fmt: skip
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
            return Unknown("compare of containers with unknown items")
        dtypes = _torch_dtype(a), _torch_dtype(b)
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
            return Const(found if isinstance(op, ast.In) else not found, (f"env {a.value} "
                         + ("given" if found else "unset (assumed)"),))  # fmt: skip
        if (
            isinstance(op, (ast.In, ast.NotIn))
            and isinstance(b, Instance)
            and b.label in ("tuple", "dict")
        ):
            if isinstance(a, Const) and b.label == "dict":
                found = repr(a.value) in b.fields
                if not found and not key_absent(b.fields, repr(a.value)):
                    return _unknown_from("key of a dict of unknown contents",
                                         b.fields[LIST_UNKNOWN])  # fmt: skip
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
                return Unknown("comparison raised")
        if isinstance(op, (ast.Eq, ast.NotEq)) and isinstance(
            a, (FunctionVal, ClassVal, ModuleVal)
        ):
            same = self.identical(a, b)
            if same is not None:
                return Const(same if isinstance(op, ast.Eq) else not same)
        return _unknown_from(f"compare {describe(a)} with {describe(b)}", a, b)

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
        if _torch_dtype(a) and _torch_dtype(b):
            return _torch_dtype(a) == _torch_dtype(b)  # one object per dtype
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

    def ev_BoolOp(self, st: PathState, node: ast.BoolOp) -> Paths:
        is_and = isinstance(node.op, ast.And)
        out: Paths = []
        todo: list[tuple[PathState, int]] = [(st, 0)]
        while todo:
            s, i = todo.pop()
            for s2, v in self.ev(s, node.values[i]):
                t = truth_in(s2, v)
                last = i == len(node.values) - 1
                if last or (t is not None and t != is_and):
                    out.append((s2, v))
                elif t is None:
                    out.append((s2, v))  # undecided operand: the whole is undecided
                else:
                    todo.append((s2, i + 1))
        return out

    def ev_IfExp(self, st: PathState, node: ast.IfExp) -> Paths:
        out: Paths = []
        for s, taken in self.decide(st, node.test):
            out.extend(self.ev(s, node.body if taken else node.orelse))
        return out

    def ev_Subscript(self, st: PathState, node: ast.Subscript) -> Paths:
        out: Paths = []
        for s, (obj, idx) in self.ev_seq(st, [node.value, node.slice]):
            out.append((s, self.subscript(snapshot(s, obj), idx)))
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
                out.append((s, Unknown("slice")))
        return out

    def subscript(self, obj: Value, idx: Value) -> Value:
        if isinstance(obj, Const) and isinstance(idx, Const):
            try:
                return Const(obj.value[idx.value], merge_origins(obj, idx))
            except Exception:
                return Unknown("subscript raised")
        if isinstance(obj, Tensor):
            return Tensor(producer=obj.producer, made_at=obj.made_at)
        if isinstance(obj, Instance) and isinstance(idx, Const):
            at = idx.value
            if obj.label == "tuple" and obj.cls is None and isinstance(at, slice):
                items = list(obj.fields.values())[at]  # t[1:]
                return Instance(None, {str(i): v for i, v in enumerate(items)}, "tuple")
            if obj.label == "tuple" and isinstance(at, int) and not isinstance(at, bool) and at < 0:
                at += len(obj.fields)  # t[-1]
            key = repr(idx.value) if obj.label == "dict" else str(at)
            if key in obj.fields:
                return obj.fields[key]
            if obj.label == "dict" and isinstance(obj.fields.get(LIST_UNKNOWN), Unknown):
                return _unknown_from("subscript of unknown", obj.fields[LIST_UNKNOWN])
        if isinstance(obj, FunctionVal):
            return obj  # kernel[grid]: the launcher is the kernel
        if isinstance(obj, External) and obj.name in ANNOTATED:
            return annotated(idx)
        if isinstance(obj, (External, ClassVal)):
            return obj  # typing generics, Optional[int]
        return _unknown_from("subscript of unknown", obj, idx)

    def make_lambda(self, st: PathState, node: ast.Lambda) -> Value:
        raise NotImplementedError

    def ev_Lambda(self, st: PathState, node: ast.Lambda) -> Paths:
        return [(st, self.make_lambda(st, node))]

    def ev_ListComp(self, st: PathState, node: ast.expr) -> Paths:
        """A comprehension over known items, evaluated item by item on this one path; Unknown
        when an item, a filter or the iterable is not known, or evaluating forks the path."""
        assert isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp))
        names = {
            n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)
        }
        env = st.env if st.envs else None
        if env is None:
            return [(st, Unknown("comprehension"))]
        saved = {n: env[n] for n in names if n in env}
        try:
            got = self._comprehend(st, node, node.generators, [])
        finally:
            for n in names:  # the comprehension's variables are its own (Python 3 scoping)
                env.pop(n, None)
            env.update(saved)
        if isinstance(got, Unknown):
            return [(st, got)]
        if isinstance(node, ast.DictComp):
            pairs = [cast(tuple[Value, Value], p) for p in got]
            if not all(isinstance(k, Const) for k, _ in pairs):
                return [(st, Unknown("comprehension with unknown keys"))]
            return [(st, Instance(None, {repr(cast(Const, k).value): v for k, v in pairs}, "dict"))]
        vals = [cast(Value, v) for v in got]
        if isinstance(node, ast.ListComp):
            return [(st, new_list(vals))]
        if all(isinstance(v, Const) for v in vals):
            items = [cast(Const, v).value for v in vals]
            if isinstance(node, ast.SetComp):
                try:
                    return [(st, new_set(vals))]
                except TypeError:
                    return [(st, Unknown("comprehension of unhashable items"))]
            made: Any = tuple(items)
            return [(st, Const(made, merge_origins(*vals)))]
        if isinstance(node, ast.SetComp):
            return [(st, Unknown("set of unknown items"))]
        return [(st, Instance(None, {str(i): v for i, v in enumerate(vals)}, "tuple"))]

    ev_SetComp = ev_DictComp = ev_GeneratorExp = ev_ListComp

    def _comprehend(self, st: PathState, node: ast.expr, gens: list[ast.comprehension],
                    out: list[object]) -> list[object] | Unknown:  # fmt: skip
        from routescope.analysis.stmts import iteration

        if not gens:
            if isinstance(node, ast.DictComp):
                k, v = self._one(st, node.key), self._one(st, node.value)
                if k is None or v is None:
                    return Unknown("comprehension item")
                out.append((k, v))
            else:
                elt = self._one(st, node.elt)  # type: ignore[attr-defined]
                if elt is None:
                    return Unknown("comprehension item")
                out.append(elt)
            return out
        gen = gens[0]
        it = self._one(st, gen.iter)
        items = iteration(it, st) if it is not None else None
        if items is None:
            return Unknown("comprehension over unknown items")
        if len(items) > SEQ_LIMIT:
            return Unknown(f"comprehension over more than {SEQ_LIMIT} items")
        for item in items:
            self.assign(st, gen.target, item)  # type: ignore[attr-defined]
            keep = True
            for cond in gen.ifs:
                c = self._one(st, cond)
                t = truth_in(st, c) if c is not None else None
                if t is None:
                    return Unknown("comprehension filter")
                keep = keep and t
                if not keep:
                    break
            if keep:
                got = self._comprehend(st, node, gens[1:], out)
                if isinstance(got, Unknown):
                    return got
        return out

    def _one(self, st: PathState, node: ast.expr) -> Value | None:
        """`node`'s value when evaluating it keeps to this path (None when it forks)."""
        frames, envs = len(st.frames), len(st.envs)
        res = self.ev(st, node)
        if len(res) != 1 or res[0][0] is not st:
            # the forked paths are dropped; calls entered on `st` itself must not stay entered
            del st.frames[frames:]
            del st.envs[envs:]
            return None
        return res[0][1]

    def ev_Starred(self, st: PathState, node: ast.Starred) -> Paths:
        return self.ev(st, node.value)

    def ev_NamedExpr(self, st: PathState, node: ast.NamedExpr) -> Paths:
        out = self.ev(st, node.value)
        for s, v in out:
            s.env[node.target.id] = v
        return out

    entering: list[int]  # frame depths of the context-manager generators being entered

    def ev_Yield(self, st: PathState, node: ast.Yield) -> Paths:
        if not self.entering or self.entering[-1] != len(st.frames):
            return [(st, Unknown("a generator's yield"))]
        out: Paths = []
        for s, v in self.ev(st, node.value) if node.value is not None else [(st, Const(None))]:
            s.yielded = v
            out.append((s, Const(None)))  # what `send` gives back; the statement ends here
        return out

    def ev_Await(self, st: PathState, node: ast.Await) -> Paths:
        return self.ev(st, node.value)

    def ev_Call(self, st: PathState, node: ast.Call) -> Paths:
        out: Paths = []
        kw_nodes = [k for k in node.keywords if k.arg is not None]
        star_kw = [k.value for k in node.keywords if k.arg is None]
        for s, head in self.ev_seq(st, [node.func, *(k.value for k in kw_nodes), *star_kw]):
            fn, kwvals, extras = head[0], head[1 : 1 + len(kw_nodes)], head[1 + len(kw_nodes) :]
            kwargs = {k.arg: v for k, v in zip(kw_nodes, kwvals, strict=False) if k.arg is not None}
            for extra in extras:
                extra = snapshot(s, extra)
                if isinstance(extra, Instance) and extra.label == "dict":
                    for key, v in extra.fields.items():
                        kwargs[key.strip("'\"")] = v
            for s2, args in self.ev_seq(s, list(node.args)):  # *args expand here
                out.extend(self.call(s2, fn, args, dict(kwargs), node))
        return out

    # --- conditions -------------------------------------------------------------------------

    def decide(self, st: PathState, test: ast.expr) -> list[tuple[PathState, bool]]:
        """Evaluate a branch condition, record the Decision, fork when undecided."""
        out: list[tuple[PathState, bool]] = []
        for s, v in self.ev(st, test):
            if s.raising is not None:  # the test raised: the statement ends with it
                out.append((s, False))
                continue
            t = truth_in(s, v)
            decision = self.make_decision(s, test, t, v)
            if t is None:
                for branch in (True, False):
                    s2 = s.fork()
                    s2.decisions.append(decision)
                    out.append((s2, branch))
            else:
                s.decisions.append(decision)
                out.append((s, t))
        if len(out) > self.budget.max_paths:
            raise BudgetExceeded(
                f"more than {self.budget.max_paths} paths in {self.current_function()}"
            )
        return out

    def make_decision(self, st: PathState, test: ast.expr, t: bool | None, v: Value) -> Decision:
        parts: list[Part] = []
        if isinstance(test, ast.BoolOp):
            for operand in test.values:
                pv = self.peek(st, operand)
                pt = truth_in(st, pv) if pv is not None else None
                parts.append(Part(self.source_text(operand), pt))
                if pt is not None and pt != isinstance(test.op, ast.And):
                    break
        reason = v.reason if isinstance(v, Unknown) else ""
        if t is None and isinstance(v, Instance) and v.cls is None:  # a container's contents
            rest = st.fields(v).get(LIST_UNKNOWN)
            reason = rest.reason if isinstance(rest, Unknown) else reason
        return Decision(
            file=self.current_file(), line=test.lineno, function=self.current_function(),
            text=self.source_text(test), value=t, inputs=tuple(self.inputs(st, test)),
            parts=tuple(parts), reason=reason,
        )  # fmt: skip

    def peek(self, st: PathState, node: ast.expr) -> Value | None:
        """Re-evaluate a side-effect-free operand on a scratch copy of the path."""
        try:
            results = self.ev(st.scratch(), node)
        except BudgetExceeded:
            return None
        vals = [v for _, v in results]
        if len(vals) == 1:
            return vals[0]
        truths = {truth_in(s, v) for s, v in results}
        return vals[0] if len(truths) == 1 else Unknown("several outcomes")

    record_inputs: bool = True  # off while evaluating set-up code nobody reads decision by decision

    def inputs(self, st: PathState, test: ast.expr) -> list[Input]:
        if not self.record_inputs:
            return []
        seen: set[str] = set()
        out: list[Input] = []
        for sub in ast.walk(test):
            if isinstance(sub, (ast.Name, ast.Attribute)) and not isinstance(
                getattr(sub, "ctx", None), ast.Store
            ):
                text = self.source_text(sub)
                if text in seen or len(out) >= 12:
                    continue
                seen.add(text)
                v = self.peek(st, sub)
                if v is None or isinstance(v, (FunctionVal, ClassVal, ModuleVal)):
                    continue
                if isinstance(v, External) and not v.origins:
                    continue
                out.append(Input(text, describe(v), v.origins))
        return out


__all__ = [
    "Budget",
    "BudgetExceeded",
    "ExprMixin",
    "Paths",
    "call_builtin",
    "const_attribute",
    "is_dict",
    "is_list",
    "merge_origins",
    "new_list",
    "seq_items",
    "snapshot",
    "truth_in",
    "typing_call",
]  # fmt: skip
