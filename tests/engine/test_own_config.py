"""A framework that registers its own config class for a model_type re-reads such a checkpoint
through it: a field config.json leaves out has that class's default (SGLang's Qwen3.5 config
sets norm_topk_prob=True where transformers' class has no such field), a wrapper's text config
is built by the class's own code, and what the constructor normalises is what the model reads.
A transformers class the framework registers (or derives its own from) is read through
transformers. A constructor that cannot be followed, a registry lookup the facts cannot
decide, or a model_type the release does not register leave routescope's view as it was."""

from __future__ import annotations

from pathlib import Path

from routescope.analysis.engine.containers import DictVal
from routescope.analysis.engine.core import Engine
from routescope.analysis.engine.facts import Facts
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import Const, Instance, Value
from routescope.analysis.phases.frameworks import FrameworkRules
from routescope.analysis.phases.ownconfig import Through, own_config
from tests.engine.test_engine_synthetic import SINKS, make_tree

CONFIGS = """
    import os
    from transformers import PretrainedConfig, LlamaConfig, MixtralConfig

    class NextConfig(PretrainedConfig):
        model_type = "next"
        layout = "interleaved"

        def __init__(self, num_experts=64, norm_topk_prob=True, rope=None, **kwargs):
            super().__init__(**kwargs)
            if num_experts > 4096:
                raise ValueError("too many experts")
            self.num_experts = num_experts
            self.norm_topk_prob = norm_topk_prob
            self.rope = rope or {"type": "default"}

        def config_for_layer(self, layer_idx):
            return self

        @property
        def most_experts(self):
            return self.num_experts

    class WrapConfig(PretrainedConfig):
        model_type = "wrap"
        sub_configs = {"text_config": NextConfig}

        def __init__(self, text_config=None, **kwargs):
            if isinstance(text_config, dict):
                self.text_config = self.sub_configs["text_config"](**text_config)
            elif text_config is None:
                self.text_config = self.sub_configs["text_config"]()
            super().__init__(**kwargs)

    class AliasConfig(LlamaConfig):
        model_type = "alias"
        layout = "dense"

    class StepConfig(LlamaConfig):
        model_type = "step"

        def __post_init__(self, **kwargs):
            self.num_experts = 2 * self.num_experts

    REGISTRY = {c.model_type: c for c in [NextConfig, WrapConfig, AliasConfig, StepConfig]}
    REGISTRY["upstream"] = MixtralConfig
    if os.environ.get("FW_EXTRA_CONFIGS"):
        REGISTRY["maybe"] = NextConfig
"""

RULES = FrameworkRules(
    "fw", "fw.toml", {"config_registry": ["fw.configs:MOVED_AWAY", "fw.configs:REGISTRY"]}
)


def _view(fields: dict[str, object]) -> Instance:
    """routescope's view: the file's keys (origin config.json) and transformers' defaults."""
    out: dict[str, Value] = {}
    for key, value in fields.items():
        if isinstance(value, Instance):
            out[key] = value
        else:
            out[key] = Const(value, (f"config.json: {key}",))
    return Instance(None, out, "config")


def _run(
    tmp_path: Path,
    served: Instance,
    model_type: str,
    file: dict[str, object],
    level: str = "",
    through: Through | None = None,
) -> tuple[Instance, list[str]]:
    engine = Engine(make_tree(tmp_path, {"configs.py": CONFIGS}), Facts(sinks=SINKS))
    notes: list[str] = []
    return own_config(engine, RULES, served, model_type, file, level, notes, through), notes


def _value(v: Value | None) -> object:
    assert isinstance(v, Const), v
    return v.value


def test_a_field_the_file_leaves_out_has_the_framework_class_default(tmp_path: Path) -> None:
    served = _view({"model_type": "next", "num_experts": 128})
    served.fields["hidden_size"] = Const(7, ("transformers: NextConfig.hidden_size",))
    got, notes = _run(tmp_path, served, "next", {"model_type": "next", "num_experts": 128})
    assert got is not served
    assert _value(got.fields["num_experts"]) == 128  # the file's value, handed to the class
    norm = got.fields["norm_topk_prob"]
    assert _value(norm) is True
    assert any("default of norm_topk_prob at fw/configs.py:" in o for o in norm.origins)
    assert isinstance(got.fields["rope"], DictVal)  # what the constructor normalised
    assert _value(got.fields["hidden_size"]) == 7  # what the class leaves alone: as read
    assert _value(got.fields["layout"]) == "interleaved"  # its own class attribute
    assert len(notes) == 1 and "config class NextConfig" in notes[0]
    assert "norm_topk_prob=True" in notes[0] and "transformers' view: absent" in notes[0]


