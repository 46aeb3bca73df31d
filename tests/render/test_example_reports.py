"""examples/reports/ is what examples/reports/generate.py writes today."""

from __future__ import annotations

import pytest

from tests.conftest import REPO, load_script

pytestmark = pytest.mark.network

gen = load_script(REPO / "examples" / "reports" / "generate.py")


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
