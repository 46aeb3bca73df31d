"""What a compiled op gives, and what a layer that routes then launches: the shapes and layout
of the tensors a decode step passes from the router to the experts, each in the smallest
program that shows it (vLLM 0.34.0's MoE runner, read for its experts kernels)."""

from __future__ import annotations

from pathlib import Path

from routescope.analysis.engine.core import Engine
from routescope.analysis.engine.facts import Facts
from routescope.analysis.engine.state import SinkHit
from routescope.analysis.engine.tensors import Count
from routescope.analysis.engine.values import Const, Tensor
from routescope.analysis.phases.trace import TracedPath, resolve_entry, trace_call
from routescope.report import _experts, _group, experts_text, short_kernel
from tests.engine.test_engine_semantics import HEAD
from tests.engine.test_engine_synthetic import SCORES, SINKS, make_tree, run


def _hidden() -> Tensor:
    """The activations a decode step hands the experts layer: [tokens, 16], contiguous."""
    return Tensor((Count(1, "tokens in the batch"), Const(16)), "torch.bfloat16", contiguous=True)


def _kinds(tmp_path: Path, body: str) -> list[str]:
    paths = run(make_tree(tmp_path, {"route.py": HEAD + body}), "fw.route:route", SCORES(),
                _hidden())  # fmt: skip
    return sorted(f"{p.outcome} {p.sink.kind if p.sink else None}" for p in paths)


def test_a_reshape_keeps_the_sizes_it_is_given_and_infers_the_one_left(tmp_path: Path) -> None:
    """vLLM 0.34.0 _custom_ops.py:1505-1506: `input.reshape(-1, input.shape[-1])` then `m, n =
    input.shape`. The -1 is the tokens, the same count as the input's (so `m == 0` is false:
    a batch holds a token), and n is the width; a view of a contiguous tensor is one; sizes
    all known are computed. (Each was a tensor of unknown shape: `M_full == 0` at
    modular_kernel.py:1410 forked, and a way skipped the experts.)"""
    body = """
def route(x, h):
    flat = h.reshape(-1, h.shape[-1])
    m, n = flat.shape
    if m == 0 or n != 16 or not flat.is_contiguous():
        return torch.topk(x, 2)
    v = h.view(h.shape[0], 4, 4)
    w = torch.empty(2, 3, 4).reshape(6, -1)
    lead = torch.empty(2, 3, 4).reshape((-1, 4))
    if v.dim() != 3 or v.shape[0] == 0 or w.shape[1] != 4 or lead.shape[0] != 6:
        return torch.topk(x, 2)
    return topk_fast(x)
"""
    assert _kinds(tmp_path, body) == ["return cuda_kernel"]


def test_a_reshape_whose_sizes_do_not_decide_it_is_not_told(tmp_path: Path) -> None:
    """`h.reshape(-1, 8)` of [tokens, 16]: the -1 is twice the tokens, which this engine does
    not compute; a size it has no number for is not zero, nor known not to be: both ways."""
    body = """
def route(x, h):
    m = h.reshape(-1, 8).shape[0]
    if m == 5:
        return torch.topk(x, 2)
    return topk_fast(x)
"""
    assert _kinds(tmp_path, body) == ["return cuda_kernel", "return torch"]


def test_sums_products_and_extremes_of_counts_are_bounded(tmp_path: Path) -> None:
    """vLLM 0.34.0 modular_kernel.py:1248 `max(prod(workspace13_shape), prod(fused_out_shape))`
    and workspace.py:202-204 `sum(aligned_bytes)`: of a batch of at least one token these
    are at least as much as their bounds say, so `current_size < required_bytes` with an
    empty workspace (0) is true, as on every run."""
    body = """
def route(x, h):
    m = h.shape[0]
    total = sum([m * 4, 128])
    biggest = max(math.prod((m, 16)), 2)
    least = min(m, 3)
    if 0 < total and biggest >= 16 and least >= 1 and max([m, 1]) > 0:
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    assert _kinds(tmp_path, body) == ["return cuda_kernel"]


FAKE = """
from torch.library import register_fake

if hasattr(torch.ops, "_k") and hasattr(torch.ops._k, "route"):

    @register_fake("_k::route")
    def _route_fake(scores, k):
        n = scores.size(0)
        return (scores.new_empty((n, k), dtype=torch.float32),
                scores.new_empty((n, k), dtype=torch.int32))

