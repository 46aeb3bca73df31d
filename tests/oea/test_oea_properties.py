"""Vectorised OEA against the plain-Python oracle, and its invariants, on random cases."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from routescope.oea.config import GroupPolicy, RouterConfig  # noqa: E402
from routescope.oea.oracle import allowed_experts, oracle_baseline, oracle_oea  # noqa: E402
from routescope.oea.routing import baseline_topk, scores, selection_scores  # noqa: E402
from routescope.oea.vectorized import oea_topk  # noqa: E402

Case = tuple[RouterConfig, Any, Any, Any, int, GroupPolicy]  # cfg, logits, bias, valid, k0


@st.composite
def cases(draw: st.DrawFn) -> Case:
    n_group = draw(st.sampled_from([1, 1, 2, 4]))
    group_size = draw(st.integers(2, 6))
    n = n_group * group_size
    topk_group = draw(st.integers(1, n_group))
    k = draw(st.integers(1, topk_group * group_size))
    cfg = RouterConfig(
        num_experts=n, top_k=k,
        scoring=draw(st.sampled_from(["softmax", "sigmoid", "sqrtsoftplus"])),
        has_correction_bias=draw(st.booleans()), n_group=n_group, topk_group=topk_group,
        renormalize=draw(st.booleans()),
        routed_scaling_factor=draw(st.sampled_from([1.0, 2.5])),
        num_fused_shared_experts=draw(st.sampled_from([0, 0, 1])),
    )  # fmt: skip
    b = draw(st.integers(1, 9))
    # Few distinct logit values: ties within a row and between rows are common.
    logits = draw(st.lists(st.sampled_from([-2.0, -0.5, 0.0, 0.5, 1.0, 3.0]), min_size=b * n,
                           max_size=b * n))  # fmt: skip
    bias = None
    if cfg.has_correction_bias:
        bias = draw(st.lists(st.sampled_from([0.0, 0.0, 0.1, -0.1]), min_size=n, max_size=n))
    valid = draw(st.lists(st.booleans(), min_size=b, max_size=b))
    k0 = draw(st.integers(1, k))
    policy: GroupPolicy = draw(st.sampled_from(["free", "within-selected-groups"]))
    x = torch.tensor(logits, dtype=torch.float32).view(b, n)
    bias_t = None if bias is None else torch.tensor(bias)
    return cfg, x, bias_t, torch.tensor(valid), k0, policy


FAST = settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_vectorised_equals_oracle(case: Case) -> None:
    cfg, x, bias, valid, k0, policy = case
    r = oea_topk(x, cfg, k0, policy=policy, valid=valid, correction_bias=bias)
    p = scores(x, cfg)
    sel = selection_scores(p, bias)
    want, want_w = oracle_oea(p.tolist(), sel.tolist(), cfg, k0, policy=policy,
                              valid=valid.tolist(), biased=cfg.has_correction_bias)  # fmt: skip
    k = cfg.top_k
    for i in range(x.shape[0]):
        kept = int(r.kept[i])
        assert r.topk_ids[i, :kept].tolist() == want[i]
        assert r.topk_weights[i, :kept].tolist() == pytest.approx(want_w[i], rel=1e-5, abs=1e-6)
        # Padding: the row's best kept expert (or A's lowest id), weight exactly zero.
        assert all(w == 0.0 for w in r.topk_weights[i, kept:k].tolist())
        pad = set(r.topk_ids[i, kept:k].tolist())
        assert pad <= ({want[i][0]} if want[i] else pad)
        # Fused shared columns are untouched: ids N.., weight 1.0.
        s = cfg.num_fused_shared_experts
        assert r.topk_ids[i, k:].tolist() == list(range(cfg.num_experts, cfg.num_experts + s))
        assert r.topk_weights[i, k:].tolist() == [1.0] * s


@FAST
@given(cases())
def test_k0_equal_k_is_baseline_bit_for_bit(case: Case) -> None:
    cfg, x, bias, _, _, policy = case
    ids, w = baseline_topk(x, cfg, bias)
    r = oea_topk(x, cfg, cfg.top_k, policy=policy, correction_bias=bias)
    assert torch.equal(r.topk_ids, ids)
    assert torch.equal(r.topk_weights, w)
    sel = selection_scores(scores(x, cfg), bias)
    assert ids[:, : cfg.top_k].tolist() == oracle_baseline(
        sel.tolist(), cfg, biased=cfg.has_correction_bias
    )


@FAST
@given(cases())
def test_invariants(case: Case) -> None:
    cfg, x, bias, valid, k0, policy = case
    k = cfg.top_k
    base_ids = baseline_topk(x, cfg, bias)[0][:, :k]
    r = oea_topk(x, cfg, k0, policy=policy, valid=valid, correction_bias=bias)
    rows = [i for i in range(x.shape[0]) if valid[i]]
    base_t = {e for i in rows for e in base_ids[i].tolist()}
    kept_sets = [set(r.topk_ids[i, : int(r.kept[i])].tolist()) for i in range(x.shape[0])]
    oea_a = {e for i in rows for e in r.topk_ids[i, :k0].tolist()}
    every_id = {e for i in range(x.shape[0]) for e in r.topk_ids[i, :k].tolist()}
    # T never grows, and padded rows (and padding slots) load nothing outside A.
    assert len(oea_a) <= len(base_t)
    if rows:
        assert every_id <= oea_a
    # Each real token keeps its own k0 best; weights sum to the scaling factor when renormalised.
    for i in rows:
        assert set(base_ids[i, :k0].tolist()) <= kept_sets[i]
        assert len(kept_sets[i]) == int(r.kept[i]) >= k0
        if cfg.renormalize:
            total = float(r.topk_weights[i, :k].sum())
            assert total == pytest.approx(cfg.routed_scaling_factor, rel=1e-5)
    # Group policy: within-selected-groups never leaves the token's groups.
    if policy == "within-selected-groups":
        sel = selection_scores(scores(x, cfg), bias).tolist()
        for i, kept in enumerate(kept_sets):
            assert kept <= allowed_experts(sel[i], cfg, biased=cfg.has_correction_bias)


@pytest.mark.parametrize(
    "cfg",
    [
        pytest.param(RouterConfig(num_experts=256, top_k=8, scoring="sigmoid",
                                  has_correction_bias=True), id="N=256 k=8: top-k in rounds of 4"),
        pytest.param(RouterConfig(num_experts=256, top_k=8, scoring="sigmoid",
                                  has_correction_bias=True, n_group=8, topk_group=4,
                                  routed_scaling_factor=2.5), id="DeepSeek-V3 shape"),
        pytest.param(RouterConfig(num_experts=128, top_k=8), id="N=128 k=8: rounds of 2"),
        pytest.param(RouterConfig(num_experts=64, top_k=6, n_group=8, topk_group=2),
                     id="N=64 k=6: one plain topk"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("k0", [1, 3, 4, 5, 6, 7, 8])
@pytest.mark.parametrize("policy", ["free", "within-selected-groups"])
def test_real_sizes_equal_oracle(cfg: RouterConfig, k0: int, policy: GroupPolicy) -> None:
    # Real sizes take the fast-partial-sort rounds; rounded logits make ties common.
    if k0 > cfg.top_k:
        pytest.skip("k0 above this config's top_k")
    gen = torch.Generator().manual_seed(k0)
    x = (torch.randn(48, cfg.num_experts, generator=gen) * 4).round() / 4
    bias = (torch.randn(cfg.num_experts, generator=gen) * 0.01).round(decimals=3)
    valid = torch.rand(48, generator=gen) > 0.2
    for v in (None, valid):
        r = oea_topk(x, cfg, k0, policy=policy, valid=v, correction_bias=bias)
        sel = selection_scores(scores(x, cfg), bias)
        want, _ = oracle_oea(scores(x, cfg).tolist(), sel.tolist(), cfg, k0, policy=policy,
                             valid=None if v is None else v.tolist(), biased=True)  # fmt: skip
        got = [r.topk_ids[i, : int(r.kept[i])].tolist() for i in range(48)]
        assert got == want
        if k0 == cfg.top_k and v is None:
            ids, w = baseline_topk(x, cfg, bias)
            assert torch.equal(r.topk_ids, ids) and torch.equal(r.topk_weights, w)
