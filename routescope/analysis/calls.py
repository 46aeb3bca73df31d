"""A best-effort static call graph: from a root function, follow calls the index can resolve.

The trace engine builds the precise, path-sensitive graph; this one is for `source graph`
and for orientation (every call site, no conditions evaluated).
"""

from __future__ import annotations

import ast

from routescope.analysis.callgraph import CallGraph
from routescope.analysis.classes import resolve_expr
from routescope.analysis.index import Index
from routescope.analysis.namespace import absolute_module
from routescope.analysis.symbols import Symbol

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


def build_call_graph(index: Index, root: str, depth: int = 3) -> CallGraph:
    """Calls reachable from function `root` ("pkg.mod:Class.method") up to `depth` calls deep.

    Resolved: module-level and function-local imports, `self.method` through the class's
    bases, dotted module attributes, class instantiation (-> __init__). External callees are
    leaf nodes of kind "external". Raises RoutescopeError when `root` is not a function.
    """
    graph = CallGraph()
    start = index.require_function(root)
    graph.add_function(start.qualname, location=start.location)
    frontier, seen = [start], {start.qualname}
    for _ in range(depth):
        nxt = []
        for fn in frontier:
            for callee, line in _calls(index, fn):
                kind = "external" if callee.kind == "external" else "function"
                name = callee.qualname if callee.kind != "external" else _ext(callee)
                if name not in graph.graph:
                    graph.add_function(name, kind=kind, location=callee.location)
                graph.add_call(fn.qualname, name, fn.relpath or "", line)
                if callee.kind == "function" and callee.qualname not in seen:
                    seen.add(callee.qualname)
                    nxt.append(callee)
        frontier = nxt
    return graph


def _ext(sym: Symbol) -> str:
    return f"{sym.module}.{sym.name}" if sym.name else sym.module


def _calls(index: Index, fn: Symbol) -> list[tuple[Symbol, int]]:
    node = fn.node
    if not isinstance(node, _DEFS):
        return []
    info = index.module(fn.module)
    local_imports = _local_imports(node, fn.module, bool(info and info.is_package))
    owner = index.find(f"{fn.module}:{fn.name.rpartition('.')[0]}") if "." in fn.name else None
    out = []
    for call in ast.walk(node):
        if not isinstance(call, ast.Call):
            continue
        sym = _callee(index, fn.module, call.func, owner, local_imports)
        if sym is None:
            continue
        if sym.kind == "class":  # instantiation runs __init__
            sym = index.lookup_method(sym, "__init__") or sym
        if sym.kind in ("function", "external", "class"):
            out.append((sym, call.lineno))
    return out


def _callee(
    index: Index,
    module: str,
    func: ast.expr,
    owner: Symbol | None,
    local_imports: dict[str, tuple[str, str | None]],
) -> Symbol | None:
    if (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id in ("self", "cls")
        and owner is not None
        and owner.kind == "class"
    ):
        return index.lookup_method(owner, func.attr)
    head = func
    while isinstance(head, ast.Attribute):
        head = head.value
    if isinstance(head, ast.Name) and head.id in local_imports:
        target, imported = local_imports[head.id]
        base = index.resolve(target, imported) if imported else index.module_symbol(target)
        if base is None:
            return None
        if func is head:
            return base
        attrs = []
        node = func
        while isinstance(node, ast.Attribute):
            attrs.append(node.attr)
            node = node.value
        for attr in reversed(attrs):
            if base is None or base.kind not in ("module", "external"):
                return None
            base = (
                index.resolve(base.module, attr)
                if base.kind == "module"
                else Symbol("external", _ext(base), attr, None, None, None)
            )
        return base
    return resolve_expr(index, module, func)


def _local_imports(
    fn: ast.FunctionDef | ast.AsyncFunctionDef, module: str, is_package: bool
) -> dict[str, tuple[str, str | None]]:
    out: dict[str, tuple[str, str | None]] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    out[a.asname] = (a.name, None)
                else:
                    out[a.name.split(".")[0]] = (a.name.split(".")[0], None)
        elif isinstance(node, ast.ImportFrom):
            base = absolute_module(module, is_package, node.level, node.module)
            if base is not None:
                for a in node.names:
                    out[a.asname or a.name] = (base, a.name)
    return out
