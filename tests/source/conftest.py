from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.source.fakeindex import INDEX, FakeIndex, build_wheel

TOPK = b'''"""routing"""
import torch
from fw.utils import is_cuda


def select_experts(x):
    if is_cuda():
        return fused(x)
    return torch.topk(x, 2)


def fused(x):
    return x
'''

FILES = {
    "fw/__init__.py": b"",
    "fw/utils.py": b"def is_cuda():\n    return True\n",
    "fw/layers/__init__.py": b"from .topk import select_experts\n",
    "fw/layers/topk.py": TOPK,
    "fw/unused.py": b"X = 1\n" * 200,
}


@pytest.fixture
def tmp_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache and the fake index as pip's index-url, for this test only."""
    monkeypatch.setenv("ROUTESCOPE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_INDEX_URL", INDEX)
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "")  # not the host's pip.conf extras
    return tmp_path / "cache"


@pytest.fixture
def index(tmp_cache: Path) -> Iterator[FakeIndex]:
    fake = FakeIndex()
    fake.add("fw", "1.0", build_wheel("fw", "1.0", FILES, requires=("kern==0.3.1",)))
    fake.add("fw", "1.2", build_wheel("fw", "1.2", FILES))
    yield fake
