"""What a module's code reads and what its top level binds, from its tree alone (without
running it): each kept beside the file's outline (outline.file_summary), by its sha256."""

from __future__ import annotations

import ast
import functools
import hashlib
import marshal
import re
from collections.abc import Iterator

# a name bound at module level by a function's `global` statement, read from the file's lines
# (the function bodies of a lazily parsed tree stay unparsed)
_GLOBAL = re.compile(r"^\s*global\s+([\w\s,]+)")
ANY = "*"  # in names_bound: the module may bind names no statement spells
STAR = "*from:"  # in names_bound, before a module name: what `from m import *` binds
# code that binds names no statement spells: globals() and vars() written, exec
_DYNAMIC = re.compile(r"(?<![\w.])(?:globals\(\)|vars\(\)|exec\()|sys\.modules\[__name__\]")


def names_read(tree: ast.Module) -> frozenset[str]:
    """The names and dotted attribute paths (a, a.b, a.b.c) a file's code reads, and the
    identifiers its strings list (`__all__`, "a, b")."""
    names: set[str] = set()
    for sub in ast.walk(tree):
        if isinstance(sub, ast.Name) and not isinstance(sub.ctx, ast.Store):
            names.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            parts: list[str] = []
            cur: ast.expr = sub
            while isinstance(cur, ast.Attribute):
                parts.append(cur.attr)
                cur = cur.value
            if isinstance(cur, ast.Name):
                chain = [cur.id, *reversed(parts)]
                names.update(".".join(chain[: i + 1]) for i in range(len(chain)))
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            names.update(n.strip() for n in sub.value.split(",") if n.strip().isidentifier())
    return frozenset(names)


@functools.cache
def names_read_kind() -> str:
    """The kept summaries' kind: names_read's own code, hashed, so an edit of what it computes
    never reads a summary the code before it kept."""
    code = marshal.dumps(names_read.__code__)
    return "names-read-" + hashlib.sha256(code).hexdigest()[:16]


def names_bound(tree: ast.Module, lines: tuple[str, ...] | list[str]) -> frozenset[str]:
    """The names a module's top level surely binds once it has run: what its own unconditional
    statements define, assign or import (a def, a class, `x = ...`, `x: T = ...`, an import),
    less a name it deletes anywhere or its functions declare `global` (they may delete it);
    each `from m import *` as STAR + m (as written: relative or not); ANY when code may bind
    names no statement spells (`globals()`, `vars()`, `exec`, `sys.modules[__name__]`). A
    module `__getattr__` is among the names. What a branch, a loop, a `with` or a `try` binds
    (`if TYPE_CHECKING:` imports, an `except ... as e` name) is not sure: an import of such a
    name runs the module to be told."""
    names: set[str] = set()
    unsure: set[str] = set()
    for line in lines:
        got = _GLOBAL.match(line)
        if got:
            unsure.update(n.strip() for n in got.group(1).split(",") if n.strip())
        if _DYNAMIC.search(line):
            names.add(ANY)
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(stmt.name)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for alias in stmt.names:
                if alias.name == "*" and isinstance(stmt, ast.ImportFrom):
                    names.add(f"{STAR}{'.' * stmt.level}{stmt.module or ''}")
                elif alias.asname or isinstance(stmt, ast.ImportFrom):
                    names.add(alias.asname or alias.name)
                else:
                    names.add(alias.name.split(".")[0])
        elif isinstance(stmt, ast.Assign) or (
            isinstance(stmt, ast.AnnAssign) and stmt.value is not None
        ):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            names.update(
                n.id
                for t in targets
                for n in ast.walk(t)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
            )
    for node in _top_level(tree.body):
        if isinstance(node, ast.Delete):
            unsure.update(
                n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)
            )
    return frozenset(names - unsure)


def _top_level(stmts: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every node the module's own scope runs: into compound statements, not into the bodies
    of functions and classes (their own scopes; a lazy body is never parsed for this)."""
    for stmt in stmts:
        yield stmt
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for name, value in ast.iter_fields(stmt):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                yield from _top_level(value)
            elif name == "handlers":
                for h in value:
                    yield h
                    yield from _top_level(h.body)
            elif name == "cases":
                for c in value:
                    yield from _top_level(c.body)
                    yield from (n for n in ast.walk(c.pattern) if isinstance(n, ast.Name))
            else:
                for part in value if isinstance(value, list) else [value]:
                    if isinstance(part, ast.AST):
                        yield from (n for n in ast.walk(part) if not isinstance(n, ast.Lambda))


@functools.cache
def names_bound_kind() -> str:
    """As names_read_kind, over names_bound's code and its walk's."""
    code = marshal.dumps(
        (names_bound.__code__, _top_level.__code__, _GLOBAL.pattern, _DYNAMIC.pattern, STAR, ANY)
    )
    return "names-bound-" + hashlib.sha256(code).hexdigest()[:16]
