"""`routescope simulate MODEL` on real config.json files: the spec sets routing and byte sizes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")

from routescope.cli import main

CONFIGS = Path(__file__).resolve().parents[2] / "examples" / "configs"
MIB = 1024 * 1024

# model file -> (N, k, n_group, topk_group, scoring, routed expert MiB, shared MiB), bf16:
# an expert is 3 * hidden * moe_intermediate weights of 2 bytes.
MODELS = [
    pytest.param(
        "Qwen--Qwen3-30B-A3B.json", (128, 8, 1, 1, "softmax", 9.0, 0.0), id="Qwen3-30B-A3B"
    ),
    pytest.param(
        "deepseek-ai--DeepSeek-V3.json",
        (256, 8, 8, 4, "sigmoid", 84.0, 84.0),  # 3*7168*2048*2; one shared expert of that size
        id="DeepSeek-V3 grouped sigmoid+bias shared",
    ),
    pytest.param(
        "zai-org--GLM-5.json", (256, 8, 1, 1, "sigmoid", 72.0, 72.0), id="GLM-5"
    ),  # 3*6144*2048*2
    pytest.param(
        "Qwen--Qwen1.5-MoE-A2.7B.json",
        (60, 4, 1, 1, "softmax", 16.5, 66.0),  # shared_expert_intermediate_size 5632
        id="Qwen1.5-MoE shared_expert_intermediate_size",
    ),
]
ARGS = ["--gpu", "sm120", "--batch", "1,8,16", "--k0", "3", "--steps", "10"]


@pytest.mark.parametrize(("name", "want"), MODELS)
def test_json_from_config(
    name: str, want: tuple[object, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["simulate", str(CONFIGS / name), *ARGS, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    n, k, n_group, topk_group, scoring, expert_mib, shared_mib = want
    got = (data["num_experts"], data["top_k"], data["n_group"], data["topk_group"])
    assert got == (n, k, n_group, topk_group) and data["scoring"] == scoring
    assert data["expert_bytes"] / MIB == expert_mib
    assert data["shared_bytes"] / MIB == shared_mib
    assert [r["batch"] for r in data["rows"]] == [1, 8, 16]
    one, _, sixteen = data["rows"]
    assert one["t_baseline_mean"] == k and one["t_oea_mean"] == 3  # one token: its own k, k0
    assert sixteen["t_oea_mean"] < sixteen["t_baseline_mean"]
    assert sixteen["time_oea_us"] < sixteen["time_baseline_us"]
    assert data["model"] == str(CONFIGS / name)


@pytest.mark.parametrize(("name", "want"), MODELS[:3])
def test_text_and_svg_from_config(
    name: str,
    want: tuple[object, ...],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    svg = tmp_path / "plot.svg"
    assert main(["simulate", str(CONFIGS / name), *ARGS, "--k0", "3,5", "--plot", str(svg)]) == 0
    out = " ".join(capsys.readouterr().out.split())  # the 120-column table wraps its title
    n, k, n_group, topk_group, scoring, expert_mib, shared_mib = want
    assert f"N={n}, k={k}, {scoring}, groups {topk_group}/{n_group}" in out
    assert f"bf16: {expert_mib:.2f} MiB per expert, shared {shared_mib:.2f} MiB" in out
    text = svg.read_text()
    assert (
        text.startswith("<svg") and text.count("<polyline") == 5
    )  # T: baseline + two k0; quality: two k0


def test_the_issue_command(capsys: pytest.CaptureFixture[str]) -> None:
    # The exact sweep the issue asks for (fewer steps to stay quick).
    args = ["--gpu", "sm120", "--batch", "1,8,16,32,64", "--k0", "3,5", "--steps", "5"]
    assert main(["simulate", str(CONFIGS / "Qwen--Qwen3-30B-A3B.json"), *args]) == 0
    assert "µs OEA" in capsys.readouterr().out


def test_bias_note_for_sigmoid_bias_models(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(CONFIGS / "deepseek-ai--DeepSeek-V3.json")
    assert main(["simulate", path, *ARGS, "--format", "json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert any("correction bias taken as zero" in note for note in notes)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        pytest.param(
            '{"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 4096}',
            "not a MoE model",
            id="dense model",
        ),
        pytest.param("{not json", "malformed JSON", id="malformed config"),
        pytest.param("[1, 2]", "must hold a JSON object", id="not an object"),
    ],
)
def test_non_moe_or_bad_config_is_one_line_exit_2(
    text: str, why: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "config.json"
    path.write_text(text)
    assert main(["simulate", str(path), *ARGS]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"routescope: error: {path}") and why in err and "\n" not in err


def test_k0_above_the_models_top_k_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(CONFIGS / "Qwen--Qwen1.5-MoE-A2.7B.json")  # top_k = 4
    assert main(["simulate", path, "--gpu", "sm120", "--k0", "3,5"]) == 2
    assert capsys.readouterr().err.strip() == "routescope: error: --k0 5: must be in 1..top_k=4"


def test_a_width_that_is_no_count_omits_the_times(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # ERNIE 4.5 VL-style moe_intermediate_size (one width per kind of expert) crashed the byte
    # model with a TypeError traceback; a width that is no count leaves the times out
    cfg = json.loads((CONFIGS / "Qwen--Qwen3-30B-A3B.json").read_text())
    cfg["moe_intermediate_size"] = [768, 512]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    assert main(["simulate", str(path), *ARGS, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["expert_bytes"] is None and data["rows"][0]["time_oea_us"] is None
