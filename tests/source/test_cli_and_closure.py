"""CLI commands in-process, seed closure, pip index settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from routescope.analysis.closure import Seeds, import_closure
from routescope.analysis.index import Index
from routescope.analysis.namespace import imported_modules, scan_imports
from routescope.cli import main
from routescope.source import open_source
from routescope.source.pipconf import index_url
from tests.source.conftest import FILES
from tests.source.fakeindex import FakeIndex


@pytest.fixture
def served(index: FakeIndex, monkeypatch: pytest.MonkeyPatch) -> FakeIndex:
    # the CLI makes its own client: hand it the fake index's transport
    monkeypatch.setattr("routescope.source.registry.make_client", index.client)
    return index


def test_show_prints_function_with_line_numbers(
    served: FakeIndex, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["source", "show", "fw==1.0", "fw.layers:select_experts"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1] == "# fw/layers/topk.py:6-9  (fw.layers.topk:select_experts)"
    assert out[2] == "6  def select_experts(x):"


def test_versions_mark_cached(served: FakeIndex, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["source", "versions", "fw"]) == 0
    assert capsys.readouterr().out.split("\n")[:2] == ["  1.0", "  1.2"]
    open_source("fw==1.2", client=served.client())
    assert main(["source", "versions", "fw", "--offline"]) == 0
    assert capsys.readouterr().out.split("\n")[:2] == ["  1.0", "* 1.2"]


def test_fetch_all_then_cache_info_and_clear(
    served: FakeIndex, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["source", "fetch", "fw==1.0", "--all"]) == 0
    assert f"{len(FILES)} all modules" in capsys.readouterr().out
    assert main(["cache", "info"]) == 0
    assert "fw==1.0" in capsys.readouterr().out
    assert main(["cache", "clear"]) == 0
    capsys.readouterr()
    assert main(["cache", "info"]) == 0
    assert "versions cached: none" in capsys.readouterr().out


def test_errors_exit_2_with_one_line(served: FakeIndex, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["source", "show", "fw==9.0", "fw.layers:select_experts"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("routescope: error: fw==9.0: no published version")
    assert err.count("\n") == 1


def test_graph_json(served: FakeIndex, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["source", "graph", "fw==1.0", "fw.layers.topk:select_experts", "--format", "json"])
        == 0
    )
    out = capsys.readouterr().out
    assert '"callee": "fw.layers.topk:fused"' in out
    assert '"callee": "fw.utils:is_cuda"' in out
    assert '"callee": "torch.topk"' in out


def test_closure_follows_imports_within_package(index: FakeIndex) -> None:
    tree = open_source("fw==1.0", client=index.client(), progress=False)
    seeds = Seeds("fw", "fw", ("fw.layers", "fw.gone"), ())
    closure = import_closure(Index(tree), seeds)
    assert closure.modules == ("fw", "fw.layers", "fw.layers.topk", "fw.utils")
    assert closure.missing_seeds == ("fw.gone",)


SOURCE = """
import os, a.b as ab
from . import sibling
from ..up import (x,  # comment
    y as z)
def f():
    from pkg.deep import thing
    import pkg.other
"""


def test_scan_imports_agrees_with_ast() -> None:
    import ast

    tree = ast.parse(SOURCE)
    assert scan_imports(SOURCE, "pkg.sub.mod", False) == imported_modules(
        tree, "pkg.sub.mod", False
    )


def test_index_url_from_env_and_pip_conf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    conf = tmp_path / "pip.conf"
    conf.write_text("[global]\nindex-url = https://mirror.example/simple/\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    assert index_url() == "https://mirror.example/simple"
    monkeypatch.setenv("PIP_INDEX_URL", "https://env.example/pypi/simple")
    assert index_url() == "https://env.example/pypi/simple"


def test_show_a_function_rebound_under_a_platform_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`def fused_topk` and, under `if _is_cpu:`, `fused_topk = fused_topk_cpu` (sglang 0.5.23,
    topk.py:1237 and :2389): the def is shown and the rebinding named, not "no such function"."""
    pkg = tmp_path / "fw"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "topk.py").write_text(
        "_is_cpu = False\n\n\ndef fused_topk(x):\n    return x\n\n\n"
        "def fused_topk_cpu(x):\n    return x\n\n\nif _is_cpu:\n    fused_topk = fused_topk_cpu\n"
    )
    assert main(["source", "show", str(tmp_path), "fw.topk:fused_topk"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1] == "# fw/topk.py:4-5  (fw.topk:fused_topk)"
    assert out[2] == "4  def fused_topk(x):"
    assert out[-1] == (
        "# fused_topk is also bound at fw/topk.py:13 (conditional): fused_topk = fused_topk_cpu"
    )
    assert main(["source", "show", str(tmp_path), "fw.topk:no_such"]) == 2
