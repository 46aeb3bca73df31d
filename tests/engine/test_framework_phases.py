"""The set-up phases as a rule file declares them, on a synthetic framework shaped like vLLM's
start-up: the model class from the release's own registry lookup (`models.lookup`), the MoE
block found through the factory functions that build its router (`router.built_by`), and the
configuration the server runs with built by the argument object's own method
(`server_args.product`). Nothing here names a real framework."""

from __future__ import annotations

from pathlib import Path

import pytest

from routescope.analysis.engine.core import Engine
from routescope.analysis.engine.facts import Facts
from routescope.analysis.engine.values import ClassVal, Const, Instance
from routescope.analysis.phases.deployment import Deployment
from routescope.analysis.phases.frameworks import FrameworkRules
from routescope.analysis.phases.model import find_block, find_model_class
from routescope.analysis.phases.notes import Notes
from routescope.analysis.phases.setup import server_arguments
from routescope.analysis.phases.trace import resolve_entry
from routescope.errors import RoutescopeError
from routescope.hardware import resolve_gpu
from tests.engine.test_engine_synthetic import SINKS, make_tree

FILES = {
    "registry.py": """
        import importlib

        _MODELS = {"ToyForCausalLM": ("toy", "ToyForCausalLM")}

        class _Lazy:
            def __init__(self, module, name):
                self.module, self.name = module, name

            def load_model_cls(self):
                return getattr(importlib.import_module(self.module), self.name)

        REGISTRY = {arch: _Lazy(f"fw.models.{mod}", cls) for arch, (mod, cls) in _MODELS.items()}

        def build_inner(config, architectures=None):
            return REGISTRY[architectures[0]].load_model_cls()(config)
    """,
    "models/wrap.py": """
        from fw.registry import build_inner

        class WrapForConditionalGeneration:
            # vLLM 0.33.0 kimi_k25.py:375-380: the language model by name, through the registry
            def __init__(self, config):
                self.vision = object()
                self.language_model = build_inner(config, architectures=["ToyForCausalLM"])
    """,
    "models/__init__.py": "",
    "models/toy.py": """
        from fw.layer import make_experts

        class ToyMoE:
            def __init__(self, config, prefix=""):
                self.experts = make_experts(config.top_k)

        class HelperMoE:
            # builds its experts in a method of its own (vLLM 0.33.0 DeepseekV4MoE:
            # `self._init_fused_moe_experts(...)` -> FusedMoEFactory)
            def __init__(self, config):
                self._init_experts(config)

            def _init_experts(self, config):
                self.experts = make_experts(config.top_k)

        class ToyDecoder:
            def __init__(self, config):
                self.mlp = ToyMoE(config)

        class HelperDecoder:
            def __init__(self, config):
                self.mlp = HelperMoE(config)

        class HelperForCausalLM:
            def __init__(self, config):
                self.layer = HelperDecoder(config)

        class ToyForCausalLM:
            def __init__(self, config):
                self.layer = ToyDecoder(config)
    """,
    "layer.py": """
        from fw.router import make_router

        def make_experts(top_k):
            return {"router": make_router(top_k)}
    """,
    "router.py": """
        class TopKRouter:
            def __init__(self, top_k):
                self.top_k = top_k

        def make_router(top_k):
            return TopKRouter(top_k)
    """,
    "args.py": """
        from dataclasses import dataclass

        @dataclass
        class Config:
            tp: int
            fast: bool

        @dataclass
        class Args:
            model: str = ""
            tp: int = 1
            quantization: str = None
            fast: bool = False

            def __post_init__(self):
                if self.tp > 4:
                    self.fast = True

            def build_config(self):
                if self.quantization == "int3":
                    raise ValueError("no such quantization")
                return Config(tp=self.tp, fast=self.fast)
    """,
}


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    return Engine(make_tree(tmp_path, FILES), Facts(sinks=SINKS))


def test_the_model_class_comes_from_the_registry_lookup(engine: Engine) -> None:
    lookup = {"in": "fw.registry", "expr": "REGISTRY[architecture].load_model_cls()"}
    models = {"package": "fw.models", "lookup": lookup}
    cls = find_model_class(engine, models, "ToyForCausalLM")
    assert cls.qualname == "fw.models.toy:ToyForCausalLM"
    with pytest.raises(RoutescopeError) as err:
        find_model_class(engine, models, "NoSuchForCausalLM")
    assert "the registry (fw.registry) has no model class for it" in str(err.value)
    assert "KeyError" in str(err.value)


