"""A count compared with a constant is bounded on each way the branch forks into
(engine/intervals.py): the same comparison made again, or one the bounds decide, is decided
on that way, as in the program, where the count is one number."""

from __future__ import annotations

import ast
from pathlib import Path

from routescope.analysis.engine.intervals import (
    Compared,
    bounded_compare,
    joined_bounds,
    refine,
    same_bounds,
)
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.tensors import Count
from routescope.analysis.engine.values import AtLeast, Const, Tensor, Unknown, UnknownKind
from tests.engine.test_engine_synthetic import make_tree, run

HEAD = """
import torch
from fastk import topk_fast

"""


def _scores() -> Tensor:
    """The router's scores, a row per token of the batch (a count known from below)."""
    return Tensor((Count(1, "tokens in the batch"), Const(8)), role="scores")


def _kinds(tmp_path: Path, body: str) -> list[str | None]:
    paths = run(make_tree(tmp_path, {"route.py": HEAD + body}), "fw.route:route", _scores())
    return sorted(str(p.sink.kind if p.sink else None) for p in paths)


def test_the_same_comparison_made_twice_goes_the_same_way(tmp_path: Path) -> None:
    # vLLM 0.34.0 fused_moe/runner/shared_experts.py:124-140, :149, :183: the shared experts'
    # stream is chosen twice a step, each time by `hidden_states.shape[0] <= THRESHOLD`, and
    # a step whose two choices differed would fail its assert (the router never runs)
    body = """
def order(x):
    aux = True and x.shape[0] <= 256
    if aux:
        return "overlapped"
    return "in order"

def route(x):
    first = order(x)
    if order(x) != first:
        return torch.topk(x, 2)
    return topk_fast(x)
"""
    assert _kinds(tmp_path, body) == ["cuda_kernel", "cuda_kernel"]


def test_a_comparison_followed_by_true_operands_is_the_value_stored(tmp_path: Path) -> None:
    # vLLM 0.29.0 fused_moe/runner/shared_experts.py:121-128: `cuda and stream is not None and
    # n <= THRESHOLD and beneficial and self._is_multistream_safe()`, stored in a name, then
    # branched on, twice a step. The operands after the comparison are true (one a call), so
    # the value is the comparison: the branch bounds the count and the second choice agrees
    # (Qwen3.5 NVFP4 forked on 0.29.0, one way failing the shared experts' assert). `or` alike.
    body = """
def safe():
    return True

def order(x, ready):
    aux = ready and x.shape[0] <= 256 and True and safe()
    if aux:
        return "overlapped"
    return "in order"

def slow(x):
    return x.shape[0] > 256 or False

def route(x):
    first = order(x, True)
    if order(x, True) != first or slow(x) == (first == "overlapped"):
        return torch.topk(x, 2)
    return topk_fast(x)
"""
    assert _kinds(tmp_path, body) == ["cuda_kernel", "cuda_kernel"]


def test_a_branch_bounds_the_comparisons_after_it(tmp_path: Path) -> None:
    body = """
def route(x):
    n = x.shape[0]
    if n <= 256:
        if n > 512 or n == 300 or not n < 257:
            return torch.topk(x, 2)
        return topk_fast(x)
    if n < 100 or 256 >= n:
        return torch.topk(x, 2)
    return topk_fast(x)
"""
    assert _kinds(tmp_path, body) == ["cuda_kernel", "cuda_kernel"]


def test_an_assert_does_not_bound(tmp_path: Path) -> None:
    # the engine runs a generator's body when it is called (CPython: when it is iterated),
    # and an undecided assert has no raising way: bounding on it would decide the later test
    # on a count the program never checked (review of 60b2ef6)
    body = """
def gen(x):
    assert x.shape[0] <= 8
    yield 1

def route(x):
    g = gen(x)
    assert x.shape[0] <= 16
    if x.shape[0] > 8:
        return torch.topk(x, 2)
    return topk_fast(x)
"""
    assert _kinds(tmp_path, body) == ["cuda_kernel", "torch"]


def test_a_chain_bounds_only_through_its_one_undecided_link(tmp_path: Path) -> None:
    # `100 < n <= 256` false says n <= 100 or n > 256, not n > 256 (review of 60b2ef6)
    body = """
def route(x):
    n = x.shape[0]
    if 100 < n <= 256:
        return topk_fast(x)
    if n < 50:
        return torch.topk(x, 2)
    if 1 <= n <= 300:
        if n > 300:
            return torch.topk(x, 2)
    return topk_fast(x)
"""
    assert _kinds(tmp_path, body) == ["cuda_kernel", "cuda_kernel", "cuda_kernel", "torch"]


