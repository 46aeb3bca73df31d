"""Calls made between the router call and the insertion point: are they on the path?"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from routescope.analysis.walked import walked
from routescope.verdict.point import decided
from routescope.verdict.source import FunctionSource, call_name


@dataclass(frozen=True, slots=True)
class CallSite:
    name: str
    function: str
    file: str
    line: int
    runs: str  # "always" | "on this path" | "not on this path" | "if <condition>"


def _ifs_above(root: ast.AST, target: ast.AST) -> list[tuple[ast.If, bool]]:
    """The if statements enclosing `target`, with whether it sits in their body (else orelse)."""
    out: list[tuple[ast.If, bool]] = []

    def walk(node: ast.AST, trail: list[tuple[ast.If, bool]]) -> bool:
        if node is target:
            out.extend(trail)
            return True
        if isinstance(node, ast.If):
            if walk(node.test, trail):
                return True
            if any(walk(c, [*trail, (node, True)]) for c in node.body):
                return True
            return any(walk(c, [*trail, (node, False)]) for c in node.orelse)
        return any(walk(c, trail) for c in ast.iter_child_nodes(node))

    walk(root, [])
    return out


def find_calls(
    fn: FunctionSource,
    qualname: str,
    wanted: list[str],
    decisions: list[dict[str, Any]],
    traced: bool,
) -> list[CallSite]:
    """Calls to `wanted` in `fn`, each with whether the path runs it.

    `traced`: the engine walked this function, so its decisions say which branches ran.
    """
    out = []
    rel = fn.module.relpath
    for node in walked(fn.node):
        if not (isinstance(node, ast.Call) and call_name(node) in wanted):
            continue
        runs = "always"
        for stmt, in_body in _ifs_above(fn.node, node):
            value = decided(decisions, rel, stmt) if traced else "absent"
            if value == "absent" or value is None:
                cond = fn.module.segment(stmt.test) or "?"
                runs = (
                    f"if {' '.join(cond.split())}"
                    if in_body
                    else f"unless {' '.join(cond.split())}"
                )
                break
            if value is not in_body:
                runs = "not on this path"
                break
            runs = "on this path"
        out.append(CallSite(call_name(node), qualname, rel, node.lineno, runs))
    return sorted(out, key=lambda c: c.line)
