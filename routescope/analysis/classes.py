"""Classes across modules: base resolution, C3 method resolution order, member lookup."""

from __future__ import annotations

import ast
from typing import Protocol

from routescope.analysis.symbols import Symbol, decorator_texts


class Index(Protocol):
    """What class resolution needs of an index (analysis.index.Index is one): a name's
    meaning at the top level of a module."""

    def resolve(self, module: str, name: str) -> Symbol | None: ...


def resolve_expr(index: Index, module: str, expr: ast.expr) -> Symbol | None:
    """A dotted name in `module` ("nn.Module", "FusedMoE", "Generic[T]") -> its symbol."""
    if isinstance(expr, ast.Subscript):
        return resolve_expr(index, module, expr.value)
    if isinstance(expr, ast.Name):
        return index.resolve(module, expr.id)
    if isinstance(expr, ast.Attribute):
        base = resolve_expr(index, module, expr.value)
        if base is None:
            return None
        if base.kind == "module":
            return index.resolve(base.module, expr.attr)
        if base.kind == "external":
            path = f"{base.module}.{base.name}" if base.name else base.module
            return Symbol("external", path, expr.attr, None, None, None)
        if base.kind == "class":
            return class_member(base, expr.attr)
    return None


def bases(index: Index, cls: Symbol) -> list[Symbol]:
    """The resolved bases of class `cls`, in order; unresolvable ones are left out."""
    if not isinstance(cls.node, ast.ClassDef):
        return []
    out = []
    for expr in cls.node.bases:
        sym = resolve_expr(index, cls.module, expr)
        if sym is not None:
            out.append(sym)
    return out


def mro(index: Index, cls: Symbol, _depth: int = 0) -> list[Symbol]:
    """C3 linearisation over the bases the index can resolve (DFS order if C3 fails)."""
    if cls.kind != "class" or _depth > 50:
        return [cls]
    direct = [b for b in bases(index, cls) if b.kind == "class"]
    seqs = [mro(index, b, _depth + 1) for b in direct] + [direct]
    out = [cls]
    while any(seqs):
        seqs = [s for s in seqs if s]
        for seq in seqs:
            head = seq[0]
            if not any(_key(head) in map(_key, s[1:]) for s in seqs):
                break
        else:  # inconsistent hierarchy: fall back to depth-first, first occurrence wins
            rest = [k for s in seqs for k in s]
            return out + list({_key(k): k for k in reversed(rest)}.values())[::-1]
        out.append(head)
        seqs = [s[1:] if _key(s[0]) == _key(head) else s for s in seqs]
    return out


def _key(sym: Symbol) -> tuple[str, str]:
    return (sym.module, sym.name)


def class_member(cls: Symbol, name: str) -> Symbol | None:
    """`name` defined directly in the body of class `cls` (last definition wins)."""
    if not isinstance(cls.node, ast.ClassDef):
        return None
    hit: Symbol | None = None
    for stmt in cls.node.body:
        qual = f"{cls.name}.{name}"
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name == name:
            hit = Symbol(
                "function",
                cls.module,
                qual,
                cls.relpath,
                stmt.lineno,
                stmt,
                hit is not None,
                decorator_texts(stmt),
            )
        elif isinstance(stmt, ast.ClassDef) and stmt.name == name:
            hit = Symbol("class", cls.module, qual, cls.relpath, stmt.lineno, stmt)
        elif isinstance(stmt, ast.Assign | ast.AnnAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                hit = Symbol("assignment", cls.module, qual, cls.relpath, stmt.lineno, stmt)
    return hit
