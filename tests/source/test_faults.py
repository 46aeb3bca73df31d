"""Faults the fake index did not inject before: a server error, a redirect loop, a read that
times out mid-file, a full disk, and a process killed while writing the cache. Each ends in a
RoutescopeError naming the cause (the CLI's exit 2, one line), and the cache stays consistent:
a later run succeeds, and a partial file is never read as complete."""

from __future__ import annotations

import errno
import subprocess
import sys
import textwrap
from pathlib import Path

import httpx
import pytest

from routescope.errors import RoutescopeError
from routescope.source import cache
from routescope.source.open import open_source
from tests.source.conftest import TOPK
from tests.source.fakeindex import FakeIndex


@pytest.mark.parametrize("status", [500, 502, 503])
def test_a_server_error_names_the_status_and_a_retry_succeeds(
    index: FakeIndex, status: int
) -> None:
    handle = index.handle
    failing = {"on": True}

    def flaky(request: httpx.Request) -> httpx.Response:
        if failing["on"] and "files.test" in str(request.url):
            return httpx.Response(status)
        return handle(request)

    index.handle = flaky  # type: ignore[method-assign]
    with pytest.raises(RoutescopeError) as err:
        tree = open_source("fw==1.0", client=index.client(), progress=False)
        tree.read_bytes("fw/layers/topk.py")
    assert str(status) in err.value.message
    failing["on"] = False  # the index recovers: nothing half-written is in the way
    tree = open_source("fw==1.0", client=index.client(), progress=False)
    assert tree.read_bytes("fw/layers/topk.py") == TOPK


def test_a_redirect_loop_is_an_error_not_a_hang(index: FakeIndex) -> None:
    def loop(request: httpx.Request) -> httpx.Response:
        if "files.test" in str(request.url):
            return httpx.Response(302, headers={"location": str(request.url)})
        return FakeIndex.handle(index, request)

    index.handle = loop  # type: ignore[method-assign]
    with pytest.raises(RoutescopeError):
        tree = open_source("fw==1.0", client=index.client(), progress=False)
        tree.read_bytes("fw/layers/topk.py")


def test_a_read_timeout_mid_file_names_the_timeout(index: FakeIndex) -> None:
    opened = open_source("fw==1.0", client=index.client(), progress=False)  # listing cached
    del opened

    def slow(request: httpx.Request) -> httpx.Response:
        if "files.test" in str(request.url):
            raise httpx.ReadTimeout("simulated read timeout", request=request)
        return FakeIndex.handle(index, request)

    index.handle = slow  # type: ignore[method-assign]
    tree = open_source("fw==1.0", client=index.client(), progress=False)
    with pytest.raises(RoutescopeError) as err:
        tree.read_bytes("fw/layers/topk.py")
    assert "timeout" in err.value.message.lower() or "timed out" in err.value.message.lower()


def test_a_full_disk_is_an_error_and_leaves_no_partial_file(
    index: FakeIndex, tmp_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import routescope.fsutil as fsutil

    real_fdopen = fsutil.os.fdopen

    class Full:
        def __init__(self, fd: int, mode: str) -> None:
            self.fh = real_fdopen(fd, mode)

        def __enter__(self) -> Full:
            return self

        def __exit__(self, *exc: object) -> None:
            self.fh.close()

        def write(self, data: bytes) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

        def flush(self) -> None: ...

        def fileno(self) -> int:
            return self.fh.fileno()

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fsutil.os, "fdopen", Full)
        with pytest.raises(RoutescopeError) as err:
            tree = open_source("fw==1.0", client=index.client(), progress=False)
            tree.read_bytes("fw/layers/topk.py")
    assert "space" in err.value.message.lower()
    assert not [p for p in tmp_cache.rglob("*.tmp")]  # nothing half-written stays
    tree = open_source("fw==1.0", client=index.client(), progress=False)
    assert tree.read_bytes("fw/layers/topk.py") == TOPK


def test_a_process_killed_mid_write_leaves_the_cache_readable(tmp_cache: Path) -> None:
    """A writer killed between writing its temporary file and renaming it: readers never see the
    partial file, and the next write of the same entry succeeds."""
    target = cache.project_path("fw")
    script = textwrap.dedent(f"""
        import os, signal, routescope.fsutil as f
        def die(src, dst):
            os.kill(os.getpid(), signal.SIGKILL)
        os.replace = die
        f.atomic_write_bytes(__import__("pathlib").Path({str(target)!r}), b'{{"half": ')
    """)
    env = {"ROUTESCOPE_CACHE": str(tmp_cache), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, check=False, env=env)
    assert done.returncode == -9, done.stderr
    assert not target.exists()  # only the temporary file was written
    assert cache.read_json(target) is None  # so the entry reads as absent: fetched again
    cache.write_json(target, {"name": "fw"})
    assert cache.read_json(target) == {"name": "fw"}
