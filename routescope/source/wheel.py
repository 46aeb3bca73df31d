"""A published wheel as a SourceTree: members fetched on demand, verified, cached by hash."""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable, Iterable
from typing import Any

from routescope.errors import RoutescopeError
from routescope.source import cache, zipdir
from routescope.source.listing import members_of
from routescope.source.remote import RangeReader
from routescope.source.tree import Metadata, parse_metadata
from routescope.source.zipdir import Member

GAP = 64 * 1024  # fetch a gap this small rather than pay another round trip
# A closure is fetched as the whole wheel when Python is at least this share of the wheel's
# bytes (and the wheel fits in memory): the closure then reads 40-98% of them anyway, and one
# request beats ~180 in 11 import levels (sglang 0.5.23: 39 MB, 43% Python; vllm's wheels are
# 1-4% Python and keep the range requests; benchmarks/RESULTS-source.md).
WHOLE_SHARE = 1 / 3
WHOLE_MAX = 256 * 1024 * 1024


def coalesce(members: list[Member], gap: int = GAP) -> list[tuple[int, int, list[Member]]]:
    """Group members into spans [start, end) whose neighbours are at most `gap` bytes apart."""
    spans: list[tuple[int, int, list[Member]]] = []
    for m in sorted(members, key=lambda m: m.offset):
        if spans and m.offset - spans[-1][1] <= gap:
            start, _, group = spans[-1]
            spans[-1] = (start, max(spans[-1][1], m.end), [*group, m])
        else:
            spans.append((m.offset, m.end, [m]))
    return spans


