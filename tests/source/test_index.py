"""Index over a small synthetic tree: each case isolates one resolution rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from routescope.analysis.classes import mro
from routescope.analysis.index import Index
from routescope.errors import RoutescopeError
from routescope.source import open_source

TREE = {
    "pkg/__init__.py": "from .core.base import Base as PublicBase\nfrom .core import *\n",
    "pkg/core/__init__.py": "__all__ = ['helper']\nfrom pkg.core.util import helper\n",
    "pkg/core/base.py": (
        "import torch.nn as nn\n\n\nclass Base(nn.Module):\n"
        "    def forward(self, x):\n        return self.forward_cuda(x)\n\n"
        "    def forward_cuda(self, x):\n        return x\n"
    ),
    "pkg/core/util.py": "def helper():\n    return 1\n",
    "pkg/layers/mid.py": (
        "from ..core import base as b\n\n\nclass Mid(b.Base):\n"
        "    @staticmethod\n    @torch.compile(dynamic=True)\n"
        "    def forward_cuda(x):\n        return x\n"
    ),
    "pkg/layers/top.py": (
        "try:\n    from flashinfer import fused_topk\nexcept ImportError:\n    fused_topk = None\n"
        "if True:\n    from pkg.layers.mid import Mid\n\n\nclass Top(Mid, object):\n    pass\n\n\n"
        "def route():\n    from pkg.core.util import helper\n    return helper()\n"
    ),
    "pkg/broken.py": "def f(:\n",
}


@pytest.fixture
def index(tmp_path: Path) -> Index:
    for rel, text in TREE.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    (tmp_path / "pkg" / "latin.py").write_bytes(b"x = '\xe9'\n")
    (tmp_path / "pkg" / "cookie.py").write_bytes(b"# -*- coding: latin-1 -*-\nx = '\xe9'\n")
    return Index(open_source(str(tmp_path)))


def test_module_names_and_files(index: Index) -> None:
    assert index.relpath("pkg.core") == "pkg/core/__init__.py"
    assert index.relpath("pkg.layers.top") == "pkg/layers/top.py"
    assert index.module("pkg.nope") is None


def test_reexport_through_init_with_alias(index: Index) -> None:
    sym = index.resolve("pkg", "PublicBase")
    assert sym is not None and (sym.kind, sym.qualname) == ("class", "pkg.core.base:Base")
    assert sym.location == "pkg/core/base.py:4"


def test_star_import_and_absolute_reexport(index: Index) -> None:
    sym = index.resolve("pkg", "helper")
    assert sym is not None and sym.qualname == "pkg.core.util:helper"


def test_external_and_conditional_imports(index: Index) -> None:
    ext = index.resolve("pkg.layers.top", "fused_topk")
    # bound in try and in except: the last binding wins, flagged conditional
    assert ext is not None and ext.kind == "assignment" and ext.conditional
    torch = index.resolve("pkg.core.base", "nn")
    assert torch is not None and (torch.kind, torch.module) == ("external", "torch.nn")
    mid = index.resolve("pkg.layers.top", "Mid")
    assert mid is not None and mid.conditional and mid.qualname == "pkg.layers.mid:Mid"


def test_method_lookup_through_bases_across_modules(index: Index) -> None:
    top = index.find("pkg.layers.top:Top")
    assert top is not None
    assert [c.qualname for c in mro(index, top)] == [
        "pkg.layers.top:Top",
        "pkg.layers.mid:Mid",
        "pkg.core.base:Base",
    ]
    cuda = index.find_function("pkg.layers.top:Top.forward_cuda")
    assert cuda is not None and cuda.qualname == "pkg.layers.mid:Mid.forward_cuda"
    assert cuda.decorators == ("staticmethod", "torch.compile(dynamic=True)")
    fwd = index.find_function("pkg.layers.top:Top.forward")
    assert fwd is not None and fwd.location == "pkg/core/base.py:5"


def test_source_span_has_real_line_numbers(index: Index) -> None:
    span = index.source(index.require_function("pkg.layers.mid:Mid.forward_cuda"))
    assert (span.first, span.last) == (5, 8)  # decorators included
    assert span.numbered().splitlines()[2] == "7      def forward_cuda(x):"


def test_unparseable_and_non_utf8_are_recorded_not_fatal(index: Index) -> None:
    broken = index.module("pkg.broken")
    assert (
        broken is not None and broken.tree is None and "does not parse" in str(broken.unparseable)
    )
    latin = index.module("pkg.latin")
    assert latin is not None and latin.tree is None and "UTF-8" in str(latin.unparseable)
    cookie = index.module("pkg.cookie")  # a PEP 263 cookie is honoured, as Python does
    assert cookie is not None and cookie.tree is not None
    assert set(index.unparseable()) == {"pkg.broken", "pkg.latin"}
    assert index.find_function("pkg.core.util:helper") is not None


def test_missing_function_is_a_clear_error(index: Index) -> None:
    with pytest.raises(RoutescopeError, match="no such function"):
        index.require_function("pkg.core.util:nothing")
    with pytest.raises(RoutescopeError, match="no such module"):
        index.require_function("pkg.gone:f")
