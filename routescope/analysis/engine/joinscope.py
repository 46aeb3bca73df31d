"""The scope of one join of paths: objects made on each path are joined once in it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_SCOPES: list[dict[tuple[int, ...], Any]] = []


@contextmanager
def joining() -> Iterator[None]:
    """One join of paths: objects made on each path are joined once, so every reference to
    the same objects gets the same joined object (a registry and a variable that both held a
    path's new object still share one after the join: joining each reference on its own made
    two copies, and writes through one were lost to the other). Reentrant: a join inside a
    join is part of it."""
    if _SCOPES:
        yield
        return
    _SCOPES.append({})
    try:
        yield
    finally:
        _SCOPES.pop()


def joined_memo() -> dict[tuple[int, ...], Any]:
    """The current join's objects joined so far, by the identities of the objects joined
    (every value being joined is alive for the whole join, so identities are not reused)."""
    return _SCOPES[-1]
