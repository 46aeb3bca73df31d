"""What a module binds at top level (defs, classes, assignments, imports), and what it imports.

Statements under if/try/with at module level count (flagged `conditional`); bodies of
functions and classes do not bind module names, but their imports are still imports.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

# `try: ... except* ...` (3.11+) binds like try; absent on 3.10
_TRY = (ast.Try, getattr(ast, "TryStar", ast.Try))

BindingKind = Literal["import", "from", "def", "class", "assign", "star"]


@dataclass(frozen=True, slots=True)
class Binding:
    """One top-level binding of `name`; for imports, the absolute module (and name) it names."""

    name: str
    kind: BindingKind
    line: int
    node: ast.AST
    conditional: bool
    module: str | None = None  # import target, absolute
    imported: str | None = None  # the `Y` of `from X import Y`


def absolute_module(current: str, is_package: bool, level: int, module: str | None) -> str | None:
    """Resolve `from ..x import` relative to `current`; None when it climbs above the top."""
    if level == 0:
        return module
    parts = current.split(".") if is_package else current.split(".")[:-1]
    keep = len(parts) - (level - 1)
    if keep <= 0:
        return None
    return ".".join([*parts[:keep], module]) if module else ".".join(parts[:keep])


def _top_level(body: list[ast.stmt], conditional: bool) -> Iterator[tuple[ast.stmt, bool]]:
    for stmt in body:
        yield stmt, conditional
        if isinstance(stmt, ast.If):
            yield from _top_level(stmt.body, True)
            yield from _top_level(stmt.orelse, True)
        elif isinstance(stmt, _TRY):
            for block in (stmt.body, stmt.orelse, stmt.finalbody):
                yield from _top_level(block, True)
            for handler in stmt.handlers:
                yield from _top_level(handler.body, True)
        elif isinstance(stmt, ast.With | ast.AsyncWith):
            yield from _top_level(stmt.body, conditional)


def _targets(target: ast.expr) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, ast.Tuple | ast.List):
        for elt in target.elts:
            yield from _targets(elt)
    elif isinstance(target, ast.Starred):
        yield from _targets(target.value)


def bindings(tree: ast.Module, current: str, is_package: bool) -> dict[str, list[Binding]]:
    """Top-level bindings by name, in source order (the last one is what execution leaves)."""
    out: dict[str, list[Binding]] = {}

    def add(b: Binding) -> None:
        out.setdefault(b.name, []).append(b)

    for stmt, cond in _top_level(tree.body, False):
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            add(Binding(stmt.name, "def", stmt.lineno, stmt, cond))
        elif isinstance(stmt, ast.ClassDef):
            add(Binding(stmt.name, "class", stmt.lineno, stmt, cond))
        elif isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                for name in _targets(t):
                    add(Binding(name, "assign", stmt.lineno, stmt, cond))
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname:  # `import a.b as x` binds x to a.b
                    add(Binding(alias.asname, "import", stmt.lineno, stmt, cond, alias.name))
                else:  # `import a.b` binds a to the top package
                    top = alias.name.split(".")[0]
                    add(Binding(top, "import", stmt.lineno, stmt, cond, top))
        elif isinstance(stmt, ast.ImportFrom):
            base = absolute_module(current, is_package, stmt.level, stmt.module)
            if base is None:
                continue
            for alias in stmt.names:
                kind: BindingKind = "star" if alias.name == "*" else "from"
                name = alias.asname or alias.name
                add(Binding(name, kind, stmt.lineno, stmt, cond, base, alias.name))
    return out


def imported_modules(tree: ast.Module, current: str, is_package: bool) -> set[str]:
    """Every module name an import anywhere in the file may load (`from X import Y` gives X
    and X.Y, since Y may be a submodule); the caller keeps those that exist."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = absolute_module(current, is_package, node.level, node.module)
            if base is None:
                continue
            out.add(base)
            out.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    return out


_IMPORT = re.compile(
    r"^[ \t]*(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*(?:\\\n[^\n#;]*)*)"
    r"|import[ \t]+([^\n#;]*(?:\\\n[^\n#;]*)*))",
    re.MULTILINE,
)


def scan_imports(text: str, current: str, is_package: bool) -> set[str]:
    """imported_modules() without parsing: a line scan, 20-50x faster than ast.parse.

    It may over-report (an import statement quoted inside a docstring) and misses imports
    after `;` or `:` on one line; good enough to choose which files to prefetch.
    """
    out: set[str] = set()
    for m in _IMPORT.finditer(text):
        if m.group(3) is not None:
            for part in m.group(3).replace("\\\n", " ").split(","):
                name = part.split(" as ")[0].strip()
                if re.fullmatch(r"[\w.]+", name):
                    out.add(name)
            continue
        raw = m.group(1)
        level = len(raw) - len(raw.lstrip("."))
        base = absolute_module(current, is_package, level, raw[level:] or None)
        if base is None:
            continue
        out.add(base)
        names = re.sub(r"#[^\n]*", "", m.group(2)).strip("()").replace("\\\n", " ")
        for part in names.split(","):
            name = part.split(" as ")[0].strip()
            if name.isidentifier():
                out.add(f"{base}.{name}")
    return out
