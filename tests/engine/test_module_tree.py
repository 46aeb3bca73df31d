"""torch.nn.Module's view of its own tree (named_children, parameters, ...), isinstance against
torch.nn classes, and a module whose __class__ is swapped for a subclass after it was built:
what a serving framework's generic backend reads when it replaces a library model's experts
(SGLang 0.5.23 models/transformers.py:1255-1305)."""

from __future__ import annotations

from pathlib import Path

from tests.engine.test_engine_synthetic import SCORES, make_tree, run

HEAD = """
import torch
from torch import nn
from fastk import topk_fast


class Experts(nn.Module):
    def __init__(self):
        super().__init__()
        self.w13 = nn.Parameter(torch.empty(8, 32, 16))
        self.scratch = torch.zeros(3)  # a plain tensor attribute: not registered
        self.w2 = nn.Parameter(torch.empty(8, 16, 16))


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(8, 16))
        self.bias = nn.Buffer(torch.zeros(8))  # a buffer, not a parameter


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.experts = Experts()
        self.gate = Gate()
        self.act = nn.SiLU()

"""


def _kinds(tmp_path: Path, body: str) -> list[str | None]:
    paths = run(make_tree(tmp_path, {"route.py": HEAD + body}), "fw.route:route", SCORES())
    return sorted(p.sink.kind if p.sink else "none" for p in paths)


def test_children_and_parameters_in_registration_order(tmp_path: Path) -> None:
    body = """
def route(x):
    b = Block()
    ok = [n for n, _ in b.named_children()] == ["experts", "gate", "act"]
    ok = ok and [n for n, _ in b.experts.named_parameters()] == ["w13", "w2"]
    ok = ok and all(p.ndim == 3 for p in b.experts.parameters())
    ok = ok and [n for n, _ in b.gate.named_parameters()] == ["weight"]
    ok = ok and len(list(b.act.children())) == 0
    if ok:
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    assert _kinds(tmp_path, body) == ["cuda_kernel"]


def test_isinstance_against_torch_nn_classes(tmp_path: Path) -> None:
    body = """
def route(x):
    b = Block()
    ok = isinstance(b, nn.Module) and not isinstance(b, nn.Linear)
    ok = ok and not isinstance(b.experts, nn.ModuleList)
    ok = ok and isinstance(b.act, nn.SiLU) and isinstance(b.act, nn.Module)
    ok = ok and not isinstance(b.act, nn.Linear)
    ok = ok and isinstance(b.gate.weight, nn.Parameter)
    if ok:
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    assert _kinds(tmp_path, body) == ["cuda_kernel"]


def test_parameters_under_a_torch_module_are_not_guessed(tmp_path: Path) -> None:
    """nn.LayerNorm's own parameters are torch's and not read: the count is unknown, both
    ways are shown (never a count that leaves them out). A SiLU holds none: told."""
    body = """
class Normed(Block):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(16)


def route(x):
    if len(list(Block().parameters())) != 3:
        return torch.topk(x, 3)
    if len(list(Normed().parameters())) == 3:
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    assert _kinds(tmp_path, body) == ["cuda_kernel", "torch"]


def test_a_container_child_is_not_read_as_empty(tmp_path: Path) -> None:
    body = """
class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([Experts(), Experts()])


def route(x):
    if len(list(Stack().modules())) == 2:
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    assert _kinds(tmp_path, body) == ["cuda_kernel", "torch"]


def test_a_swapped_class_answers_calls_and_super(tmp_path: Path) -> None:
    """`mlp.__class__ = Wrapped` (a subclass made from mlp.__class__): calling the module runs
    Wrapped.forward, whose super().forward() is the original class's."""
    body = """
class Routed(nn.Module):
    def forward(self, x):
        return torch.topk(x, 2)


def wrap(m):
    class Wrapped(m.__class__):
        def forward(self, x):
            return super().forward(x)

    m.__class__ = Wrapped


def route(x):
    m = Routed()
    wrap(m)
    if m.__class__.__name__ == "Wrapped":
        return m(x)
    return topk_fast(x)
"""
    paths = run(make_tree(tmp_path, {"route.py": HEAD + body}), "fw.route:route", SCORES())
    assert [p.sink.kind if p.sink else None for p in paths] == ["torch"]
    called = [f.function for f in paths[0].frames]
    assert called[-2:] == ["fw.route:Wrapped.forward", "fw.route:Routed.forward"]


def test_a_torch_linear_has_the_parameters_torch_gives_it(tmp_path: Path) -> None:
    """nn.Linear(in, out, bias=False) holds one weight (out, in); calling it is an op on its
    input and that weight (a gate of the router's scores gives scores)."""
    body = """
class Gated(nn.Module):
    def __init__(self):
        super().__init__()
        self.router = nn.Linear(16, 8, bias=False)
        self.proj = nn.Linear(16, 16)


def route(x):
    m = Gated()
    ok = [n for n, _ in m.named_parameters()] == ["router.weight", "proj.weight", "proj.bias"]
    ok = ok and [tuple(p.shape) for p in m.router.parameters()] == [(8, 16)]
    if ok:
        return torch.topk(m.router(x), 2)
    return topk_fast(x)
"""
    assert _kinds(tmp_path, body) == ["torch"]


def test_a_field_an_unread_library_made_is_an_assumption(tmp_path: Path) -> None:
    """torch registers an attribute as a child only if it is a module: a value code routescope
    does not read made may be one or not. It is taken as neither, and the answer lists it among
    its assumptions (never silently)."""
    from routescope.analysis.engine.facts import Facts
    from tests.engine.test_engine_synthetic import SINKS

    body = """
from actlib import make_act


class WithAct(nn.Module):
    def __init__(self):
        super().__init__()
        self.experts = Experts()
        self.act = make_act("silu")


def route(x):
    if [n for n, _ in WithAct().named_children()] == ["experts"]:
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    facts = Facts(sinks=SINKS)
    paths = run(make_tree(tmp_path, {"route.py": HEAD + body}), "fw.route:route", SCORES(),
                facts=facts)  # fmt: skip
    assert [p.sink.kind if p.sink else None for p in paths] == ["cuda_kernel"]
    assert ("module field", "WithAct.act") in facts.used
