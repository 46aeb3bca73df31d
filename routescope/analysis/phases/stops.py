"""The steps a deployment stops at: a set-up or decode step every way through which reaches a
`raise` statement of the framework's own code. Only an explicit statement counts: an
exception the engine makes itself (an attribute no phase set, an assert on state a running
worker would hold) says as much about what routescope builds as about the deployment."""

from __future__ import annotations

import ast
from typing import Any

from routescope.analysis.engine.core import Engine


def explicit_stops(engine: Engine) -> tuple[dict[str, Any], ...]:
    """Each step that raised on every way at a `raise` statement, once per statement: where,
    the exception and its message as the source writes them, and the decided condition that
    led there (the nearest before it in the same function)."""
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for what, st in engine.stops:
        at = st.raised_at
        if at is None or (at[0], at[1]) in out:
            continue
        file, line, function = at
        raised = _raise_statement(engine, function.partition(":")[0], line)
        if raised is None:
            continue
        exception, message = raised
        guard = next((d for d in reversed(st.decisions)
                      if d.function == function and d.line < line and d.value is not None),
                     None)  # fmt: skip
        out[file, line] = {
            "step": what,
            "file": file,
            "line": line,
            "function": function,
            "exception": exception,
            "message": message,
            "guard": None if guard is None else {
                "condition": guard.text, "value": guard.value, "file": guard.file,
                "line": guard.line,
                "inputs": [{"expr": i.text, "repr": i.value, "origins": list(i.origins)}
                           for i in guard.inputs],
            },
        }  # fmt: skip
    return tuple(out.values())


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
