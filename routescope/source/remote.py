"""Byte ranges of one remote file over HTTP, with a whole-file fallback when ranges are refused."""

from __future__ import annotations

import hashlib
import os
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from routescope.errors import RoutescopeError
from routescope.fsutil import atomic_write_bytes

if TYPE_CHECKING:  # (imported where a request is made: 50 ms a command need not spend)
    import httpx

_INHERITED: list[object] = []  # a forked copy's clients of its parent: kept open, never used
PARALLEL = 16  # concurrent range requests: each costs a round trip, not bandwidth
RETRIES = 2  # a truncated or reset transfer is tried again this many times


class RangeReader:
    """Read [start, end) slices of `url`; counts bytes and requests for the benchmark.

    If the server answers a range request with 200 (the whole file), or fetch_whole() asked
    for it, the file is kept at `fallback_path` (after checking `sha256`) and every later read
    is local; a reader made when it is kept reads it from there. `client` None: that file only.
    """

    def __init__(
        self,
        client: httpx.Client | None,
        url: str,
        *,
        subject: str,
        sha256: str | None,
        fallback_path: Path,
    ) -> None:
        self.client = client
        self._pid = os.getpid()  # the process whose connections `client` holds
        self.url = url
        self.subject = subject
        self.sha256 = sha256
        self.fallback_path = fallback_path
        self.bytes_transferred = 0
        self.requests = 0
        self._count = threading.Lock()  # reads run in several threads at once
        self._whole: bytes | None = None
        try:
            kept = fallback_path.read_bytes()
        except OSError:
            kept = None
        if kept is not None and (
            not self.sha256 or hashlib.sha256(kept).hexdigest() == self.sha256
        ):
            self._whole = kept
        elif kept is not None:  # torn or corrupt on disk: fetched again, as a blob is
            fallback_path.unlink(missing_ok=True)

    def tail(self, length: int) -> tuple[bytes, int, int]:
        """The last `length` bytes: (data, absolute start, file size)."""
        if self._whole is None:
            data, total = self._get(f"bytes=-{length}", None)
            if self._whole is None:
                return data, total - len(data), total
        assert self._whole is not None
        total = len(self._whole)
        start = max(0, total - length)
        return self._whole[start:], start, total

    def read(self, start: int, end: int) -> bytes:
        """Bytes [start, end) of the file."""
        if self._whole is None:
            data, _ = self._get(f"bytes={start}-{end - 1}", end - start)
            if self._whole is None:
                return data
        assert self._whole is not None
        return self._whole[start:end]

    def fetch_whole(self) -> bool:
        """Download the whole file in one request, keep it at `fallback_path` and serve every
        later read from it. False (nothing kept) when it does not match the index's sha256:
        the caller goes on with range requests, each member checked against RECORD."""
        if self._whole is not None:
            return True
        data, _ = self._get(None, None)
        if not self.sha256 or hashlib.sha256(data).hexdigest() != self.sha256:
            return False
        try:  # no fsync: a kept wheel torn by a crash fails its sha256 when read, and is dropped
            atomic_write_bytes(self.fallback_path, data, durable=False)
        except OSError as exc:  # a full disk, a read-only cache: say so, never half a file
            raise RoutescopeError(
                str(self.fallback_path.parent),
                f"cannot write the source cache: {exc.strerror or exc}",
            ) from None
        self._whole = data
        return True

    @property
    def whole(self) -> bool:
        """Whether every read is served from the whole file in memory."""
        return self._whole is not None

    def read_many(self, spans: list[tuple[int, int]]) -> list[bytes]:
        """Several spans, fetched concurrently; results in the order of `spans`."""
        if len(spans) <= 1 or self._whole is not None:
            return [self.read(s, e) for s, e in spans]
        with ThreadPoolExecutor(max_workers=PARALLEL) as pool:
            return list(pool.map(lambda span: self.read(*span), spans))

    def _get(self, range_header: str | None, expect: int | None) -> tuple[bytes, int]:
        """One GET: of `range_header`'s bytes (206), or with None of the whole file, returned
        unchecked (a 200 to a range request is checked and kept, as the fallback)."""
        import httpx

        headers = {"Range": range_header} if range_header is not None else {}
        if self.client is None:  # a reader of the kept whole file only (offline)
            raise RoutescopeError(self.subject, "not cached, and offline")
        if os.getpid() != self._pid:  # a forked copy (ahead.py): its parent's keep-alive
            from routescope.source.registry import make_client  # connections stay the parent's

            _INHERITED.append(self.client)  # (not closed: that would end them for the parent)
            self.client, self._pid = make_client(), os.getpid()
        for attempt in range(RETRIES + 1):
            try:
                resp = self.client.get(self.url, headers=headers)
            except httpx.TimeoutException:
                raise RoutescopeError(self.subject, f"timed out reading {self.url}") from None
            except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
                if attempt < RETRIES:
                    continue  # a dropped connection mid-body: the range is idempotent
                raise RoutescopeError(
                    self.subject, f"transfer interrupted, truncated data ({exc})"
                ) from None
            except httpx.TransportError as exc:
                raise RoutescopeError(
                    self.subject, f"cannot reach {self.url} ({type(exc).__name__})"
                ) from None
            with self._count:
                self.requests += 1
                self.bytes_transferred += len(resp.content)
            if resp.status_code == 200 and range_header is None:
                return resp.content, len(resp.content)
            if resp.status_code == 200:
                self._whole = self._load_whole(resp.content, save=True)
                return self._whole, len(self._whole)
            if resp.status_code != 206:
                raise RoutescopeError(self.subject, f"HTTP {resp.status_code} from {self.url}")
            m = re.fullmatch(r"bytes (\d+)-(\d+)/(\d+|\*)", resp.headers.get("content-range", ""))
            got = len(resp.content)
            if m and got == int(m.group(2)) - int(m.group(1)) + 1 and expect in (None, got):
                total = int(m.group(3)) if m.group(3) != "*" else int(m.group(2)) + 1
                return resp.content, total
            if attempt >= RETRIES:
                raise RoutescopeError(
                    self.subject, f"truncated or malformed range response from {self.url}"
                )
        raise AssertionError("unreachable")

    def _load_whole(self, data: bytes, save: bool = False) -> bytes:
        if self.sha256 and hashlib.sha256(data).hexdigest() != self.sha256:
            self.fallback_path.unlink(missing_ok=True)
            raise RoutescopeError(
                self.subject, f"downloaded wheel does not match the index's sha256 ({self.url})"
            )
        if save:
            atomic_write_bytes(self.fallback_path, data)
        return data
