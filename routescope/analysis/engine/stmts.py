"""Statements: assignment, if/else, return, raise, assert, try, definitions, imports."""

from __future__ import annotations

import ast

from routescope.analysis.engine.base import EngineBase, Outcome
from routescope.analysis.engine.budget import BudgetExceeded
from routescope.analysis.engine.containers import (
    LIST_UNKNOWN,
    is_dict,
    is_list,
    seq_items,
    truth_in,
)
from routescope.analysis.engine.join import (
    merge_paths,
)
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import (
    Const,
    External,
    Instance,
    Tensor,
    Unknown,
    UnknownKind,
    Value,
)

GLOBALS_KEY = "\x00global"  # env slot listing the names a function declared `global`


class StmtMixin(EngineBase):
    def exec_block(self, st: PathState, body: list[ast.stmt]) -> list[Outcome]:
        live: list[PathState] = [st]
        done: list[Outcome] = []
        for stmt in body:
            nxt: list[PathState] = []
            for s in live:
                if s.raising is not None:  # raised inside the previous statement's test
                    done.append(raised_outcome(s))
                    continue
                for s2, kind, val in self.exec_stmt(s, stmt):
                    if s2.stopped and kind != "stop":
                        done.append((s2, "stop", Unknown(s2.stopped, kind=UnknownKind.BUDGET)))
                    elif kind == "normal":
                        nxt.append(s2)
                    else:
                        done.append((s2, kind, val))
            live = nxt
            if len(live) > self.budget.merge_at:
                live = merge_paths(live, f"{self.current_file()}:{stmt.lineno}")
            if len(live) + len(done) > self.budget.max_paths:
                raise BudgetExceeded(
                    f"more than {self.budget.max_paths} paths in {self.current_function()}"
                )
            if not live:
                break
        return done + [(s, "normal", None) for s in live]

    def exec_stmt(self, st: PathState, node: ast.stmt) -> list[Outcome]:
        self.budget.check_time()
        method = getattr(self, f"ex_{type(node).__name__}", None)
        if method is None:
            return [(st, "normal", None)]  # pass, global, nonlocal, delete, ...: no effect we track
        result: list[Outcome] = method(st, node)
        return [
            raised_outcome(s)
            if s.raising is not None
            else yielded_outcome(s)
            if s.yielded is not None
            else (s, k, v)
            for s, k, v in result
        ]

    def ex_Expr(self, st: PathState, node: ast.Expr) -> list[Outcome]:
        return [(s, "normal", None) for s, _ in self.ev(st, node.value)]

    def ex_Assign(self, st: PathState, node: ast.Assign) -> list[Outcome]:
        out: list[Outcome] = []
        for s, v in self.ev(st, node.value):
            if isinstance(node.value, ast.Constant):
                v = self._written_at(node, v)
            for target in node.targets:
                self.assign(s, target, v)
            out.append((s, "normal", None))
        return out

    def ex_AnnAssign(self, st: PathState, node: ast.AnnAssign) -> list[Outcome]:
        if node.value is None:
            return [(st, "normal", None)]
        out: list[Outcome] = []
        for s, v in self.ev(st, node.value):
            self.assign(s, node.target, v)
            out.append((s, "normal", None))
        return out

    def ex_AugAssign(self, st: PathState, node: ast.AugAssign) -> list[Outcome]:
        load = as_load(node.target)
        expr = ast.BinOp(left=load, op=node.op, right=node.value)
        ast.copy_location(expr, node)
        out: list[Outcome] = []
        for s, v in self.ev(st, expr):
            self.assign(s, node.target, v)
            out.append((s, "normal", None))
        return out

    def ex_Global(self, st: PathState, node: ast.Global) -> list[Outcome]:
        declared = st.env.get(GLOBALS_KEY)
        names = set(declared.value) if isinstance(declared, Const) else set()
        st.env[GLOBALS_KEY] = Const(frozenset(names | set(node.names)))
        return [(st, "normal", None)]

    def assign(self, st: PathState, target: ast.expr, v: Value) -> None:
        if isinstance(target, ast.Name):
            declared = st.env.get(GLOBALS_KEY)
            if isinstance(declared, Const) and target.id in declared.value and self.ctx:
                self.ctx[-1].module.globals[target.id] = v  # `global X` then `X = ...`
                return
            st.env[target.id] = v
        elif isinstance(target, (ast.Tuple, ast.List)):
            items: list[Value] | None = None
            if (
                isinstance(v, Const)
                and isinstance(v.value, (tuple, list))
                and len(v.value) == len(target.elts)
            ):
                items = [Const(x, v.origins) for x in v.value]
            else:
                seq = seq_items(st, v)
                if seq is not None and len(seq) == len(target.elts):
                    items = seq
            for i, elt in enumerate(target.elts):
                self.assign(st, elt, items[i] if items else unpacked(v))
        elif isinstance(target, ast.Attribute):
            for s, obj in self.ev(st, target.value):
                if s is st:
                    self.set_attribute(st, obj, target.attr, v)
        elif isinstance(target, ast.Subscript):
            self._assign_item(st, target, v)  # container writes: tracked for lists and dicts
        elif isinstance(target, ast.Starred):
            self.assign(
                st, target.value, Unknown("starred assignment", kind=UnknownKind.UNSUPPORTED)
            )

    def _written_at(self, node: ast.stmt, v: Value) -> Value:
        """A literal assigned (`self.moe_runner_backend = "flashinfer_trtllm"`,
        `overrides["moe_runner_backend"] = "flashinfer_trtllm"`) keeps the line that wrote it
        as its origin: the evidence of which override fired. Values copied from elsewhere keep
        their own origins (or none)."""
        if isinstance(v, Const) and not v.origins and self.ctx:
            return Const(v.value, (f"{self.ctx[-1].file}:{node.lineno}",))
        return v

    def _assign_item(self, st: PathState, target: ast.Subscript, v: Value) -> None:
        for s, (obj, idx) in self.ev_seq(st, [target.value, target.slice]):
            if s is not st:
                continue
            if is_dict(obj):
                assert isinstance(obj, Instance)
                if isinstance(idx, Const):
                    st.write(obj, repr(idx.value), v)
                else:
                    st.write(
                        obj,
                        LIST_UNKNOWN,
                        Unknown(
                            "dict item written with an unknown key", kind=UnknownKind.UNSUPPORTED
                        ),
                    )
                continue
            if not is_list(obj):
                continue
            assert isinstance(obj, Instance)
            items = seq_items(st, obj)
            n = len(items) if items is not None else 0
            if (
                items is not None
                and isinstance(idx, Const)
                and isinstance(idx.value, int)
                and not isinstance(idx.value, bool)
                and -n <= idx.value < n
            ):
                items[idx.value] = v
                st.replace_fields(obj, {str(i): x for i, x in enumerate(items)})
            else:
                st.replace_fields(
                    obj, {LIST_UNKNOWN: Unknown("list item written", kind=UnknownKind.UNSUPPORTED)}
                )

    def ex_If(self, st: PathState, node: ast.If) -> list[Outcome]:
        out: list[Outcome] = []
        for s, taken in self.decide(st, node.test):
            out.extend(self.exec_block(s, node.body if taken else node.orelse))
        return out

    def ex_Return(self, st: PathState, node: ast.Return) -> list[Outcome]:
        if node.value is None:
            return [(st, "return", Const(None))]
        return [(s, "return", v) for s, v in self.ev(st, node.value)]

    def ex_Raise(self, st: PathState, node: ast.Raise) -> list[Outcome]:
        if node.exc is None:
            return [(st, "raise", Unknown("re-raise", kind=UnknownKind.RAISED))]
        return [(s, "raise", v) for s, v in self.ev(st, node.exc)]

    def ex_Assert(self, st: PathState, node: ast.Assert) -> list[Outcome]:
        out: list[Outcome] = []
        for s, v in self.ev(st, node.test):
            t = truth_in(s, v)
            if t is False:
                s.decisions.append(self.make_decision(s, node.test, False, v))
                out.append((s, "raise", External("AssertionError")))
            else:
                out.append((s, "normal", None))
        return out

    def ex_Try(self, st: PathState, node: ast.Try) -> list[Outcome]:
        out: list[Outcome] = []
        self.catching.append(node.handlers)
        try:
            body = self.exec_block(st, node.body)
        finally:
            self.catching.pop()
        for s, kind, val in body:
            if kind == "raise":
                handled = False
                for h in node.handlers:
                    m = self.exception_matches(val, h, s)
                    if m is False:
                        continue
                    if h.name:
                        s.env[h.name] = val or Unknown("exception", kind=UnknownKind.RAISED)
                    out.extend(self.exec_block(s, h.body))
                    handled = True
                    break
                if not handled:
                    out.append((s, kind, val))
            elif kind == "normal":
                out.extend(self.exec_block(s, node.orelse))
            else:
                out.append((s, kind, val))
        if node.finalbody:
            final: list[Outcome] = []
            for s, kind, val in out:
                if kind == "yield":  # suspended inside the try: its finally runs at exit
                    final.append((s, kind, val))
                    continue
                for s2, k2, v2 in self.exec_block(s, node.finalbody):
                    final.append(
                        (s2, kind if k2 == "normal" else k2, val if k2 == "normal" else v2)
                    )
            return final
        return out

    ex_TryStar = ex_Try

    def ex_FunctionDef(self, st: PathState, node: ast.FunctionDef) -> list[Outcome]:
        st.env[node.name] = self.define_function(st, node)
        return [(st, "normal", None)]

    ex_AsyncFunctionDef = ex_FunctionDef

    def ex_ClassDef(self, st: PathState, node: ast.ClassDef) -> list[Outcome]:
        st.env[node.name] = self.define_class(st, node)
        return [(st, "normal", None)]

    def ex_Import(self, st: PathState, node: ast.Import) -> list[Outcome]:
        return self.do_import(st, node)

    ex_ImportFrom = ex_Import

    def ex_Break(self, st: PathState, node: ast.Break) -> list[Outcome]:
        return [(st, "break", None)]

    def ex_Continue(self, st: PathState, node: ast.Continue) -> list[Outcome]:
        return [(st, "continue", None)]


def raised_outcome(st: PathState) -> Outcome:
    """A path whose call raised an exception a handler may catch: it ends its statement."""
    exc, st.raising = st.raising, None
    return (st, "raise", exc)


def yielded_outcome(st: PathState) -> Outcome:
    """A context manager's generator reached its yield: the function stops there."""
    value, st.yielded = st.yielded, None
    return (st, "yield", value)


def as_load(target: ast.expr) -> ast.expr:
    """The augmented target read as an expression (x.y += 1 reads x.y)."""
    import copy

    expr = copy.deepcopy(target)
    for sub in ast.walk(expr):
        if hasattr(sub, "ctx"):
            sub.ctx = ast.Load()
    return expr


def unpacked(v: Value) -> Value:
    if isinstance(v, Tensor):
        return Tensor(producer=v.producer, made_at=v.made_at)  # weights, ids = kernel(...)
    return Unknown("unpacked from an unknown value", kind=UnknownKind.UNSUPPORTED)