def test_a_wrapper_text_config_is_built_by_the_class_code(tmp_path: Path) -> None:
    text = _view({"num_experts": 8})
    served = _view({"model_type": "wrap", "text_config": text})
    file = {"model_type": "wrap", "text_config": {"num_experts": 8}}
    got, notes = _run(tmp_path, served, "wrap", file, level="text_config")
    inner = got.fields["text_config"]
    assert isinstance(inner, Instance) and inner.cls is None and inner.label == "config"
    assert _value(inner.fields["num_experts"]) == 8
    assert _value(inner.fields["norm_topk_prob"]) is True
    assert notes and "norm_topk_prob=True" in notes[0]


def test_a_transformers_class_the_framework_registers_is_read_through(tmp_path: Path) -> None:
    """A class derived from a transformers model's config, or that class itself: the file as
    transformers' class builds it (not the class for the file's model_type), with the
    framework class's own class attributes over it."""
    asked: list[str] = []

    def through(name: str) -> Instance | str | None:
        asked.append(name)
        view = _view({"model_type": "alias", "num_experts": 4})
        view.fields["norm_topk_prob"] = Const(False, (f"transformers: {name}.norm_topk_prob",))
        return view

    served = _view({"model_type": "alias", "num_experts": 4})
    got, notes = _run(tmp_path, served, "alias", {"model_type": "alias"}, through=through)
    assert asked == ["LlamaConfig"]
    assert _value(got.fields["layout"]) == "dense"  # the framework class's attribute
    assert _value(got.fields["norm_topk_prob"]) is False
    assert notes and "norm_topk_prob=False (transformers: LlamaConfig" in notes[0]
    got, notes = _run(tmp_path, served, "upstream", {"model_type": "upstream"}, through=through)
    assert asked[-1] == "MixtralConfig" and _value(got.fields["norm_topk_prob"]) is False
    # the class routescope read it through already: as it was
    got, notes = _run(tmp_path, served, "alias", {"model_type": "alias"}, through=lambda n: None)
    assert got.fields["num_experts"] is served.fields["num_experts"] and not notes


def test_what_the_class_cannot_tell_leaves_the_view_as_read(tmp_path: Path) -> None:
    # a model_type the release does not register
    other = _view({"model_type": "other"})
    got, notes = _run(tmp_path, other, "other", {"model_type": "other"})
    assert got is other and not notes
    # a constructor that raises on the file's values: not one way to an end
    huge = _view({"model_type": "next", "num_experts": 10_000})
    got, notes = _run(tmp_path, huge, "next", {"model_type": "next", "num_experts": 10_000})
    assert got is huge
    assert len(notes) == 1 and "could not follow" in notes[0]
    # a step of its own after transformers' constructor, which routescope does not run
    step = _view({"model_type": "step", "num_experts": 4})
    got, notes = _run(tmp_path, step, "step", {"model_type": "step"}, through=lambda n: step)
    assert got is step and "runs on transformers' own" in notes[0]
    # transformers cannot build the file with that class
    got, notes = _run(tmp_path, step, "alias", {"model_type": "alias"}, through=lambda n: "no")
    assert got is step and "cannot build here (no)" in notes[0]
    # a registry whose contents depend on what the facts do not tell
    maybe = _view({"model_type": "maybe"})
    got, notes = _run(tmp_path, maybe, "maybe", {"model_type": "maybe"})
    assert got is maybe and "cannot be told" in notes[0]


def test_the_config_has_the_framework_class_methods_and_properties(tmp_path: Path) -> None:
    """The model code calls the config's own methods (SGLang's NemotronHConfig:
    `config.get_nemotron_h_config_for_layer(layer_idx)`): they are the class's, run on the
    config as read; before, the config had no such attribute and the MoE layer forked."""
    engine = Engine(make_tree(tmp_path, {"configs.py": CONFIGS}), Facts(sinks=SINKS))
    served = _view({"model_type": "next", "num_experts": 96})
    got = own_config(engine, RULES, served, "next", {"model_type": "next", "num_experts": 96},
                     "", [])  # fmt: skip
    text = "(cfg.config_for_layer(3).most_experts, hasattr(cfg, 'not_a_method'))"
    ((_, value),) = engine.evaluate_in(PathState(envs=[{}]), "fw.configs", text, {"cfg": got})
    assert _value(value) == (96, False)
    # a wrapper's text config built by its class's code has its class's methods too
    wrap = _view({"model_type": "wrap", "text_config": _view({"num_experts": 8})})
    file = {"model_type": "wrap", "text_config": {"num_experts": 8}}
    outer = own_config(engine, RULES, wrap, "wrap", file, "text_config", [])
    text = "cfg.text_config.config_for_layer(0).most_experts"
    ((_, inner),) = engine.evaluate_in(PathState(envs=[{}]), "fw.configs", text, {"cfg": outer})
    assert _value(inner) == 8
