"""Statements: assignment, if/else, return, raise, assert, try, definitions, imports."""

from __future__ import annotations

import ast
from typing import cast

from routescope.analysis.engine.base import _HANDLERS, _UNSEEN, EngineBase, Outcome, handler
from routescope.analysis.engine.binding import NONLOCAL_KEY
from routescope.analysis.engine.budget import BudgetExceeded
from routescope.analysis.engine.containers import DictVal, ListVal
from routescope.analysis.engine.contents import iteration, write_item
from routescope.analysis.engine.implicit import returned
from routescope.analysis.engine.merging import merge_paths, merge_raised
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import (
    Const,
    External,
    FunctionVal,
    Instance,
    Tensor,
    Unknown,
    UnknownKind,
    Value,
)

GLOBALS_KEY = "\x00global"  # env slot listing the names a function declared `global`
HANDLED_KEY = "\x00handled"  # env slot: the exception the running handler handles
HANDLED_AT = "\x00handled at"  # env slot: where it was raised (a Const of raised_at)


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
                try:
                    outs = self.exec_stmt(s, stmt)
                except BudgetExceeded as exc:  # this way ends here, with what it reached so far
                    s.stopped = str(exc)
                    done.append((s, "stop", Unknown(s.stopped, kind=UnknownKind.BUDGET)))
                    continue
                for s2, kind, val in outs:
                    if s2.stopped and kind != "stop":
                        done.append((s2, "stop", Unknown(s2.stopped, kind=UnknownKind.BUDGET)))
                    elif kind == "normal":
                        nxt.append(s2)
                    else:
                        done.append((s2, kind, val))
            live = nxt
            if len(live) > 1 and len(live) > self.budget.merge_limit(live):
                live = merge_paths(
                    live, f"{self.current_file()}:{stmt.lineno}", kinds=self.budget.merge_at <= 1
                )
            if len(done) > self.budget.merge_at:
                done = merge_raised(done, f"{self.current_file()}:{stmt.lineno}")
            if len(live) + len(done) > self.budget.max_paths:
                raise BudgetExceeded(
                    f"more than {self.budget.max_paths} paths in {self.current_function()}"
                )
            if not live:
                break
        return done + [(s, "normal", None) for s in live]

    def exec_stmt(self, st: PathState, node: ast.stmt) -> list[Outcome]:
        b = self.budget  # one evaluation step (see Budget.past)
        b.steps += 1
        if st.routed or not b.steps & 4095 or (b.local and b.steps > b.local[-1][0]):
            b.past(st)
        method = _HANDLERS.get((type(self), "ex_", type(node)), _UNSEEN)
        if method is _UNSEEN:
            method = handler(self, "ex_", node)
        if method is None:
            return [(st, "normal", None)]  # pass, global, nonlocal, delete, ...: no effect we track
        result: list[Outcome] = method(self, st, node)
        if len(result) == 1 and result[0][0].raising is None and result[0][0].yielded is None:
            return result  # the commonest: one way on, nothing raised or yielded
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

    def ex_Global(self, st: PathState, node: ast.Global) -> list[Outcome]:
        declared = st.env.get(GLOBALS_KEY)
        names = set(declared.value) if isinstance(declared, Const) else set()
        st.env[GLOBALS_KEY] = Const(frozenset(names | set(node.names)))
        return [(st, "normal", None)]

    def assign(self, st: PathState, target: ast.expr, v: Value) -> None:
        if st.raising is not None:  # the value raised: Python binds nothing
            return
        if isinstance(target, ast.Name):
            env = st.envs[-1]
            declared = env.get(GLOBALS_KEY)
            if isinstance(declared, Const) and target.id in declared.value and self.ctx:
                st.write(self.ctx[-1].module, target.id, v)  # `global X` then `X = ...`
                return
            if NONLOCAL_KEY not in env or not self.write_cell(st, target.id, v):
                env[target.id] = v
        elif isinstance(target, (ast.Tuple, ast.List)):
            self._unpack(st, target.elts, v)
        elif isinstance(target, ast.Attribute):
            for s, obj in self.ev(st, target.value):
                if s is st:
                    self.set_attribute(st, obj, target.attr, v)
        elif isinstance(target, ast.Subscript):
            self._assign_item(st, target, v)
        elif isinstance(target, ast.Starred):
            self.assign(
                st,
                target.value,
                ListVal(None, Unknown("a starred assignment", kind=UnknownKind.UNSUPPORTED)),
            )

    def _unpack(self, st: PathState, elts: list[ast.expr], v: Value) -> None:
        """`a, *b, c = v`: the items in order, the starred name a new list of the rest."""
        items = iteration(v, st)
        star = next((i for i, e in enumerate(elts) if isinstance(e, ast.Starred)), None)
        fits = items is not None and (
            len(items) == len(elts) if star is None else len(items) >= len(elts) - 1
        )
        if not fits or items is None:
            for elt in elts:
                target = elt.value if isinstance(elt, ast.Starred) else elt
                self.assign(st, target, unpacked(v))
            return
        if star is None:
            for elt, item in zip(elts, items, strict=True):
                self.assign(st, elt, item)
            return
        after = len(elts) - star - 1
        for elt, item in zip(elts[:star], items[:star], strict=True):
            self.assign(st, elt, item)
        middle = items[star : len(items) - after]
        self.assign(st, cast(ast.Starred, elts[star]).value, ListVal(middle))
        for elt, item in zip(elts[star + 1 :], items[len(items) - after :], strict=True):
            self.assign(st, elt, item)

    def _written_at(self, node: ast.stmt, v: Value) -> Value:
        """A literal assigned (`self.backend = "fast"`, `overrides["backend"] = "fast"`) keeps
        the line that wrote it as its origin: the evidence of which override fired. Values
        copied from elsewhere keep their own origins (or none)."""
        if isinstance(v, Const) and not v.origins and self.ctx:
            return Const(v.value, (f"{self.ctx[-1].file}:{node.lineno}",))
        return v

    def _assign_item(self, st: PathState, target: ast.Subscript, v: Value) -> None:
        """`c[k] = v`: a dict's or list's item on this path; an object's own __setitem__."""
        for s, (obj, idx) in self.ev_seq(st, [target.value, target.slice]):
            if s is not st:
                continue
            if isinstance(obj, (DictVal, ListVal)):
                refused = write_item(st, obj, idx, v)
                if refused is not None:  # (a read-only view: Python refuses the write)
                    st.raising = refused
                    st.raised_at = (self.current_file(), target.lineno, self.current_function())
            elif isinstance(obj, Instance) and obj.cls is not None:
                setter = obj.cls.lookup("__setitem__")
                if isinstance(setter, FunctionVal):
                    self.call(st, setter.bind(obj), [idx, v], {}, target)

    def ex_If(self, st: PathState, node: ast.If) -> list[Outcome]:
        out: list[Outcome] = []
        for s, taken in self.decide(st, node.test):
            if taken or node.orelse:
                out.extend(self.exec_block(s, node.body if taken else node.orelse))
            else:  # no else clause: on, as an empty block would
                out.append((s, "normal", None))
        return out

    def ex_Return(self, st: PathState, node: ast.Return) -> list[Outcome]:
        if node.value is None:
            return [(st, "return", Const(None))]
        if not self.record_inputs:  # (set-up code: its guards record nothing to take facts from)
            return [(s, "return", v) for s, v in self.ev(st, node.value)]
        where = (self.current_file(), self.current_function(), node.lineno)
        return [(s, "return", returned(s, v, *where)) for s, v in self.ev(st, node.value)]

    def ex_Raise(self, st: PathState, node: ast.Raise) -> list[Outcome]:
        where = (self.current_file(), node.lineno, self.current_function())
        if node.exc is None:  # a bare raise: the exception being handled, again
            handled = st.env.get(HANDLED_KEY) or Unknown("re-raise", kind=UnknownKind.RAISED)
            st.raised_at = _handled_at(st)  # where it was raised: Python keeps its traceback
            return [(st, "raise", handled)]
        out: list[Outcome] = []
        for s, v in self.ev(st, node.exc):
            # `raise e` of the exception being handled: raised where it first was, as a bare
            # raise; anything else is raised here
            again = v is s.env.get(HANDLED_KEY)
            s.raised_at = (_handled_at(s) or where) if again else where
            out.append((s, "raise", v))
        return out

    def ex_Assert(self, st: PathState, node: ast.Assert) -> list[Outcome]:
        out: list[Outcome] = []
        for s, v in self.ev(st, node.test):
            t = self.truth_of(s, v)
            if t is False:
                s.decisions.append(self.make_decision(s, node.test, False, v))
                s.raised_at = (self.current_file(), node.lineno, self.current_function())
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
                out.extend(self._handle(s, node.handlers, val))
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

    def _handle(self, st: PathState, handlers: list[ast.ExceptHandler],
                exc: Value | None) -> list[Outcome]:  # fmt: skip
        """A raised exception meets a try's handlers in order: the first that matches runs; one
        that may match (an exception whose class is not fully known) runs on a fork, while the
        exception also goes on to the next handlers; none: it propagates."""
        out: list[Outcome] = []
        pending = [st]
        caught = exc or Unknown("an exception", kind=UnknownKind.RAISED)
        for h in handlers:
            left: list[PathState] = []
            for s in pending:
                m = self.exception_matches(exc, h, s)
                if m is False:
                    left.append(s)
                    continue
                taker = s if m else s.fork()
                if not m:
                    left.append(s)
                raised_at, taker.raised_at = taker.raised_at, None  # later raises: theirs
                if h.name:
                    taker.env[h.name] = caught
                before = taker.env.get(HANDLED_KEY), taker.env.get(HANDLED_AT)
                taker.env[HANDLED_KEY] = caught  # what a bare `raise` in the handler raises
                taker.env[HANDLED_AT] = Const(raised_at)
                for s2, k2, v2 in self.exec_block(taker, h.body):
                    for key, was in zip((HANDLED_KEY, HANDLED_AT), before, strict=True):
                        if s2.envs and was is not None:
                            s2.env[key] = was
                        elif s2.envs:
                            s2.env.pop(key, None)
                    out.append((s2, k2, v2))
            pending = left
        out.extend((s, "raise", exc) for s in pending)
        return out

    def ex_FunctionDef(self, st: PathState, node: ast.FunctionDef) -> list[Outcome]:
        """The function bound; where evaluating a default raised on some ways (`k=d[key]`),
        the statement raises on those (Python binds nothing there)."""
        outer, self.def_raises = self.def_raises, []
        try:
            st.env[node.name] = self.define_function(st, node)
            raised = self.def_raises
        finally:
            self.def_raises = outer
        return [(st, "normal", None), *((s, "normal", None) for s in raised)]

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


def unpacked(v: Value) -> Value:
    if isinstance(v, Tensor):  # weights, ids = kernel(...)
        return Tensor(producer=v.producer, made_at=v.made_at, role=v.role)
    if isinstance(v, Unknown):  # an item of an unknown value is as unknown
        return v
    return Unknown("unpacked from an unknown value", kind=UnknownKind.UNSUPPORTED)


def _handled_at(st: PathState) -> tuple[str, int, str] | None:
    """Where the exception the running handler handles was raised (None: not known)."""
    at = st.env.get(HANDLED_AT)
    return at.value if isinstance(at, Const) and isinstance(at.value, tuple) else None
