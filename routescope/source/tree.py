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
