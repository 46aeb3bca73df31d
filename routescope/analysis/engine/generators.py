"""Generator functions: a call runs the body at once and gives what it yields, in order (as
the items a for loop, list() or next() then read). Python runs the body as the items are
asked for; for the set-up code routescope reads (a config's rope parameters, one dict per
layer type) the order of side effects does not decide a branch."""

from __future__ import annotations

import ast
from collections.abc import Sequence

from routescope.analysis.engine.containers import new_tuple
from routescope.analysis.engine.contents import iteration, seq_items
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import Const, Unknown, UnknownKind, Value

# a generator frame's variable: the tuple of what it yielded so far on this path
YIELDS = "<yields>"

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


# id(def) -> (the def, kept so that its id stays its own; whether it is a generator)
_KNOWN: dict[int, tuple[ast.AST, bool]] = {}


def is_generator(node: ast.AST, lines: Sequence[str] | None = None) -> bool:
    """Whether a function's own body yields (a yield in a nested def is that def's). `lines`,
    the file's source lines where known: a function whose lines never say `yield` is not
    walked (a walk of every body called was 0.1-0.2 s of a trace; few are generators)."""
    known = _KNOWN.get(id(node))
    if known is not None and known[0] is node:
        return known[1]
    lambda_or_unsaid = isinstance(node, ast.Lambda) or (
        lines is not None and not _says_yield(node, lines)
    )
    got = not lambda_or_unsaid and _walk_yields(node)
    if len(_KNOWN) > 20_000:  # (each keeps its def's tree: a worker's earlier releases' go)
        _KNOWN.clear()
    _KNOWN[id(node)] = (node, got)
    return got


def _says_yield(node: ast.AST, lines: Sequence[str]) -> bool:
    first, last = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
    name = getattr(node, "name", None)
    if first is None or last is None or last > len(lines) or name not in lines[first - 1]:
        return True  # positions that are not this def's in these lines: walked
    return any("yield" in line for line in lines[first - 1 : last])


def _walk_yields(node: ast.AST) -> bool:
    todo = list(getattr(node, "body", ()))
    while todo:
        sub = todo.pop()
        if isinstance(sub, (ast.Yield, ast.YieldFrom)):
            return True
        if not isinstance(sub, _SCOPES):
            todo.extend(ast.iter_child_nodes(sub))
    return False


def yielded(st: PathState, values: list[Value] | None, why: str = "") -> bool:
    """Add to what the running generator yields on this path (None: items not known); False
    when no generator frame is running (the yield is not collected)."""
    for env in reversed(st.envs):
        got = env.get(YIELDS)
        if got is None:
            continue
        so_far = seq_items(st, got)
        if so_far is not None and values is not None:
            env[YIELDS] = new_tuple([*so_far, *values])
        else:
            env[YIELDS] = Unknown(why or "what a generator yields", kind=UnknownKind.UNSUPPORTED)
        return True
    return False


def yield_from(st: PathState, source: Value) -> Value:
    """`yield from source`: its items join what the generator yields; the expression's value
    (the inner generator's return value) is not tracked."""
    items = iteration(source, st)
    if not yielded(st, items, "a generator yields from items not known"):
        return Unknown("a generator's yield from", kind=UnknownKind.UNSUPPORTED)
    return (
        Unknown("the value of yield from", kind=UnknownKind.UNSUPPORTED)
        if items is None
        else Const(None)
    )
