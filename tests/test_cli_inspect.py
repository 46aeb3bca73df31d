"""`routescope inspect` and `routescope gpus` in-process: outputs, exit codes, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from routescope.cli import main
from routescope.hardware import all_profiles, resolve_gpu
from tests.conftest import CONFIGS

GLM5 = str(CONFIGS / "zai-org--GLM-5.json")


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_glm5_json_has_every_field_with_provenance(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["inspect", GLM5, "--format", "json"], capsys)
    assert code == 0
    doc = json.loads(out)
    r = doc["routing"]
    assert doc["schema_version"]
    assert r["num_experts"] == {"value": 256, "origin": "config.json", "key": "n_routed_experts"}
    assert r["top_k"]["value"] == 8 and r["n_group"]["value"] == 1
    assert r["topk_group"]["value"] == 1 and r["scoring_func"]["value"] == "sigmoid"
    assert r["has_correction_bias"]["value"] is True
    assert r["has_correction_bias"]["key"] == "topk_method"
    assert r["n_shared_experts"]["value"] == 1
    assert doc["topology"] == "degenerate-grouped"
    assert all("origin" in v for v in r.values())


def test_text_output_is_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["inspect", GLM5], capsys)
    assert code == 0
    assert "routed experts" in out and "256" in out and "config.json n_routed_experts" in out
    assert "\x1b[" not in out  # not a terminal: no colour codes


def _write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "config.json"
    path.write_text(text)
    return str(path)


BAD = [
    pytest.param('{"a": 1,', "malformed JSON at line 1 column 9", id="malformed"),
    pytest.param('{"model_type": "llama", "hidden_size": 8}', "not a MoE model", id="dense"),
    pytest.param('{"num_experts": 8, "num_experts_per_tok": 9}', "exceeds the 8", id="k>n"),
    pytest.param('{"num_experts": 8}', "need a positive integer top-k", id="no-topk"),
    pytest.param(
        '{"n_routed_experts": 8, "num_experts_per_tok": 2, "n_group": 3}',
        "does not divide",
        id="bad-groups",
    ),
    pytest.param("[1, 2]", "must hold a JSON object", id="not-object"),
]


@pytest.mark.parametrize(("text", "message"), BAD)
def test_bad_config_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    path = _write(tmp_path, text)
    code, out, err = run(["inspect", path], capsys)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and message in err and path in err


def test_directory_without_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["inspect", str(tmp_path)], capsys)
    assert code == 2 and "no config.json" in err


def test_directory_with_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "config.json").write_text(Path(GLM5).read_text())
    code, out, _ = run(["inspect", str(tmp_path), "--format", "json"], capsys)
    assert code == 0 and json.loads(out)["model"]["kind"] == "dir"


@pytest.mark.parametrize(
    ("name", "device"),
    [("sm120", "rtx-pro-6000"), ("sm_120", "rtx-pro-6000"), ("12.0", "rtx-pro-6000"),
     ("RTX 5090", "rtx-5090"), ("h200", "h200"), ("B200", "b200"), ("hopper", "h100"),
     ("sm121", "gb10"), ("DGX Spark", "gb10"), ("12.1", "gb10"), ("sm103", "b300"),
     ("NVIDIA B300 SXM6 AC", "b300"), ("sm86", "rtx-a6000"), ("RTX 3090", "rtx-3090")],
)  # fmt: skip
def test_gpu_aliases(name: str, device: str) -> None:
    assert resolve_gpu(name).device == device


def test_sm120_profile_facts() -> None:
    p = resolve_gpu("sm120")
    assert p.capability == (12, 0) and p.max_shared_memory_per_block == 101376
    assert p.sm_count == 188 and resolve_gpu("rtx-5090").sm_count == 170


def test_the_sm12x_and_sm10x_siblings_are_their_own_capability() -> None:
    """GB10 is (12, 1), B300 (10, 3): releases that test the exact capability (SGLang 0.5.23
    utils/common.py:342-350 is_sm120() / is_sm121()) see them apart from SM120 and SM100."""
    spark, b300 = resolve_gpu("dgx-spark"), resolve_gpu("b300")
    assert (spark.capability, spark.device_name) == ((12, 1), "NVIDIA GB10")
    assert spark.max_shared_memory_per_block == resolve_gpu("sm120").max_shared_memory_per_block
    assert (b300.capability, b300.sm_count) == ((10, 3), 148)
    assert b300.max_shared_memory_per_block == resolve_gpu("sm100").max_shared_memory_per_block


def test_gpus_lists_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["gpus", "--format", "json"], capsys)
    assert code == 0
    families = {p["family"] for p in json.loads(out)}
    assert {"sm121", "sm120", "sm103", "sm100", "sm90", "sm89", "sm86", "sm80"} <= families
    by_device = {p["device"]: p for p in json.loads(out)}
    assert by_device["rtx-5090"]["aliases"] == ["5090", "rtx5090", "geforce-rtx-5090"]
    assert "sm120" in by_device["rtx-pro-6000"]["aliases"]  # the family picks its first device


def test_gpus_table_shows_aliases_uncut_at_80_columns(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run(["gpus"], capsys)
    assert code == 0 and max(len(line) for line in out.splitlines()) <= 80
    for p in all_profiles():
        assert f" {p.device} " in out  # every device id whole, as --gpu takes it
    assert "rtx5090" in out and "blackwell-consumer" in out


def test_unknown_gpu_lists_known() -> None:
    from routescope.errors import RoutescopeError

    with pytest.raises(RoutescopeError, match=r"unknown GPU; known: .*sm120"):
        resolve_gpu("tpu-v5")


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["--version"], capsys)
    assert code == 0 and out.startswith("routescope ")


def test_deployment_flags_without_a_framework_are_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`inspect MODEL --gpu b200 --tp 8` used to ignore both without a word."""
    code = main(["inspect", str(CONFIGS / "zai-org--GLM-5.json"), "--gpu", "b200", "--tp", "8"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "--gpu --tp: describes a deployment: give --framework" in err


def test_a_bad_model_and_a_bad_framework_name_the_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The release is opened in a second thread while the model is read: when both are bad,
    the model's error is the one line, as when they ran one after the other."""
    path = _write(tmp_path, '{"a": 1,')
    code, out, err = run(["inspect", path, "--framework", "nosuch==1.0", "--gpu", "sm120"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "malformed JSON" in err and "nosuch" not in err


def test_a_bad_framework_beside_a_good_model_is_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The error raised in the opening thread reaches the user as the same one line."""
    code, out, err = run(["inspect", GLM5, "--framework", "nosuch==1.0", "--gpu", "sm120"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "--framework nosuch: no rules for this framework; known: sglang, vllm" in err


def test_the_release_is_opened_beside_the_intake(monkeypatch: pytest.MonkeyPatch) -> None:
    """open_framework runs while the model's config is read, not after it."""
    import threading

    from routescope import api
    from routescope.errors import RoutescopeError
    from routescope.intake import load_spec

    opened = threading.Event()
    overlapped: list[bool] = []

    def fake_open(framework: str, *, offline: bool = False) -> None:
        opened.set()
        raise RoutescopeError(f"--framework {framework}", "stop here")

    def fake_load(*args: object, **kwargs: object) -> object:
        overlapped.append(opened.wait(5))  # the opening has started before the intake ends
        return load_spec(GLM5)

    monkeypatch.setattr(api, "open_framework", fake_open)
    monkeypatch.setattr(api, "load_spec", fake_load)
    with pytest.raises(RoutescopeError, match="stop here"):
        api.inspect(api.InspectRequest(model=GLM5, framework="sglang==0.5.23"))
    assert overlapped == [True]