def test_a_cached_result_another_way_computed_is_not_taken_under_other_bounds(
    tmp_path: Path,
) -> None:
    # a functools.cache result is shared between ways that hold the same objects; the way
    # that filled it knew n <= 256, this one knows n > 256 (review of 60b2ef6)
    body = """
import functools

class Box:
    n = 0

BOX = Box()

@functools.cache
def small():
    return BOX.n <= 256

def route(x):
    BOX.n = x.shape[0]
    if x.shape[0] <= 256:
        small()
        return topk_fast(x)
    if small():
        return torch.topk(x, 2)
    return topk_fast(x)
"""
    assert _kinds(tmp_path, body) == ["cuda_kernel", "cuda_kernel"]


def test_what_the_bounds_do_not_decide_still_forks(tmp_path: Path) -> None:
    body = """
def route(x):
    if x.shape[0] <= 256:
        if x.shape[0] <= 128:
            return torch.topk(x, 2)
        return topk_fast(x)
    return topk_fast(x)
"""
    assert _kinds(tmp_path, body) == ["cuda_kernel", "cuda_kernel", "torch"]


def test_a_count_equal_to_a_constant_is_that_constant() -> None:
    n = Count(1, "tokens")
    st = PathState()
    v = bounded_compare(ast.Eq(), n, Const(4), st.bounds)
    assert isinstance(v, Compared)
    refine(st, v, True)
    for op, c, want in [(ast.Lt, 5, True), (ast.GtE, 4, True), (ast.NotEq, 4, False),
                        (ast.Gt, 4, False), (ast.LtE, 3, False), (ast.Eq, 4, True)]:  # fmt: skip
        got = bounded_compare(op(), n, Const(c), st.bounds)
        assert isinstance(got, Const) and got.value is want, (op, c)
    refine(other := PathState(), v, False)  # != 4 with 1 <= n: nothing but the bound below
    assert isinstance(bounded_compare(ast.Gt(), n, Const(4), other.bounds), Compared)


def test_a_join_keeps_the_widest_range_and_only_what_every_way_knows() -> None:
    n, m = Count(1, "tokens"), Count(1, "other tokens")
    a, b = PathState(), PathState()
    refine(a, Compared(n, ast.LtE, 64, ()), True)  # n <= 64
    refine(b, Compared(n, ast.LtE, 128, ()), True)  # n <= 128
    refine(a, Compared(m, ast.Gt, 10, ()), True)  # only a knows m
    joined = joined_bounds([a, b])
    assert list(joined) == [id(n)] and joined[id(n)][1:] == (1, 128)
    refine(b, Compared(n, ast.Gt, 100, ()), False)  # b: n <= 100 now
    assert joined_bounds([a, b])[id(n)][1:] == (1, 100)
    # what a result computed on one way needs of another to hold there: the same ranges
    c = PathState()
    refine(c, Compared(n, ast.LtE, 100, ()), True)
    assert same_bounds(b.bounds, c.bounds) and not same_bounds(a.bounds, c.bounds)
    assert not same_bounds(c.bounds, PathState().bounds)


def test_only_a_count_is_bounded() -> None:
    # a value known only from below may be a float (max(1, x)) or stand for a different
    # number on each pass of a loop: a branch on it tells nothing of the next comparison
    x = AtLeast(1, "at least one")
    assert bounded_compare(ast.LtE(), x, Const(256), None) is None
    assert bounded_compare(ast.LtE(), Count(1, "tokens"), Const(2.5), None) is None


def test_a_joined_value_branched_on_is_known_on_each_way_after(tmp_path: Path) -> None:
    # vLLM 0.34.0 transformers_utils/model_arch_config_convertor.py:420-427, :783-789: each of
    # Gemma 4's 30 layers is converted in a comprehension whose call branches on
    # `supports_multimodal`, a value joined where the server configuration's ways met
    # (config/model.py:1059); one value on any run, so the comprehension forks once (two ways),
    # and the second test of it, negated, is decided on each (before: 2**30 ways, unknown)
    body = """
def prefix_lm(mm, i):
    if not mm:
        return False
    return True

def route(x, mm):
    flags = [prefix_lm(mm, i) for i in range(30)]
    if all(f == flags[0] for f in flags) and (flags[0] if mm else not flags[0]):
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    joined = Unknown("differs between paths joined at config/model.py:1059",
                     kind=UnknownKind.JOINED)  # fmt: skip
    paths = run(make_tree(tmp_path, {"route.py": HEAD + body}), "fw.route:route", _scores(),
                joined)  # fmt: skip
    assert sorted(str(p.sink.kind if p.sink else None) for p in paths) == ["cuda_kernel"] * 2


def test_other_unknowns_are_not_remembered(tmp_path: Path) -> None:
    """An unknown that is not a joined value may stand for a different value each time it is
    read (a loop's variable, a call's result): both ways of each test stay."""
    body = """
def route(x, v):
    a = 1 if v else 2
    b = 1 if v else 2
    if a == b:
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    other = Unknown("the loop variable", kind=UnknownKind.UNSUPPORTED)
    paths = run(make_tree(tmp_path, {"route.py": HEAD + body}), "fw.route:route", _scores(),
                other)  # fmt: skip
    assert sorted(str(p.sink.kind if p.sink else None) for p in paths).count("torch") == 2


