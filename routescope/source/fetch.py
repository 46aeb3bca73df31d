"""`source fetch` as a library call: make a framework's routing modules available locally."""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from routescope.errors import RoutescopeError
from routescope.source.open import open_source
from routescope.source.wheel import WheelTree

if TYPE_CHECKING:  # (imported where a request is made: 50 ms a command need not spend)
    import httpx


@dataclass(frozen=True, slots=True)
class FetchReport:
    """What a fetch made available and what it cost (bytes/requests are 0 when all cached)."""

    origin: str
    modules: int  # files made available
    missing_seeds: tuple[str, ...]  # seed modules this version does not have
    bytes_transferred: int
    requests: int
    seconds: float
    wheel_size: int | None  # None for a checkout or installed tree


def fetch(
    spec: str,
    *,
    everything: bool = False,
    offline: bool = False,
    progress: bool | None = None,
    client: httpx.Client | None = None,
) -> FetchReport:
    """Fetch the seed import closure of `spec` (or every .py file with `everything`)."""
    from routescope.analysis.closure import import_closure, load_seeds
    from routescope.analysis.index import Index

    start = time.perf_counter()
    tree = open_source(spec, offline=offline, progress=progress, client=client)
    missing: tuple[str, ...] = ()
    if isinstance(tree, WheelTree) and tree.can_fetch() and tree.whole_is_cheaper():
        # mostly Python: one request, and every file is read from it; a download that fails
        # (its sha256, the link) leaves the range requests below, which say why if they fail
        with contextlib.suppress(RoutescopeError):
            tree.fetch_whole()
    if everything:
        files = tree.files()
        tree.prefetch(files)
        count = len(files)
    else:
        closure = import_closure(Index(tree), load_seeds(tree.name))
        count, missing = len(closure.modules), closure.missing_seeds
    reader = tree.reader if isinstance(tree, WheelTree) and tree.has_reader() else None
    return FetchReport(
        origin=tree.origin,
        modules=count,
        missing_seeds=missing,
        bytes_transferred=reader.bytes_transferred if reader else 0,
        requests=reader.requests if reader else 0,
        seconds=time.perf_counter() - start,
        wheel_size=tree.wheel_size() if isinstance(tree, WheelTree) else None,
    )
