"""What a module's code reads and what its top level binds, from its tree alone (without
running it): each kept beside the file's outline (outline.file_summary), by its sha256."""

from __future__ import annotations

import ast
import functools
import hashlib
import marshal
import re
from collections.abc import Iterator

from routescope.analysis import namespace
from routescope.analysis.namespace import bindings
from routescope.analysis.outline import BLOCKS

# a name bound at module level by a function's `global` statement, read from the file's lines
# (the function bodies of a lazily parsed tree stay unparsed)
_GLOBAL = re.compile(r"^\s*global\s+([\w\s,]+)")
ANY = "*"  # in names_bound: the module may bind names no statement spells
STAR = "*from:"  # in names_bound, before a module's name: what `from m import *` binds
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


def names_bound(
    tree: ast.Module, lines: tuple[str, ...] | list[str], current: str, is_package: bool
) -> frozenset[str]:
    """The names module `current`'s top level surely binds once it has run: its unconditional
    bindings (namespace.bindings: a def, a class, an assignment, an import; an annotation
    alone binds nothing), less a name it deletes anywhere or its functions declare `global`
    (they may delete it); each `from m import *` as STAR + m (absolute); ANY when code may bind
    names no statement spells (`globals()`, `vars()`, `exec`, `sys.modules[__name__]`). A
    module `__getattr__` is among the names. What a branch or a `try` binds (`if
    TYPE_CHECKING:` imports, an `except ... as e` name) is not sure: an import of such a name
    runs the module to be told."""
    names: set[str] = set()
    unsure: set[str] = set()
    for line in lines:
        got = _GLOBAL.match(line)
        if got:
            unsure.update(n.strip() for n in got.group(1).split(",") if n.strip())
        if _DYNAMIC.search(line):
            names.add(ANY)
    for name, made in bindings(tree, current, is_package).items():
        for b in made:
            if b.kind == "star":
                names.add(f"{STAR}{b.module}")
            elif not b.conditional and not (
                isinstance(b.node, ast.AnnAssign) and b.node.value is None
            ):
                names.add(name)
    for node in _statements(tree.body):
        if isinstance(node, ast.Delete):
            unsure.update(
                n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)
            )
    return frozenset(names - unsure)


def _statements(stmts: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements the module's own scope runs: into compound statements' blocks, not into
    the bodies of functions and classes (their own scopes; a lazy body is never parsed here)."""
    for stmt in stmts:
        yield stmt
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in BLOCKS:  # an except's and a case's statements are in their `body`
            for part in getattr(stmt, field, ()):
                yield from _statements(part.body if field in ("handlers", "cases") else [part])


@functools.cache
def names_bound_kind() -> str:
    """As names_read_kind, over names_bound's code and its walk's."""
    code = marshal.dumps(
        (
            names_bound.__code__,
            _statements.__code__,
            bindings.__code__,
            namespace._top_level.__code__,
            namespace._targets.__code__,
            _GLOBAL.pattern,
            _DYNAMIC.pattern,
            STAR,
            ANY,
        )
    )
    return "names-bound-" + hashlib.sha256(code).hexdigest()[:16]
