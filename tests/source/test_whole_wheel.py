"""A wheel that is mostly Python is fetched whole, in one request, and kept: every file is then
read from it (no blob per file), offline too; one that is mostly binary keeps range requests."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import httpx
import pytest

from routescope.analysis.closure import import_closure
from routescope.analysis.index import Index
from routescope.source import open_source
from routescope.source.cache import blob_path, full_wheel_path
from routescope.source.fetch import fetch
from routescope.tracecache import prefetch_closure
from tests.source.conftest import FILES, TOPK
from tests.source.fakeindex import FakeIndex, build_wheel
from tests.source.test_stream import CLOSURE, SEEDS

# a module of real size beside the fixture's few lines: zip headers no longer outweigh Python
BIG = "".join(f"def f{i}(x):\n    return x * {i} + {i * 7919 % 104729}\n\n"
              for i in range(2000)).encode()  # fmt: skip
PY = {**FILES, "fw/big.py": BIG}


@pytest.fixture
def python_wheel(index: FakeIndex) -> FakeIndex:
    index.add("fw", "3.0", build_wheel("fw", "3.0", PY))
    return index


def _kept(index: FakeIndex, version: str = "3.0") -> Path:
    data = index.wheels["fw"][f"fw-{version}-py3-none-any.whl"]
    return full_wheel_path(hashlib.sha256(data).hexdigest())


def test_mostly_python_wheel_is_fetched_whole_in_one_request(python_wheel: FakeIndex) -> None:
    index = python_wheel
    tree = open_source("fw==3.0", client=index.client(), progress=False)
    assert tree.whole_is_cheaper()
    before = len(index.requests)
    prefetch_closure(tree, Index(tree))
    sent = index.requests[before:]
    assert len(sent) == 1 and "bytes=" not in sent[0]  # one GET, no Range header
    assert _kept(index).is_file()
    assert tree.read_bytes("fw/layers/topk.py") == TOPK
    assert not blob_path(hashlib.sha256(TOPK).hexdigest()).exists()  # the wheel is the cache


def test_a_kept_wheel_serves_every_file_offline_without_a_request(python_wheel: FakeIndex) -> None:
    index = python_wheel
    tree = open_source("fw==3.0", client=index.client(), progress=False)
    prefetch_closure(tree, Index(tree))
    before = len(index.requests)
    offline = open_source("fw==3.0", offline=True)
    assert import_closure(Index(offline), SEEDS).modules == CLOSURE
    assert {p: offline.read_bytes(p) for p in PY} == PY
    assert len(index.requests) == before


def test_mostly_binary_wheel_keeps_range_requests(index: FakeIndex) -> None:
    binary = os.urandom(400_000)  # incompressible: the wheel is mostly this
    index.add("fw", "2.0", build_wheel("fw", "2.0", {**FILES, "fw/_C.so": binary}))
    tree = open_source("fw==2.0", client=index.client(), progress=False)
    assert not tree.whole_is_cheaper()
    before, served = len(index.requests), index.bytes_served
    prefetch_closure(tree, Index(tree))  # no seeds for "fw": nothing fetched, no error
    assert len(index.requests) == before and not _kept(index, "2.0").exists()
    assert import_closure(Index(tree), SEEDS).modules == CLOSURE
    assert all("bytes=" in r for r in index.requests[before:])
    assert index.bytes_served - served < len(binary) / 4


def test_a_whole_download_that_fails_its_sha256_falls_back_to_ranges(
    python_wheel: FakeIndex,
) -> None:
    index = python_wheel
    index.corrupt_name, index.corrupt_times = b"fw/layers/topk.py", 1  # the whole GET only
    tree = open_source("fw==3.0", client=index.client(), progress=False)
    prefetch_closure(tree, Index(tree))
    assert not _kept(index).exists()
    assert tree.read_bytes("fw/layers/topk.py") == TOPK  # by a range, checked against RECORD


def test_a_corrupt_kept_wheel_is_dropped_and_fetched_again(python_wheel: FakeIndex) -> None:
    index = python_wheel
    tree = open_source("fw==3.0", client=index.client(), progress=False)
    prefetch_closure(tree, Index(tree))
    kept = _kept(index)
    kept.write_bytes(kept.read_bytes()[:-10])  # torn on disk
    again = open_source("fw==3.0", client=index.client(), progress=False)
    assert again.read_bytes("fw/layers/topk.py") == TOPK
    assert not kept.exists()  # dropped; the file came by a range request
    assert index.requests[-1].split()[-1].startswith("bytes=")


def test_source_fetch_of_a_mostly_python_wheel_is_one_request(
    python_wheel: FakeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = python_wheel
    monkeypatch.setattr("routescope.analysis.closure.load_seeds", lambda name: SEEDS)
    report = fetch("fw==3.0", client=index.client(), progress=False)
    assert report.requests == 2  # the listing's tail, then the wheel
    assert report.modules >= len(CLOSURE)
    assert _kept(index).is_file()


def test_a_kept_wheel_dropped_as_torn_is_fetched_whole_again(python_wheel: FakeIndex) -> None:
    index = python_wheel
    tree = open_source("fw==3.0", client=index.client(), progress=False)
    prefetch_closure(tree, Index(tree))
    kept = _kept(index)
    kept.write_bytes(kept.read_bytes()[:-10])
    again = open_source("fw==3.0", client=index.client(), progress=False)
    before = len(index.requests)
    prefetch_closure(again, Index(again))  # the torn one is dropped, and the wheel fetched whole
    assert [r for r in index.requests[before:] if "bytes=" not in r] and kept.is_file()
    assert again.read_bytes("fw/layers/topk.py") == TOPK


def test_a_whole_download_that_fails_leaves_the_closure_by_ranges(
    python_wheel: FakeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = python_wheel

    def no_whole(request: httpx.Request) -> None:
        if "range" not in request.headers and request.url.path.endswith(".whl"):
            raise httpx.ReadTimeout("simulated: the link dropped", request=request)

    index.on_request = no_whole
    monkeypatch.setattr("routescope.analysis.closure.load_seeds", lambda name: SEEDS)
    report = fetch("fw==3.0", client=index.client(), progress=False)
    assert report.modules == len(CLOSURE) and not _kept(index).exists()
    assert blob_path(hashlib.sha256(TOPK).hexdigest()).is_file()  # by range requests


def test_a_closure_fetched_before_is_not_fetched_again_whole(
    python_wheel: FakeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cache filled by range requests (before wheels were kept) serves as it is."""
    index = python_wheel
    monkeypatch.setattr("routescope.analysis.closure.load_seeds", lambda name: SEEDS)
    with monkeypatch.context() as m:
        m.setattr("routescope.source.wheel.WheelTree.whole_is_cheaper", lambda self: False)
        tree = open_source("fw==3.0", client=index.client(), progress=False)
        prefetch_closure(tree, Index(tree))
    again = open_source("fw==3.0", client=index.client(), progress=False)
    before = len(index.requests)
    prefetch_closure(again, Index(again))
    assert len(index.requests) == before and not _kept(index).exists()
    assert again.read_bytes("fw/layers/topk.py") == TOPK
