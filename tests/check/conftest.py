"""Helpers for `routescope check` tests: write a policy into a scratch folder, run in-process."""

from __future__ import annotations

from pathlib import Path

import pytest

from routescope.cli import main
from tests.conftest import CONFIGS

GLM5 = str(CONFIGS / "zai-org--GLM-5.json")
DSV3 = str(CONFIGS / "deepseek-ai--DeepSeek-V3.json")
QWEN3 = str(CONFIGS / "Qwen--Qwen3-30B-A3B.json")


def policy_text(
    models: list[str], framework: str, gpus: list[str], rules: str = "", tp: int = 8
) -> str:
    listed = "".join(f'  "{m}",\n' for m in models)
    text = (
        f'models = [\n{listed}]\nframework = "{framework}"\ngpus = {gpus!r}\ntp = {tp}\n'.replace(
            "'", '"'
        )
    )
    return text + (f"\n[rules]\n{rules}" if rules else "")


def write_policy(folder: Path, text: str) -> Path:
    path = folder / "routescope.toml"
    path.write_text(text)
    return path


@pytest.fixture(autouse=True)
def _not_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err
