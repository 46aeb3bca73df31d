"""The steps a deployment stops at: a set-up or decode step every way through which raises,
where the raise is certain in Python: a `raise` statement of the framework's own code, or a
builtin operation on values the facts decide (`None.get_name()` on a quantization config the
checkpoint leaves None). An exception the engine cannot tell is Python's (an operand perhaps
absent, state a running worker would hold and no phase builds) says as much about what
routescope builds as about the deployment, and is not a stop; nor is an assert, unless the
values its own condition read all come from the deployment (a weight's shape made from
config.json's sizes and --tp: `assert w2_weight_scale.shape[2] % 16 == 0`)."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from routescope.analysis.engine.core import Engine
from routescope.analysis.engine.exceptions import MadeException
from routescope.analysis.engine.state import Decision, Input, PathState
from routescope.analysis.engine.values import (
    ClassVal,
    Const,
    External,
    Instance,
    PythonRaise,
    Value,
)
from routescope.origins import in_source

MAX_GUARDS = 40  # decided conditions kept per stop, nearest first


@dataclass(frozen=True, slots=True)
class Stop:
    """One step that raised on every way, at a `raise` statement or (`implicit`) at an
    operation Python raises on."""

    step: str  # the set-up or decode step, as the phases name it
    file: str
    line: int
    function: str
    exception: str  # the exception and its message as the source writes them (or Python)
    message: str
    # the decided condition nearest before it in the same function (or the one around it that
    # read the deployment's values, where the nearest read only the source's: _deciding)
    guard: Decision | None
    implicit: bool = False  # raised by Python from an operation, not by a `raise` statement
    statement: str = ""  # the source text of the statement that raised (first line)
    # the decided conditions on the way to it, nearest first: what a way past it may change
    guards: tuple[Decision, ...] = ()
    # the message as the raise made it, its f-string's values in, where every one was known
    raised: str = ""


def explicit_stops(engine: Engine) -> tuple[Stop, ...]:
    """Each step that raised on every way where Python certainly raises (module doc), once
    per statement."""
    out: dict[tuple[str, int], Stop] = {}
    for what, st in engine.stops:
        at = st.raised_at
        if at is None or (at[0], at[1]) in out:
            continue
        file, line, function = at
        said = _what_raised(engine, st)
        if said is None or (said[0] == "AssertionError" and not raised_by_statement(engine, st)):
            continue  # (an assert stops only on the deployment's own values)
        decided = tuple(d for d in reversed(st.decisions) if d.value is not None)
        out[file, line] = Stop(what, file, line, function, said[0], said[1], _deciding(engine, st),
                               implicit=isinstance(st.raising, PythonRaise),
                               statement=_statement_text(engine, function.partition(":")[0],
                                                         line),
                               guards=decided[:MAX_GUARDS], raised=_as_raised(st))  # fmt: skip
    return tuple(out.values())


def _what_raised(engine: Engine, st: PathState) -> tuple[str, str] | None:
    """(exception, message) of the path's raise: Python's own, or the `raise` statement's as
    the source writes it; None where the statement raises another class (an exception the
    engine made inside the statement's own expression is not its own)."""
    at, exc = st.raised_at, st.raising
    if at is None or exc is None:
        return None
    said = (exc.name, exc.message) if isinstance(exc, PythonRaise) else (
        _raise_statement(engine, at[2].partition(":")[0], at[1]))  # fmt: skip
    return said if said is not None and said[0].rsplit(".", 1)[-1] == _class_name(exc) else None


def _guard(engine: Engine, st: PathState) -> Decision | None:
    """The decided condition nearest before the raise, in the function that raised (for an
    assert: its own condition)."""
    at = st.raised_at
    if at is None:
        return None
    node = _assert_at(engine, at[2].partition(":")[0], at[1])
    if node is not None:
        end = node.end_lineno or at[1]
        return next((d for d in reversed(st.decisions) if d.function == at[2]
                     and at[1] <= d.line <= end and d.value is False), None)  # fmt: skip
    return next((d for d in reversed(st.decisions)
                 if d.function == at[2] and d.line < at[1] and d.value is not None),
                None)  # fmt: skip


def _deciding(engine: Engine, st: PathState) -> Decision | None:
    """The guard a report names for a stop: the nearest (`_guard`), unless it read only the
    source's own values and a condition the raise sits inside read the deployment's (`if
    pad_size > 0:` around `if is_act_and_mul:`): the innermost such."""
    guard = _guard(engine, st)
    at = st.raised_at
    if guard is None or at is None or _assert_at(engine, at[2].partition(":")[0], at[1]):
        return guard

    if _read_deployment(guard) or not raised_by_statement(engine, st):
        return guard
    return next((d for d in reversed(_enclosing(engine, st) or ()) if d is not guard
                 and _read_deployment(d)), guard)  # fmt: skip


def _read_deployment(d: Decision) -> bool:
    """Did the test read a fact of the deployment (a provenance outside the source)?"""
    return any(not in_source(o) for i in _evaluated(d, _leaves(d.inputs)) for o in i.origins)


def _assert_at(engine: Engine, module: str, line: int) -> ast.Assert | None:
    """The assert statement at `line` of `module`, if that is one."""
    info = engine.index.module(module)
    if info is None or info.tree is None:
        return None
    return next((n for n in ast.walk(info.tree) if isinstance(n, ast.Assert) and n.lineno == line),
                None)  # fmt: skip


def _leaves(inputs: tuple[Input, ...]) -> tuple[Input, ...]:
    """The values a condition read, less the objects it read them through (`layer` and
    `layer.w2_weight_scale` of `layer.w2_weight_scale.shape`)."""
    texts = [i.text for i in inputs]
    return tuple(i for i in inputs
                 if not any(t != i.text and t.startswith(i.text) and t[len(i.text)] in ".[("
                            for t in texts))  # fmt: skip


def raised_by_statement(engine: Engine, st: PathState) -> bool:
    """Did the path raise at a `raise` statement of the framework's own code, after a test
    decided on the deployment: every value the nearest guard before it read (not the objects
    it read them through; a probe call's result is such a value) has a provenance,
    one at least a fact of the deployment (the GPU profile, config.json, a flag), not only
    places in the source? A step routescope stages (a block built from the values, outside
    its model) that raises so on every way stops the deployment too (an NVFP4 MoE method
    refusing the GPU and runner backend: `not get_platform().is_blackwell and not
    use_marlin_fallback`); one whose test read state the model's own build sets up (`_stack
    is None`: the layer stack `make_layers` opens around its layers), or an operation Python
    raises on, is the staging's. An assert counts where every value its own condition read
    (not the objects it read them through) is a known value with such a provenance."""
    if isinstance(st.raising, PythonRaise) or _what_raised(engine, st) is None:
        return False
    guard = _guard(engine, st)
    if guard is None or not guard.inputs:
        return False
    at = st.raised_at
    read = _evaluated(guard, _leaves(guard.inputs))  # what it read, not what it read through
    is_assert = at is not None and _assert_at(engine, at[2].partition(":")[0], at[1]) is not None
    if is_assert and any(i.data[0] not in ("constant", "enum") for i in read):
        return False  # an assert: every value its condition read is known
    if not all(i.origins for i in read):
        return False
    if _read_deployment(guard):
        return True
    if is_assert:
        return False
    # the nearest guard read only the source's own values (`if is_act_and_mul:`, a constant
    # of the model's activation): the conditions the raise sits inside decide it, where each
    # read a known value and one the deployment's facts (`if pad_size > 0:`, the expert width
    # at this TP; vLLM 0.34.0 flashinfer_fp4_moe.py:551-558)
    enclosing = _enclosing(engine, st)
    if not enclosing:
        return False
    around = [_evaluated(d, _leaves(d.inputs)) for d in enclosing if d is not guard]
    read_around = [i for r in around for i in r]
    # each a value with a provenance, or an enum member (a backend the code chose: members
    # carry none of their own)
    known = all(i.origins or i.data[0] == "enum" for i in read_around)
    return known and any(_read_deployment(d) for d in enclosing if d is not guard)


def _enclosing(engine: Engine, st: PathState) -> list[Decision] | None:
    """The conditions of the `if`s and `while`s of the raising function the raise sits inside
    (in the body or an `else`: the decision says which), each as last decided at its test's
    line; None where one of them was last left undecided (a fork: what led to the raise is not
    one known value)."""
    at = st.raised_at
    if at is None:
        return []
    info = engine.index.module(at[2].partition(":")[0])
    if info is None or info.tree is None:
        return []
    lines = {n.test.lineno for n in ast.walk(info.tree) if isinstance(n, (ast.If, ast.While))
             and n.lineno < at[1] <= (n.end_lineno or n.lineno)}  # fmt: skip
    last: dict[int, Decision] = {}
    for d in st.decisions:
        if d.function == at[2] and d.line in lines:
            last[d.line] = d
    if any(d.value is None for d in last.values()):
        return None
    return list(last.values())


def _evaluated(guard: Decision, read: tuple[Input, ...]) -> tuple[Input, ...]:
    """The inputs of an and/or condition that Python evaluated: those of the operands up to
    the one that decided it (`flag and backend == B.CUTLASS` with `flag` false reads `flag`
    only). The parts are recorded in order, to the deciding one; an input found in none of
    them (a condition that is no and/or) is kept."""
    if not guard.parts:
        return read
    texts = [p.text for p in guard.parts]

    def in_parts(i: Input) -> bool:
        return any(re.search(rf"(?<![\w.]){re.escape(i.text)}(?!\w)", t) for t in texts)

    return tuple(i for i in read if in_parts(i)) or read


def _class_name(exc: Value | None) -> str:
    """The short class name of a raised exception (a builtin's call is External, a
    framework exception an Instance of its class)."""
    if isinstance(exc, External):
        return exc.name.rsplit(".", 1)[-1]
    cls = exc.cls if isinstance(exc, Instance) else exc if isinstance(exc, ClassVal) else None
    return cls.qualname.rpartition(":")[2].rsplit(".", 1)[-1] if cls is not None else ""


def _raise_statement(engine: Engine, module: str, line: int) -> tuple[str, str] | None:
    """(exception, message) of the `raise E(...)` statement at `line` of `module`, as the
    source writes them; None when no such statement is there."""
    info = engine.index.module(module)
    if info is None or info.tree is None:
        return None
    for node in ast.walk(info.tree):
        if isinstance(node, ast.Assert) and node.lineno == line:
            return "AssertionError", _message(node.msg)
        if isinstance(node, ast.Raise) and node.lineno == line and node.exc is not None:
            exc = node.exc
            if not isinstance(exc, ast.Call):
                return ast.unparse(exc), ""
            return ast.unparse(exc.func), _message(exc.args[0] if exc.args else None)
    return None


def _as_raised(st: PathState) -> str:
    """The message the path's exception was made with, as Python renders it ("" where a part
    of it was not known, or Python raised it: its own message is already in its words)."""
    exc = st.raising
    said = exc.said if isinstance(exc, MadeException) else ""
    return " ".join(said.split())[:300]


def _message(msg: ast.expr | None) -> str:
    """An exception's message as the source writes it (an f-string: its text, {names} left as
    such), on one line, cut at 300 characters."""
    if isinstance(msg, ast.Constant) and isinstance(msg.value, str):
        text = msg.value
    elif isinstance(msg, ast.JoinedStr):
        text = "".join(str(v.value) if isinstance(v, ast.Constant) else
                       "{" + ast.unparse(v.value) + "}"  # type: ignore[attr-defined]
                       for v in msg.values)  # fmt: skip
    elif msg is not None:
        text = ast.unparse(msg)
    else:
        text = ""
    return " ".join(text.split())[:300]


def _statement_text(engine: Engine, module: str, line: int) -> str:
    """The source line that raised, as the file writes it (stripped)."""
    info = engine.index.module(module)
    return " ".join(info.line(line).split())[:200] if info is not None else ""


def known_arguments(server_args: Value) -> tuple[tuple[str, object], ...]:
    """Each server argument with a known value after the server resolved them, as Python
    holds it (a way past a stop flips a boolean, or picks another value a guard compares)."""
    if not isinstance(server_args, Instance):
        return ()
    known = {k: v.value for k, v in server_args.fields.items()
             if isinstance(v, Const) and isinstance(v.value, (bool, int, str))}  # fmt: skip
    return tuple(sorted(known.items(), key=lambda kv: kv[0]))