class WheelTree:
    """SourceTree over one wheel's listing; `reader` is None when offline (cache only)."""

    def __init__(
        self,
        listing: dict[str, Any],
        reader: Callable[[], RangeReader] | None,
        *,
        name: str,
        version: str,
        filename: str,
        progress: bool = False,
        wheel_sha256: str | None = None,
    ) -> None:
        self.name = name
        self.version: str | None = version
        self.origin = f"pypi:{name}=={version} ({filename})"
        self._listing = listing
        self._members = members_of(listing)
        self._by_offset = sorted(self._members.values(), key=lambda m: m.offset)
        self._offsets = [m.offset for m in self._by_offset]
        self._record: dict[str, str] = listing["record"]
        self._reader_factory = reader
        self._reader: RangeReader | None = None
        self._progress = progress
        self._sha256 = wheel_sha256
        self._probed = False  # whether the cache was looked in for the whole wheel

    def fingerprint(self) -> str:
        """sha256 over the wheel's origin (a report names it) and RECORD: every file's path
        and content hash."""
        rows = "\n".join(f"{k}={v}" for k, v in sorted(self._record.items()))
        return hashlib.sha256(f"{self.origin}\n{rows}".encode()).hexdigest()

    @property
    def reader(self) -> RangeReader | None:
        """The range reader, created on first network use (a warm open makes no request)."""
        if self._reader is None and self._reader_factory is not None:
            self._reader = self._reader_factory()
        return self._reader

    def can_fetch(self) -> bool:
        """Whether missing files can be fetched (False: offline, cache only)."""
        return self._reader_factory is not None

    def has_reader(self) -> bool:
        """Whether a network reader was created (False: everything came from the cache)."""
        return self._reader is not None

    def files(self) -> list[str]:
        return sorted(n for n in self._members if n.endswith(".py"))

    def metadata(self) -> Metadata:
        return parse_metadata(self._listing["metadata"])

    def wheel_size(self) -> int:
        return int(self._listing["size"])

    def whole_is_cheaper(self) -> bool:
        """Whether a closure is better fetched as the whole wheel than by range requests: its
        Python sources are at least WHOLE_SHARE of its bytes and it is at most WHOLE_MAX."""
        size = self.wheel_size()
        python = sum(m.csize for m in self._by_offset if m.name.endswith(".py"))
        return size <= WHOLE_MAX and python >= WHOLE_SHARE * size

    def fetch_whole(self) -> bool:
        """Download the whole wheel in one request and keep it in the cache; every file is then
        read from it. False when the download did not match the index's sha256."""
        reader = self.reader
        if reader is None:
            raise self.not_cached_error(self.files())
        return reader.fetch_whole()

    def whole(self) -> RangeReader | None:
        """The reader of the whole wheel, in memory or kept in the cache (None: neither). A
        kept wheel is read without a network client: every file is in it, and a member that
        fails its RECORD hash there is an error, not a request."""
        if not self._probed:  # looked for once; a reader made later reads the kept file itself
            path = cache.full_wheel_path(self._sha256) if self._sha256 else None
            if self._reader is None and path is not None and path.is_file():
                kept = RangeReader(None, "", subject=self.origin, sha256=self._sha256,
                                   fallback_path=path)  # fmt: skip
                if kept.whole:
                    self._reader = kept
            self._probed = True
        reader = self._reader
        return reader if reader is not None and reader.whole else None

    def read_bytes(self, relpath: str) -> bytes:
        digest = self._digest(relpath)
        whole = self.whole()
        if whole is not None:  # no blob: the kept wheel is the cache of every file in it
            m = self._members[relpath]
            data = self._extract(m, whole.read(m.offset, m.end))
            if data is None:
                raise self.mismatch_error(relpath)
            return data
        data = cache.read_blob(digest)
        if data is None:
            data = self._fetch([relpath])[relpath]
        return data

    def prefetch(self, relpaths: Iterable[str]) -> None:
        if self.whole() is not None:
            return
        missing = [
            p for p in dict.fromkeys(relpaths) if not cache.blob_path(self._digest(p)).is_file()
        ]
        if missing:
            self._fetch(missing)

    def _digest(self, relpath: str) -> str:
        if relpath not in self._members:
            raise RoutescopeError(self.origin, f"no file {relpath} in the wheel")
        digest = self._record.get(relpath)
        if digest is None:
            raise RoutescopeError(self.origin, f"{relpath} is not listed in RECORD; refused")
        return digest

    def digest(self, relpath: str) -> str:
        """The RECORD sha256 of `relpath`; raises RoutescopeError when absent or unlisted."""
        return self._digest(relpath)

    def member(self, relpath: str) -> Member:
        return self._members[relpath]

    def not_cached_error(self, relpaths: list[str]) -> RoutescopeError:
        """The error for files that are needed but neither cached nor fetchable (offline)."""
        return RoutescopeError(
            self.origin,
            f"{len(relpaths)} file(s) not cached (e.g. {relpaths[0]}); run once without "
            f"--offline: routescope source fetch {self.name}=={self.version}",
        )

    def mismatch_error(self, relpath: str) -> RoutescopeError:
        return RoutescopeError(
            self.origin, f"{relpath}: content does not match its RECORD sha256 (fetched twice)"
        )

    def store_span(
        self, start: int, end: int, chunk: bytes, asked: list[Member]
    ) -> tuple[dict[str, bytes], list[Member]]:
        """Verify and cache what the bytes [start, end) hold: the asked members and every other
        .py member lying wholly inside (so a later round finds it cached).

        Out: ({relpath: bytes} of every verified member, asked members that failed their hash).
        """
        out: dict[str, bytes] = {}
        bad = []
        for m in asked:
            data = self._extract(m, chunk[m.offset - start : m.end - start])
            if data is None:
                bad.append(m)
                continue
            cache.write_blob(self._record[m.name], data)
            out[m.name] = data
        for m in self.py_members_in(start, end):
            if m.name not in out and m.name in self._record:
                digest = self._record[m.name]
                if not cache.blob_path(digest).is_file():
                    data = self._extract(m, chunk[m.offset - start : m.end - start])
                    if data is not None:
                        cache.write_blob(digest, data)
                        out[m.name] = data
        return out, bad

    def _fetch(self, relpaths: list[str]) -> dict[str, bytes]:
        reader = self.reader
        if reader is None:
            raise self.not_cached_error(relpaths)
        spans = coalesce([self._members[p] for p in relpaths])
        out: dict[str, bytes] = {}
        for attempt in (0, 1):
            chunks = _read_spans(reader, spans, self._progress)
            bad = []
            for (start, end, group), chunk in zip(spans, chunks, strict=True):
                found, failed = self.store_span(start, end, chunk, group)
                out.update((m.name, found[m.name]) for m in group if m.name in found)
                bad += failed
            if not bad:
                return out
            if attempt == 1:
                raise self.mismatch_error(bad[0].name)
            spans = coalesce(bad)  # a corrupted transfer: fetch just those again
        return out

    def py_members_in(self, start: int, end: int) -> list[Member]:
        """The .py members lying wholly inside the bytes [start, end)."""
        lo = bisect.bisect_left(self._offsets, start)
        hi = bisect.bisect_left(self._offsets, end)
        return [m for m in self._by_offset[lo:hi] if m.end <= end and m.name.endswith(".py")]

    def _extract(self, m: Member, record: bytes) -> bytes | None:
        try:
            data = zipdir.extract_member(m, record)
        except zipdir.ZipFormatError:
            return None
        if hashlib.sha256(data).hexdigest() != self._record[m.name]:
            return None
        return data


def _read_spans(
    reader: RangeReader, spans: list[tuple[int, int, list[Member]]], progress: bool
) -> list[bytes]:
    pairs = [(s, e) for s, e, _ in spans]
    if not progress or len(pairs) < 2:
        return reader.read_many(pairs)
    from rich.progress import Progress

    from routescope.render.style import console

    with Progress(console=console(stderr=True), transient=True) as bar:
        task = bar.add_task("fetching sources", total=sum(e - s for s, e in pairs))
        out = []
        for i in range(0, len(pairs), 16):  # in batches so the bar moves
            batch = reader.read_many(pairs[i : i + 16])
            bar.advance(task, sum(len(b) for b in batch))
            out += batch
        return out
