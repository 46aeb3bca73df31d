"""Operators: arithmetic, comparison, identity, as Python computes them on known values."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Any

from routescope.analysis.engine import enums
from routescope.analysis.engine.base import EngineBase, Paths
from routescope.analysis.engine.containers import (
    UNTOLD,
    DictVal,
    ListVal,
    SetVal,
    TupleVal,
    key_of,
)
from routescope.analysis.engine.contents import (
    contains,
    seq_items,
    snapshot,
)
from routescope.analysis.engine.equality import equal, named_tuple
from routescope.analysis.engine.intervals import bounded_compare
from routescope.analysis.engine.nones import never_none
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.tensors import (
    torch_dtype,
)
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
    Value,
    describe,
    merge_origins,
    raises,
    unknown_from,
)
from routescope.analysis.library.builtins import SENTINEL

# what the left operand of / // % is when the operation cannot raise ZeroDivisionError: only
# a number divides (a string's % formats, a path's / joins, a container has no such operator)
_NEVER_DIVIDED = (ListVal, TupleVal, DictVal, SetVal, FunctionVal, ClassVal, ModuleVal, Tensor)


def may_divide_by_zero(a: Value) -> bool:
    """Can `a / b` (or // or %) raise ZeroDivisionError for some `b`: may `a` be a number?"""
    if isinstance(a, Const):
        return isinstance(a.value, (int, float, complex))  # ("%d" % n formats: no division)
    return not isinstance(a, _NEVER_DIVIDED)


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
# the methods a binary operator calls on a framework class's instance: the left operand's,
# then (where it has none, or it answers NotImplemented) the right operand's reflected one
DUNDERS: dict[type[ast.operator], tuple[str, str]] = {
    op: (f"__{name}__", f"__r{name}__")
    for op, name in (
        (ast.Add, "add"), (ast.Sub, "sub"), (ast.Mult, "mul"), (ast.MatMult, "matmul"),
        (ast.Div, "truediv"), (ast.FloorDiv, "floordiv"), (ast.Mod, "mod"), (ast.Pow, "pow"),
        (ast.BitAnd, "and"), (ast.BitOr, "or"), (ast.BitXor, "xor"),
        (ast.LShift, "lshift"), (ast.RShift, "rshift"),
    )
}  # fmt: skip
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


class OperatorsMixin(EngineBase):
    def overloaded(
        self,
        st: PathState,
        op: ast.operator,
        a: Value,
        b: Value,
        node: ast.AST,
        inplace: bool = False,
    ) -> Paths | None:
        """`a op b` where an operand is an instance of a framework class that defines the
        operator (a mapper merged with another by `__or__`): the method called, as Python calls
        it (`inplace`: `a op= b`, its `__iop__` first; the reflected one only for operands of
        different classes); None where neither does (the builtin operation)."""
        names = DUNDERS.get(type(op))
        if names is None or not (isinstance(a, Instance) or isinstance(b, Instance)):
            return None  # (the commonest: numbers, strings, tensors)
        left, right = names
        same = isinstance(a, Instance) and isinstance(b, Instance) and a.cls is b.cls
        tries = [(a, b, left)] + ([] if same else [(b, a, right)])
        if inplace:
            tries.insert(0, (a, b, left.replace("__", "__i", 1)))
        return self._operator_call(st, tries, node)

    def _operator_call(
        self, st: PathState, tries: list[tuple[Value, Value, str]], node: ast.AST
    ) -> Paths | None:
        for at, (obj, other, name) in enumerate(tries):
            if not (isinstance(obj, Instance) and obj.cls is not None):
                continue
            method = self.class_lookup(st, obj.cls, name)
            if not isinstance(method, FunctionVal):
                continue
            out: Paths = []
            for s, v in self.call(st, method.bind(obj), [other], {}, node):
                if (isinstance(v, Const) and v.value is NotImplemented) or (
                    isinstance(v, External) and v.name == "NotImplemented"
                ):  # the next one is tried
                    why = raises("TypeError", f"unsupported operand types for {name}")
                    out.extend(self._operator_call(s, tries[at + 1 :], node) or [(s, why)])
                else:
                    out.append((s, v))
            return out
        return None

    def ev_Compare(self, st: PathState, node: ast.Compare) -> Paths:
        out: Paths = []
        if len(node.ops) == 1:  # the commonest: one comparison, no chain to follow
            op = node.ops[0]
            for s, (a, b) in self.ev_seq(st, [node.left, node.comparators[0]]):
                if type(op) in (ast.In, ast.NotIn) and isinstance(b, Instance) and b.cls:
                    got = self.membership_of(s, a, b, node)  # its own __contains__, or the
                    if got is not None:  # dict a dict subclass holds
                        out.extend(_negated(got) if type(op) is ast.NotIn else got)
                        continue
                if (
                    type(op) in (ast.In, ast.NotIn)
                    and not isinstance(a, Instance)
                    and not (isinstance(b, Instance))
                ):  # what `compare` does first for these, without building the value twice
                    found = self._membership(a, b, s)
                    if found is not None:
                        out.append((s, Const(found == (type(op) is ast.In), merge_origins(a, b))))
                        continue
                r = self.compare(op, a, b, s)
                if isinstance(r, Const) and type(op) not in (ast.Is, ast.IsNot):
                    r = Const(r.value, merge_origins(a, b))  # (`is` gives both operands' already)
                out.append((s, r))
            return out
        for s, vals in self.ev_seq(st, [node.left, *node.comparators]):
            result: Value = Const(True)
            for i, op in enumerate(node.ops):  # a < b < c: each link on its own operands
                r = self.compare(op, vals[i], vals[i + 1], s)
                if isinstance(r, Const) and not r.value:
                    result = r
                    break
                if not isinstance(r, Const):  # (a count's comparison stands for the chain only
                    # when no other link is undecided: a branch on it bounds by that link alone)
                    result = r if isinstance(result, Const) else unknown_from("a chain", result)
            if isinstance(result, Const):
                result = Const(result.value, merge_origins(*vals))
            out.append((s, result))
        return out

    def compare(self, op: ast.cmpop, a: Value, b: Value, st: PathState | None = None) -> Value:
        """`a OP b` as this path sees its operands (`st` None: no container is read)."""
        if st is not None and not isinstance(op, (ast.Is, ast.IsNot)):
            if isinstance(a, Instance):  # a NamedTuple compares as a tuple
                a = named_tuple(st, a)
            if isinstance(b, Instance):
                b = named_tuple(st, b)
        if isinstance(op, (ast.Is, ast.IsNot)):
            same = self.identical(a, b)
            if same is None:
                return unknown_from("identity of unknowns", a, b)
            return Const(same if isinstance(op, ast.Is) else not same, merge_origins(a, b))
        bounded = bounded_compare(op, a, b, st.bounds if st is not None else None)
        if bounded is not None:
            return bounded
        if isinstance(op, (ast.Eq, ast.NotEq)):
            got = self._equality(a, b, st)
            if got is None:
                return unknown_from(f"compare {describe(a)} with {describe(b)}", a, b)
            return Const(got == isinstance(op, ast.Eq), merge_origins(a, b))
        if isinstance(op, (ast.In, ast.NotIn)):
            found = self._membership(a, b, st)
            if found is not None:
                return Const(found == isinstance(op, ast.In), merge_origins(a, b))
        if st is not None:
            a, b = snapshot(st, a), snapshot(st, b)  # lists order by their items
        dtypes = torch_dtype(a), torch_dtype(b)
        fn = CMPOPS.get(type(op))
        if isinstance(a, EnumMember) and isinstance(b, EnumMember):  # two int enum members
            ka, kb = key_of(a), key_of(b)  # order as their values (a plain Enum's: not told)
            if ka is not UNTOLD and kb is not UNTOLD:
                a, b = Const(ka, a.origins), Const(kb, b.origins)
        if isinstance(a, EnumMember) and isinstance(b, Const):
            a = a.value
        if isinstance(b, EnumMember) and isinstance(a, Const):
            b = b.value
        if isinstance(a, Const) and isinstance(b, Const) and fn is not None and not any(dtypes):
            try:
                return Const(bool(fn(a.value, b.value)), merge_origins(a, b))
            except Exception as exc:
                return raises(type(exc).__name__, "comparison raised")
        return unknown_from(f"compare {describe(a)} with {describe(b)}", a, b)

    def _equality(self, a: Value, b: Value, st: PathState | None) -> bool | None:
        if any(isinstance(x, Instance) and x.label == SENTINEL for x in (a, b)):
            return self.identical(a, b)  # object() compares by identity
        dtypes = torch_dtype(a), torch_dtype(b)
        if dtypes[0] and dtypes[1]:
            return dtypes[0] == dtypes[1]
        if any(dtypes) and any(isinstance(x, Const) for x in (a, b)):
            # a torch dtype equals only a dtype: never None (an unquantized config's dtype
            # is), a string ("nvfp4" against torch.float8_e4m3fn), a number
            return False
        if isinstance(a, (FunctionVal, ClassVal, ModuleVal)):
            same = self.identical(a, b)
            if same is not None:
                return same
        if st is None:
            if isinstance(a, Const) and isinstance(b, Const):
                try:
                    return bool(a.value == b.value)
                except Exception:
                    return None
            return None
        return equal(st, a, b)

    def _membership(self, a: Value, b: Value, st: PathState | None) -> bool | None:
        if (
            isinstance(b, External)
            and b.name == "os.environ"
            and isinstance(a, Const)
            and (a.value in self.facts.env or self.facts.env_unset_means_absent)
        ):
            return a.value in self.facts.env
        if isinstance(a, Instance) and a.label == SENTINEL and isinstance(b, Const):
            return False  # no constant holds a fresh object()
        if isinstance(b, EnumMember):
            return enums.flag_contains(a, b)  # a flag's bits (any other member: not told)
        if st is None:
            return None
        if isinstance(b, (DictVal, SetVal)):
            return contains(st, b, a)
        items = seq_items(st, b)
        if items is None or (isinstance(b, Const) and isinstance(a, Const)):
            return None  # (constants: the plain operator below)
        hits = [True if self.identical(a, x) else equal(st, a, x) for x in items]  # is, then ==
        if True in hits:
            return True
        return False if all(h is False for h in hits) else None

    def identical(self, a: Value, b: Value) -> bool | None:
        if isinstance(a, Const) and isinstance(b, Const):
            if (
                a.value is None
                or b.value is None
                or isinstance(a.value, bool)
                or isinstance(b.value, bool)
            ):  # None, True and False are each one object; no other value is one of them
                return a.value is b.value
            return None
        if isinstance(b, Const) and b.value is None and never_none(a):
            return False
        if isinstance(a, Const) and a.value is None:
            return self.identical(b, a)
        for x, y in ((a, b), (b, a)):  # a fresh object() is none of the values made without it
            if isinstance(x, Instance) and x.label == SENTINEL:
                if not isinstance(y, Unknown):
                    return x is y
                if y.serial < x.serial:  # an unknown value that was there before it was made
                    return False
        if torch_dtype(a) and torch_dtype(b):
            return torch_dtype(a) == torch_dtype(b)  # one object per dtype
        if isinstance(a, External) and isinstance(b, External):
            # imports name objects by their full dotted path: one name, one object (a sentinel
            # such as msgspec.NODEFAULT); two names, two objects (dtype aliases are above)
            return a.name == b.name
        framework = (
            Const,
            FunctionVal,
            ClassVal,
            Instance,
            EnumMember,
            Tensor,
            ListVal,
            DictVal,
            SetVal,
            TupleVal,
        )
        if (isinstance(a, External) and isinstance(b, framework)) or (
            isinstance(b, External) and isinstance(a, framework)
        ):
            return False  # an object from outside the framework is none of its values
        objects = (FunctionVal, ClassVal, ModuleVal, Instance, EnumMember, ListVal, DictVal, SetVal)
        if isinstance(a, objects) and isinstance(b, objects):
            if isinstance(a, EnumMember) and isinstance(b, EnumMember):
                return a.cls is b.cls and a.name == b.name
            return a is b
        return None


def _negated(paths: Paths) -> Paths:
    """`not in` from the paths of `in`."""
    return [(s, Const(not v.value, v.origins) if isinstance(v, Const) else v) for s, v in paths]
