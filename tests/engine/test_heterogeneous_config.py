"""A heterogeneous transformers config (transformers 5.x `per_layer_config`) reads as
transformers itself answers: checked against transformers building the same file.

Gemma 4's text config gives its full-attention layers their own head size and KV heads
(transformers models/gemma4/configuration_gemma4.py:207-217); vLLM 0.34.0 reads them per layer
(`config.per_layer_config[layer_idx].head_dim`, models/gemma4.py:600-602;
config/model_arch.py:75-90 and transformers_utils/model_arch_config_convertor.py:56-71), and
SGLang 0.5.23 flattens them after loading (utils/hf_transformers/config.py:78-141)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from routescope.analysis.engine.containers import TupleVal
from routescope.analysis.engine.values import Const, Unknown
from routescope.analysis.phases.checkpoint import config_instance
from routescope.intake.load import load_spec
from tests.engine.test_engine_soundness import run

ROOT = Path(__file__).resolve().parents[2]
GEMMA4 = ROOT / "examples/checkpoints/nvidia--Gemma-4-26B-A4B-NVFP4"
QWEN3 = ROOT / "examples/checkpoints/Qwen--Qwen3-30B-A3B-FP8"


def _traced(tmp_path: Path, checkpoint: Path, body: str) -> Any:
    config = config_instance(load_spec(str(checkpoint), offline=True))
    paths = run(tmp_path, {"main.py": body}, config)
    assert len(paths) == 1 and paths[0].outcome == "return", [(p.outcome, p.stopped) for p in paths]
    return paths[0].value


def _plain(v: Any) -> Any:
    if isinstance(v, TupleVal):
        return tuple(_plain(x) for x in v.items)
    if isinstance(v, Const):
        return v.value
    return v


def _transformers_gemma4() -> Any:
    transformers = pytest.importorskip("transformers")
    raw = json.loads((GEMMA4 / "config.json").read_text())
    return transformers.Gemma4TextConfig.from_dict(raw["text_config"])


def test_each_layer_reads_its_own_attributes_as_transformers_gives_them(tmp_path: Path) -> None:
    truth = _transformers_gemma4()
    got = _traced(tmp_path, GEMMA4, """
def main(config):
    layers = config.per_layer_config
    return tuple((layers[i].head_dim, layers[i].num_key_value_heads, layers[i].hidden_size)
                 for i in range(len(layers)))
""")  # fmt: skip
    expected = tuple(
        (c.head_dim, c.num_key_value_heads, c.hidden_size) for c in truth.per_layer_config
    )
    assert _plain(got) == expected
    assert {x[0] for x in expected} == {256, 512}  # (the file does differ per layer)


def test_the_view_answers_as_transformers_does(tmp_path: Path) -> None:
    truth = _transformers_gemma4()
    layers = truth.per_layer_config
    got = _traced(tmp_path, GEMMA4, """
def main(config):
    layers = config.per_layer_config
    full = layers[5]
    return (config.is_heterogeneous, len(layers), layers[-1].head_dim,
            layers["full_attention"].head_dim, layers["sliding_attention"].head_dim,
            full.is_heterogeneous, len(full.skip), full is layers[5],
            tuple(sorted(config.per_layer_attributes)), len(layers[0:3]),
            getattr(config, "is_heterogeneous", False))
""")  # fmt: skip
    assert _plain(got) == (
        truth.is_heterogeneous,
        len(layers),
        layers[-1].head_dim,
        layers["full_attention"].head_dim,
        layers["sliding_attention"].head_dim,
        layers[5].is_heterogeneous,
        len(layers[5].skip),
        layers[5] is layers[5],
        tuple(sorted(truth.per_layer_attributes)),
        3,
        True,
    )


def test_a_global_read_of_a_per_layer_attribute_is_not_told(tmp_path: Path) -> None:
    """transformers refuses it (AmbiguousGlobalPerLayerAttributeError); a framework whose
    config loading routescope summarises may have flattened it first, so the file's global
    value (the sliding layers' 256) is never given for it."""
    got = _traced(tmp_path, GEMMA4, "def main(config):\n    return config.head_dim\n")
    assert isinstance(got, Unknown)
    assert "per-layer attribute" in got.reason


def test_setting_per_layer_config_to_none_makes_the_config_homogeneous(tmp_path: Path) -> None:
    truth = _transformers_gemma4()
    truth.per_layer_config = None
    got = _traced(tmp_path, GEMMA4, """
def main(config):
    config.per_layer_config = None
    return (config.is_heterogeneous, config.head_dim, config.per_layer_config[5] is config)
""")  # fmt: skip
    assert _plain(got) == (truth.is_heterogeneous, truth.head_dim, True)


def test_setting_a_dict_drops_overrides_equal_to_the_global_value(tmp_path: Path) -> None:
    got = _traced(tmp_path, GEMMA4, """
def main(config):
    config.per_layer_config = None
    config.per_layer_config = {3: {"head_dim": 128, "hidden_size": config.hidden_size}}
    return (config.is_heterogeneous, config.per_layer_config[3].head_dim,
            config.per_layer_config[2].head_dim, tuple(config.per_layer_attributes))
""")  # fmt: skip
    assert _plain(got) == (True, 128, 256, ("head_dim",))


def test_a_homogeneous_config_gives_itself_for_every_layer(tmp_path: Path) -> None:
    got = _traced(tmp_path, QWEN3, """
def main(config):
    layers = config.per_layer_config
    return (config.is_heterogeneous, len(layers) == config.num_hidden_layers,
            layers[3] is config, config.per_layer_attributes)
""")  # fmt: skip
    assert _plain(got) == (False, True, True, None)


def test_to_dict_writes_the_layers_as_transformers_serialises_them(tmp_path: Path) -> None:
    truth = _transformers_gemma4().to_dict()["per_layer_config"]
    got = _traced(tmp_path, GEMMA4, """
def main(config):
    d = config.to_dict()
    return (tuple(sorted(d["per_layer_config"])), d["per_layer_config"]["05"]["head_dim"],
            "_heterogeneity_spec" in d)
""")  # fmt: skip
    assert _plain(got) == (tuple(sorted(truth)), truth["05"]["head_dim"], False)
