"""A framework may read a checkpoint through another transformers class than the one for its
model_type (a registry entry naming transformers' DeepseekV3Config for kimi_k2, which
transformers has no class for): intake builds that class's view of the same file."""

from __future__ import annotations

from pathlib import Path

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
