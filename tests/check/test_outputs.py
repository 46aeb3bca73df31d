"""JUnit and SARIF from a real check, read by their consumers' tools (sarif-multitool, xml)."""

from __future__ import annotations

import json
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from routescope.cli import main
from routescope.errors import ExitCode
from tests.check.conftest import DSV3, GLM5, policy_text, write_policy
from tests.conftest import ROOT

pytestmark = pytest.mark.network
NODE = (
    ROOT / ".cache" / "node-sarif"
)  # git-ignored; its own prefix: npm prunes what a prefix's package.json lacks


def _multitool() -> Path:
    tool = NODE / "node_modules" / ".bin" / "sarif-multitool"
    if tool.exists():
        return NODE
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed: cannot install @microsoft/sarif-multitool")
    NODE.mkdir(parents=True, exist_ok=True)
    (NODE / "package.json").write_text('{"private": true}\n')
    done = subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "@microsoft/sarif-multitool@5.7.0"],
        cwd=NODE, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    if done.returncode != 0 or not tool.exists():
        pytest.skip(f"npm install @microsoft/sarif-multitool failed: {done.stderr[-500:]}")
    return NODE


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("check")
    rules = 'forbid_sink_kinds = ["torch_compile"]\nrequire_oea_insertable = true\n'
    path = write_policy(
        folder, policy_text([GLM5, DSV3], "sglang==0.5.12", ["sm120", "sm100"], rules)
    )
    sarif, junit = folder / "out.sarif", folder / "out.xml"
    code = main(
        [
            "check",
            "--policy",
            str(path),
            "--update-lock",
            "--sarif",
            str(sarif),
            "--junit",
            str(junit),
        ]
    )
    assert code == ExitCode.CHECK_FAILED
    return sarif, junit


def test_sarif_passes_the_official_validator(outputs: tuple[Path, Path]) -> None:
    sarif, _ = outputs
    node = _multitool()
    done = subprocess.run(
        ["npx", "--no-install", "sarif-multitool", "validate", str(sarif)],
        cwd=node, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    log = done.stdout + done.stderr
    assert done.returncode == 0 and "Analysis completed successfully" in log, log
    assert ": error " not in log, log


def test_sarif_has_a_code_flow_through_the_framework(outputs: tuple[Path, Path]) -> None:
    doc = json.loads(outputs[0].read_text())
    assert doc["version"] == "2.1.0"
    results = doc["runs"][0]["results"]
    forbid = [r for r in results if r["ruleId"] == "forbid-sink-kinds"]
    assert [r["properties"]["gpu"] for r in forbid] == ["sm120"]
    steps = forbid[0]["codeFlows"][0]["threadFlows"][0]["locations"]
    uris = [s["location"]["physicalLocation"]["artifactLocation"]["uri"] for s in steps]
    assert uris[-1] == "sglang/srt/layers/moe/topk.py"
    assert steps[-1]["location"]["message"]["text"].endswith("(torch_compile)")


def test_junit_has_one_testcase_per_model_gpu_rule(outputs: tuple[Path, Path]) -> None:
    root = ET.parse(outputs[1]).getroot()
    cases = root.findall("./testsuite/testcase")
    # models x GPUs x (selected-path, no-blockers, forbid, oea); no lock rule
    assert len(cases) == 2 * 2 * 4
    failed = sorted(
        (c.get("classname"), c.get("name")) for c in cases if c.find("failure") is not None
    )
    assert failed == [
        ("routescope.deepseek-ai--DeepSeek-V3", "sm100 oea-insertable"),
        ("routescope.zai-org--GLM-5", "sm100 oea-insertable"),
        ("routescope.zai-org--GLM-5", "sm120 forbid-sink-kinds"),
    ]
    assert root.get("tests") == "16" and root.get("failures") == "3" and root.get("errors") == "0"
