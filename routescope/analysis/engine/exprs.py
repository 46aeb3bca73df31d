"""Expressions: path-sensitive abstract evaluation. Each evaluates to a list of (path, value)
pairs: most give one, a call into framework code one per way the callee can return."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Any

from routescope.analysis.engine.base import EngineBase, Paths
from routescope.analysis.engine.containers import (
    LIST_UNKNOWN,
    is_list,
    is_set,
    items_of,
    iteration,
    new_list,
    new_set,
    open_set_minus,
    snapshot,
    truth_in,
    update_view,
)
from routescope.analysis.engine.operators import BINOPS
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
    merge_origins,
    unknown_from,
)
from routescope.analysis.library.builtins import (
    ordered,
)
from routescope.analysis.library.records import ANNOTATED
from routescope.analysis.library.typing import annotated


class ExprMixin(EngineBase):
    def ev(self, st: PathState, node: ast.expr) -> Paths:
        self.budget.check_time()
        method = getattr(self, f"ev_{type(node).__name__}", None)
        if method is None:
            return [
                (
                    st,
                    Unknown(
                        f"unsupported expression {type(node).__name__}",
                        kind=UnknownKind.UNSUPPORTED,
                    ),
                )
            ]
        result: Paths = method(st, node)
        return result

    def ev_seq(self, st: PathState, nodes: list[ast.expr]) -> list[tuple[PathState, list[Value]]]:
        acc: list[tuple[PathState, list[Value]]] = [(st, [])]
        for n in nodes:
            nxt: list[tuple[PathState, list[Value]]] = []
            for s, vals in acc:
                if isinstance(n, ast.Starred):
                    for s2, v in self.ev(s, n.value):
                        seq = iteration(v, s2)  # *a_list, *a_set, *a_dict (its keys), ...
                        if seq is not None:
                            nxt.append((s2, [*vals, *seq]))
                        elif is_list(v) or is_set(v):
                            nxt.append(
                                (
                                    s2,
                                    [
                                        *vals,
                                        Unknown(
                                            "starred list of unknown contents",
                                            kind=UnknownKind.UNSUPPORTED,
                                        ),
                                    ],
                                )
                            )
                        else:
                            nxt.append(
                                (
                                    s2,
                                    [
                                        *vals,
                                        Unknown("starred argument", kind=UnknownKind.UNSUPPORTED),
                                    ],
                                )
                            )
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
                out.append(
                    (
                        s,
                        Unknown(
                            "f-string",
                            truthy=True if literal else None,
                            kind=UnknownKind.UNSUPPORTED,
                        ),
                    )
                )
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
            if isinstance(node, ast.List) and (
                not vals or not all(isinstance(v, Const) for v in vals)
            ):
                out.append((s, new_list(vals)))  # mutable: append and friends go to the path
            elif all(isinstance(v, Const) for v in vals):
                seq = tuple(v.value for v in vals)  # type: ignore[attr-defined]
                out.append(
                    (
                        s,
                        Const(
                            seq if isinstance(node, ast.Tuple) else list(seq), merge_origins(*vals)
                        ),
                    )
                )
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
                out.append((s, Unknown("set of unhashable items", kind=UnknownKind.UNSUPPORTED)))
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
                out.append((s, Unknown("dict with unknown keys", kind=UnknownKind.UNSUPPORTED)))
        return out

    def _dict_with_unpacking(self, st: PathState, node: ast.Dict) -> Paths:
        """`{**a, "k": v, **b}`: items in order, later ones win; unknown when a part is."""
        fields: dict[str, Value] = {}
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:
                part = self.single(st, value)
                if not (isinstance(part, Instance) and part.label == "dict" and part.cls is None):
                    return [
                        (
                            st,
                            Unknown(
                                "dict with ** of an unknown mapping", kind=UnknownKind.UNSUPPORTED
                            ),
                        )
                    ]
                update_view(fields, st.fields(part))
                continue
            k, v = self.single(st, key), self.single(st, value)
            if not isinstance(k, Const) or v is None:
                return [(st, Unknown("dict with unknown keys", kind=UnknownKind.UNSUPPORTED))]
            fields[repr(k.value)] = v
        return [(st, Instance(None, fields, "dict"))]

    def ev_BinOp(self, st: PathState, node: ast.BinOp) -> Paths:
        out: Paths = []
        for s, (a, b) in self.ev_seq(st, [node.left, node.right]):
            fn = BINOPS.get(type(node.op))
            if isinstance(node.op, ast.Sub) and is_set(a):
                less = open_set_minus(s, a, snapshot(s, b))
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
                            (
                                s,
                                Unknown(
                                    f"{type(exc).__name__} in {self.source_text(node)}",
                                    kind=UnknownKind.UNSUPPORTED,
                                ),
                            )
                        )
                        continue
                    made = (
                        new_set([Const(x) for x in ordered(got)])
                        if isinstance(got, set)
                        else Const(got, merge_origins(a, b))
                    )
                    out.append((s, made))
                    continue
            if isinstance(node.op, ast.Add) and (is_list(a) or is_list(b)):
                left, right = items_of(s, a), items_of(s, b)
                joined = (
                    new_list(left + right)
                    if left is not None and right is not None
                    else Unknown(
                        "concatenation of a list of unknown contents", kind=UnknownKind.UNSUPPORTED
                    )
                )
                out.append((s, joined))
                continue
            if isinstance(a, Const) and isinstance(b, Const) and fn is not None:
                try:
                    out.append((s, Const(fn(a.value, b.value), merge_origins(a, b))))
                    continue
                except Exception as exc:
                    out.append(
                        (
                            s,
                            Unknown(
                                f"{type(exc).__name__} in {self.source_text(node)}",
                                kind=UnknownKind.UNSUPPORTED,
                            ),
                        )
                    )
                    continue
            if isinstance(a, Tensor):
                out.append((s, Tensor(producer=a.producer, made_at=a.made_at)))
            elif isinstance(b, Tensor):
                out.append((s, Tensor(producer=b.producer, made_at=b.made_at)))
            else:
                out.append((s, unknown_from(f"{self.source_text(node)}", a, b)))
        return out

    def ev_UnaryOp(self, st: PathState, node: ast.UnaryOp) -> Paths:
        out: Paths = []
        for s, v in self.ev(st, node.operand):
            if isinstance(node.op, ast.Not):
                t = truth_in(s, v)
                out.append(
                    (s, Const(not t, v.origins) if t is not None else unknown_from("not", v))
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
                out.append((s, unknown_from("unary op", v)))
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
                out.append((s, Unknown("slice", kind=UnknownKind.UNSUPPORTED)))
        return out

    def subscript(self, obj: Value, idx: Value) -> Value:
        if isinstance(obj, Const) and isinstance(idx, Const):
            try:
                return Const(obj.value[idx.value], merge_origins(obj, idx))
            except Exception:
                return Unknown("subscript raised", kind=UnknownKind.RAISED)
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
                return unknown_from("subscript of unknown", obj.fields[LIST_UNKNOWN])
        if isinstance(obj, FunctionVal):
            return obj  # kernel[grid]: the launcher is the kernel
        if isinstance(obj, External) and obj.name in ANNOTATED:
            return annotated(idx)
        if isinstance(obj, (External, ClassVal)):
            return obj  # typing generics, Optional[int]
        return unknown_from("subscript of unknown", obj, idx)

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
        if not self.entering or self.entering[-1] != len(st.frames):
            return [(st, Unknown("a generator's yield", kind=UnknownKind.UNSUPPORTED))]
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
