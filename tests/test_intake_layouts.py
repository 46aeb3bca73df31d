"""Routing fields of a family the examples do not hold, read as the frameworks read them.

ERNIE 4.5 (`Ernie4_5_MoeForCausalLM`) names its top-k `moe_k` and its shared experts
`moe_num_shared_experts` (SGLang 0.5.23 ernie4.py:82-97, vLLM 0.34.0 ernie45_moe.py:133-187),
and routes only on layers from `moe_layer_start_index` to `moe_layer_end_index`, every
`moe_layer_interval`-th counted from 1 (vLLM ernie45_moe.py:337-348, transformers
modeling_ernie4_5_moe.py; -1 is the last layer, as Ernie4_5_MoeConfig normalises it). Before:
the top-k's provenance read "class default" though the file gave it, the shared experts were
absent, and every layer counted as MoE (28 of 28, where layer 0 is dense). Hunyuan-A13B gives
top-k, shared experts and expert width one per layer (lists), which was refused. The configs
here are written for the test (the keys varied), not copies of a published file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from routescope.intake import load_spec
from routescope.intake.fields import FieldReader
from routescope.intake.spec import Origin
from routescope.intake.transformers_view import ClassView

ERNIE = {
    "architectures": ["Ernie4_5_MoeForCausalLM"], "model_type": "ernie4_5_moe",
    "hidden_size": 2560, "intermediate_size": 12288, "num_attention_heads": 20,
    "num_key_value_heads": 4, "num_hidden_layers": 28, "vocab_size": 103424,
    "moe_num_experts": 64, "moe_k": 6, "moe_num_shared_experts": 2,
    "moe_intermediate_size": 1536, "moe_layer_start_index": 1, "moe_layer_end_index": 27,
    "moe_layer_interval": 1,
}  # fmt: skip


def _spec(tmp_path: Path, **changes: Any) -> Any:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**ERNIE, **changes}))
    return load_spec(str(path))


def test_ernie_fields_are_read_from_the_file(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    assert (spec.num_experts.value, spec.top_k.value, spec.n_shared_experts.value) == (64, 6, 2)
    for field, key in (("top_k", "moe_k"), ("n_shared_experts", "moe_num_shared_experts")):
        got = getattr(spec, field).provenance
        assert (got.origin, got.key) == (Origin.CONFIG, key)


@pytest.mark.parametrize(
    ("end", "interval", "layers", "first"),
    [
        (27, 1, 27, 1),  # layers 1..27: layer 0 is dense
        (-1, 1, 27, 1),  # -1: up to the last layer
        (20, 1, 20, 1),  # 1..20
        (27, 2, 14, 1),  # 1, 3, ..., 27: (i + 1) % 2 == 0
    ],
)
def test_ernie_moe_layers_run_from_the_start_to_the_end_index(
    tmp_path: Path, end: int, interval: int, layers: int, first: int
) -> None:
    spec = _spec(tmp_path, moe_layer_end_index=end, moe_layer_interval=interval)
    assert (spec.num_moe_layers.value, spec.first_moe_layer) == (layers, first)
    assert spec.num_moe_layers.provenance.key == "moe_layer_start_index"


def test_a_value_the_class_reads_under_another_name_is_the_files() -> None:
    # attribute_map: `num_experts_per_tok` reads the file's `moe_x`; the value is the file's,
    # not a class default (a class default is labelled only where the file has neither)
    view = ClassView("XConfig", "5", {"num_experts_per_tok": 4}, {"num_experts_per_tok": "moe_x"})
    got = FieldReader({"moe_x": 4}, "", view).read("top_k")
    assert (got.value, got.provenance.origin, got.provenance.key) == (4, Origin.CONFIG, "moe_x")
    default = FieldReader({}, "", view).read("top_k")
    assert (default.provenance.origin, default.provenance.key) == (
        Origin.CLASS_DEFAULT,
        "XConfig.moe_x",
    )


HUNYUAN = {
    "architectures": ["HunYuanMoEV1ForCausalLM"], "model_type": "hunyuan_v1_moe",
    "hidden_size": 4096, "intermediate_size": 3072, "num_attention_heads": 32,
    "num_key_value_heads": 8, "num_hidden_layers": 4, "vocab_size": 128167, "head_dim": 128,
    "num_experts": 64, "moe_topk": [8, 8, 8, 8], "num_shared_expert": [1, 1, 1, 1],
    "moe_intermediate_size": [3072, 3072, 3072, 3072], "use_mixed_mlp_moe": True,
}  # fmt: skip


def test_per_layer_lists_give_the_traced_layers_entry(tmp_path: Path) -> None:
    # Hunyuan-A13B gives top-k, shared experts and the expert width one per layer; SGLang
    # indexes them by layer_id (hunyuan.py:133-147, :169-175). It was refused ("need a
    # positive integer top-k"); each is the first MoE layer's entry, the layer a trace builds
    path = tmp_path / "config.json"
    path.write_text(json.dumps(HUNYUAN))
    spec = load_spec(str(path))
    assert (spec.top_k.value, spec.n_shared_experts.value, spec.moe_intermediate_size.value) == (
        8, 1, 3072)  # fmt: skip
    got = spec.top_k.provenance
    assert (got.origin, got.key, got.note) == (Origin.CONFIG, "moe_topk[0]", "one per layer, all 8")
    differ = {**HUNYUAN, "moe_topk": [2, 6, 8, 8], "first_k_dense_replace": 1}
    path.write_text(json.dumps(differ))
    spec = load_spec(str(path))
    assert (spec.top_k.value, spec.first_moe_layer) == (6, 1)
    assert spec.top_k.provenance.note == "one per layer, 2..8: layer 1's, the first MoE layer"


@pytest.mark.parametrize("topk", [[8, 8, 8, 8, 8], [8, 8], [True, True, True, True], []])
def test_a_list_that_names_no_layers_top_k_is_still_refused(
    tmp_path: Path, topk: list[Any]
) -> None:
    from routescope.errors import RoutescopeError

    path = tmp_path / "config.json"
    path.write_text(json.dumps({**HUNYUAN, "moe_topk": topk, "first_k_dense_replace": 2}))
    with pytest.raises(RoutescopeError, match="need a positive integer top-k"):
        load_spec(str(path))


@pytest.mark.parametrize(
    ("keys", "layers", "key"),
    [
        # Step 3: the MoE layers listed (vLLM step3_text.py:249-256, step3p5.py:120-121)
        ({"moe_layers_enum": "2,3,5"}, (2, 3, 5), "moe_layers_enum"),
        # Step-3.5, ERNIE 4.5 VL: 'sparse' marks a MoE layer (vLLM step3p5.py:114-118)
        ({"mlp_layer_types": ["dense", "sparse", "dense", "sparse", "sparse", "dense"]},
         (1, 3, 4), "mlp_layer_types"),
        # AFMoE, LFM2-MoE: the first num_dense_layers dense (vLLM afmoe.py:310, lfm2_moe.py:295)
        ({"num_dense_layers": 2}, (2, 3, 4, 5), "num_dense_layers"),
    ],
)  # fmt: skip
def test_other_families_layer_keys(
    tmp_path: Path, keys: dict[str, Any], layers: tuple[int, ...], key: str
) -> None:
    from routescope.intake.build import build_spec
    from routescope.intake.spec import ModelRef

    raw = {"architectures": ["XForCausalLM"], "model_type": "x_not_in_transformers",
           "num_hidden_layers": 6, "num_experts": 8, "num_experts_per_tok": 2,
           "hidden_size": 64, **keys}  # fmt: skip
    spec = build_spec(ModelRef("file", "x", "x"), raw, use_transformers=False)
    assert (spec.num_moe_layers.value, spec.first_moe_layer) == (len(layers), layers[0])
    assert spec.num_moe_layers.provenance.key == key


def test_a_layer_list_that_is_not_one_is_absent_not_guessed() -> None:
    from routescope.intake.build import build_spec
    from routescope.intake.spec import ModelRef

    raw = {"architectures": ["XForCausalLM"], "num_hidden_layers": 6, "num_experts": 8,
           "num_experts_per_tok": 2, "moe_layers_enum": "2,three"}  # fmt: skip
    spec = build_spec(ModelRef("file", "x", "x"), raw, use_transformers=False)
    assert spec.num_moe_layers.value is None
    assert "not a comma-separated list" in spec.num_moe_layers.provenance.note


def test_a_list_with_another_meaning_is_not_read_per_layer(tmp_path: Path) -> None:
    # ERNIE 4.5 VL's moe_intermediate_size holds the text and the vision experts' widths, two
    # entries whatever the depth: no entry is picked for it
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**HUNYUAN, "moe_intermediate_size": [1536, 512]}))
    assert load_spec(str(path)).moe_intermediate_size.value == [1536, 512]
