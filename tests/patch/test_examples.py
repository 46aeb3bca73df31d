"""examples/patches/ is what examples/patches/generate.py writes today."""

from __future__ import annotations

import importlib.util

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.network

spec = importlib.util.spec_from_file_location("gen", REPO / "examples" / "patches" / "generate.py")
assert spec is not None and spec.loader is not None
gen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen)


@pytest.mark.parametrize("name,config,version", gen.CASES, ids=[c[0] for c in gen.CASES])
def test_example_patch_is_current(
    name: str, config: str, version: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    committed = (REPO / "examples" / "patches" / name).read_text()
    assert committed == gen.render(config, version), "run python examples/patches/generate.py"
