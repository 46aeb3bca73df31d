"""Conditions: and/or/ternaries, branch decisions with their evidence, forks."""

from __future__ import annotations

import ast

from routescope.analysis.engine.base import EngineBase, Paths
from routescope.analysis.engine.budget import BudgetExceeded
from routescope.analysis.engine.containers import (
    LIST_UNKNOWN,
    truth_in,
)
from routescope.analysis.engine.state import Decision, Input, Part, PathState
from routescope.analysis.engine.values import (
    ClassVal,
    External,
    FunctionVal,
    Instance,
    ModuleVal,
    Unknown,
    UnknownKind,
    Value,
    describe,
)


class ConditionsMixin(EngineBase):
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
        why = v if isinstance(v, Unknown) else None
        if t is None and isinstance(v, Instance) and v.cls is None:  # a container's contents
            rest = st.fields(v).get(LIST_UNKNOWN)
            why = rest if isinstance(rest, Unknown) else why
        return Decision(
            file=self.current_file(),
            line=test.lineno,
            function=self.current_function(),
            text=self.source_text(test),
            value=t,
            inputs=tuple(self.inputs(st, test)),
            parts=tuple(parts),
            reason=why.reason if why is not None else "",
            kind=why.kind if why is not None else None,
        )

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
        return vals[0] if len(truths) == 1 else Unknown("several outcomes", kind=UnknownKind.JOINED)

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
