"""Expressions: path-sensitive abstract evaluation. Each evaluates to a list of (path, value)
pairs: most give one, a call into framework code one per way the callee can return."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Any, cast

from routescope.analysis.engine import enums
from routescope.analysis.engine.base import _HANDLERS, _UNSEEN, EngineBase, Paths, handler
from routescope.analysis.engine.containers import (
    DictVal,
    Entries,
    ListVal,
    SetVal,
    TupleVal,
    new_set,
    new_tuple,
)
from routescope.analysis.engine.contents import (
    entries,
    iteration,
    snapshot,
)
from routescope.analysis.engine.generators import yield_from, yielded
from routescope.analysis.engine.intervals import (
    Compared,
    Negation,
    bool_binop,
    bounded_binop,
    some_bool,
)
from routescope.analysis.engine.merging import merge_partials
from routescope.analysis.engine.operators import BINOPS, may_divide_by_zero
from routescope.analysis.engine.sequences import merged, sequence_op, set_algebra
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.tensorcalls import broadcast
from routescope.analysis.engine.tensors import STARRED_UNKNOWN, unknown_length
from routescope.analysis.engine.values import (
    Const,
    EnumMember,
    External,
    PythonRaise,
    Tensor,
    Unknown,
    UnknownKind,
    Value,
    may_raise,
    merge_origins,
    raises,
    unknown_from,
)
from routescope.analysis.library.paths import path_join


class ExprMixin(EngineBase):
    def ev(self, st: PathState, node: ast.expr) -> Paths:
        b = self.budget  # one evaluation step (see Budget.past)
        b.steps += 1
        if st.routed or not b.steps & 4095 or (b.local and b.steps > b.local[-1][0]):
            b.past(st)
        if type(node) is ast.Name:  # the commonest by far: read here, without the dispatch
            v = self.lookup_name(st, node.id)
            if isinstance(v, Unknown) and v.exc is not None:
                return self._raising(node, [(st, v)])
            return [(st, v)]
        method = _HANDLERS.get((type(self), "ev_", type(node)), _UNSEEN)
        if method is _UNSEEN:
            method = handler(self, "ev_", node)
        if method is None:
            why = f"unsupported expression {type(node).__name__}"
            return [(st, Unknown(why, kind=UnknownKind.UNSUPPORTED))]
        result: Paths = method(self, st, node)
        for _, v in result:
            if isinstance(v, Unknown) and v.exc is not None:
                return self._raising(node, result)
        return result

    def _raising(self, node: ast.expr, result: Paths) -> Paths:
        """A builtin operation that raises (or may: then a fork raises) ends its statement with
        the exception, as Python does; the value left carries no exception on."""
        out: Paths = []
        where = (self.current_file(), getattr(node, "lineno", 0), self.current_function())
        for s, v in result:
            if not (isinstance(v, Unknown) and v.exc is not None) or s.raising is not None:
                out.append((s, v))
                continue
            if v.maybe:
                goes_on = v.then if v.then is not None else Unknown(
                    v.reason, v.origins, v.truthy, v.kind)  # fmt: skip
                out.append((s, goes_on))
                s = s.fork()
            if isinstance(v.exc, str):  # a builtin operation's own: certain unless `maybe`
                s.raising = External(v.exc) if v.maybe else PythonRaise(v.exc, v.reason)
            else:
                s.raising = v.exc
            s.raised_at = s.raised_at if not isinstance(v.exc, str) else where
            out.append((s, Unknown(v.reason, v.origins, kind=UnknownKind.RAISED)))
        return out

    def ev_seq(self, st: PathState, nodes: list[ast.expr]) -> list[tuple[PathState, list[Value]]]:
        vals: list[Value] = []
        acc: list[tuple[PathState, list[Value]]] = [(st, vals)]
        rest = nodes
        for k, n in enumerate(nodes):  # the commonest: each part goes one way, on this path
            if type(n) is ast.Starred or st.raising is not None:
                rest = nodes[k:]
                break
            got = self.ev(st, n)
            if len(got) == 1 and got[0][0] is st:
                vals.append(got[0][1])
                continue
            acc = [(s, [*vals, v]) for s, v in got]  # it forked: on as below, from the next
            if len(acc) > self.budget.merge_at:
                acc = merge_partials(acc, f"{self.current_file()}:{n.lineno}")
            rest = nodes[k + 1 :]
            break
        else:
            return acc
        for n in rest:
            nxt: list[tuple[PathState, list[Value]]] = []
            for s, vals in acc:
                if s.raising is not None:  # an earlier part raised: the rest is not evaluated
                    nxt.append((s, [*vals, Unknown("not evaluated", kind=UnknownKind.RAISED)]))
                    continue
                if isinstance(n, ast.Starred):
                    for s2, v in self.ev(s, n.value):
                        seq = iteration(v, s2)  # *a_list, *a_set, *a_dict (its keys), ...
                        more = (
                            seq
                            if seq is not None
                            else [Unknown(STARRED_UNKNOWN, v.origins, kind=UnknownKind.UNSUPPORTED)]
                        )
                        nxt.append((s2, [*vals, *more]))
                    continue
                for s2, v in self.ev(s, n):
                    nxt.append((s2, [*vals, v]))
            acc = nxt
            if len(acc) > self.budget.merge_at:  # each forking part would double the paths
                acc = merge_partials(acc, f"{self.current_file()}:{n.lineno}")
        return acc

    def ev_Constant(self, st: PathState, node: ast.Constant) -> Paths:
        return [(st, Const(node.value))]

    def ev_JoinedStr(self, st: PathState, node: ast.JoinedStr) -> Paths:
        """An f-string: where every part is a known value, the string Python makes of them
        (`!r`, `!s`, `!a` and a format spec applied by Python's own format(), as the values are
        Python's own: str, int, float, bool, None)."""
        parts: list[ast.expr] = []
        for v in node.values:
            if isinstance(v, ast.FormattedValue):
                parts.append(v.value)
                if v.format_spec is not None:
                    parts.append(v.format_spec)
            else:
                parts.append(v)
        literal = any(isinstance(v, ast.Constant) and v.value for v in node.values)
        out: Paths = []
        for s, vals in self.ev_seq(st, parts):
            text = _formatted(node, vals) if all(isinstance(v, Const) for v in vals) else None
            if text is not None:
                out.append((s, Const(text, merge_origins(*vals))))
            else:
                why = "f-string"
                out.append((s, Unknown(why, truthy=True if literal else None,
                                       kind=UnknownKind.UNSUPPORTED)))  # fmt: skip
        return out

    def ev_Attribute(self, st: PathState, node: ast.Attribute) -> Paths:
        out: Paths = []
        for s, obj in self.ev(st, node.value):
            for s2, v in self.attribute(s, obj, node.attr):
                if (
                    isinstance(obj, Const)
                    and isinstance(v, Unknown)
                    and v.kind is UnknownKind.ABSENT
                ):  # a constant is a real Python value: `None.x` raises, as Python does
                    v = raises("AttributeError", v.reason)
                out.append((s2, v))
        return out

    # A display with a starred part of unknown contents (`(n, *t.shape)` where the shape is not
    # known) has unknown length: not one item per part (a 2-D shape made of a 3-D one)
    def ev_Tuple(self, st: PathState, node: ast.Tuple) -> Paths:
        return [(s, new_tuple(vals) if (why := _starred(vals)) is None else why)
                for s, vals in self.ev_seq(st, list(node.elts))]  # fmt: skip

    def ev_List(self, st: PathState, node: ast.List) -> Paths:
        # a new list: append and friends change it on the path that made the change
        return [(s, ListVal(vals) if (why := _starred(vals)) is None else ListVal(None, why))
                for s, vals in self.ev_seq(st, list(node.elts))]  # fmt: skip

    def ev_Set(self, st: PathState, node: ast.Set) -> Paths:
        return [(s, new_set(vals) if (why := _starred(vals)) is None else SetVal(Entries({}, why)))
                for s, vals in self.ev_seq(st, list(node.elts))]  # fmt: skip

    def ev_Dict(self, st: PathState, node: ast.Dict) -> Paths:
        """`{k: v, **more}`: items in order, later ones win (a key equal to an earlier one
        keeps the earlier key object, as Python does)."""
        parts = [k if k is not None else ast.Constant(None) for k in node.keys]
        out: Paths = []
        for s, vals in self.ev_seq(st, [*parts, *node.values]):
            ks, vs = vals[: len(parts)], vals[len(parts) :]
            e = Entries({})
            for key_node, k, v in zip(node.keys, ks, vs, strict=True):
                if key_node is not None:
                    e = e.with_item(k, v)
                    continue
                v = snapshot(s, v)
                if isinstance(v, DictVal):
                    e = merged(e, entries(s, v))
                else:  # ** of a mapping routescope does not track
                    why = Unknown(
                        "a dict with ** of an unknown mapping", kind=UnknownKind.UNSUPPORTED
                    )
                    e = Entries({h: (kv, _any_of(x, why)) for h, (kv, x) in e.items.items()}, why)
            out.append((s, DictVal(e)))
        return out

    def ev_BinOp(self, st: PathState, node: ast.BinOp) -> Paths:
        out: Paths = []
        for s, (a, b) in self.ev_seq(st, [node.left, node.right]):
            called = self.overloaded(s, node.op, a, b, node) if s.raising is None else None
            out.extend(called if called is not None else [(s, self.binop(s, node, a, b))])
        return out

    def binop(self, st: PathState, node: ast.BinOp, a: Value, b: Value) -> Value:
        fn = BINOPS.get(type(node.op))
        if isinstance(a, SetVal) or isinstance(b, SetVal):
            return set_algebra(st, node.op, a, b)
        if isinstance(a, DictVal) and isinstance(b, DictVal) and isinstance(node.op, ast.BitOr):
            return DictVal(merged(entries(st, a), entries(st, b)))  # d1 | d2: a new dict
        if isinstance(node.op, (ast.Add, ast.Mult)) and (
            isinstance(a, (ListVal, TupleVal)) or isinstance(b, (ListVal, TupleVal))
        ):
            return sequence_op(st, node.op, a, b)
        if isinstance(a, EnumMember) or isinstance(b, EnumMember):
            flags = enums.flag_binop(node.op, a, b)  # A | B of a Flag: a member of it
            if flags is not None:
                return flags
            a, b = enums.as_value(a), enums.as_value(b)  # an IntEnum's member is its int
        if isinstance(a, Const) and isinstance(b, Const) and fn is not None:
            try:
                return Const(fn(a.value, b.value), merge_origins(a, b))
            except Exception as exc:
                return raises(
                    type(exc).__name__, f"{type(exc).__name__} in {self.source_text(node)}"
                )
        if isinstance(node.op, ast.Div) and (joined := path_join(a, b)) is not None:
            return joined  # a path joined with a name not known: a path, not a division
        zero = (isinstance(b, Unknown) and b.truthy is not True) or (
            isinstance(b, Const) and isinstance(b.value, (int, float)) and b.value == 0
        )
        if (
            isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)) and zero and may_divide_by_zero(a)
        ):  # a divisor that is 0, or may be: a number raises; a tensor, a format string would not
            return may_raise("ZeroDivisionError", unknown_from(self.source_text(node), a, b))
        decided = bool_binop(node.op, a, b)  # False & b, True | b
        if decided is not None:
            return decided
        low = bounded_binop(node.op, a, b)  # a count known from below, in a sum, a product, ...
        if low is not None:
            return low
        t = a if isinstance(a, Tensor) else b
        if isinstance(t, Tensor):  # elementwise (its operands broadcast), or a matmul
            shape = broadcast(a, b) if not isinstance(node.op, ast.MatMult) else None
            return Tensor(shape, producer=t.producer, made_at=t.made_at, role=t.role)
        return unknown_from(f"{self.source_text(node)}", a, b)

    def ev_UnaryOp(self, st: PathState, node: ast.UnaryOp) -> Paths:
        out: Paths = []
        for s, v in self.ev(st, node.operand):
            if isinstance(node.op, ast.Not):
                t = self.truth_of(s, v)
                out.append(
                    (
                        s,
                        Const(not t, v.origins)
                        if t is not None
                        else v.negated()
                        if isinstance(v, Compared)
                        else Negation(v)
                        if type(v) is Unknown and v.kind is UnknownKind.JOINED
                        else some_bool(unknown_from("not", v)),  # (`not` gives a bool)
                    )
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
                    out.append((s, Unknown("unary op", kind=UnknownKind.UNSUPPORTED)))
            else:
                got = unknown_from("unary op", v)
                if isinstance(v, Unknown) and isinstance(node.op, (ast.USub, ast.UAdd)):
                    got.truthy = v.truthy  # -x is zero exactly when x is
                out.append((s, got))
        return out

    def ev_Lambda(self, st: PathState, node: ast.Lambda) -> Paths:
        return [(st, self.make_lambda(st, node))]

    def ev_Starred(self, st: PathState, node: ast.Starred) -> Paths:
        return self.ev(st, node.value)

    def ev_NamedExpr(self, st: PathState, node: ast.NamedExpr) -> Paths:
        out = self.ev(st, node.value)
        for s, v in out:
            s.env[node.target.id] = v
        return out

    entering: list[int]  # frame depths of the context-manager generators being entered

    def ev_Yield(self, st: PathState, node: ast.Yield) -> Paths:
        if not self.entering or self.entering[-1] != len(st.frames):  # a generator function
            value = [(st, Const(None))] if node.value is None else self.ev(st, node.value)
            why = "a generator's yield"
            return [(s, Const(None) if yielded(s, [v]) else
                     Unknown(why, kind=UnknownKind.UNSUPPORTED)) for s, v in value]  # fmt: skip
        out: Paths = []
        for s, v in self.ev(st, node.value) if node.value is not None else [(st, Const(None))]:
            s.yielded = v
            out.append((s, Const(None)))  # what `send` gives back; the statement ends here
        return out

    def ev_YieldFrom(self, st: PathState, node: ast.YieldFrom) -> Paths:
        return [(s, yield_from(s, v)) for s, v in self.ev(st, node.value)]

    def ev_Await(self, st: PathState, node: ast.Await) -> Paths:
        return self.ev(st, node.value)

    def ev_Call(self, st: PathState, node: ast.Call) -> Paths:
        """The callee, then the positional arguments (*args expand), then the keyword ones
        (f(**d): d's string keys), in Python's order."""
        out: Paths = []
        kw_nodes = [k for k in node.keywords if k.arg is not None]
        star_kw = [k.value for k in node.keywords if k.arg is None]
        for s, head in self.ev_seq(st, [node.func, *node.args]):
            fn, args = head[0], head[1:]  # (no keywords, the commonest: nothing more to read)
            more = [*(k.value for k in kw_nodes), *star_kw]
            tails: list[tuple[PathState, list[Value]]] = self.ev_seq(s, more) if more else [(s, [])]
            for s2, tail in tails:
                kwvals, extras = tail[: len(kw_nodes)], tail[len(kw_nodes) :]
                kwargs = {k.arg: v for k, v in zip(kw_nodes, kwvals, strict=True) if k.arg}
                for extra in extras:
                    if isinstance(extra, DictVal):
                        for key, v in entries(s2, extra).items.values():
                            if isinstance(key, Const) and isinstance(key.value, str):
                                kwargs[key.value] = v
                if s2.raising is not None:  # the callee or an argument raised: no call
                    out.append((s2, Unknown("not called", kind=UnknownKind.RAISED)))
                    continue
                out.extend(self.call(s2, fn, list(args), kwargs, node))
        return out


def _any_of(old: Value, why: Unknown) -> Value:
    """An item a ** of an unknown mapping may have overwritten."""
    return why if not isinstance(old, Const) else Unknown(why.reason, kind=why.kind)


_CONVERSIONS: dict[int, Callable[[object], str]] = {ord("r"): repr, ord("s"): str, ord("a"): ascii}
_FORMATTABLE = (str, int, float, bool, type(None))


def _formatted(node: ast.JoinedStr, vals: list[Value]) -> str | None:
    """The f-string's text from its parts' known values (in the order ev_JoinedStr reads
    them: each value, then its format spec), or None where Python's format of one is not
    this module's to run (a value of another type) or raises."""
    out: list[str] = []
    it = iter(vals)
    for part in node.values:
        got = cast(Const, next(it)).value
        if not isinstance(part, ast.FormattedValue):
            out.append(str(got))
            continue
        spec = cast(Const, next(it)).value if part.format_spec is not None else ""
        if part.conversion == -1 and spec == "":
            out.append(str(got))  # format(v, "") is str(v) for every value a Const holds
            continue
        if not isinstance(got, _FORMATTABLE) or not isinstance(spec, str):
            return None
        try:
            shown = _CONVERSIONS[part.conversion](got) if part.conversion != -1 else got
            out.append(format(shown, spec))
        except (ValueError, TypeError, KeyError):
            return None
    return "".join(out)


def _starred(vals: list[Value]) -> Unknown | None:
    """The unknown a starred part of unknown contents left among a display's items, if any."""
    return next((v for v in vals if isinstance(v, Unknown) and unknown_length(v)), None)
