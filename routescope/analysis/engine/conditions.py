"""Conditions: and/or/ternaries, branch decisions with their evidence, forks."""

from __future__ import annotations

import ast

from routescope.analysis.engine.base import EngineBase, Paths
from routescope.analysis.engine.budget import BudgetExceeded
from routescope.analysis.engine.containers import DictVal, ListVal, SetVal
from routescope.analysis.engine.contents import entries, truth_in
from routescope.analysis.engine.data import as_data
from routescope.analysis.engine.intervals import Compared, refine, remember_truth
from routescope.analysis.engine.join import join_states
from routescope.analysis.engine.state import Decision, Input, Part, PathState
from routescope.analysis.engine.values import (
    ClassVal,
    Const,
    External,
    FunctionVal,
    ModuleVal,
    Unknown,
    UnknownKind,
    Value,
    describe,
    merge_origins,
)
from routescope.analysis.engine.worklists import known_filled
from routescope.analysis.walked import walked


class ConditionsMixin(EngineBase):
    def ev_BoolOp(self, st: PathState, node: ast.BoolOp) -> Paths:
        return self._boolop(st, node.values, isinstance(node.op, ast.And))

    def _boolop(self, st: PathState, operands: list[ast.expr], is_and: bool) -> Paths:
        """`a and b` is a when a is falsy, else b (`or`: a when truthy), exactly: an operand
        of unknown truth gives both outcomes, and they merge back into one path when the rest
        had no effect on it (so `unknown and False` is False, with no fork)."""
        out: Paths = []
        for s, v in self.ev(st, operands[0]):
            if len(operands) == 1 or s.raising is not None:
                out.append((s, v))
                continue
            t = self.truth_of(s, v)
            if t is not None and t != is_and:  # short-circuit: this operand is the value
                out.append((s, v))
                continue
            if t is not None:
                out.extend(self._boolop(s, operands[1:], is_and))
                continue
            stopped = _known_truth(v, not is_and)  # the value when it short-circuits
            goes_on = s.fork()
            refine(goes_on, v, is_and)
            rest = self._boolop(goes_on, operands[1:], is_and)
            if len(rest) == 1 and _no_effect(s, rest[0][0]):
                out.append((s, _either(stopped, rest[0][1], s, v, is_and)))
            elif len(rest) == 1 and _same_answer(s, rest[0][0]):
                # the rest ran calls that reached no kernel: one state covers both ways (what
                # the calls wrote joined with what was there), with the calls' record
                ran, value = rest[0]
                why = f"depends on {self.source_text(operands[0])} at {self.current_file()}"
                joined = join_states([ran, s], why)
                out.append((joined, _either(stopped, value, joined, v, is_and)))
            else:
                refine(s, v, not is_and)
                out.append((s, stopped))
                out.extend(rest)
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
            t = self.truth_of(s, v)
            decision = self.make_decision(s, test, t, v)
            if t is None:
                for branch in (True, False):
                    s2 = s.fork()
                    s2.decisions.append(decision)
                    refine(s2, v, branch)  # (a count compared: bounded on each way)
                    if branch and isinstance(v, ListVal):  # `while stack:`: it holds an item
                        known_filled(s2, v)
                    remember_truth(s2, v, branch)  # (a joined value: known on each way)
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
        why = v if isinstance(v, Unknown) else None
        if t is None and isinstance(v, (DictVal, SetVal)):  # a container's contents
            why = entries(st, v).rest or why
        ctx = self.ctx[-1] if self.ctx else None
        file, function = (ctx.file, ctx.function) if ctx is not None else ("", "")
        if t is None and isinstance(v, ListVal):  # a list of unknown length
            why = st.contents(v).why or why
        reason, kind = (why.reason, why.kind) if why is not None else ("", None)
        if t is None and not reason:  # whatever else the facts do not tell the truth of
            reason = f"the truth of {describe(v)} is not known"
        if not self.record_inputs:  # set-up code: no inputs or parts, so one Decision serves
            # every evaluation of this test in this function with this outcome (it is frozen;
            # a loop over a few hundred items decides its test a few hundred times)
            key = (id(test), file, function, t, reason, kind)
            known = self._decided.get(key)
            if known is not None and known[0] is test:
                return known[1]
            made = Decision(file, test.lineno, function, self.source_text(test), t,
                            reason=reason, kind=kind)  # fmt: skip
            self._decided[key] = (test, made)  # the node is kept: its id stays its own
            return made
        parts: list[Part] = []
        # which and/or operand decided, by re-evaluating each: only where decisions are read
        # one by one (set-up code evaluated for its result, not its guards, skips the cost)
        if isinstance(test, ast.BoolOp):
            for operand in test.values:
                pv = self.peek(st, operand)
                pt = truth_in(st, pv) if pv is not None else None
                parts.append(Part(self.source_text(operand), pt))
                if pt is not None and pt != isinstance(test.op, ast.And):
                    break
        return Decision(file, test.lineno, function, self.source_text(test), t,
                        tuple(self.inputs(st, test)), tuple(parts), reason, kind)  # fmt: skip

    def peek(self, st: PathState, node: ast.expr) -> Value | None:
        """Re-evaluate a side-effect-free operand on a scratch copy of the path. A name is read
        on the path itself (a read changes nothing on it; two in three operands read are names)
        unless reading it raises, which a scratch copy keeps off this path."""
        if type(node) is ast.Name:
            v = self.lookup_name(st, node.id)
            if not (isinstance(v, Unknown) and v.exc is not None):
                return v
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
    _names_in: dict[int, tuple[ast.expr, list[tuple[ast.expr, str]]]]

    def inputs(self, st: PathState, test: ast.expr) -> list[Input]:
        if not self.record_inputs:
            return []
        out: list[Input] = []
        for sub, text in self._input_names(test):
            if len(out) >= 12:
                break
            v = self.peek(st, sub)
            if v is None or isinstance(v, (FunctionVal, ClassVal, ModuleVal)):
                continue
            if isinstance(v, External) and not v.origins:
                continue
            out.append(Input(text, describe(v), v.origins, as_data(v)))
        return out

    def _input_names(self, test: ast.expr) -> list[tuple[ast.expr, str]]:
        """The names and attribute chains a condition reads, each text once, in walk order:
        found once per condition (a guard in a loop or a function called again is walked
        once, not at every evaluation)."""
        known = self._names_in.get(id(test))
        if known is not None and known[0] is test:
            return known[1]
        found: dict[str, ast.expr] = {}
        callees = {id(c.func) for c in walked(test) if isinstance(c, ast.Call)}
        for sub in walked(test):
            if isinstance(sub, ast.Call):
                if _probe(sub):  # what the call gave (`is_blackwell_supported()`)
                    found.setdefault(self.source_text(sub), sub)
            elif (
                isinstance(sub, (ast.Name, ast.Attribute))
                and not isinstance(getattr(sub, "ctx", None), ast.Store)
                and id(sub) not in callees  # (the function called is no value it read)
            ):
                found.setdefault(self.source_text(sub), sub)
        names = [(sub, text) for text, sub in found.items()]
        self._names_in[id(test)] = (test, names)  # the node is kept: its id stays its own
        return names


