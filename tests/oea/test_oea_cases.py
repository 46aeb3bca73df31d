"""Hand-checked OEA cases: what each group policy and the padding convention produce."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from routescope.errors import RoutescopeError  # noqa: E402
from routescope.oea.config import RouterConfig  # noqa: E402
from routescope.oea.vectorized import oea_topk  # noqa: E402

# 8 experts in 4 groups of 2; each token may use 2 groups and takes k=2 experts.
GROUPED = RouterConfig(num_experts=8, top_k=2, scoring="sigmoid", n_group=4, topk_group=2)
LOGITS = torch.tensor(
    [
        [5.0, 4.0, 3.0, 2.9, 0.0, 0.0, 0.0, 0.0],  # groups 0, 1; k0=1 keeps expert 0
        [0.0, 0.0, 0.0, 0.0, 5.0, 4.0, 3.0, 1.0],  # groups 2, 3; k0=1 keeps expert 4
    ]
)


def test_free_policy_piggybacks_from_an_unselected_group() -> None:
    r = oea_topk(LOGITS, GROUPED, 1, policy="free")
    # A = {0, 4}: token 0 adds 4 (group 2, not selected by it), token 1 adds 0 (group 0).
    assert r.topk_ids.tolist() == [[0, 4], [4, 0]]
    assert r.kept.tolist() == [2, 2]


def test_within_groups_policy_pads_instead() -> None:
    r = oea_topk(LOGITS, GROUPED, 1, policy="within-selected-groups")
    assert r.kept.tolist() == [1, 1]
    # Padding repeats the token's best expert with weight zero: in range, already loaded.
    assert r.topk_ids.tolist() == [[0, 0], [4, 4]]
    assert r.topk_weights[:, 1].tolist() == [0.0, 0.0]
    assert r.topk_weights[:, 0].tolist() == [1.0, 1.0]


def test_padded_rows_add_nothing_to_the_batch_set() -> None:
    cfg = RouterConfig(num_experts=8, top_k=3)
    x = torch.tensor([[3.0, 2, 1, 0, 0, 0, 0, 0], [0.0, 0, 0, 0, 0, 3, 2, 1]])
    r = oea_topk(x, cfg, 2, valid=torch.tensor([True, False]))
    assert r.topk_ids[0].tolist() == [0, 1, 0]  # A = {0, 1}; expert 2 is not in A: pad
    assert set(r.topk_ids[1].tolist()) <= {0, 1}


def test_bad_k0_and_config_are_errors() -> None:
    with pytest.raises(ValueError):
        oea_topk(LOGITS, GROUPED, 3)
    with pytest.raises(RoutescopeError, match="n_group"):
        RouterConfig(num_experts=10, top_k=2, n_group=4, topk_group=1)
