"""An object of a class the rules build whole has its opaque base's constructor entered (vLLM
0.34.0: router/gate_linear.py:26 GateLinear(ReplicatedLinear) reads at :115 the quant method
LinearBase sets at linear.py:294-295, `vllm.model_executor.layers.linear:*` being opaque);
objects of the opaque classes themselves, and of classes the rules do not name, stay unbuilt."""

from __future__ import annotations

from pathlib import Path

from routescope.analysis.engine.facts import Facts
from tests.engine.test_engine_synthetic import SCORES, SINKS, make_tree, run

LINEAR = """
class Unquantized:
    pass

class LinearBase:
    def __init__(self, quant_config=None):
        if quant_config is None:
            self.quant_method = Unquantized()
"""

GATE = """
import torch
from fastk import topk_fast
from fw.linear import LinearBase, Unquantized

class Gate(LinearBase):
    def __init__(self):
        super().__init__()
        self.fast = isinstance(self.quant_method, Unquantized)

class Inherits(LinearBase):
    @property
    def fast(self):
        return isinstance(self.quant_method, Unquantized)

def route(x, which):
    gate = Gate() if which == "own" else Inherits()
    if gate.fast:
        return topk_fast(x)
    return torch.topk(x, 2)

def plain(x):
    if isinstance(LinearBase().quant_method, Unquantized):
        return topk_fast(x)
    return torch.topk(x, 2)
"""


def _kinds(tmp_path: Path, entry: str, *args: object, whole: list[str]) -> list[str | None]:
    index = make_tree(tmp_path, {"linear.py": LINEAR, "moe/gate.py": GATE})
    facts = Facts(sinks=SINKS, opaque=["fw.linear:*"], built_whole=whole)
    return sorted(str(p.sink.kind if p.sink else None) for p in run(index, entry, *args,
                                                                  facts=facts))  # fmt: skip


def test_a_subclass_built_whole_reads_what_its_opaque_base_sets(tmp_path: Path) -> None:
    for which in ("own", "inherited"):
        got = _kinds(tmp_path, "fw.moe.gate:route", SCORES(), which, whole=["fw.moe.*"])
        assert got == ["cuda_kernel"], which


def test_without_the_rule_the_base_stays_opaque(tmp_path: Path) -> None:
    got = _kinds(tmp_path, "fw.moe.gate:route", SCORES(), "own", whole=[])
    assert got == ["cuda_kernel", "torch"]


def test_an_opaque_class_own_object_stays_unbuilt(tmp_path: Path) -> None:
    got = _kinds(tmp_path, "fw.moe.gate:plain", SCORES(), whole=["fw.moe.*"])
    assert got == ["cuda_kernel", "torch"]
