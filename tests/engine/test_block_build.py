"""Building the MoE block as its parents do, on a synthetic model shaped like vLLM 0.15.1's
DeepSeek-V2 (deepseek_v2.py:899-965): the class that builds the router is an experts layer whose
arguments its MoE block computes, and the MoE block takes an argument (the parallel config) only
the decoder layer reads from the model config; the decoder layer reads its index from the last
part of its prefix. Nothing here names a real framework."""

from __future__ import annotations

from pathlib import Path

from routescope.analysis.engine.core import Engine
from routescope.analysis.engine.facts import Facts
from routescope.analysis.engine.values import ClassVal, Const, Instance
from routescope.analysis.phases.block import build_block, reached
from routescope.analysis.phases.model import find_block
from routescope.analysis.phases.trace import resolve_entry
from tests.engine.test_engine_synthetic import SINKS, make_tree

FILES = {
    "models/__init__.py": "",
    "models/toy.py": """
        from fw.layer import Experts

        class ToyMoE:
            def __init__(self, config, parallel, prefix=""):
                self.gate = Gate()
                self.experts = Experts(
                    config.top_k, parallel.eplb, self.gate, prefix=f"{prefix}.experts"
                )

        class Gate:
            pass

        class ToyDecoder:
            def __init__(self, config, prefix):
                self.index = int(prefix.split(".")[-1])
                self.mlp = ToyMoE(config, config.parallel, prefix=f"{prefix}.mlp")

        class ToyModel:
            def __init__(self, config, prefix=""):
                self.layers = [ToyDecoder(config, f"{prefix}.layers.{i}") for i in range(2)]

        class ToyForCausalLM:
            def __init__(self, config):
                self.model = ToyModel(config, "model")
    """,
    "layer.py": """
        from fw.router import TopKRouter

        class Experts:
            def __init__(self, top_k, eplb, gate, prefix=""):
                self.router = TopKRouter(top_k, eplb)
                self._gate = gate
                self.prefix = prefix

            @property
            def gate(self):
                return self._gate
    """,
    "router.py": """
        class TopKRouter:
            def __init__(self, top_k, eplb):
                self.top_k = top_k
                self.eplb = eplb
    """,
    "config.py": """
        class Parallel:
            eplb = False

        class Config:
            top_k = 8
            parallel = Parallel()
    """,
}


def test_the_block_is_built_from_the_nearest_parent_the_values_build(tmp_path: Path) -> None:
    engine = Engine(make_tree(tmp_path, FILES), Facts(sinks=SINKS))
    model = resolve_entry(engine, "fw.models.toy:ToyForCausalLM")
    router = resolve_entry(engine, "fw.router:TopKRouter")
    config_cls = resolve_entry(engine, "fw.config:Config")
    assert isinstance(model, ClassVal) and isinstance(router, ClassVal)
    assert isinstance(config_cls, ClassVal)
    site = find_block(engine, model, router)
    assert site.block_class.qualname == "fw.layer:Experts"
    config = Instance(config_cls, {})
    built = build_block(
        engine, site, {"config": config, "prefix": Const("model.layers.3.mlp")}, router
    )
    assert built
    for st, block, got in built:
        assert isinstance(got, Instance)
        fields = st.fields(got)
        assert fields["top_k"] == Const(8) or getattr(fields["top_k"], "value", None) == 8
        # the decoder layer computed what the block took (the parallel config): decided
        assert getattr(fields["eplb"], "value", "unknown") is False
        # the decoder layer was handed its own path, as the model builds it
        assert isinstance(block, Instance) and st.fields(block)["index"].value == 3
        # the gate the experts layer holds behind a property is read as Python reads it
        experts = next(v for v in st.fields(st.fields(block)["mlp"]).values()
                       if isinstance(v, Instance) and v.cls is site.block_class)  # fmt: skip
        gates = reached(engine, st, experts, "gate")
        assert [g.cls.qualname for g in gates if g.cls] == ["fw.models.toy:Gate"]


