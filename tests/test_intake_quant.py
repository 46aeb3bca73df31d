"""Quantized checkpoints: the examples/checkpoints directories are generated from the data file,
and intake reads each one's quantization as the checkpoint declares it."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from routescope import api
from routescope.intake.load import load_spec
from tests.conftest import CONFIGS

CHECKPOINTS = CONFIGS.parent / "checkpoints"
DATA = Path(__file__).parent / "data" / "quant-configs.json"
VERBATIM = Path(__file__).parent / "data" / "verbatim-configs.json"


def _generator():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("ckpt_generate", CHECKPOINTS / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_checkpoints_are_current() -> None:
    verbatim = json.loads(VERBATIM.read_text())["files"]
    for rel, text in _generator().render(json.loads(DATA.read_text()), verbatim).items():
        assert (CHECKPOINTS / rel).read_text() == text, f"{rel} is stale: run generate.py"


def test_a_whole_file_agrees_with_the_routing_keys_read_from_it() -> None:
    """The whole copy of each config.json holds every key the data files read from the same
    source, with the same value (nothing was edited on the way), and each whole copy is one
    a data file names."""
    verbatim = json.loads(VERBATIM.read_text())["files"]
    seen: set[str] = set()
    for data in (DATA, DATA.parent / "moe-model-configs.json"):
        for model in json.loads(data.read_text())["models"]:
            source = model["source"] if isinstance(model["source"], str) else model["source"][0]
            whole = verbatim.get(source)
            if whole is None:
                continue
            seen.add(source)
            for key, value in model["config"].items():
                if isinstance(value, dict):  # a wrapper's text_config: its keys, each the same
                    assert all(whole[key].get(k) == v for k, v in value.items()), (source, key)
                else:
                    assert whole.get(key) == value, (source, key)
    assert seen == set(verbatim)


def test_a_directory_with_hf_quant_config_is_nvfp4_with_its_exclusions() -> None:
    spec = load_spec(str(CHECKPOINTS / "nvidia--GLM-5-NVFP4"))
    q = spec.quant
    assert q is not None and q.scheme == "nvfp4" and q.file == "hf_quant_config.json"
    assert q.method == "modelopt" and q.algo == "NVFP4"
    assert "lm_head" in q.excluded and len(q.excluded) == 471
    assert spec.quantization.provenance.origin.value == "hf_quant_config.json"


@pytest.mark.parametrize(
    ("name", "scheme", "blocks"),
    [
        ("deepseek-ai--DeepSeek-V3", "fp8", [128, 128]),
        ("moonshotai--Kimi-K2-Instruct", "fp8", [128, 128]),
        ("openai--gpt-oss-120b", "mxfp4", None),
    ],
)
def test_config_json_quantization_is_read_and_shown_in_json(
    name: str, scheme: str, blocks: list[int] | None
) -> None:
    doc = api.inspect(api.InspectRequest(model=str(CHECKPOINTS / name)))
    q = doc["quantization"]
    assert (q["scheme"], q["file"], q["key"]) == (scheme, "config.json", "quantization_config")
    assert q["weight_block_size"] == blocks
    assert doc["routing"]["quantization"]["value"] == scheme


def test_an_unquantized_config_has_no_quantization_block() -> None:
    doc = api.inspect(api.InspectRequest(model=str(CONFIGS / "zai-org--GLM-5.json")))
    assert "quantization" not in doc
    assert doc["routing"]["quantization"]["value"] is None


def test_the_top_k_spellings_of_gemma_4_and_kimi_k3_are_read(tmp_path: Path) -> None:
    """Gemma 4 names its top-k `top_k_experts` (SGLang gemma4_causal.py:280, vLLM gemma4.py:670)
    and Kimi-Linear / Kimi-K3 `num_experts_per_token`, with `moe_router_activation_func` and
    `moe_renormalize` (SGLang kimi_k3.py:505, :527, :531): each was refused with "top-k is
    None". The Kimi keys are those of moonshotai/Kimi-K3's config.json (ai-dynamo/aiconfigurator
    @095f58a, model_configs/moonshotai--Kimi-K3_config.json), its text_config cut to them."""
    spec = load_spec(str(CHECKPOINTS / "nvidia--Gemma-4-26B-A4B-NVFP4"))
    assert spec.top_k.value == 8 and spec.num_experts.value == 128
    assert spec.top_k.provenance.key == "text_config.top_k_experts"
    k3 = {"architectures": ["KimiK3ForConditionalGeneration"], "model_type": "kimi_k3",
          "text_config": {"architectures": ["KimiLinearForCausalLM"], "num_experts": 896,
                          "num_experts_per_token": 16, "moe_router_activation_func": "sigmoid",
                          "moe_renormalize": True, "num_shared_experts": 2, "topk_group": 1,
                          "num_expert_group": 1, "first_k_dense_replace": 1,
                          "num_hidden_layers": 61, "hidden_size": 7168}}  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(k3))
    spec = load_spec(str(tmp_path / "config.json"), offline=True)
    assert (spec.top_k.value, spec.scoring_func.value, spec.norm_topk_prob.value) == (
        16, "sigmoid", True)  # fmt: skip
