"""The steps a deployment stops at: a set-up or decode step every way through which reaches a
`raise` statement of the framework's own code. Only an explicit statement counts: an
exception the engine makes itself (an attribute no phase set, an assert on state a running
worker would hold) says as much about what routescope builds as about the deployment."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from routescope.analysis.engine.core import Engine
from routescope.analysis.engine.state import Decision
from routescope.analysis.engine.values import ClassVal, External, Instance, Value


@dataclass(frozen=True, slots=True)
class Stop:
    """One step that raised on every way at a `raise` statement."""

    step: str  # the set-up or decode step, as the phases name it
    file: str
    line: int
    function: str
    exception: str  # the exception and its message as the source writes them
    message: str
    guard: Decision | None  # the decided condition nearest before it in the same function


def explicit_stops(engine: Engine) -> tuple[Stop, ...]:
    """Each step that raised on every way at a `raise` statement of the exception it raised,
    once per statement."""
    out: dict[tuple[str, int], Stop] = {}
    for what, st in engine.stops:
        at = st.raised_at
        if at is None or (at[0], at[1]) in out:
            continue
        file, line, function = at
        raised = _raise_statement(engine, function.partition(":")[0], line)
        # an exception the engine made inside the statement's own expression is not its own
        if raised is None or raised[0].rsplit(".", 1)[-1] != _class_name(st.raising):
            continue
        guard = next((d for d in reversed(st.decisions)
                      if d.function == function and d.line < line and d.value is not None),
                     None)  # fmt: skip
        out[file, line] = Stop(what, file, line, function, *raised, guard)
    return tuple(out.values())


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
        if isinstance(node, ast.Raise) and node.lineno == line and node.exc is not None:
            exc = node.exc
            if not isinstance(exc, ast.Call):
                return ast.unparse(exc), ""
            msg = exc.args[0] if exc.args else None
            if isinstance(msg, ast.Constant) and isinstance(msg.value, str):
                text = msg.value
            elif msg is not None:
                text = ast.unparse(msg)
            else:
                text = ""
            return ast.unparse(exc.func), " ".join(text.split())[:300]
    return None
