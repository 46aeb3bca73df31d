"""Every model in the shared data file yields a RoutingSpec whose values match the data.

Expected values are read from the data file (its `config`, `absent_fields_defaults`,
`transformers_5_23_effective` and `score_correction_bias` entries) with this test's own reading
of the key spellings, never from routescope's alias table.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from routescope.intake import load_spec
from tests.conftest import CONFIGS, shared_models

sys.path.insert(0, str(CONFIGS))
from generate import file_name

SPELLINGS = {
    "num_experts": ["n_routed_experts", "num_experts", "num_local_experts", "moe_num_experts"],
    "top_k": ["num_experts_per_tok", "moe_topk", "experts_per_token", "moe_top_k"],
    "n_group": ["n_group"],
    "topk_group": ["topk_group"],
    "norm_topk_prob": ["norm_topk_prob"],
    "routed_scaling_factor": ["routed_scaling_factor"],
    "n_shared_experts": ["n_shared_experts", "num_shared_experts", "num_shared_expert"],
    "scoring_func": ["scoring_func", "score_function"],
    "topk_method": ["topk_method"],
    "hidden_size": ["hidden_size", "d_model"],
}
SHARED_WIDTH = ["shared_expert_intermediate_size", "moe_shared_expert_intermediate_size",
                "shared_intermediate_size"]  # fmt: skip


def routing_level(cfg: dict[str, Any]) -> dict[str, Any]:
    if "text_config" in cfg and not any(k in cfg for k in SPELLINGS["num_experts"]):
        return dict(cfg["text_config"])
    flat = dict(cfg)
    flat.update(cfg.get("ffn_config", {}))  # DBRX
    return flat


def expected(model: dict[str, Any], field: str) -> Any:
    cfg = routing_level(model["config"])
    effective = model.get("transformers_5_23_effective") or {}
    for key in SPELLINGS[field]:
        if key in cfg:
            if cfg[key] is None and effective.get(key) is not None:
                return effective[key]  # the class normalises a null (MiMo)
            return cfg[key]
    for key in SPELLINGS[field]:
        if key in model["absent_fields_defaults"]:
            return model["absent_fields_defaults"][key]
        if key in effective:
            return effective[key]
    if field == "n_shared_experts":
        for key in SHARED_WIDTH:
            if key in cfg:
                return 1 if cfg[key] else 0
    return None


def expected_bias(model: dict[str, Any]) -> set[bool | None]:
    text = model["score_correction_bias"]
    cfg = routing_level(model["config"])
    if text.startswith("v1"):  # Ling: v1 gives no hint, v2 sets moe_router_enable_expert_bias
        return {True} if cfg.get("moe_router_enable_expert_bias") else {False, None}
    value = text.lower().startswith("yes")
    no_class = "has no transformers" in model["absent_fields_defaults_basis"]
    signals = ("topk_method", "use_routing_bias", "moe_router_enable_expert_bias", "scoring_func")
    signalled = any(k in cfg for k in signals)
    if (no_class or "model_type" not in model["config"]) and not signalled:
        return {value, None}  # nothing readable decides it: unknown is acceptable, wrong is not
    return {value}


MODELS = shared_models()
IDS = [
    m["hub_id"].split(" (")[0] + (" initial" if "initial" in m["hub_id"] else "") for m in MODELS
]


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_spec_matches_data(model: dict[str, Any]) -> None:
    spec = load_spec(str(CONFIGS / file_name(model["hub_id"])))
    misplaced = expected(model, "scoring_func") == "noaux_tc"  # dots.llm1: a topk_method value
    for field in SPELLINGS:
        want = expected(model, field)
        got = spec.sourced(field).value
        if misplaced and field in ("scoring_func", "topk_method"):
            assert (spec.topk_method.value, spec.scoring_func.value) == ("noaux_tc", None)
            continue
        assert got == want, f"{field}: got {got!r}, data says {want!r}"
        if want is not None:
            assert spec.sourced(field).provenance.key, f"{field} has no provenance key"
    assert spec.has_correction_bias.value in expected_bias(model)


def test_examples_are_current() -> None:
    """examples/configs/ is generated from tests/data: regenerate when the data changes."""
    import json

    from generate import render

    data = json.loads((Path(__file__).parent / "data" / "moe-model-configs.json").read_text())
    for name, text in render(data).items():
        assert (CONFIGS / name).read_text() == text, f"{name} is stale: run generate.py"
