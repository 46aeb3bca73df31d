"""The MoE block's module path is read from the constructors that build it (each hands its
part `prefix=` computed from its own), not made up: a quantization config looks its per-module
settings up by it, and a wrapper puts the language model under a name of its own."""

from __future__ import annotations

from pathlib import Path

from routescope.analysis.engine.core import Engine
from routescope.analysis.engine.facts import Facts
from routescope.analysis.engine.values import ClassVal
from routescope.analysis.phases.model import find_block
from routescope.analysis.phases.prefix import module_paths
from routescope.analysis.phases.trace import resolve_entry
from tests.engine.test_engine_synthetic import SINKS, make_tree

MODEL = """
    from fw.router import TopKRouter

    def maybe_prefix(prefix, name):
        return name if not prefix else f"{prefix}.{name}"

    def make_layers(n, layer_fn, prefix):
        return [layer_fn(prefix=f"{prefix}.{i}") for i in range(n)]

    class SparseMoeBlock:
        def __init__(self, config, prefix=""):
            self.router = TopKRouter(config.top_k)

    class BaseDecoderLayer:  # its block is replaced: the derived constructor's is the one
        def __init__(self, config, prefix=""):
            self.mlp = SparseMoeBlock(config, prefix=f"{prefix}.moe_old")

    class DecoderLayer(BaseDecoderLayer):
        def __init__(self, config, prefix=""):
            self.mlp = SparseMoeBlock(config, prefix=BLOCK_PREFIX)

    class Model:
        def __init__(self, config, prefix=""):
            def get_layer(prefix):
                return DecoderLayer(config, prefix=prefix)

            self.layers = make_layers(config.n, get_layer, prefix=f"{prefix}.layers")

    class ForCausalLM:
        model_cls = Model

        def __init__(self, config, prefix=""):
            self.model = self.model_cls(config, prefix=maybe_prefix(prefix, "model"))

    class ForConditionalGeneration:
        def __init__(self, config, prefix=""):
            self.language_model = ForCausalLM(config, prefix=maybe_prefix(prefix, "language_model"))
"""

ROUTER = """
    class TopKRouter:
        def __init__(self, top_k):
            self.top_k = top_k
"""


def _paths(tmp_path: Path, block_prefix: str, before: str = "") -> tuple[tuple[str, ...], str]:
    """`before`: a statement the decoder layer runs before it builds the block."""
    built = "self.mlp = SparseMoeBlock(config, prefix=BLOCK_PREFIX)"
    model = MODEL.replace(built, f"{before}\n            {built}" if before else built)
    files = {"models.py": model.replace("BLOCK_PREFIX", block_prefix), "router.py": ROUTER}
    engine = Engine(make_tree(tmp_path, files), Facts(sinks=SINKS))
    model = resolve_entry(engine, "fw.models:ForConditionalGeneration")
    router = resolve_entry(engine, "fw.router:TopKRouter")
    assert isinstance(model, ClassVal) and isinstance(router, ClassVal)
    return module_paths(engine, find_block(engine, model, router), 3)


def test_each_class_gets_the_path_its_parent_hands_it(tmp_path: Path) -> None:
    paths, why = _paths(tmp_path, 'f"{prefix}.mlp"')
    assert why == ""
    assert paths == (
        "",
        "language_model",
        "language_model.model",
        "language_model.model.layers.3",
        "language_model.model.layers.3.mlp",
    )


def test_a_path_computed_from_more_than_the_parents_own_is_not_guessed(tmp_path: Path) -> None:
    paths, why = _paths(tmp_path, 'config.name + ".mlp"')
    assert paths == ()
    assert "fw.models:DecoderLayer hands fw.models:SparseMoeBlock no prefix" in why


def test_a_parent_that_changes_its_own_prefix_first_is_not_read(tmp_path: Path) -> None:
    """`prefix = prefix + ".inner"` before the block is built: the path handed on is not the
    one the parent was given, so the step is not read (the made-up path, with a note)."""
    paths, why = _paths(tmp_path, 'f"{prefix}.mlp"', before='prefix = prefix + ".inner"')
    assert paths == ()
    assert "fw.models:DecoderLayer hands fw.models:SparseMoeBlock no prefix" in why


