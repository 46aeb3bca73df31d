"""What the framework's own argument declarations accept: each server argument's declared
choices, read from the release's source the way its parser would get them (a dataclass field's
`Arg(choices=...)`, or argparse's `parser.add_argument("--name", choices=...)`). A value the
parser would reject is refused before any tracing, naming what the release accepts."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from routescope.analysis.engine.contents import iteration
from routescope.analysis.engine.core import Engine
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import ClassVal, Const, Instance


@dataclass(frozen=True)
class Declared:
    """One server argument's declared choices, and where they are declared."""

    name: str
    choices: tuple[object, ...]
    where: str  # file:line of the declaration

    def accepts(self, value: object) -> bool:
        return value is None or value in self.choices

    def shown(self) -> str:
        return ", ".join(str(c) for c in self.choices)


def declared_choices(engine: Engine, cls: ClassVal, wanted: set[str]) -> dict[str, Declared]:
    """The server arguments in `wanted` that `cls` (or a base) declares choices for; one whose
    choices the source does not give as known values is left out (nothing to check). Only the
    arguments a deployment sets are read: a trace that sets none pays nothing."""
    out: dict[str, Declared] = {}
    if not wanted:
        return out
    for c in cls.mro():
        for name, ann in c.annotations.items():
            if name in out or name not in wanted:
                continue
            if isinstance(ann, ast.expr):
                if c.module is None:
                    continue
                found = _choices_in(engine, c, ann)
                if found is not None:
                    out[name] = Declared(name, found[0], f"{c.module.relpath}:{found[1]}")
            else:  # a class assembled at import: the annotation is a value already
                values = _choices_of_value(ann)
                if values is not None:
                    out[name] = Declared(name, values, _declaration(engine, name) or c.qualname)
        if c.node is not None and c.module is not None:
            for call in _add_argument_calls(c.node):
                dest = _dest(call)
                if dest in wanted and dest not in out:
                    found = _choices_in(engine, c, call)
                    if found is not None:
                        out[dest] = Declared(dest, found[0], f"{c.module.relpath}:{found[1]}")
    return out


Found = tuple[tuple[object, ...], int]


def _choices_in(engine: Engine, c: ClassVal, node: ast.AST) -> Found | None:
    """The known values of the first `choices=` keyword under `node`, and its line."""
    for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
        for kw in call.keywords:
            if kw.arg == "choices":
                values = _evaluate(engine, c, kw.value)
                return (values, kw.value.lineno) if values is not None else None
    return None


def _evaluate(engine: Engine, c: ClassVal, expr: ast.expr) -> tuple[object, ...] | None:
    assert c.module is not None
    paths = engine.evaluate_in(PathState(envs=[{}]), c.module.name, ast.unparse(expr), {})
    if len(paths) != 1:
        return None
    st, v = paths[0]
    items = iteration(v, st)
    if not items or not all(isinstance(i, Const) for i in items):
        return None
    return tuple(i.value for i in items if isinstance(i, Const))


def _choices_of_value(ann: object) -> tuple[object, ...] | None:
    """`Annotated[T, Arg(choices=...)]` as a value: the known choices of its metadata."""
    if not (isinstance(ann, Instance) and ann.label == "typing.Annotated"):
        return None
    st = PathState(envs=[{}])
    for meta in iteration(ann.fields.get("__metadata__", Const(())), st) or []:
        if isinstance(meta, Instance) and "choices" in st.fields(meta):
            items = iteration(st.fields(meta)["choices"], st)
            if items and all(isinstance(i, Const) for i in items):
                return tuple(i.value for i in items if isinstance(i, Const))
    return None


def _declaration(engine: Engine, name: str) -> str | None:
    """file:line of the class-body declaration of field `name` that gives `choices=`, in the
    modules the trace loaded."""
    for mod in engine.modules.values():
        for v in mod.globals.values():
            if not (isinstance(v, ClassVal) and v.node is not None and v.module is mod):
                continue
            for stmt in v.node.body:
                if (
                    isinstance(stmt, ast.AnnAssign)
                    and isinstance(stmt.target, ast.Name)
                    and stmt.target.id == name
                    and any(
                        kw.arg == "choices"
                        for n in ast.walk(stmt.annotation)
                        if isinstance(n, ast.Call)
                        for kw in n.keywords
                    )
                ):
                    return f"{mod.relpath}:{stmt.lineno}"
    return None


def _add_argument_calls(node: ast.ClassDef) -> list[ast.Call]:
    return [
        n
        for n in ast.walk(node)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "add_argument"
    ]


def _dest(call: ast.Call) -> str | None:
    """The attribute argparse stores the option under: dest=, else the first long option."""
    for kw in call.keywords:
        if kw.arg == "dest" and isinstance(kw.value, ast.Constant):
            return str(kw.value.value)
    for a in call.args:
        if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("--"):
            return a.value[2:].replace("-", "_")
    return None
