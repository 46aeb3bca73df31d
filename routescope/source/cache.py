"""The content-addressed source cache under cache_root()/source.

Layout (every write is atomic, so two processes may share it; same key, same bytes):
  blobs/ab/<sha256>                  member contents, named by their RECORD hash
  wheels/<wheel-sha256>.json         central directory + RECORD + METADATA of one wheel
  wheels/<wheel-sha256>.whl          the whole wheel: one that is mostly Python, or any wheel
                                     whose server refused ranges; every file is read from it
  releases/<name>/<version>.json     which wheel a published version resolved to
  projects/<name>.json               the index's last answer for a project (versions list)
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from routescope.errors import RoutescopeError
from routescope.fsutil import atomic_write_bytes, cache_root
from routescope.source.tree import normalize_name


def source_root() -> Path:
    return cache_root() / "source"


def blob_path(sha256: str) -> Path:
    return source_root() / "blobs" / sha256[:2] / sha256


def read_blob(sha256: str) -> bytes | None:
    """The cached bytes with this sha256, or None; a blob that fails its hash is dropped."""
    path = blob_path(sha256)
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if hashlib.sha256(data).hexdigest() != sha256:
        path.unlink(missing_ok=True)  # corrupt on disk: fetch it again
        return None
    return data


def _written(path: Path, data: bytes, durable: bool) -> None:
    try:
        atomic_write_bytes(path, data, durable=durable)
    except OSError as exc:  # a full disk, a read-only cache: say so, never half a file
        raise RoutescopeError(
            str(path.parent), f"cannot write the source cache: {exc.strerror or exc}"
        ) from None


def write_blob(sha256: str, data: bytes) -> None:
    # no fsync: read_blob checks the hash, so a blob torn by a crash is just fetched again
    _written(blob_path(sha256), data, durable=False)


def wheel_listing_path(wheel_sha256: str) -> Path:
    return source_root() / "wheels" / f"{wheel_sha256}.json"


def full_wheel_path(wheel_sha256: str) -> Path:
    return source_root() / "wheels" / f"{wheel_sha256}.whl"


def release_path(name: str, version: str) -> Path:
    return source_root() / "releases" / normalize_name(name) / f"{version}.json"


def project_path(name: str) -> Path:
    return source_root() / "projects" / f"{normalize_name(name)}.json"


def read_json(path: Path) -> dict[str, Any] | None:
    """A cached JSON document, or None when absent or unreadable (then it is fetched again)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def write_json(path: Path, data: dict[str, Any]) -> None:
    _written(path, json.dumps(data, sort_keys=True).encode("utf-8"), durable=True)


def cached_versions(name: str) -> list[str]:
    """Versions of `name` whose wheel listing is cached (usable offline)."""
    folder = source_root() / "releases" / normalize_name(name)
    out = []
    for path in folder.glob("*.json"):
        release = read_json(path)
        if release and wheel_listing_path(str(release.get("wheel_sha256"))).is_file():
            out.append(path.stem)
    return sort_versions(out)


def sort_versions(versions: list[str]) -> list[str]:
    """Sort by PEP 440 order; unparseable versions go first, in string order."""
    from packaging.version import InvalidVersion, Version

    def key(v: str) -> tuple[int, Version | str]:
        try:
            return (1, Version(v))
        except InvalidVersion:
            return (0, v)

    return sorted(versions, key=key)


@dataclass(frozen=True, slots=True)
class CacheInfo:
    """What `routescope cache info` shows: where, how big, which releases."""

    root: str
    total_bytes: int
    blob_count: int
    releases: tuple[tuple[str, str], ...]  # (name, version)


def cache_info() -> CacheInfo:
    """Summarise the source cache (size on disk, cached blobs, cached releases)."""
    root = source_root()
    total = blobs = 0
    if root.is_dir():
        for path in root.rglob("*"):
            if path.is_file():
                total += path.stat().st_size
                blobs += path.parent.parent.name == "blobs"
    releases = []
    rel_dir = root / "releases"
    if rel_dir.is_dir():
        for name_dir in sorted(rel_dir.iterdir()):
            releases += [(name_dir.name, v) for v in cached_versions(name_dir.name)]
    return CacheInfo(str(root), total, blobs, tuple(releases))


def clear_cache() -> int:
    """Delete the whole routescope cache (source, outlines of parsed files, reports); return the
    bytes freed."""
    root = cache_root()
    freed = sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) if root.is_dir() else 0
    for sub in ("source", "ast", "outlines", "traces"):
        shutil.rmtree(root / sub, ignore_errors=True)
    return freed