def route(x, h):
    w, i = torch.ops._k.route(x, 2)
    # vLLM 0.34.0 router/fused_moe_router.py:92-97
    if not (w.is_contiguous() and i.is_contiguous()):
        raise ValueError("non-contiguous topk_weights or topk_ids")
    if w.shape[1] != 2 or w.dim() != 2:
        raise ValueError("shape")
    return w, i
"""


def test_a_compiled_op_gives_what_its_registered_fake_gives(tmp_path: Path) -> None:
    """vLLM 0.34.0 _custom_ops.py:2431-2449 registers the fake implementation of
    `_moe_C::grouped_topk` (two fresh [tokens, topk] tensors) under a module-level `if` the
    facts do not decide; torch requires a fake to give outputs laid out as the kernel's. The
    op's results are then contiguous, of that shape, and still the kernel's (it routed). Not
    registered, nothing says they are contiguous: the check raises on a way."""
    assert _kinds(tmp_path, FAKE) == ["return cuda_kernel"]
    bare = FAKE.replace('@register_fake("_k::route")', "")
    assert set(_kinds(tmp_path / "bare", bare)) == {"raise cuda_kernel", "return cuda_kernel"}


def test_register_fake_with_the_function_given(tmp_path: Path) -> None:
    """`register_fake("ns::op", fn)` registers at once (torch's other form)."""
    direct = (
        FAKE.replace('    @register_fake("_k::route")\n', "")
        .replace('if hasattr(torch.ops, "_k") and hasattr(torch.ops._k, "route"):', "if True:")
        .replace("def route(x, h):", 'register_fake("_k::route", _route_fake)\n\ndef route(x, h):')
    )
    assert _kinds(tmp_path, direct) == ["return cuda_kernel"]


def test_a_layer_that_routes_then_runs_the_experts_says_what_they_launch(
    tmp_path: Path,
) -> None:
    """A decode trace that starts in the experts layer (vLLM's MoE runner) ends past the
    router, in the experts: the kernels each way launches after the one that routed are its
    experts (vLLM 0.34.0: scaled_fp4_quant, then flashinfer's cutlass_fused_moe), as a
    router's experts trace gives them; what ran before it (a shared expert) is not."""
    body = """
from fastk import experts_gemm, shared_gemm

def layer(x, h):
    shared = shared_gemm(h)
    ids = topk_fast(x)
    return experts_gemm(h, ids) + shared
"""
    index = make_tree(tmp_path, {"route.py": HEAD + body})
    engine = Engine(index, Facts(sinks=SINKS))
    engine.tracing = True
    fn = resolve_entry(engine, "fw.route:layer")
    (path,) = trace_call(engine, fn, [SCORES(), _hidden()], {}, by_kernel=True)
    assert path.sink is not None and path.sink.name == "fastk.topk_fast"
    assert [[h.name for h in way] for way in path.experts] == [["fastk.experts_gemm"]]
    assert [h.name for h in path.launches] == ["fastk.shared_gemm", "fastk.experts_gemm"]


def _hit(name: str, routes: bool = False) -> SinkHit:
    return SinkHit(name, "cuda_kernel", "fw/a.py", 1, "fw.a:f", "cuda", routes=routes)


def test_a_reported_path_gives_the_experts_of_every_way_its_group_stands_for() -> None:
    """Ways that reach the same router kernel are reported as one path; the experts line is
    what every one of them launches (here the GEMM), and what only some do (the quantize
    one way runs), not the one representative's alone."""
    router, gemm, quant = _hit("k.route", True), _hit("k.gemm"), _hit("k.quant")

    def path(ways: tuple[tuple[SinkHit, ...], ...]) -> TracedPath:
        return TracedPath((), (), router, "return", "", "", experts=ways)

    ((_best, also, ways),) = _group((path(((quant, gemm),)), path(((gemm,),))))
    assert also == 1
    launched = _experts(ways)
    assert [(h["name"], h["ways"]) for h in launched] == [("k.quant", "some"), ("k.gemm", "every")]
    assert experts_text({"experts": launched}) == "gemm [cuda_kernel]; on some ways quant"


def test_a_compiled_op_is_named_with_its_overload() -> None:
    assert short_kernel("torch.ops._C.scaled_fp4_quant.out") == "scaled_fp4_quant.out"
    assert short_kernel("torch.ops._moe_C.grouped_topk") == "grouped_topk"
    assert short_kernel("flashinfer.fused_moe.cutlass_fused_moe") == "cutlass_fused_moe"
    assert short_kernel("sglang.kernels.ops.moe:_router_triton_kernel") == "_router_triton_kernel"


def test_a_registering_decorator_under_an_undecided_module_level_if_registers_on_its_way(
    tmp_path: Path,
) -> None:
    """A module-level `if` the facts do not decide runs both ways, and a decorated function or
    class inside it is registered on the way that defines it, as Python does on the runs where
    the condition holds (vLLM guards its fake registrations so, `_custom_ops.py:2431`): the
    registry may hold it. Before, only a definition outside any `if` registered: the registry
    never held it, and the way where it does was lost."""
    body = """
REGISTRY = {}

def register(name):
    def deco(obj):
        REGISTRY[name] = obj
        return obj
    return deco

if hasattr(torch.ops, "_k"):

    @register("fast")
    def fast(x):
        return topk_fast(x)

    @register("cls")
    class Fast:
        pass

def route(x, h):
    if "fast" in REGISTRY and "cls" in REGISTRY:
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    assert _kinds(tmp_path, body) == ["return cuda_kernel", "return torch"]
    decided = body.replace('if hasattr(torch.ops, "_k"):', "if True:")
    assert _kinds(tmp_path / "decided", decided) == ["return cuda_kernel"]


def test_a_fake_is_the_overload_s_it_was_registered_for(tmp_path: Path) -> None:
    """torch keeps a fake per overload: `ns::op.out` (an out= variant, other arguments) is not
    the default overload's, which `ns::op` and `ns::op.default` name alike."""
    out_only = FAKE.replace('register_fake("_k::route")', 'register_fake("_k::route.out")')
    assert set(_kinds(tmp_path / "out", out_only)) == {"raise cuda_kernel", "return cuda_kernel"}
    default = FAKE.replace('register_fake("_k::route")', 'register_fake("_k::route.default")')
    assert _kinds(tmp_path / "default", default) == ["return cuda_kernel"]
    called = FAKE.replace("torch.ops._k.route(x, 2)", "torch.ops._k.route.default(x, 2)")
    assert _kinds(tmp_path / "called", called) == ["return cuda_kernel"]


def test_a_fresh_tensor_keeps_the_dtype_it_is_not_given_and_a_reshape_its_own(
    tmp_path: Path,
) -> None:
    """`h.new_empty(size, dtype=None)` is in h's dtype, as torch makes it; a reshape keeps the
    dtype whatever its sizes are."""
    body = """
def route(x, h):
    a = h.new_empty((h.shape[0], 4), dtype=None)
    b = h.reshape(*topk_fast(x).shape)
    if a.dtype == torch.bfloat16 and b.dtype == torch.bfloat16 and a.shape[1] == 4:
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    assert _kinds(tmp_path, body) == ["return cuda_kernel"]


def test_split_chunk_and_cat_give_the_shapes_torch_gives(tmp_path: Path) -> None:
    """vLLM 0.25.1 flashinfer_fp4_moe.py:32-46 reorders the gate and up halves of the experts'
    weights and scales (`split(half, dim)`, then `torch.cat([s3, s1], dim)`), before padding the
    scales to 128 rows (:359-370): their shape decides whether the padding, which the CUTLASS
    backend refuses for a gated MoE, is needed. Pieces of known sizes (the last the rest;
    chunk's ceil(n / chunks)), and a concatenation's sizes along its dim added."""
    body = """
def route(x, h):
    w = torch.empty(10, 8, 16)
    a, b = w.split(4, dim=1)
    parts = torch.empty(10, 16).split(4)
    c = torch.cat([b, a], dim=1)
    first, second = torch.empty(5, 3).chunk(2)
    s1, s3 = w.split([3, 5], dim=-2)
    if (a.shape[1] == 4 and b.shape[1] == 4 and len(parts) == 3 and parts[2].shape[0] == 2
            and c.shape[1] == 8 and c.shape[2] == 16 and c.is_contiguous()
            and first.shape[0] == 3 and second.shape[0] == 2 and s3.shape[1] == 5):
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    assert _kinds(tmp_path, body) == ["return cuda_kernel"]
    unknown = body.replace("torch.empty(10, 8, 16)", "torch.empty(10, h.shape[0], 16)")
    assert set(_kinds(tmp_path / "unknown", unknown)) == {"return cuda_kernel", "return torch"}
