"""examples/reports/ is what examples/reports/generate.py writes today."""

from __future__ import annotations

import importlib.util

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.network

spec = importlib.util.spec_from_file_location("gen", REPO / "examples" / "reports" / "generate.py")
assert spec is not None and spec.loader is not None
gen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen)


@pytest.mark.parametrize("name,configs,version,gpus", gen.CASES, ids=[c[0] for c in gen.CASES])
def test_example_report_is_current(
    name: str,
    configs: tuple[str, ...],
    version: str,
    gpus: tuple[str, ...],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(REPO)
    committed = (REPO / "examples" / "reports" / name).read_text()
    assert committed == gen.render(configs, version, gpus), (
        "run python examples/reports/generate.py"
    )
