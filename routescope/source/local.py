"""Source trees already on disk: a checkout or unpacked tree, and an installed distribution."""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata as im
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from routescope.errors import RoutescopeError
from routescope.source.tree import Metadata, normalize_name, parse_metadata

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

SKIP_DIRS = {".git", "__pycache__", ".tox", ".venv", "node_modules", "build", "dist"}


class CheckoutTree:
    """A directory of Python packages (a git checkout, an unpacked sdist or wheel)."""

    def __init__(self, path: Path) -> None:
        if not path.is_dir():
            raise RoutescopeError(str(path), "not a directory")
        self._project = _pyproject(path)
        self.root = _package_root(path)
        self.name, self.version = self._identify(path)
        self.origin = f"checkout:{path}"
        self._files = sorted(_walk_py(self.root))
        if not self._files:
            raise RoutescopeError(str(path), "no Python files under this directory")

    def files(self) -> list[str]:
        return list(self._files)

    def read_bytes(self, relpath: str) -> bytes:
        try:
            return (self.root / relpath).read_bytes()
        except OSError as exc:
            raise RoutescopeError(self.origin, f"cannot read {relpath}: {exc.strerror}") from None

    def prefetch(self, relpaths: Iterable[str]) -> None:
        """Nothing to do: the files are local."""

    def metadata(self) -> Metadata:
        for info in sorted(self.root.glob("*.dist-info/METADATA")):
            return parse_metadata(info.read_text(encoding="utf-8", errors="replace"))
        project = self._project.get("project", {})
        return Metadata(
            name=self.name,
            version=self.version,
            requires_python=project.get("requires-python"),
            requires_dist=tuple(project.get("dependencies", ())),
        )

    def _identify(self, path: Path) -> tuple[str, str | None]:
        project = self._project.get("project", {})
        meta = next(iter(sorted(self.root.glob("*.dist-info/METADATA"))), None)
        if meta is not None:
            parsed = parse_metadata(meta.read_text(encoding="utf-8", errors="replace"))
            return normalize_name(parsed.name), parsed.version
        if "name" in project:
            version = project.get("version")  # None when dynamic (setuptools_scm)
            return normalize_name(project["name"]), version
        packages = sorted(p.name for p in self.root.iterdir() if (p / "__init__.py").is_file())
        return (normalize_name(packages[0]) if packages else path.name), None


def _pyproject(path: Path) -> dict[str, Any]:
    for candidate in (path / "pyproject.toml", path / "python" / "pyproject.toml"):
        try:
            data: dict[str, Any] = tomllib.loads(candidate.read_text(encoding="utf-8"))
            return data
        except (OSError, tomllib.TOMLDecodeError):
            continue
    return {}


def _package_root(path: Path) -> Path:
    """Where the top-level packages live: the path itself, or python/ or src/ below it."""
    for root in (path, path / "python", path / "src"):
        if root.is_dir() and any((p / "__init__.py").is_file() for p in root.iterdir()):
            return root
    return path


def _walk_py(root: Path) -> Iterable[str]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS and not d.startswith(".")]
        rel = Path(dirpath).relative_to(root)
        for f in filenames:
            if f.endswith(".py"):
                yield (rel / f).as_posix()


class InstalledTree:
    """An installed distribution, read through its RECORD (importlib.metadata), never imported."""

    def __init__(self, dist: str) -> None:
        try:
            self._dist = im.distribution(dist)
        except im.PackageNotFoundError:
            raise RoutescopeError(dist, "not installed in this Python environment") from None
        self.name = normalize_name(self._dist.metadata["Name"] or dist)
        self.version: str | None = self._dist.version
        self._entries = {
            str(f.as_posix()): f
            for f in self._dist.files or ()
            if f.suffix == ".py" and not str(f).startswith("..")
        }
        self.origin = f"installed:{self.name}=={self.version} ({self._dist.locate_file('')})"
        if not self._entries:
            raise RoutescopeError(
                dist, "installed without Python files in RECORD (editable?); use its checkout path"
            )

    def files(self) -> list[str]:
        return sorted(self._entries)

    def read_bytes(self, relpath: str) -> bytes:
        entry = self._entries.get(relpath)
        if entry is None:
            raise RoutescopeError(self.origin, f"no file {relpath}")
        data = Path(str(self._dist.locate_file(entry))).read_bytes()
        if entry.hash is not None and entry.hash.mode == "sha256":
            got = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            if got != entry.hash.value:
                raise RoutescopeError(self.origin, f"{relpath} differs from its RECORD hash")
        return data

    def prefetch(self, relpaths: Iterable[str]) -> None:
        """Nothing to do: the files are local."""

    def metadata(self) -> Metadata:
        return parse_metadata(str(self._dist.read_text("METADATA") or ""))
