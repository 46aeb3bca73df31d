"""The one interface every source of framework code offers (wheel, checkout, installed)."""

from __future__ import annotations

import email.parser
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class Metadata:
    """A distribution's METADATA (core metadata), the fields routescope reads."""

    name: str
    version: str | None
    requires_python: str | None
    requires_dist: tuple[str, ...]

    def pinned(self, dist: str) -> str | None:
        """The exact version this distribution pins `dist` to (`name[extra]==V`), else None."""
        line = self.requirement(dist)
        m = re.search(r"===?\s*([A-Za-z0-9_.+!-]+)", line.split(";")[0]) if line else None
        return m.group(1) if m else None

    def requirement(self, dist: str) -> str | None:
        """The Requires-Dist line naming `dist` (e.g. "flashinfer-python==0.6.1"), or None."""
        want = normalize_name(dist)
        for line in self.requires_dist:
            m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", line)
            if m and normalize_name(m.group(1)) == want:
                return line
        return None


def normalize_name(name: str) -> str:
    """PEP 503 name normalisation: "SGLang_Kernel" -> "sglang-kernel"."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_metadata(text: str) -> Metadata:
    """Parse METADATA (RFC 822 headers) into a Metadata; missing fields become None or ()."""
    msg = email.parser.HeaderParser().parsestr(text)
    return Metadata(
        name=str(msg.get("Name", "") or ""),
        version=msg.get("Version"),
        requires_python=msg.get("Requires-Python"),
        requires_dist=tuple(str(v) for v in msg.get_all("Requires-Dist") or ()),
    )


@runtime_checkable
class SourceTree(Protocol):
    """A framework's Python source, read file by file without importing anything."""

    name: str  # distribution name, "sglang"
    version: str | None  # "0.5.23"; None for a checkout of unknown version
    origin: str  # "pypi:sglang==0.5.23 (sglang-0.5.23-py3-none-any.whl)", "checkout:/path"

    def files(self) -> list[str]:
        """Posix relpaths of every .py file, e.g. "sglang/srt/layers/moe/topk.py"."""
        ...

    def read_bytes(self, relpath: str) -> bytes:
        """The file's bytes (fetched on demand for a remote tree, verified where possible)."""
        ...

    def prefetch(self, relpaths: Iterable[str]) -> None:
        """Make these files available locally in as few transfers as possible."""
        ...

    def metadata(self) -> Metadata:
        """The distribution's parsed METADATA."""
        ...


class OverlaidTree:
    """A framework's source with one directory of another distribution's beside it (the
    library a generic backend takes a model's classes from: transformers' `models/dots1/`
    next to the serving framework). Everything else, its name, version, origin, metadata and
    fingerprint among it, is the framework's: the library's version is the one the framework
    pins, so the framework's fingerprint decides it."""

    def __init__(self, base: SourceTree, other: SourceTree, prefix: str) -> None:
        self.base, self.other, self.prefix = base, other, prefix.rstrip("/") + "/"
        self._own = [f for f in other.files() if f.startswith(self.prefix)]

    def __getattr__(self, name: str) -> object:
        return getattr(self.base, name)

    def files(self) -> list[str]:
        return [*self.base.files(), *self._own]

    def read_bytes(self, relpath: str) -> bytes:
        tree = self.other if relpath.startswith(self.prefix) else self.base
        return tree.read_bytes(relpath)

    def prefetch(self, relpaths: Iterable[str]) -> None:
        paths = list(relpaths)
        self.other.prefetch([p for p in paths if p.startswith(self.prefix)])
        self.base.prefetch([p for p in paths if not p.startswith(self.prefix)])

    def metadata(self) -> Metadata:
        return self.base.metadata()
