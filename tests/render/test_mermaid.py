"""The Mermaid block parses with mermaid-cli (as GitHub would); skipped when the tool is absent."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from routescope.render.markdown import render
from tests.verdict.conftest import report

TOOLS = Path(__file__).resolve().parents[2] / ".cache" / "node"  # npm install --prefix here
MMDC = TOOLS / "node_modules" / ".bin" / "mmdc"
CHROMIUM = shutil.which("chromium")


@pytest.mark.network
@pytest.mark.skipif(
    not MMDC.exists() or CHROMIUM is None,
    reason="needs chromium (apt-get install -y chromium) and mermaid-cli "
    "(PUPPETEER_SKIP_DOWNLOAD=1 npm install --prefix .cache/node "
    "@mermaid-js/mermaid-cli)",
)
@pytest.mark.parametrize(
    ("config", "version", "gpu"),
    [
        ("zai-org--GLM-5.json", "0.5.9", "sm120"),
        # a router that hands its logits to the experts layer: two chains and a dotted handoff
        ("Qwen--Qwen3-30B-A3B.json", "0.5.23", "sm100"),
    ],
)
def test_mermaid_block_parses(tmp_path: Path, config: str, version: str, gpu: str) -> None:
    md = render(report(f"examples/configs/{config}", version, gpu))
    blocks = re.findall(r"```mermaid\n(.*?)```", md, re.S)
    assert len(blocks) == 1
    (tmp_path / "d.mmd").write_text(blocks[0])
    cfg = {"executablePath": CHROMIUM, "args": ["--no-sandbox", "--headless", "--disable-gpu"]}
    (tmp_path / "p.json").write_text(json.dumps(cfg))
    run = subprocess.run(
        [
            str(MMDC),
            "-p",
            str(tmp_path / "p.json"),
            "-i",
            str(tmp_path / "d.mmd"),
            "-o",
            str(tmp_path / "d.svg"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "d.svg").read_text().startswith("<svg")
