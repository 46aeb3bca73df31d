"""A framework may read a checkpoint through another transformers class than the one for its
model_type (a registry entry naming transformers' DeepseekV3Config for kimi_k2, which
transformers has no class for): intake builds that class's view of the same file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from routescope.intake.build import read_through
from routescope.intake.load import load_spec
from routescope.intake.spec import Origin

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "configs"


def test_the_view_of_another_transformers_class() -> None:
    spec = load_spec(str(EXAMPLES / "moonshotai--Kimi-K2-Instruct.json"), offline=True)
    assert not any(p.origin is Origin.CLASS_DEFAULT for p in spec.config_view_origin.values())
    got = read_through(spec, "DeepseekV3Config")
    assert not isinstance(got, str) and got is not spec
    # what the file sets stays the file's; what it leaves out has that class's default
    assert got.config_view["n_routed_experts"] == 384
    assert got.config_view_origin["n_routed_experts"].origin is Origin.CONFIG
    defaults = {k for k, p in got.config_view_origin.items() if p.origin is Origin.CLASS_DEFAULT}
    assert "rms_norm_eps" in defaults
    assert got.config_view_origin["rms_norm_eps"].key == "DeepseekV3Config.rms_norm_eps"


def test_the_class_it_was_read_through_or_none_transformers_has() -> None:
    spec = load_spec(str(EXAMPLES / "deepseek-ai--DeepSeek-V3.json"), offline=True)
    assert read_through(spec, "DeepseekV3Config") is spec
    got = read_through(spec, "NoSuchConfig")
    assert isinstance(got, str) and "no config class NoSuchConfig" in got


def test_a_sub_config_is_an_object_the_framework_reads_by_attribute() -> None:
    """transformers' DbrxConfig builds ffn_config into a DbrxFFNConfig (to_dict() writes it as a
    dict); vLLM 0.34.0 dbrx.py:166-167 reads `config.ffn_config.moe_top_k`: an attribute of a
    config object, not a dict's key. A plain nested table stays a dict."""
    from routescope.analysis.engine.containers import DictVal
    from routescope.analysis.engine.values import Const, Instance
    from routescope.analysis.phases.checkpoint import config_instance
    from routescope.intake.transformers_view import SubConfig

    spec = load_spec(str(EXAMPLES / "databricks--dbrx-instruct.json"), offline=True)
    assert isinstance(spec.config_view["ffn_config"], SubConfig)
    ffn = config_instance(spec).fields["ffn_config"]
    assert isinstance(ffn, Instance) and ffn.label == "config"
    top_k = ffn.fields["moe_top_k"]
    assert isinstance(top_k, Const) and top_k.value == 4
    fp8 = load_spec(str(EXAMPLES.parent / "checkpoints" / "Qwen--Qwen3-30B-A3B-FP8"), offline=True)
    assert not any(isinstance(v, SubConfig) for v in fp8.config_view.values())
    assert isinstance(config_instance(fp8).fields["quantization_config"], DictVal)


def _drop_from_the_cached_view(cache: Path, key: str) -> Path:
    """Make the one cached view an entry written before `key` was recorded; its path."""
    (entry,) = cache.glob("intake/transformers-*/*.json")
    old = json.loads(entry.read_text())
    del old[key]
    entry.write_text(json.dumps(old))
    return entry


def test_a_view_cached_before_sub_configs_were_recorded_is_built_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An intake cache entry written before the view recorded its sub-configs would read DBRX's
    ffn_config as a dict again: such an entry is not used, it is rebuilt."""
    from routescope.intake.transformers_view import class_view

    monkeypatch.setenv("ROUTESCOPE_CACHE", str(tmp_path))
    raw = json.loads((EXAMPLES / "databricks--dbrx-instruct.json").read_text())
    first = class_view(raw, "")
    assert not isinstance(first, str) and "ffn_config" in first.sub_configs
    entry = _drop_from_the_cached_view(tmp_path, "sub_configs")
    again = class_view(raw, "")
    assert not isinstance(again, str) and again.sub_configs == first.sub_configs
    assert "sub_configs" in json.loads(entry.read_text())


def test_a_class_attribute_is_read_through_the_view_and_an_entry_without_them_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`getattr(config, "base_model_tp_plan", None)` reads Dots1Config's class attribute (SGLang
    0.5.23's Transformers backend plans its tensor parallelism from it, transformers.py:691):
    the view holds the class's plain attributes, and the checkpoint's config object has them,
    below the instance's values; a cache entry written before they were recorded is rebuilt."""
    from routescope.intake.transformers_view import class_view

    monkeypatch.setenv("ROUTESCOPE_CACHE", str(tmp_path))
    raw = json.loads((EXAMPLES / "rednote-hilab--dots.llm1.base.json").read_text())
    first = class_view(raw, "")
    assert not isinstance(first, str)
    plan = first.class_values["base_model_tp_plan"]
    assert plan["layers.*.mlp.gate_proj"] == "colwise"
    assert "model_type" not in first.class_values  # the instance's, in values
    assert not any(name.startswith("__") for name in first.class_values)
    _drop_from_the_cached_view(tmp_path, "class_values")
    again = class_view(raw, "")
    assert not isinstance(again, str) and again.class_values == first.class_values
    spec = load_spec(str(EXAMPLES / "rednote-hilab--dots.llm1.base.json"), offline=True)
    assert spec.config_view["base_model_tp_plan"] == plan
    assert spec.config_view_origin["base_model_tp_plan"].key == "Dots1Config.base_model_tp_plan"
