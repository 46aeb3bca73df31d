"""The layer whose MoE block is traced is the first MoE layer that builds the top-k router: a
model that chooses the experts of its first layers otherwise (a hash of the token id, with no
top-k) has its later layers' router traced, and a note names the layers that route otherwise."""

from __future__ import annotations

from pathlib import Path

from routescope.analysis.engine.core import Engine
from routescope.analysis.engine.facts import Facts
from routescope.analysis.engine.values import ClassVal, Const, Instance
from routescope.analysis.phases.layers import build_routing_layer, layer_values
from routescope.analysis.phases.model import ModelSite, find_block
from routescope.analysis.phases.notes import Notes
from routescope.analysis.phases.trace import resolve_entry
from tests.engine.test_engine_synthetic import SINKS, make_tree

MODEL = """
    from fw.router import TopKRouter

    class HashRouter:
        def __init__(self, table):
            self.table = table

    class SparseMoeBlock:
        def __init__(self, config, layer_id=0, prefix=""):
            if layer_id < getattr(config, "num_hash_layers", 0):
                self.gate = HashRouter(config.vocab)
            else:
                self.gate = TopKRouter(config.top_k)

    class DecoderLayer:
        def __init__(self, config, layer_id, prefix=""):
            self.mlp = SparseMoeBlock(config, layer_id=layer_id, prefix=f"{prefix}.mlp")

    class Model:
        def __init__(self, config, prefix=""):
            self.layers = [DecoderLayer(config, i, prefix=f"layers.{i}") for i in range(4)]

    class ForCausalLM:
        def __init__(self, config, prefix=""):
            self.model = Model(config, prefix="model")
"""

ROUTER = """
    class TopKRouter:
        def __init__(self, top_k):
            self.top_k = top_k
"""


def _site(tmp_path: Path, models: str, entry: str) -> tuple[Engine, ModelSite, ClassVal]:
    """The synthetic framework's engine, the site of `entry`'s MoE block, and the router."""
    engine = Engine(make_tree(tmp_path, {"models.py": models, "router.py": ROUTER}),
                    Facts(sinks=SINKS))  # fmt: skip
    model = resolve_entry(engine, entry)
    router = resolve_entry(engine, "fw.router:TopKRouter")
    assert isinstance(model, ClassVal) and isinstance(router, ClassVal)
    return engine, find_block(engine, model, router), router


def _build(tmp_path: Path, fields: dict[str, object], layers: int) -> tuple[int, Notes, bool]:
    engine, site, router = _site(tmp_path, MODEL, "fw.models:ForCausalLM")
    config = Instance(None, {k: Const(v) for k, v in fields.items()}, "config")
    base = {"config": config, "quant_config": Const(None)}
    values, paths, _ = layer_values(engine, site, base, 0)
    notes = Notes()
    built, layer = build_routing_layer(engine, site, values, paths, router, notes, 0, layers)
    return layer, notes, all(isinstance(r, Instance) for _s, _b, r in built)


def test_layers_that_route_otherwise_are_passed_over_with_a_note(tmp_path: Path) -> None:
    layer, notes, routed = _build(tmp_path, {"top_k": 2, "vocab": 8, "num_hash_layers": 3}, 4)
    assert layer == 3 and routed
    assert any("layers 0..2 build fw.models:SparseMoeBlock without fw.router:TopKRouter" in n
               for n in notes)  # fmt: skip


def test_the_first_moe_layer_when_it_routes_and_no_further_than_the_model(tmp_path: Path) -> None:
    layer, notes, routed = _build(tmp_path, {"top_k": 2, "vocab": 8}, 4)
    assert layer == 0 and routed and not notes
    # every layer hashed: the first is kept, with its own answer (no router)
    layer, notes, routed = _build(tmp_path, {"top_k": 2, "vocab": 8, "num_hash_layers": 9}, 4)
    assert layer == 0 and not routed and not any("layers 0.." in n for n in notes)


TABLE = """
    from fw.router import TopKRouter

    class MoeBlock:
        def __init__(self, config):
            self.gate = TopKRouter(config.top_k)

    class AttentionLayer:
        def __init__(self, config, layer_id):
            self.mlp = MoeBlock(config)

    class LinearLayer:
        def __init__(self, config, layer_id):
            self.mlp = MoeBlock(config)

    LAYER_TYPES = {"attention": AttentionLayer, "linear_attention": LinearLayer}

    class Model:
        def __init__(self, config):
            def get_layer(idx):
                layer_class = LAYER_TYPES[config.layer_types[idx]]
                return layer_class(config, layer_id=idx)

            self.layers = [get_layer(i) for i in range(config.n)]
"""


def test_a_layer_class_picked_from_a_module_table_is_followed(tmp_path: Path) -> None:
    """The decoder layer's class is looked up in a module-level table by a runtime key: the
    classes the table holds are the ones the constructor may build."""
    _engine, site, _router = _site(tmp_path, TABLE, "fw.models:Model")
    assert site.block_class.qualname == "fw.models:MoeBlock"
    assert site.chain[1] in ("fw.models:AttentionLayer", "fw.models:LinearLayer")


def test_the_first_moe_layer_is_read_from_the_keys_that_lay_the_layers_out() -> None:
    """The layer built first is the first MoE one by whichever layer-pattern key the config
    uses, not the first after `first_k_dense_replace` alone: a hybrid pattern's first 'E'
    (Nemotron-3-Nano: layer 0 is a Mamba layer, and SGLang 0.5.21's Nemotron decoder layer,
    built with an unknown `layer_idx`, declared its boundaries for every pattern letter and ran
    out of its budget), a per-layer list (MiMo-V2-Flash), an interleave step (Llama-4
    Maverick), Jamba's period and offset; and the index is handed under both names framework
    layers take it by (`layer_id`, `layer_idx`)."""
    from routescope.intake.load import load_spec
    from tests.conftest import CONFIGS

    root = CONFIGS.parent
    expected = {
        "checkpoints/nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-NVFP4/config.json": 1,
        "configs/XiaomiMiMo--MiMo-V2-Flash.json": 1,
        "configs/meta-llama--Llama-4-Maverick-17B-128E-Instruct.json": 1,
        "configs/meta-llama--Llama-4-Scout-17B-16E-Instruct.json": 0,
        "configs/ai21labs--Jamba-v0.1.json": 1,
        "configs/zai-org--GLM-5.json": 3,
        "configs/deepseek-ai--DeepSeek-V2-Lite.json": 1,
        "configs/Qwen--Qwen3-30B-A3B.json": 0,
        "configs/mistralai--Mixtral-8x7B-v0.1.json": 0,
    }
    got = {name: load_spec(str(root / name), offline=True).first_moe_layer for name in expected}
    assert got == expected
    values, _, _ = layer_values(None, None, {}, 3, read_paths=False)  # type: ignore[arg-type]
    assert values["layer_id"].value == values["layer_idx"].value == 3  # type: ignore[attr-defined]
