"""Fields that no single key gives: the correction bias, MoE layer count, shared experts, quant."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

from routescope.intake.aliases import BIAS_FLAGS, GROUPED_TOPK_METHODS
from routescope.intake.fields import FieldReader, is_missing
from routescope.intake.spec import Origin, Provenance, Sourced

D = Origin.DERIVED


@cache
def _transformers_models_dir() -> Path | None:
    spec = importlib.util.find_spec("transformers")  # locates the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "models"


def _bias_in_modeling(model_type: str) -> tuple[bool, str] | None:
    """Does transformers' modeling file for this model_type create e_score_correction_bias?"""
    models = _transformers_models_dir()
    if models is None:
        return None
    module = model_type.replace("-", "_")
    if not module.isidentifier() or len(module) > 100:  # no transformers module is named so
        return None
    path = models / module / f"modeling_{module}.py"
    if not path.is_file() and module.endswith("_text"):  # llama4_text lives in llama4/
        module = module.removesuffix("_text")
        path = models / module / f"modeling_{module}.py"
    if not path.is_file():
        return None
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if re.search(r"\be_score_correction_bias\b", line):
            return True, f"transformers/models/{module}/{path.name}:{lineno}"
    return False, f"transformers/models/{module}/{path.name}"


def correction_bias(
    r: FieldReader, topk_method: Sourced[Any], scoring: Sourced[Any], model_types: list[str]
) -> Sourced[bool]:
    """Explicit flags first, then topk_method, then the model code transformers ships."""
    for flag in BIAS_FLAGS:
        value = r.raw(flag)
        if not is_missing(value) and value is not None:
            return Sourced(bool(value), Provenance(Origin.CONFIG, r.key(flag)))
    if topk_method.value == "noaux_tc":
        note = "topk_method noaux_tc routes with e_score_correction_bias"
        return Sourced(True, Provenance(D, topk_method.provenance.key, note))
    if topk_method.value is not None and topk_method.provenance.origin is Origin.CONFIG:
        note = f"topk_method {topk_method.value!r} has no correction bias"
        return Sourced(False, Provenance(D, topk_method.provenance.key, note))
    found = next((f for t in model_types if (f := _bias_in_modeling(t)) is not None), None)
    if found is not None:
        has, where = found
        verb = "creates" if has else "never mentions"
        return Sourced(has, Provenance(Origin.MODEL_CODE, where, f"{verb} e_score_correction_bias"))
    if scoring.value == "softmax":
        note = "softmax scoring; correction biases go with sigmoid noaux_tc routing"
        return Sourced(False, Provenance(D, scoring.provenance.key, note))
    note = "no bias flag or topk_method in the file, no transformers modeling code to read"
    return Sourced(None, Provenance(Origin.ABSENT, None, note))


def fix_topk_method(
    topk_method: Sourced[Any], scoring: Sourced[Any]
) -> tuple[Sourced[Any], Sourced[Any]]:
    """dots.llm1 writes the topk_method value into scoring_func: move it where it belongs."""
    if scoring.value in GROUPED_TOPK_METHODS and topk_method.value is None:
        key = scoring.provenance.key
        moved = Sourced(
            scoring.value,
            Provenance(D, key, f"{key} holds a topk_method value, read as topk_method"),
        )
        unknown: Sourced[Any] = Sourced(
            None,
            Provenance(D, key, f"{key} holds {scoring.value!r}, a topk_method; the scoring "
                       "function is decided by the model code"),
        )  # fmt: skip
        return moved, unknown
    return topk_method, scoring


def shared_experts(r: FieldReader, count: Sourced[Any], width: Sourced[Any]) -> Sourced[Any]:
    """Qwen-style models give only the shared expert's width: one expert of that width (or 0)."""
    if count.known or not width.known:
        return count
    n = 1 if width.value else 0
    note = f"{width.provenance.key}={width.value}: {n} shared expert(s) of that width"
    return Sourced(n, Provenance(D, width.provenance.key, note))


MAX_LAYERS = 100_000  # far above any model's depth; a bound on counting them


def num_moe_layers(layers: Sourced[tuple[int, ...]]) -> Sourced[int]:
    """The MoE layers counted (`moe_layers`), with the same provenance."""
    count = len(layers.value) if layers.value is not None else None
    return Sourced(count, layers.provenance)


