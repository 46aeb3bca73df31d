"""Atomic file writes and the cache root, shared by every module that writes to disk."""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path


def atomic_write_bytes(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Write `data` to `path` so that readers see the old file or the whole new one, never half.

    durable=False skips the fsync: for files checked on every read (a content-addressed blob),
    where a crash leaving an empty file only costs a refetch.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _new_temp(path)
    try:
        with os.fdopen(fd, "wb") as fh:  # (the descriptor is closed however this ends)
            # a report, lock or JUnit file keeps the mode it had; a new one has the mode any
            # new file gets here (0666 less the umask, applied by the system at creation)
            with contextlib.suppress(FileNotFoundError):
                os.fchmod(fh.fileno(), path.stat().st_mode & 0o7777)
            fh.write(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)


def _new_temp(path: Path) -> tuple[int, str]:
    """A new file beside `path`, open for writing, created 0666 so the umask applies as it
    does to any new file (mkstemp's 0600 had to be widened by reading the umask, from
    /proc/self/status: a large share of a cold run's thousands of cache writes)."""
    for _ in range(100):
        tmp = str(path.parent / f".{path.name}.{secrets.token_hex(8)}.tmp")
        try:
            return os.open(tmp, _TEMP_FLAGS | getattr(os, "O_CLOEXEC", 0), 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no unused temporary name beside {path}")


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def cache_root() -> Path:
    """The cache directory: $ROUTESCOPE_CACHE, else the platform's user cache dir."""
    override = os.environ.get("ROUTESCOPE_CACHE")
    if override:
        return Path(override).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("routescope", appauthor=False))
