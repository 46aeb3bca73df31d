"""Atomic writes give the file the mode any new file gets (0666 less the umask), or keep the
mode of the file they replace: a report or lock a teammate reads is not left 0600."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from routescope.fsutil import atomic_write_bytes, atomic_write_text


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_file_gets_the_umask_mode(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "report.md", "# report\n")
        os.umask(0o077)
        atomic_write_bytes(tmp_path / "private.json", b"{}")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "report.md") == 0o644
    assert _mode(tmp_path / "private.json") == 0o600
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_replaced_file_keeps_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "routescope.lock"
    path.write_text("old\n")
    path.chmod(0o664)
    atomic_write_text(path, "new\n")
    assert path.read_text() == "new\n" and _mode(path) == 0o664
