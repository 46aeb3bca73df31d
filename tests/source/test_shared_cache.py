"""Two processes sharing one cache directory fetch the same wheel at the same moment."""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import time
from pathlib import Path

from routescope.analysis.closure import Seeds, import_closure
from routescope.analysis.index import Index
from routescope.source import open_source
from routescope.source.cache import source_root
from tests.source.conftest import FILES
from tests.source.fakeindex import INDEX, FakeIndex, build_wheel

SEEDS = Seeds("fw", "fw", ("fw.layers.topk",), ())


def fetch_in_child(cache: str, wheel: bytes, start: object) -> dict[str, str]:
    """Run in a fresh process: open fw==1.0 through a fake index, fetch the closure and all."""
    os.environ.update(ROUTESCOPE_CACHE=cache, PIP_INDEX_URL=INDEX, PIP_EXTRA_INDEX_URL="")
    fake = FakeIndex(on_request=lambda _: time.sleep(0.01))  # widen the window for a race
    fake.add("fw", "1.0", wheel)
    start.wait()  # type: ignore[attr-defined]
    tree = open_source("fw==1.0", client=fake.client(), progress=False)
    import_closure(Index(tree), SEEDS)
    tree.prefetch(FILES)
    return {p: hashlib.sha256(tree.read_bytes(p)).hexdigest() for p in FILES}


def test_two_processes_fill_one_cache_consistently(tmp_cache: Path) -> None:
    wheel = build_wheel("fw", "1.0", FILES)
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager, ctx.Pool(2) as pool:
        start = manager.Barrier(2)
        runs = [pool.apply_async(fetch_in_child, (str(tmp_cache), wheel, start)) for _ in "ab"]
        results = [run.get(timeout=60) for run in runs]
    want = {p: hashlib.sha256(data).hexdigest() for p, data in FILES.items()}
    assert results == [want, want]
    root = source_root()
    assert not [p for p in root.rglob("*") if p.name.endswith(".tmp")]  # no torn writes left
    for blob in (root / "blobs").rglob("*"):
        if blob.is_file():
            assert hashlib.sha256(blob.read_bytes()).hexdigest() == blob.name
    offline = open_source("fw==1.0", offline=True)
    assert {p: offline.read_bytes(p) for p in FILES} == FILES
