"""Statistical checks of the simulator against closed forms and the skew argument."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("torch")

from routescope.hardware import resolve_gpu
from routescope.oea.config import RouterConfig
from routescope.oea.run import simulate
from routescope.oea.sources import parse_source

QWEN3_LIKE = RouterConfig(num_experts=128, top_k=8)


def _row(source: str, k0: int = 3, steps: int = 400):  # type: ignore[no-untyped-def]
    report = simulate(QWEN3_LIKE, model="t", gpu=resolve_gpu("sm90"), source=parse_source(source),
                      batches=[16], k0s=[k0], steps=steps, seed=1)  # fmt: skip
    return report.rows[0]


def test_uniform_baseline_t_matches_closed_form() -> None:
    n, k, b, steps = 128, 8, 16, 400
    expected = n * (1 - (1 - k / n) ** b)  # ≈ 82.07
    # Var of T under independent uniform routing, from indicator covariances.
    q1 = (1 - k / n) ** b
    q2 = ((n - k) * (n - k - 1) / (n * (n - 1))) ** b
    var = n * q1 * (1 - q1) + n * (n - 1) * (q2 - q1 * q1)
    row = _row("uniform", steps=steps)
    assert abs(row.t_baseline_mean - expected) < 4 * math.sqrt(var / steps)
    # OEA's T is |A| for k0 experts per token: the same closed form with k0.
    expected_oea = n * (1 - (1 - 3 / n) ** b)
    assert row.t_oea_mean == pytest.approx(expected_oea, rel=0.03)


def test_skewed_routing_makes_oea_cheaper_in_quality() -> None:
    uniform, skewed = _row("uniform"), _row("zipf:1.2")
    # Skew shrinks T itself, and the experts OEA piggybacks are the tokens' own high ranks, so
    # far more of the router's weight mass survives the same k0.
    assert skewed.t_baseline_mean < 0.75 * uniform.t_baseline_mean
    assert skewed.t_oea_mean is not None and uniform.t_oea_mean is not None
    assert skewed.t_oea_mean < 0.75 * uniform.t_oea_mean
    assert skewed.weight_mass_kept is not None and uniform.weight_mass_kept is not None
    lost_uniform, lost_skewed = 1 - uniform.weight_mass_kept, 1 - skewed.weight_mass_kept
    assert lost_skewed < 0.6 * lost_uniform
    assert uniform.experts_per_token == pytest.approx(8.0)  # B=16 always fills k here
    # of the experts a token chose itself, OEA keeps its k0 best and those the batch loads
    # anyway: at least k0's share, never more than what its final set holds
    assert uniform.topk_mass_kept is not None and skewed.topk_mass_kept is not None
    assert uniform.topk_mass_kept <= uniform.weight_mass_kept
    assert skewed.topk_mass_kept > uniform.topk_mass_kept + 0.1


def test_batch_of_one_keeps_only_k0() -> None:
    source = parse_source("correlated:0.5")
    report = simulate(QWEN3_LIKE, model="t", gpu=resolve_gpu("sm90"), source=source,
                      batches=[1], k0s=[5], steps=20)  # fmt: skip
    row = report.rows[0]
    assert (row.t_baseline_mean, row.t_oea_mean, row.experts_per_token) == (8.0, 5.0, 5.0)


def test_gain_at_equal_quality_is_small_on_uniform_and_large_on_skew() -> None:
    """The paper's point: keeping the same share of the tokens' own top-k weight mass, skewed
    routing lets a small k0 stand (the experts a token chose are popular, in the batch's set
    already, and piggybacked back), uniform routing needs k0 near k, so OEA's cut in T is small
    there (at most 15% here) and large on skew (over 25%)."""

    def point(source: str):  # type: ignore[no-untyped-def]
        report = simulate(QWEN3_LIKE, model="t", gpu=resolve_gpu("sm90"),
                          source=parse_source(source), batches=[16, 64],
                          k0s=list(range(1, 9)), steps=200, seed=1)  # fmt: skip
        return report.at_quality()

    for uniform, skewed in zip(point("uniform"), point("zipf:1.2"), strict=True):
        assert uniform.k0 is not None and skewed.k0 is not None
        assert skewed.k0 <= uniform.k0
        assert uniform.t_reduction is not None and skewed.t_reduction is not None
        assert skewed.t_reduction > uniform.t_reduction + 0.15
        assert uniform.t_reduction < 0.15 and skewed.t_reduction > 0.25
        assert uniform.topk_mass_kept is not None and uniform.topk_mass_kept >= 0.95


def test_at_quality_reports_none_when_no_k0_suffices() -> None:
    report = simulate(QWEN3_LIKE, model="t", gpu=resolve_gpu("sm90"),
                      source=parse_source("uniform"), batches=[16], k0s=[1], steps=50,
                      quality_target=0.99)  # fmt: skip
    (point,) = report.at_quality()
    assert point.k0 is None and point.t_reduction is None