def _probe(call: ast.Call) -> bool:
    """A call a condition reads as a value: of no arguments or of constants only (a capability
    probe: `is_blackwell_supported()`, `platform.has_device_capability(100)`)."""
    return all(isinstance(a, ast.Constant) for a in (*call.args, *(k.value for k in call.keywords)))


def _known_truth(v: Value, truthy: bool) -> Value:
    """`v` on the way where its truthiness is known to be `truthy`."""
    if isinstance(v, Unknown):
        return Unknown(v.reason, v.origins, truthy, v.kind)
    return Unknown(
        f"{describe(v)}, known {'true' if truthy else 'false'}",
        v.origins,
        truthy,
        UnknownKind.UNSUPPORTED,
    )


def _either(
    a: Value, b: Value, st: PathState, operand: Value | None = None, is_and: bool = True
) -> Value:
    """One value standing for `a` (the undecided `operand`, short-circuiting) or `b` (the rest):
    their truthiness kept when they agree on it. Where the rest gives back what the operator
    lets through (True after `and`, False after `or`) and the operand compared a count, the
    value is that comparison (`ready and n <= 8 and True`): a branch on the name it is stored
    in bounds the count, so the same test made again on that way agrees."""
    if isinstance(operand, Compared) and isinstance(b, Const) and b.value is is_and:
        return Compared(operand.subject, operand.op, operand.c, merge_origins(operand, b))
    ta, tb = truth_in(st, a), truth_in(st, b)
    if (
        isinstance(a, Const)
        and isinstance(b, Const)
        and type(a.value) is type(b.value)
        and (a.value == b.value)
    ):
        return a
    why = a if isinstance(a, Unknown) else b if isinstance(b, Unknown) else None
    return Unknown(
        why.reason if why else "one of two operands",
        (*a.origins, *b.origins),
        ta if ta == tb else None,
        why.kind if why else UnknownKind.UNSUPPORTED,
    )


def _same_answer(before: PathState, after: PathState) -> bool:
    """Did evaluating an operand leave the path's answer as it was (no kernel reached, nothing
    raised or stopped, the same frames live)?"""
    return (
        len(after.sinks) == len(before.sinks)
        and after.claims.keys() == before.claims.keys()
        and not after.stopped
        and after.raising is None
        and len(after.envs) == len(before.envs)
        and len(after.frames) == len(before.frames)
    )


def _no_effect(before: PathState, after: PathState) -> bool:
    """Did evaluating an operand on a fork of `before` leave it as it was (no call recorded a
    decision or a kernel, no object or name changed)?"""
    return (
        len(after.decisions) == len(before.decisions)
        and len(after.sinks) == len(before.sinks)
        and len(after.trail) == len(before.trail)
        and after.heap == before.heap
        and after.envs == before.envs
        and after.memo.keys() == before.memo.keys()
        and after.stopped == before.stopped
        and after.raising is None
    )