def _found(tmp_path: Path, models: str, entry: str, rules: dict[str, object] | None = None
           ) -> tuple[tuple[str, ...], tuple[str, ...], str]:  # fmt: skip
    files = {"models.py": models, "router.py": ROUTER}
    engine = Engine(make_tree(tmp_path, files), Facts(sinks=SINKS))
    model = resolve_entry(engine, entry)
    router = resolve_entry(engine, "fw.router:TopKRouter")
    assert isinstance(model, ClassVal) and isinstance(router, ClassVal)
    site = find_block(engine, model, router, models=rules)
    return (site.chain, *module_paths(engine, site, 0))


BY_NAME = (
    MODEL.replace("BLOCK_PREFIX", 'f"{prefix}.mlp"')
    + """
    REGISTRY = {"ForCausalLM": ForCausalLM}

    def init_registered_model(config, *, prefix="", architectures=None):
        return REGISTRY[architectures[0]](config, prefix=prefix)

    class Wrapper:
        def __init__(self, config, prefix=""):
            self.language_model = init_registered_model(
                config, prefix=maybe_prefix(prefix, "language_model"),
                architectures=["ForCausalLM"])
"""
)


def test_a_wrapper_that_builds_its_language_model_by_name_hands_on_its_prefix(
    tmp_path: Path,
) -> None:
    """vLLM 0.34.0's Gemma 4 wrapper builds its language model through
    init_vllm_registered_model(..., prefix=maybe_prefix(prefix, "language_model"),
    architectures=[...]) (gemma4_mm.py), which hands `prefix` on to the constructor
    (models/utils.py:691-711): with the rules' `inner_model.prefix` the path is read through
    it; without it, the step is not read (the made-up path, with a note)."""
    rule = {"lookup": {"in": "fw.models", "expr": "REGISTRY[architecture]"},
            "inner_model": {"function": "fw.models:init_registered_model",
                            "architectures": "architectures", "prefix": "prefix"}}  # fmt: skip
    chain, paths, why = _found(tmp_path, BY_NAME, "fw.models:Wrapper", rule)
    assert chain[:2] == ("fw.models:Wrapper", "fw.models:ForCausalLM")
    assert why == ""
    assert paths[1:] == ("language_model", "language_model.model", "language_model.model.layers.0",
                         "language_model.model.layers.0.mlp")  # fmt: skip
    inner: dict[str, object] = dict(rule["inner_model"])  # type: ignore[call-overload]
    del inner["prefix"]
    _, paths, why = _found(tmp_path, BY_NAME, "fw.models:Wrapper", {**rule, "inner_model": inner})
    assert paths == () and "fw.models:Wrapper hands fw.models:ForCausalLM no prefix" in why


# the router one constructor further down (the block builds the experts layer, which builds it),
# and the wrapper's mixin naming the block in an isinstance test its constructor calls
DEEP = (
    MODEL.replace("BLOCK_PREFIX", 'f"{prefix}.mlp"')
    .replace(
        "self.router = TopKRouter(config.top_k)",
        'self.experts = Experts(config, prefix=f"{prefix}.experts")',
    )
    .replace("class ForConditionalGeneration:", "class ForConditionalGeneration(Mixin):")
    .replace(
        'self.language_model = ForCausalLM(config, prefix=maybe_prefix(prefix, "language_model"))',
        'self.language_model = ForCausalLM(config, prefix=maybe_prefix(prefix, "language_model"))'
        "\n            self.set_moe_parameters()",
    )
    + """
    class Experts:
        def __init__(self, config, prefix=""):
            self.router = TopKRouter(config.top_k)

    class Mixin:
        def set_moe_parameters(self):
            return [m for m in self.modules() if isinstance(m, SparseMoeBlock)]
"""
)


def test_a_chain_six_constructors_deep_is_followed_before_a_class_only_named(
    tmp_path: Path,
) -> None:
    """vLLM 0.20.0's Qwen3.5/3.6 MoE wrapper: wrapper, causal LM, model, decoder layer, sparse
    block, then the FusedMoE that builds the router, six constructors; the wrapper's mixin
    names the block in an isinstance test. The search follows what constructors call that
    deep before it reads the classes they only name (which gave wrapper -> block, and a
    made-up path)."""
    chain, paths, why = _found(tmp_path, DEEP, "fw.models:ForConditionalGeneration")
    assert chain == ("fw.models:ForConditionalGeneration", "fw.models:ForCausalLM",
                     "fw.models:Model", "fw.models:DecoderLayer", "fw.models:SparseMoeBlock",
                     "fw.models:Experts")  # fmt: skip
    assert why == "" and paths[-1] == "language_model.model.layers.0.mlp.experts"