def test_the_walk_keeps_each_class_its_own_path_and_stops_at_the_decoder_layer(
    tmp_path: Path,
) -> None:
    """Stopped at the MoE block (the values give what it takes), the block keeps its own path
    (model.layers.3.mlp), not its decoder layer's; a decoder layer that takes something the
    values lack is built as it is (that argument unknown), never the model above it, which
    builds every layer."""
    engine = Engine(make_tree(tmp_path, FILES), Facts(sinks=SINKS))
    model = resolve_entry(engine, "fw.models.toy:ToyForCausalLM")
    router = resolve_entry(engine, "fw.router:TopKRouter")
    config_cls = resolve_entry(engine, "fw.config:Config")
    parallel_cls = resolve_entry(engine, "fw.config:Parallel")
    assert isinstance(model, ClassVal) and isinstance(router, ClassVal)
    assert isinstance(config_cls, ClassVal) and isinstance(parallel_cls, ClassVal)
    site = find_block(engine, model, router)
    config, parallel = Instance(config_cls, {}), Instance(parallel_cls, {})
    prefix = Const("model.layers.3.mlp")
    built = build_block(engine, site, {"config": config, "parallel": parallel, "prefix": prefix},
                        router)  # fmt: skip
    assert built
    for st, block, _ in built:
        assert isinstance(block, Instance) and block.cls is not None
        assert block.cls.qualname == "fw.models.toy:ToyMoE"
        experts = st.fields(block)["experts"]
        assert isinstance(experts, Instance)
        assert getattr(st.fields(experts)["prefix"], "value", None) == "model.layers.3.mlp.experts"
    built = build_block(engine, site, {"prefix": prefix}, router)  # no config at all
    assert built
    for _, block, _ in built:
        assert isinstance(block, Instance) and block.cls is not None
        assert block.cls.qualname == "fw.models.toy:ToyDecoder"  # not ToyModel


HANDED = {
    "models/__init__.py": "",
    "models/toy.py": """
        from fw.router import TopKRouter

        MODE = "wide"

        class ToyMoE:
            def __init__(self, config, prefix="", is_v4=False, wide=False, stream=None,
                         q_on=None):
                self.router = TopKRouter(config.top_k, "ungrouped" if is_v4 else "grouped")
                self.wide = wide
                self.stream = stream
                self.q_on = q_on

        class ToyDecoder:
            def __init__(self, config, prefix, stream=None, quant=None):
                local = object()
                quant = quant or "fp8"  # reassigned: what it is here is the parent's own
                self.mlp = ToyMoE(
                    config=config,
                    prefix=f"{prefix}.mlp",
                    is_v4=True,
                    wide=MODE == "wide" and config.top_k > 4,
                    stream=stream or local,
                    q_on=quant is not None,
                )

        class ToyModel:
            def __init__(self, config, prefix=""):
                self.layers = [ToyDecoder(config, f"{prefix}.layers.{i}") for i in range(2)]

        class ToyForCausalLM:
            def __init__(self, config):
                self.model = ToyModel(config, "model")
    """,
    "router.py": """
        class TopKRouter:
            def __init__(self, top_k, method):
                self.top_k = top_k
                self.method = method
    """,
    "config.py": """
        class Config:
            top_k = 8
    """,
}


