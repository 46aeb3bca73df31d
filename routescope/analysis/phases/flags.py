"""--env and --package checked against the release, the way it would read them: a variable its
environment declarations declare is parsed with the declaration's own parser (a value it
rejects is refused before tracing); a variable or package nothing the deployment loads names is
refused after the trace (it would change nothing: a misspelling, most likely)."""

from __future__ import annotations

import ast

from routescope.analysis.engine.core import Engine
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import ClassVal, Const, Instance, describe
from routescope.analysis.phases.frameworks import FrameworkRules
from routescope.analysis.phases.trace import resolve_entry
from routescope.errors import RoutescopeError


def _declarations(engine: Engine, rules: FrameworkRules) -> ClassVal | None:
    for entry in rules.data.get("env_declarations", []):
        cls = resolve_entry(engine, entry)
        if isinstance(cls, ClassVal):
            return cls
    return None


def _declared_at(cls: ClassVal, name: str) -> int | None:
    for stmt in cls.node.body if cls.node is not None else []:
        targets = (
            [t for t in stmt.targets if isinstance(t, ast.Name)]
            if isinstance(stmt, ast.Assign)
            else [stmt.target]
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
            else []
        )
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return stmt.lineno
    return None


def check_env_values(engine: Engine, rules: FrameworkRules, env: dict[str, str]) -> set[str]:
    """Parse each --env value with its declaration's own `parse` (EnvBool, EnvInt, ...): one
    every way through raises on exits 2 with the parser's message. Returns the names declared."""
    cls = _declarations(engine, rules)
    if cls is None or not env:
        return set()
    declared: set[str] = set()
    for name, value in env.items():
        line = _declared_at(cls, name)
        if line is None:
            continue
        declared.add(name)
        field = cls.lookup(name)
        if not isinstance(field, Instance):
            continue
        parse = engine.attribute(PathState(envs=[{}]), field, "parse")[0][1]
        outs = engine.call(PathState(envs=[{}]), parse, [Const(value)], {}, None)
        raising = [s for s, _ in outs if s.raising is not None]
        if outs and len(raising) == len(outs):
            exc = raising[0].raising
            where = f"{cls.module.relpath}:{line}" if cls.module else cls.qualname
            why = describe(exc) if exc is not None else "an exception"
            at = raising[0].raised_at
            if at is not None:
                why += f" raised at {at[0]}:{at[1]} in {at[2].rsplit(':', 1)[-1]}"
            raise RoutescopeError(
                f"--env {name}={value}",
                f"the release's parser rejects it ({why}; declared at {where} as "
                f"{field.cls.qualname.rsplit(':', 1)[-1] if field.cls else 'a field'})",
            )
    return declared


def _names_in(engine: Engine) -> tuple[set[str], set[str]]:
    """Every string constant, and every top-level package imported, in the modules loaded."""
    strings: set[str] = set()
    packages: set[str] = set()
    for name in list(engine.modules):
        info = engine.index.module(name)
        tree = info.tree if info is not None else None
        if tree is None:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                strings.add(node.value)
            elif isinstance(node, ast.Import):
                packages.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                packages.add(node.module.split(".")[0])
    return strings, packages


def check_unread(
    engine: Engine,
    rules: FrameworkRules,
    env: dict[str, str],
    packages: dict[str, bool],
    declared: set[str],
    version: str | None,
) -> None:
    """After the trace: a --env variable neither declared nor named in any module the deployment
    loaded, or a --package neither in the rules nor imported by one, exits 2."""
    if not (set(env) - declared) and not (set(packages) - set(rules.data.get("packages", {}))):
        return
    strings, imported = _names_in(engine)
    release = f"{rules.id} {version}" if version else rules.id
    for name in env:
        if name not in declared and name not in strings:
            raise RoutescopeError(
                f"--env {name}",
                f"{release} declares no such variable and no module this deployment loads "
                "names it (setting it changes nothing)",
            )
    known = set(rules.data.get("packages", {}))
    for name in packages:
        if name not in known and name not in imported:
            raise RoutescopeError(
                f"--package {name}",
                f"no module this deployment loads imports it, and {rules.path} does not list "
                f"it; known: {', '.join(sorted(known))}",
            )