def moe_layers(r: FieldReader, n_layers: Sourced[Any]) -> Sourced[tuple[int, ...]]:
    """The indices of the MoE layers, from whichever layer-pattern keys the config uses (the
    first is the layer a trace builds: a hybrid model's layer 0 may be a Mamba layer)."""
    n = n_layers.value
    if not isinstance(n, int) or isinstance(n, bool):
        return Sourced(None, Provenance(Origin.ABSENT, None, "num_hidden_layers unknown"))
    if not 0 < n <= MAX_LAYERS:  # counting 2**70 layers one by one would never end
        note = f"num_hidden_layers = {n} is not a layer count (1..{MAX_LAYERS})"
        return Sourced(None, Provenance(Origin.ABSENT, None, note))

    def out(layers: Iterable[int], keys: str, how: str) -> Sourced[tuple[int, ...]]:
        return Sourced(tuple(layers), Provenance(D, keys, how))

    def value(key: str) -> Any:
        return r.read_plain(key).value  # file first, then the transformers class default

    freq = value("moe_layer_freq")
    if isinstance(freq, list):
        marked = (i for i, f in enumerate(freq) if f)
        return out(marked, r.key("moe_layer_freq"), "layers marked 1")
    pattern = r.raw("hybrid_override_pattern")
    if isinstance(pattern, str):
        experts = (i for i, c in enumerate(pattern) if c == "E")
        return out(experts, r.key("hybrid_override_pattern"), "'E' entries")
    kinds = r.raw("layers_block_type")
    if isinstance(kinds, list):
        experts = (i for i, k in enumerate(kinds) if k == "moe")
        return out(experts, r.key("layers_block_type"), "'moe' entries")
    kinds = r.raw("mlp_layer_types")  # Step-3.5, ERNIE 4.5 VL (vLLM step3p5.py:114-118)
    if isinstance(kinds, list):
        experts = (i for i, k in enumerate(kinds) if k == "sparse")
        return out(experts, r.key("mlp_layer_types"), "'sparse' entries")
    listed = r.raw("moe_layers_enum")  # Step 3 (vLLM step3_text.py:249-256, step3p5.py:120-121)
    if isinstance(listed, str):
        try:
            named = sorted({int(i) for i in listed.strip().split(",")})
        except ValueError:
            note = f"moe_layers_enum {listed[:40]!r} is not a comma-separated list of layers"
            return Sourced(None, Provenance(Origin.ABSENT, r.key("moe_layers_enum"), note))
        return out((i for i in named if 0 <= i < n), r.key("moe_layers_enum"), "layers listed")
    if r.view is not None and "layers_block_type" in r.view.values:
        note = "hybrid model: its layer pattern (hybrid_override_pattern) is not in the file"
        return Sourced(None, Provenance(Origin.ABSENT, None, note))
    start, every = value("moe_layer_start_index"), value("moe_layer_interval")
    if isinstance(start, int) and isinstance(every, int) and every > 0:
        # ERNIE 4.5: from the start index to the end index (-1 or absent: the last layer, as
        # transformers' Ernie4_5_MoeConfig normalises it), every interval-th layer counted from
        # 1 (transformers modeling_ernie4_5_moe.py, vLLM 0.34.0 ernie45_moe.py:337-348; SGLang
        # 0.5.23 ernie4.py:184-193 counts the interval from the start index: the same at 1)
        end = value("moe_layer_end_index")
        last = end if isinstance(end, int) and end >= 0 else n - 1
        ranged = (i for i in range(n) if start <= i <= last and (i + 1) % every == 0)
        how = f"{start} <= i <= {last} and (i + 1) % {every} == 0"
        return out(ranged, r.key("moe_layer_start_index"), how)
    # the first layers dense: DeepSeek's first_k_dense_replace; AFMoE's and LFM2-MoE's
    # num_dense_layers (vLLM 0.34.0 afmoe.py:310, lfm2_moe.py:295; SGLang afmoe.py:446-447)
    dense_key = "first_k_dense_replace" if value("first_k_dense_replace") is not None else (
        "num_dense_layers")  # fmt: skip
    first = value(dense_key)
    if isinstance(first, int) and not isinstance(first, bool) and not 0 <= first <= n:
        note = f"{dense_key} = {first} is outside 0..num_hidden_layers ({n})"
        return Sourced(None, Provenance(Origin.ABSENT, r.key(dense_key), note))
    if isinstance(first, int):
        step = freq if isinstance(freq, int) and freq > 0 else 1
        kept = (i for i in range(first, n) if i % step == 0)
        return out(kept, r.key(dense_key), f"i >= {first} and i % {step} == 0")
    for key in ("decoder_sparse_step", "moe_layer_frequency", "interleave_moe_layer_step"):
        step = value(key)
        if isinstance(step, int) and step > 0:
            skip = value("mlp_only_layers")
            # layer indices; anything else in the list (a nested list, a string) names no layer
            dense = {i for i in skip if isinstance(i, int)} if isinstance(skip, list) else set()
            sparse = (i for i in range(n) if (i + 1) % step == 0 and i not in dense)
            return out(sparse, r.key(key), f"(i + 1) % {step} == 0, minus mlp_only_layers")
    period, offset = value("expert_layer_period"), value("expert_layer_offset")
    if isinstance(period, int) and isinstance(offset, int) and period > 0:
        periodic = (i for i in range(n) if i % period == offset)
        return out(periodic, r.key("expert_layer_period"), f"i % {period} == {offset}")
    return out(range(n), n_layers.provenance.key or "", "no layer-pattern key: every layer is MoE")


# fields a config may give per layer, one entry each (Hunyuan-A13B's moe_topk,
# num_shared_expert and moe_intermediate_size: SGLang 0.5.23 hunyuan.py:133-147, :169-175
# index them by layer_id)
PER_LAYER = (
    "top_k",
    "n_shared_experts",
    "moe_intermediate_size",
    "shared_expert_intermediate_size",
)


def at_layer(field: Sourced[Any], layer: int, n_layers: Any) -> Sourced[Any]:
    """A per-layer list's entry at `layer` (the first MoE layer: the one a trace builds), with
    how the entries differ; any other value as it is. Per layer means one entry for each of
    the `n_layers` layers: ERNIE 4.5 VL's two-entry moe_intermediate_size (text and vision
    experts) is no per-layer list."""
    values = field.value
    if not isinstance(values, list) or len(values) != n_layers or not 0 <= layer < len(values):
        return field
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return field
    differ = sorted(set(values))
    how = (f"one per layer, all {values[0]}" if len(differ) == 1 else
           f"one per layer, {differ[0]}..{differ[-1]}: layer {layer}'s, the first MoE "
           "layer")  # fmt: skip
    key = f"{field.provenance.key}[{layer}]"
    return Sourced(values[layer], Provenance(field.provenance.origin, key, how))
