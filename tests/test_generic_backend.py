"""What the release does with an architecture no registry list names (offline, with fakes):
each branch says what it read, and what it could not read is said, never guessed."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from routescope.analysis.phases import generic
from routescope.errors import RoutescopeError
from routescope.source.tree import Metadata

GENERIC = {
    "function": "fw.loader:resolve_generic",
    "serves": "its generic backend",
    "library": "lib",
    "library_module": "lib/models/{model_type}/modeling_{model_type}.py",
    "library_registry": "lib/models/auto/modeling_auto.py",
}
MODELING = "import torch\n\n\nclass Other:\n    pass\n\n\nclass ToyForCausalLM(Other):\n    pass\n"


def _tree(pins: dict[str, str]) -> Any:
    meta = Metadata("fw", "1.0", None, tuple(pins.values()))  # Requires-Dist lines
    return SimpleNamespace(origin="pypi:fw==1.0", metadata=lambda: meta)


def _engine(resolver: Any) -> Any:
    def find_function(name: str) -> Any:
        if isinstance(resolver, Exception):
            raise resolver
        return resolver

    return SimpleNamespace(index=SimpleNamespace(find_function=find_function))


RESOLVER = SimpleNamespace(relpath="fw/loader.py", line=27)


@pytest.fixture
def library(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    files: dict[str, str] = {}

    def open_published(name: str, version: str, **_: Any) -> Any:
        if not files:
            raise RoutescopeError(f"{name}=={version}", "package index unreachable")
        return SimpleNamespace(files=lambda: sorted(files),
                               read_bytes=lambda rel: files[rel].encode())  # fmt: skip

    import routescope.source.open as opener

    monkeypatch.setattr(opener, "open_published", open_published)
    return files


def _said(resolver: Any, pins: dict[str, str], remote: str | None = None) -> str:
    return generic.generic_backend(_tree(pins), _engine(resolver), GENERIC, "ToyForCausalLM",
                                  "toy-moe", remote)  # fmt: skip


def test_the_class_is_found_where_the_library_defines_it(library: dict[str, str]) -> None:
    library["lib/models/toy_moe/modeling_toy_moe.py"] = MODELING
    said = _said(RESOLVER, {"lib": "lib==2.0"})
    assert (
        "serves it through its generic backend (fw.loader:resolve_generic, fw/loader.py:27" in said
    )
    assert "lib==2.0 lib/models/toy_moe/modeling_toy_moe.py:8" in said


def test_a_library_without_the_class_cannot_load_it(library: dict[str, str]) -> None:
    library["lib/models/other/modeling_other.py"] = MODELING
    library["lib/models/auto/modeling_auto.py"] = 'NAMES = [("other", "OtherForCausalLM")]\n'
    said = _said(RESOLVER, {"lib": "lib==2.0"})
    assert said.endswith(
        "has no lib/models/toy_moe/modeling_toy_moe.py and names no ToyForCausalLM in "
        "lib/models/auto/modeling_auto.py: the release cannot load this model"
    )
    # named by the auto mappings but kept elsewhere: not located, so nothing is claimed
    library["lib/models/auto/modeling_auto.py"] = 'NAMES = [("toy", "ToyForCausalLM")]\n'
    assert "not checked: lib==2.0 has no lib/models/toy_moe" in _said(RESOLVER, {"lib": "lib==2.0"})
    library["lib/models/auto/modeling_auto.py"] = "NAMES = []\n"

    remote = _said(RESOLVER, {"lib": "lib==2.0"}, remote="modeling_toy.ToyModel")
    assert "auto_map AutoModel = modeling_toy.ToyModel" in remote and "never runs" in remote


def test_what_could_not_be_read_is_not_guessed(library: dict[str, str]) -> None:
    unread = _said(RESOLVER, {"lib": "lib==2.0"})  # the library's index is unreachable
    assert "(not checked: lib==2.0 not read: package index unreachable)" in unread
    assert "if lib, as the server has it, defines the class" in unread
    unpinned = _said(RESOLVER, {"lib": "lib>=2"}, remote="m.M")
    assert "pins no exact lib version" in unpinned and "or the checkpoint's auto_map" in unpinned


def test_a_release_without_the_resolver_or_whose_source_fails(library: dict[str, str]) -> None:
    assert "has no resolver fw.loader:resolve_generic" in _said(None, {})
    failed = _said(RoutescopeError("fw==1.0", "not cached, and --offline"), {})
    assert failed.endswith("could not be read: not cached, and --offline")


def test_the_library_block_is_the_one_class_that_sets_the_replaced_child(tmp_path: Any) -> None:
    """The backend replaces a block's `experts` child: the library block is the class whose
    constructor sets it; none, or several, is said (which ones), never a guess."""
    from routescope.analysis.engine.core import Engine
    from routescope.analysis.engine.facts import Facts
    from routescope.analysis.phases.library import _block_class
    from tests.engine.test_engine_synthetic import make_tree

    one = """
import torch
from torch import nn


class Experts(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.w = nn.Parameter(torch.empty(8, 4, 4))


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.experts = Experts(config)
        self.gate = nn.Linear(4, 8)
"""
    two = (
        one
        + """

class OtherBlock(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.experts: nn.Module = Experts(config)
"""
    )
    engine = Engine(make_tree(tmp_path, {"one.py": one, "two.py": two}), Facts(), None)
    found = _block_class(engine, "fw.one", "experts")
    assert not isinstance(found, str) and found.qualname == "fw.one:Block"
    said = _block_class(engine, "fw.two", "experts")
    assert said == "fw.two has 2 classes that set self.experts (Block, OtherBlock), not one"
    assert _block_class(engine, "fw.one", "shared") == (
        "fw.one has 0 classes that set self.shared (none), not one"
    )
