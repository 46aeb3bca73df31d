"""The OEA insertion point: right after the statement that binds the router's ids and weights.

Walks up from the sink's call site through the traced frames; the outermost function whose
statement there unpacks (weights, ids) from the call is where both exist as Python tensors.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from routescope.analysis.index import Index
from routescope.analysis.walked import walked
from routescope.verdict.source import FunctionSource, call_name, function_at, statement_chain


@dataclass(frozen=True, slots=True)
class Point:
    function: str  # qualified name from the traced frame
    source: FunctionSource
    stmt: ast.stmt  # the binding statement
    after: ast.stmt | None  # the next statement that runs on the path
    skipped: tuple[ast.stmt, ...]  # statements between them decided not to run
    chain: tuple[str, ...]  # frames from the point's call down to the sink's caller
    call_line: int


def _site(text: str | None) -> tuple[str, int] | None:
    if not text:
        return None
    file, _, line = text.rpartition(":")
    return (file, int(line)) if line.isdigit() else None


def _frame_at(
    frames: list[dict[str, Any]], index: Index, file: str, line: int, before: int
) -> tuple[int, dict[str, Any], FunctionSource] | None:
    """The frame of the function that holds `file:line`, nearest before position `before`
    of the path's frames (in the order they were entered): the caller of the frame there,
    where the path enters one function more than once (a CustomOp's forward for each op)."""
    fn = function_at(index, file, line)
    if fn is None:
        return None
    lines = (fn.node.lineno, *(d.lineno for d in fn.node.decorator_list))
    for k in range(min(before, len(frames)) - 1, -1, -1):
        f = frames[k]
        if f["file"] == file and f["line"] in lines:
            return k, f, fn
    return None


def _binds(stmt: ast.stmt, ids: list[str], weights: list[str]) -> bool:
    if not isinstance(stmt, ast.Assign) or not isinstance(stmt.value, ast.Call):
        return False
    names = {
        e.id
        for t in stmt.targets
        if isinstance(t, ast.Tuple)
        for e in t.elts
        if isinstance(e, ast.Name)
    }
    return bool(names & set(ids)) and bool(names & set(weights))


def decided(decisions: list[dict[str, Any]], file: str, stmt: ast.stmt) -> bool | str | None:
    """The path's decision on an if/while at `stmt` ("absent" when the path has none)."""
    test = getattr(stmt, "test", None)
    lines = {stmt.lineno, test.lineno if test is not None else stmt.lineno}
    for d in decisions:
        if d["file"] == file and d["line"] in lines:
            value: bool | None = d["value"]
            return value
    return "absent"


def _next(
    fn: FunctionSource,
    chain: list[tuple[list[ast.stmt], int]],
    file: str,
    decisions: list[dict[str, Any]],
) -> tuple[ast.stmt | None, tuple[ast.stmt, ...]]:
    skipped: list[ast.stmt] = []
    for block, i in reversed(chain):
        for stmt in block[i + 1 :]:
            if (
                isinstance(stmt, ast.If)
                and not stmt.orelse
                and decided(decisions, file, stmt) is False
            ):
                skipped.append(stmt)
                continue
            return stmt, tuple(skipped)
    return None, tuple(skipped)


def find_point(path: dict[str, Any], index: Index, names: dict[str, list[str]]) -> Point | None:
    """The insertion point on `path` (a report path with a sink), or None when none binds."""
    sink = path["sink"]
    if sink is None:
        return None
    frames = path["frames"]
    site: tuple[str, int] | None = (sink["file"], sink["line"])
    best: Point | None = None
    below: list[str] = []
    at = len(frames)
    while site is not None:
        hit = _frame_at(frames, index, *site, before=at)
        if hit is None:
            break
        at, frame, fn = hit
        chain = statement_chain(fn.node, site[1])
        if chain:
            block, i = chain[-1]
            stmt = block[i]
            if _binds(stmt, names["ids"], names["weights"]):
                after, skipped = _next(fn, chain, site[0], path["decisions"])
                best = Point(frame["function"], fn, stmt, after, skipped, tuple(below), site[1])
        below.insert(0, frame["function"])
        site = _site(frame["called_at"])
    return best


def calls_in(stmts: list[ast.stmt], wanted: list[str]) -> list[tuple[str, int]]:
    """Calls to any of `wanted` (by last name part) in `stmts`, with their lines, in order."""
    out = []
    for stmt in stmts:
        for node in walked(stmt):
            if isinstance(node, ast.Call) and call_name(node) in wanted:
                out.append((call_name(node), node.lineno))
    return sorted(set(out), key=lambda c: c[1])


def following(point: Point) -> list[ast.stmt]:
    """The statements of the point's function after the binding statement, in source order."""
    end = point.stmt.end_lineno or point.stmt.lineno
    return [
        s
        for s in walked(point.source.node)
        if isinstance(s, ast.stmt) and s.lineno > end and s is not point.source.node
    ]
