"""The pipelined closure fetch: same modules as a local walk, retries, offline, request count."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from routescope.analysis.closure import Seeds, import_closure
from routescope.analysis.index import Index
from routescope.errors import RoutescopeError
from routescope.source import open_source
from routescope.source.cache import blob_path
from tests.source.conftest import FILES, TOPK
from tests.source.fakeindex import FakeIndex

SEEDS = Seeds("fw", "fw", ("fw.layers.topk",), ())
CLOSURE = ("fw", "fw.layers", "fw.layers.topk", "fw.utils")


def test_wheel_closure_equals_the_checkout_closure(index: FakeIndex, tmp_path: Path) -> None:
    for rel, data in FILES.items():
        (tmp_path / "src" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "src" / rel).write_bytes(data)
    local = import_closure(Index(open_source(str(tmp_path / "src"))), SEEDS)
    remote = import_closure(Index(open_source("fw==1.0", client=index.client())), SEEDS)
    assert local == remote
    assert remote.modules == CLOSURE and remote.rounds == 2


def test_one_request_for_the_closure_after_the_listing(index: FakeIndex) -> None:
    tree = open_source("fw==1.0", client=index.client(), progress=False)
    before = len(index.requests)
    import_closure(Index(tree), SEEDS)
    assert len(index.requests) - before == 1  # the whole small wheel lies within one gap


@pytest.mark.parametrize(
    ("times", "fails"),
    [pytest.param(1, False, id="corrupted once: fetched again"), pytest.param(9, True, id="twice")],
)
def test_corrupted_span_in_the_closure(index: FakeIndex, times: int, fails: bool) -> None:
    index.corrupt_name, index.corrupt_times = b"fw/layers/topk.py", times
    tree = open_source("fw==1.0", client=index.client(), progress=False)
    if fails:
        with pytest.raises(RoutescopeError, match="does not match its RECORD sha256"):
            import_closure(Index(tree), SEEDS)
        assert not blob_path(hashlib.sha256(TOPK).hexdigest()).exists()
    else:
        assert import_closure(Index(tree), SEEDS).modules == CLOSURE


def test_offline_closure_needs_the_cache(index: FakeIndex) -> None:
    open_source("fw==1.0", client=index.client(), progress=False)  # listing only
    with pytest.raises(RoutescopeError, match=r"not cached .*routescope source fetch fw==1\.0"):
        import_closure(Index(open_source("fw==1.0", offline=True)), SEEDS)
    import_closure(Index(open_source("fw==1.0", client=index.client())), SEEDS)
    assert import_closure(Index(open_source("fw==1.0", offline=True)), SEEDS).modules == CLOSURE
