"""What the engine decides of a torch call's result against what torch gives (the CPU build the
dev install pins): `isinstance(v, torch.Tensor)` and `v is None` may be undecided, never
decided the other way. Probes of 2026-12-07 found 46 decided wrong (numel(), equal(), item(),
finfo(), a torch.nn module, ...); those mended are here, tuples of tensors (not yet) xfail."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from tests.engine.test_engine_semantics import _kinds

torch = pytest.importorskip("torch")

CALLS = [
    "torch.empty(4).sum()", "torch.empty(4).max()", "torch.empty(4, 2).max(0)",
    "torch.empty(4).argmax()", "torch.empty(4).any()", "torch.empty(4).to(torch.float16)",
    "torch.empty(4).view(2, 2)", "torch.empty(4).nonzero()", "torch.empty(4).norm()",
    "torch.empty(1).item()", "torch.empty(4).tolist()", "torch.empty(4).numel()",
    "torch.empty(4).nelement()", "torch.empty(4).data_ptr()", "torch.empty(4).get_device()",
    "torch.empty(4).is_floating_point()", "torch.empty(4).equal(torch.empty(4))",
    "torch.empty(4).allclose(torch.empty(4))", "torch.empty(4).size()",
    "torch.empty(4).size(0)", "torch.empty(4).stride()", "torch.empty(4).stride(0)",
    "torch.empty(4).storage_offset()",
    "torch.empty(4).untyped_storage()", "torch.empty(4).numpy()", "torch.empty(4).type()",
    "torch.empty(4).dim()", "torch.empty(4).is_contiguous()", "torch.empty(4).shape",
    "torch.empty(4).ndim", "torch.empty(4).dtype", "torch.empty(4).device",
    "torch.empty(4).data", "torch.empty(4).T", "torch.empty(4).new_empty(2)",
    "torch.cat([torch.empty(2), torch.empty(2)])", "torch.stack([torch.empty(2)])",
    "torch.where(torch.empty(2) > 0, 1.0, 0.0)", "torch.max(torch.empty(4))",
    "torch.nn.functional.softmax(torch.empty(4), dim=0)", "torch.tensor([1, 2])",
    "torch.equal(torch.empty(4), torch.empty(4))", "torch.allclose(torch.empty(4), torch.empty(4))",
    "torch.is_tensor(torch.empty(4))", "torch.numel(torch.empty(4))",
    "torch.is_floating_point(torch.empty(4))", "torch.get_default_dtype()",
    "torch.finfo(torch.float16)", "torch.iinfo(torch.int32)", "torch.is_grad_enabled()",
    "torch.promote_types(torch.float16, torch.float32)", "torch.get_num_threads()",
    "torch.Generator()", "torch.Size([1, 2])", "torch.float16", "torch.nn.Linear(2, 2)",
    # a tuple of tensors where the pieces' sizes are known (2026-12-08)
    "torch.empty(4).split(2)", "torch.empty(4).chunk(2)",
]  # fmt: skip

NOT_YET = [
    # a tuple of tensors, held as one tensor
    "torch.unbind(torch.empty(4))",
    "torch.where(torch.empty(2) > 0)", "torch.broadcast_tensors(torch.empty(2), torch.empty(2))",
    "torch.broadcast_shapes((2,), (2,))",
    # torch.nn.Module itself (the framework's classes derive from it: those are known)
    "torch.nn.Module()",
    # of a dtype not known: a tensor stands in, so that what divides by it does not raise
    # (engine/tensorcalls.py NOT_TENSORS)
    "torch.empty(4).element_size()",
]  # fmt: skip

IS_TENSOR = """
def route(x):
    v = {call}
    if isinstance(v, torch.Tensor):
        return torch.topk(x, 2)
    return topk_fast(x)
"""
IS_NONE = IS_TENSOR.replace("isinstance(v, torch.Tensor)", "v is None")


def _contradicts(tmp_path: Path, call: str) -> list[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        real = eval(call, {"torch": torch})  # (torch's own answer, on the CPU build)
    wrong = []
    for name, body, truth in (
        ("isinstance(v, torch.Tensor)", IS_TENSOR, isinstance(real, torch.Tensor)),
        ("v is None", IS_NONE, real is None),
    ):
        kinds = set(_kinds(tmp_path / name[:6], body.format(call=call)))
        if kinds == ({"cuda_kernel"} if truth else {"torch"}):  # decided, the other way
            wrong.append(f"{name} decided {not truth}, torch says {truth}")
    return wrong


@pytest.mark.parametrize("call", CALLS)
def test_what_the_engine_decides_of_a_torch_result_torch_agrees_with(
    tmp_path: Path, call: str
) -> None:
    assert _contradicts(tmp_path, call) == []


@pytest.mark.parametrize("call", NOT_YET)
@pytest.mark.xfail(strict=True, reason="held as one tensor (not yet)")
def test_results_not_yet_told_apart(tmp_path: Path, call: str) -> None:
    assert _contradicts(tmp_path, call) == []