def test_a_block_takes_what_its_parent_hands_it_beyond_the_values(tmp_path: Path) -> None:
    """Built from the values alone, the block gets what its decoder layer passes it from the
    values, constants and module-level names (`is_v4=True` chooses the router's method), not
    the parameter's default; what the parent computes itself stays at the default, said in a
    note naming it and the line that builds the block."""
    from routescope.analysis.phases.notes import Notes

    engine = Engine(make_tree(tmp_path, HANDED), Facts(sinks=SINKS))
    model = resolve_entry(engine, "fw.models.toy:ToyForCausalLM")
    router = resolve_entry(engine, "fw.router:TopKRouter")
    config_cls = resolve_entry(engine, "fw.config:Config")
    assert isinstance(model, ClassVal) and isinstance(router, ClassVal)
    assert isinstance(config_cls, ClassVal)
    site = find_block(engine, model, router)
    assert site.block_class.qualname == "fw.models.toy:ToyMoE"
    notes = Notes()
    values = {"config": Instance(config_cls, {}), "prefix": Const("model.layers.1.mlp")}
    built = build_block(engine, site, values, router, notes)
    assert built
    for st, block, got in built:
        assert isinstance(got, Instance) and isinstance(block, Instance)
        assert getattr(st.fields(got)["method"], "value", None) == "ungrouped"
        assert getattr(st.fields(block)["wide"], "value", None) is True
        assert getattr(st.fields(block)["stream"], "value", 0) is None  # the default: computed
        assert getattr(st.fields(block)["q_on"], "value", 0) is None  # never the values' guess
    assert len(notes) == 1
    assert "stream" in notes[0] and "q_on" in notes[0] and "is_v4" not in notes[0]
    assert "models/toy.py:" in notes[0]


HYBRID = {
    "models/__init__.py": "",
    "models/toy.py": """
        from fw.router import TopKRouter

        def make_layers(n, layer_fn, prefix=""):
            return [layer_fn(idx=i, prefix=f"{prefix}.{i}") for i in range(n)]

        class ToyMoE:
            def __init__(self, config, layer_idx, prefix=""):
                self.router = TopKRouter(config.top_k)

        class ToyMoEDecoder:
            def __init__(self, config, layer_idx, prefix=""):
                self.mixer = ToyMoE(config, layer_idx=layer_idx, prefix=f"{prefix}.mixer")

        class ToyMambaDecoder:
            def __init__(self, config, layer_idx, prefix=""):
                self.mixer = None

        LAYER_TYPES = {"M": ToyMambaDecoder, "E": ToyMoEDecoder}

        class ToyModel:
            def __init__(self, config, prefix=""):
                def get_layer(idx, prefix):
                    layer_class = LAYER_TYPES[config.pattern[idx]]
                    return layer_class(config, idx, prefix=prefix)

                self.layers = make_layers(len(config.pattern), get_layer, prefix=f"{prefix}.layers")

        class ToyForCausalLM:
            def __init__(self, config):
                self.model = ToyModel(config, "model")
    """,
    "router.py": """
        class TopKRouter:
            def __init__(self, top_k):
                self.top_k = top_k
    """,
    "config.py": """
        class Config:
            top_k = 6
            pattern = "MEME"
    """,
}


def test_a_layer_picked_from_a_table_by_a_factory_is_the_decoder_layer(tmp_path: Path) -> None:
    """A hybrid model (shaped like SGLang 0.5.15's nemotron_h.py:797-808) builds each layer in a
    function it hands to `make_layers`, picking the layer's class from a module-level table by
    the layer's kind: that class is the decoder layer, built on its own (its index unknown),
    never the model above it with every layer."""
    engine = Engine(make_tree(tmp_path, HYBRID), Facts(sinks=SINKS))
    model = resolve_entry(engine, "fw.models.toy:ToyForCausalLM")
    router = resolve_entry(engine, "fw.router:TopKRouter")
    config_cls = resolve_entry(engine, "fw.config:Config")
    assert isinstance(model, ClassVal) and isinstance(router, ClassVal)
    assert isinstance(config_cls, ClassVal)
    site = find_block(engine, model, router)
    values = {"config": Instance(config_cls, {}), "prefix": Const("model.layers.1.mixer")}
    built = build_block(engine, site, values, router)
    assert built
    for st, block, got in built:
        assert isinstance(block, Instance) and block.cls is not None
        assert block.cls.qualname == "fw.models.toy:ToyMoEDecoder"
        assert isinstance(got, Instance) and getattr(st.fields(got)["top_k"], "value", 0) == 6
