"""functools caches on framework functions: how many entries an lru_cache keeps."""

from __future__ import annotations

import ast
from typing import Any

from routescope.analysis.engine.values import FunctionVal


def cache_bound(fn: FunctionVal) -> int | None:
    """An lru_cache's maxsize (128 unless given); None for an unbounded cache."""
    for d in getattr(fn.node, "decorator_list", ()):
        head = d.func if isinstance(d, ast.Call) else d
        name = ast.unparse(head).rsplit(".", 1)[-1]
        if name != "lru_cache":
            continue
        if not isinstance(d, ast.Call):
            return 128
        given = (
            d.args[0] if d.args else next((k.value for k in d.keywords if k.arg == "maxsize"), None)
        )
        if given is None:
            return 128
        if isinstance(given, ast.Constant) and given.value is None:
            return None
        if isinstance(given, ast.Constant) and isinstance(given.value, int):
            return max(given.value, 0)
        return 0  # a size routescope cannot read: remember nothing
    return None


def evict(memo: dict[tuple[Any, ...], Any], fn_key: tuple[Any, ...], size: int) -> None:
    """Drop a bounded cache's least recently used entries beyond its size."""
    mine = [k for k in memo if k[:2] == fn_key]
    for k in mine[: max(len(mine) - size, 0)]:
        del memo[k]
