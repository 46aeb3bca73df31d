"""examples/patches/ is what examples/patches/generate.py writes today."""

from __future__ import annotations

import pytest

from tests.conftest import REPO, load_script

pytestmark = pytest.mark.network

gen = load_script(REPO / "examples" / "patches" / "generate.py")


@pytest.mark.parametrize("name,config,framework", gen.CASES, ids=[c[0] for c in gen.CASES])
def test_example_patch_is_current(
    name: str, config: str, framework: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    committed = (REPO / "examples" / "patches" / name).read_text()
    assert committed == gen.render(config, framework), "run python examples/patches/generate.py"