def test_a_call_remembered_on_one_way_is_not_taken_where_the_truth_differs(
    tmp_path: Path,
) -> None:
    """A call that read a joined value's truth the path knew gives its result only where the
    path knows the same (a call cache keyed by what it read, ENGINE.md): on the way where
    `mm` is false the remembered result of the way where it is true is not taken."""
    body = """
def size(mm):
    total = 0
    for i in range(20):
        total += i
    if mm:
        return total
    return -total

def route(x, mm):
    if mm:
        first = 1
    else:
        first = 2
    sizes = [size(mm) for _ in range(4)]
    if sizes == [190 if mm else -190] * 4 and first == (1 if mm else 2):
        return topk_fast(x)
    return torch.topk(x, 2)
"""
    joined = Unknown("differs between paths joined at fw/route.py:3", kind=UnknownKind.JOINED)
    paths = run(make_tree(tmp_path, {"route.py": HEAD + body}), "fw.route:route", _scores(),
                joined)  # fmt: skip
    assert sorted(str(p.sink.kind if p.sink else None) for p in paths) == ["cuda_kernel"] * 2


LOGS = """
def note(mm):
    if mm:  # (a way that only logs: both ways leave the same state)
        pass
    return 1

def route(x, mm):
    note(mm)
    {after}
"""


def _joined_kinds(tmp_path: Path, after: str) -> list[str]:
    joined = Unknown("differs between paths joined at fw/route.py:3", kind=UnknownKind.JOINED)
    tree = make_tree(tmp_path, {"route.py": HEAD + LOGS.format(after=after)})
    paths = run(tree, "fw.route:route", _scores(), joined)
    return sorted(str(p.sink.kind if p.sink else None) for p in paths)


def test_ways_that_differ_only_in_a_joined_truth_are_one_way(tmp_path: Path) -> None:
    """A call whose ways only logged is one way after it (join.one_of_alike), as before truths
    were remembered: what each branch told of `mm` does not keep them apart."""
    assert _joined_kinds(tmp_path, "return topk_fast(x)") == ["cuda_kernel"]


def test_the_way_that_stands_for_both_knows_neither_truth(tmp_path: Path) -> None:
    """The way kept for both does not keep its own branch's truth: `mm` is tested again
    after, and both ways follow (keeping it would drop the way where `mm` is false)."""
    after = "if mm:\n        return topk_fast(x)\n    return torch.topk(x, 2)"
    assert _joined_kinds(tmp_path, after) == ["cuda_kernel", "torch"]


def test_sizes_made_from_a_count_keep_its_lower_bound(tmp_path: Path) -> None:
    """vLLM 0.33.0 sizes its MoE workspace from the batch's tokens (workspace.py:195-223:
    `sum(round_up(prod(shape) * dtype.itemsize, 256) ...)`) and grows it from 0 when
    `current_size < required_bytes`. The bytes of a batch of at least one token are at least
    one: arithmetic that grows with its operands keeps the bound (+, - of a known int, * of
    bounds at least 0, // by a known positive int, sum(), math.prod(), a dtype's itemsize, at
    least 1 for a tensor's dtype not known); anything else gives none."""
    from tests.engine.test_engine_soundness import returned
    from tests.engine.test_engine_soundness import run as run_program

    src = """
import torch
from math import prod

def round_up(x, y):
    return ((x + y - 1) // y) * y

def main(m, x, other, pos):
    shapes = [((m, 8, 4096), torch.bfloat16), ((m, 14336), x.dtype)]
    total = sum(round_up(prod(s) * d.itemsize, 256) for s, d in shapes)
    grows = 0 < total
    bounded = (m + 1 > 1, m * 2 >= 2, m - 1 >= 0, (m + 255) // 256 >= 1, prod((m, 8)) >= 8,
               torch.float8_e4m3fn.itemsize, torch.float.itemsize)
    unbounded = (m * -1 < 0, 5 - m < 5, m // pos > 0, prod((m, -2)) < 0, sum([m, other]) > 0)
    return grows, bounded, unbounded
"""
    paths = run_program(tmp_path, {"main.py": src}, Count(1, "tokens in the batch"),
                        Tensor(), Unknown("a number"), AtLeast(1, "a positive number"))  # fmt: skip
    (value,) = [p.value for p in paths]
    assert returned(paths) == [None]  # (the unbounded ones are unknown)
    grows, bounded, unbounded = value.items  # type: ignore[attr-defined]
    assert isinstance(grows, Const) and grows.value is True
    assert isinstance(bounded, Const)  # a tuple of constants: one constant
    assert bounded.value == (True, True, True, True, True, 1, 4)
    assert all(type(v) is not Const for v in unbounded.items), unbounded.items