def test_the_block_is_found_through_the_router_factories(engine: Engine) -> None:
    model = resolve_entry(engine, "fw.models.toy:ToyForCausalLM")
    router = resolve_entry(engine, "fw.router:TopKRouter")
    assert isinstance(model, ClassVal) and isinstance(router, ClassVal)
    site = find_block(engine, model, router, ("fw.router:make_router",))
    assert site.block_class.qualname == "fw.models.toy:ToyMoE"
    assert site.chain[-1] == "fw.models.toy:ToyMoE"
    with pytest.raises(RoutescopeError):  # without the factories, nothing constructs it
        find_block(engine, model, router)
    # a wrapper that builds its language model by architecture name, through the registry
    wrap = resolve_entry(engine, "fw.models.wrap:WrapForConditionalGeneration")
    assert isinstance(wrap, ClassVal)
    lookup = {"in": "fw.registry", "expr": "REGISTRY[architecture].load_model_cls()"}
    models = {"lookup": lookup, "inner_model": {"function": "fw.registry:build_inner"}}
    site = find_block(engine, wrap, router, ("fw.router:make_router",), models=models)
    assert site.chain[:2] == (
        "fw.models.wrap:WrapForConditionalGeneration",
        "fw.models.toy:ToyForCausalLM",
    )
    assert site.block_class.qualname == "fw.models.toy:ToyMoE"
    with pytest.raises(RoutescopeError):  # without the rule the registry call hides it
        find_block(engine, wrap, router, ("fw.router:make_router",))
    # a block that calls the factory from a method of its own its constructor calls
    helper = resolve_entry(engine, "fw.models.toy:HelperForCausalLM")
    assert isinstance(helper, ClassVal)
    site = find_block(engine, helper, router, ("fw.router:make_router",))
    assert site.block_class.qualname == "fw.models.toy:HelperMoE"


def _rules(**server_args: object) -> FrameworkRules:
    fields = {"model": "model", "tp": "tp", "quant": "quantization"}
    sa = {"class": ["fw.args:Args"], "post_init": ["__post_init__"], "fields": fields}
    sa.update(server_args)
    return FrameworkRules("fw", "rules/frameworks/fw.toml", {"server_args": sa})


@pytest.mark.parametrize(("tp", "fast"), [(8, True), (2, False)])
def test_the_server_configuration_is_built_by_the_arguments_own_method(
    engine: Engine, tp: int, fast: bool
) -> None:
    engine.facts.checkpoint = None
    notes = Notes()
    dep = Deployment(resolve_gpu("sm120"), tp=tp)
    args = server_arguments(engine, _rules(product="build_config"), dep, notes, [])
    assert isinstance(args, Instance)
    config = engine.facts.bindings["server_config"]
    assert isinstance(config, Instance) and config.cls is not None
    assert config.cls.qualname == "fw.args:Config"
    assert isinstance(config.fields["fast"], Const) and config.fields["fast"].value is fast


def test_a_configuration_every_way_through_raises_is_said(engine: Engine) -> None:
    """A quantization the configuration rejects: every way through build_config raises, the
    phase did not finish, and the configuration is unknown, never a half-built object."""
    engine.facts.checkpoint = None
    notes = Notes()
    dep = Deployment(resolve_gpu("sm120"), quant="int3")
    server_arguments(engine, _rules(product="build_config"), dep, notes, [])
    assert not isinstance(engine.facts.bindings["server_config"], Instance)
    assert any("build_config did not finish" in f and "ValueError" in f for f in engine.fatal)


def test_a_platform_fact_compares_a_gpu_profile_field() -> None:
    """`@gpu.capability >= (10, 0)`: what a compiled support probe answers on the GPU (vLLM's
    cutlass_scaled_mm_supports_fp4: capability >= 100), with the profile as its origin; a fact
    that is not '<field> <op> <literal>' is a rules error naming the fact."""
    from routescope.analysis.phases.frameworks import _fact
    from routescope.errors import RoutescopeError

    for gpu, want in (("sm120", True), ("sm100", True), ("sm90", False), ("sm80", False)):
        got = _fact("@gpu.capability >= (10, 0)", resolve_gpu(gpu), "rules platform.calls x")
        assert isinstance(got, Const) and got.value is want, gpu
        assert any("GPU profile" in o for o in got.origins)
    with pytest.raises(RoutescopeError, match=r"platform\.calls x"):
        _fact("@gpu.capability ~ (10, 0)", resolve_gpu("sm90"), "rules platform.calls x")
