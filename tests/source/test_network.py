"""Real published wheels from the package index (cached under .cache/ between runs)."""

from __future__ import annotations

import hashlib
import io
import zipfile
from pathlib import Path

import httpx
import pytest

from routescope.analysis.closure import import_closure, load_seeds
from routescope.analysis.index import Index
from routescope.cli import main
from routescope.source import open_source
from routescope.source.registry import SIMPLE_JSON
from tests.conftest import REPO

pytestmark = pytest.mark.network
WHEELS = REPO / ".cache" / "wheels"


def full_wheel(name: str, version: str) -> zipfile.ZipFile:
    """The whole wheel routescope chose, downloaded independently (plain GET, no ranges)."""
    tree = open_source(f"{name}=={version}", progress=False)
    filename = tree.origin.split("(")[1].rstrip(")")
    path = WHEELS / filename
    if not path.is_file():
        listing = httpx.get(
            f"https://pypi.org/simple/{name}/", headers={"Accept": SIMPLE_JSON}, timeout=30
        ).json()
        entry = next(f for f in listing["files"] if f["filename"] == filename)
        data = httpx.get(entry["url"], timeout=120, follow_redirects=True).content
        assert hashlib.sha256(data).hexdigest() == entry["hashes"]["sha256"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return zipfile.ZipFile(io.BytesIO(Path(path).read_bytes()))


@pytest.mark.parametrize("version", ["0.5.9", "0.5.23"])
def test_sglang_closure_matches_the_real_wheel(version: str) -> None:
    tree = open_source(f"sglang=={version}", progress=False)
    closure = import_closure(Index(tree), load_seeds("sglang"))
    assert "sglang.srt.layers.moe.topk" in closure.modules
    real = full_wheel("sglang", version)
    index = Index(tree)
    for mod in closure.modules:
        relpath = index.relpath(mod)
        assert relpath is not None
        assert tree.read_bytes(relpath) == real.read(relpath), relpath


def test_show_biased_grouped_topk_gpu_line_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "source",
                "show",
                "sglang==0.5.9",
                "sglang.srt.layers.moe.topk:biased_grouped_topk_gpu",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out.splitlines()
    real = full_wheel("sglang", "0.5.9").read("sglang/srt/layers/moe/topk.py").decode().splitlines()
    first = int(out[1].split(":")[1].split("-")[0])
    assert real[first - 1].startswith("def biased_grouped_topk_gpu(")
    for line in out[2:]:
        number, _, text = line.strip().partition("  ")
        assert real[int(number) - 1].strip() == text.strip()


def test_vllm_router_closure_and_metadata() -> None:
    tree = open_source("vllm==0.33.0", progress=False)
    index = Index(tree)
    closure = import_closure(index, load_seeds("vllm"))
    assert not closure.missing_seeds
    assert "vllm.model_executor.layers.fused_moe.router.base_router" in closure.modules
    sym = index.find_function(
        "vllm.model_executor.layers.fused_moe.router.base_router:BaseRouter.select_experts"
    )
    assert sym is not None and sym.relpath is not None
    assert tree.metadata().requirement("torch") is not None
    assert Index(open_source("vllm==0.33.0", offline=True)).module("vllm.envs") is not None
