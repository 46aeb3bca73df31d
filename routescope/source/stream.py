"""Files handed back one by one as they arrive, so a caller can ask for more meanwhile.

The import closure scans each file as soon as its span lands and asks for the modules it
imports at once: the next wave of requests leaves while the slowest of this one is still in
flight, instead of every round waiting for its slowest request (DESIGN.md decision 8).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from types import TracebackType
from typing import Protocol

from routescope.source import cache
from routescope.source.remote import RangeReader
from routescope.source.tree import SourceTree
from routescope.source.wheel import WheelTree, coalesce
from routescope.source.zipdir import Member

CONNECTIONS = 8  # spans in flight at once: a few keep-alive connections, not a crowd
GAP = 256 * 1024  # measured best for a pipelined closure (benchmarks/RESULTS-source.md)

SpanResult = tuple[dict[str, bytes], list[Member]]


class FileStream(Protocol):
    """want() files, then iterate (relpath, bytes) as they become available, in any order."""

    def want(self, relpaths: Iterable[str]) -> None: ...

    def __iter__(self) -> Iterator[tuple[str, bytes]]: ...

    def __enter__(self) -> FileStream: ...

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


def open_stream(tree: SourceTree) -> FileStream:
    """A stream over `tree`: pipelined range requests for a wheel, plain reads otherwise."""
    if isinstance(tree, WheelTree):
        return WheelStream(tree)
    return LocalStream(tree)


class LocalStream:
    """Files already on disk: each is read when its turn comes."""

    def __init__(self, tree: SourceTree) -> None:
        self._tree = tree
        self._queue: deque[str] = deque()

    def want(self, relpaths: Iterable[str]) -> None:
        self._queue.extend(relpaths)

    def __iter__(self) -> Iterator[tuple[str, bytes]]:
        while self._queue:
            relpath = self._queue.popleft()
            yield relpath, self._tree.read_bytes(relpath)

    def __enter__(self) -> LocalStream:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


class WheelStream:
    """A wheel's members: cached ones at once, the rest by coalesced range requests, at most
    CONNECTIONS in flight; each span is verified against RECORD and cached in its worker."""

    def __init__(
        self, tree: WheelTree, *, gap: int | None = None, connections: int | None = None
    ) -> None:
        self._tree = tree
        self._gap = GAP if gap is None else gap  # read at call time, so a benchmark can vary them
        self._connections = CONNECTIONS if connections is None else connections
        self._pool: ThreadPoolExecutor | None = None
        self._ready: deque[tuple[str, bytes]] = deque()
        self._pending: dict[str, None] = {}  # wanted, not cached, not yet requested
        self._covered: dict[str, Future[SpanResult]] = {}  # .py members inside a span in flight
        self._covers: dict[Future[SpanResult], list[str]] = {}
        self._waiting: dict[Future[SpanResult], list[str]] = {}  # span -> wanted members in it
        self._tries: dict[str, int] = {}

    def want(self, relpaths: Iterable[str]) -> None:
        whole = self._tree.whole() is not None  # every file is read from the wheel in memory
        for relpath in relpaths:
            if whole:
                self._ready.append((relpath, self._tree.read_bytes(relpath)))
                continue
            data = cache.read_blob(self._tree.digest(relpath))
            if data is not None:
                self._ready.append((relpath, data))
            elif relpath in self._covered:
                self._waiting[self._covered[relpath]].append(relpath)
            else:
                self._pending[relpath] = None

    def __iter__(self) -> Iterator[tuple[str, bytes]]:
        while True:
            # send once all that arrived is scanned: its wants coalesce into fewer spans
            if self._pending and not self._ready:
                self._send()
            if self._ready:
                yield self._ready.popleft()
                continue
            if not self._waiting:
                return
            done, _ = wait(list(self._waiting), return_when=FIRST_COMPLETED)
            for span in done:
                self._receive(span)

    def _send(self) -> None:
        reader = self._tree.reader
        if reader is None:
            raise self._tree.not_cached_error(list(self._pending))
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._connections, thread_name_prefix="routescope")
        members = [self._tree.member(p) for p in self._pending]
        self._pending.clear()
        for start, end, group in coalesce(members, self._gap):
            span = self._pool.submit(self._fetch, reader, start, end, group)
            self._waiting[span] = [m.name for m in group]
            self._covers[span] = []
            for m in self._tree.py_members_in(start, end):
                if m.name not in self._covered:
                    self._covered[m.name] = span
                    self._covers[span].append(m.name)

    def _fetch(self, reader: RangeReader, start: int, end: int, group: list[Member]) -> SpanResult:
        return self._tree.store_span(start, end, reader.read(start, end), group)

    def _receive(self, span: Future[SpanResult]) -> None:
        wanted = self._waiting.pop(span)
        for relpath in self._covers.pop(span):
            del self._covered[relpath]
        found, _ = span.result()  # a transport error is raised here, as a RoutescopeError
        for relpath in wanted:
            # not in `found`: corrupt, or another process cached it first (so it was skipped)
            data = found.get(relpath) or cache.read_blob(self._tree.digest(relpath))
            if data is not None:
                self._ready.append((relpath, data))
                continue
            self._tries[relpath] = self._tries.get(relpath, 0) + 1
            if self._tries[relpath] > 1:
                raise self._tree.mismatch_error(relpath)
            self._pending[relpath] = None  # a corrupted transfer: ask for it again

    def __enter__(self) -> WheelStream:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
