"""The framework source behind a report: reopened from the report's deployment, read by line."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import lru_cache

from routescope.analysis.index import Index
from routescope.analysis.modules import ModuleInfo, module_name
from routescope.analysis.outline import BLOCKS
from routescope.errors import RoutescopeError

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_BLOCKS = ("body", "orelse", "finalbody", "handlers")


@lru_cache(maxsize=2)  # (unbounded, a worker tracing release after release kept every one's
def open_index(source: str) -> Index:  # parsed modules: 50-60 MB a release)
    """The Index for a report's deployment.source ("pypi:N==V (file)", "checkout:PATH", ...).

    A published version is read from the cache (the trace just fetched it); raises
    RoutescopeError when it cannot be reopened.
    """
    from routescope.source.open import open_installed, open_source

    kind, _, rest = source.partition(":")
    spec = rest.split(" (", 1)[0]
    if kind == "pypi":
        return Index(open_source(spec, offline=True, progress=False))
    if kind == "checkout":
        return Index(open_source(rest, progress=False))
    if kind == "installed":
        return Index(open_installed(spec.split("==", 1)[0]))
    raise RoutescopeError(source, "cannot reopen this framework source")


@dataclass(frozen=True, slots=True)
class FunctionSource:
    module: ModuleInfo
    node: ast.FunctionDef | ast.AsyncFunctionDef

    def text(self, first: int, last: int) -> str:
        return "\n".join(self.module.lines[first - 1 : last])

    @property
    def span(self) -> tuple[int, int]:
        return self.node.lineno, self.node.end_lineno or self.node.lineno


def function_at(index: Index, relpath: str, line: int) -> FunctionSource | None:
    """The innermost function definition in `relpath` whose def (or body) covers `line`."""
    name = module_name(relpath)
    info = index.module(name) if name else None
    if info is None or info.tree is None:
        return None
    best: ast.FunctionDef | ast.AsyncFunctionDef | None = None
    todo: list[ast.AST] = list(info.tree.body)
    while todo:  # only into statements that cover the line (a function's body is parsed when
        node = todo.pop()  # read: the others stay unread)
        first, last = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
        if first is not None and not first <= line <= (last or first):
            continue
        if isinstance(node, _DEFS) and (best is None or node.lineno > best.lineno):
            best = node
        for field in BLOCKS:
            todo.extend(getattr(node, field, None) or ())
    return FunctionSource(info, best) if best is not None else None


def function_named(index: Index, qualname: str) -> FunctionSource | None:
    """ "pkg.mod:func" -> its source, when it is Python in the tree."""
    sym = index.find_function(qualname)
    if sym is None or sym.relpath is None or not isinstance(sym.node, _DEFS):
        return None
    info = index.module(sym.module)
    return FunctionSource(info, sym.node) if info is not None else None


def statement_chain(node: ast.AST, line: int) -> list[tuple[list[ast.stmt], int]]:
    """(block, index) pairs from the function body down to the innermost statement at `line`.

    Nested function and class definitions are not entered.
    """
    chain: list[tuple[list[ast.stmt], int]] = []
    blocks: list[list[ast.stmt]] = [getattr(node, "body", [])]
    while blocks:
        block, blocks = blocks[0], []
        for i, stmt in enumerate(block):
            if stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno):
                chain.append((block, i))
                if not isinstance(stmt, (*_DEFS, ast.ClassDef)):
                    blocks = _sub_blocks(stmt, line)
                break
    return chain


def _sub_blocks(stmt: ast.stmt, line: int) -> list[list[ast.stmt]]:
    for field in _BLOCKS:
        block = getattr(stmt, field, None)
        if not block:
            continue
        if field == "handlers":
            for h in block:
                if h.lineno <= line <= (h.end_lineno or h.lineno):
                    return [h.body]
            continue
        if block[0].lineno <= line <= (block[-1].end_lineno or block[-1].lineno):
            return [block]
    return []


def call_name(call: ast.Call) -> str:
    """The called name's last part: `a.b.f(...)` -> "f", `f(...)` -> "f", else ""."""
    f = call.func
    if isinstance(f, ast.Attribute):
        return f.attr
    return f.id if isinstance(f, ast.Name) else ""
