"""The OEA module a patch adds equals routescope's reference; codemod and diff as text."""

from __future__ import annotations

import pytest

from routescope.errors import RoutescopeError
from routescope.patch import diff
from routescope.patch.codemod import insert_call

torch = pytest.importorskip("torch")

from routescope.oea.config import RouterConfig  # noqa: E402
from routescope.oea.vectorized import oea_topk  # noqa: E402
from routescope.patch import framework_oea as F  # noqa: E402

CASES = [
    pytest.param(256, 8, 1, 1, 1, "sigmoid", True, 2.5, "free", id="glm-5-like"),
    pytest.param(256, 8, 1, 8, 4, "sigmoid", True, 2.5, "free", id="deepseek-v3-free"),
    pytest.param(256, 8, 1, 8, 4, "sigmoid", True, 2.5, "within-selected-groups", id="ds-within"),
    pytest.param(128, 8, 0, 1, 1, "softmax", False, 1.0, "free", id="qwen3-like"),
]


@pytest.mark.parametrize("pad", [None, 11, "marked"], ids=["no-padding", "padded", "marked"])
@pytest.mark.parametrize("n,k,s,ng,tg,scoring,bias,rsf,policy", CASES)
def test_oea_select_equals_reference(
    n: int, k: int, s: int, ng: int, tg: int, scoring: str, bias: bool, rsf: float, policy: str,
    pad: int | str | None,
) -> None:  # fmt: skip
    gen = torch.Generator().manual_seed(n + ng + (pad if isinstance(pad, int) else 0))
    b = 16
    cfg = RouterConfig(
        num_experts=n, top_k=k, scoring=scoring, has_correction_bias=bias, n_group=ng,
        topk_group=tg, routed_scaling_factor=rsf, num_fused_shared_experts=s,
    )  # fmt: skip
    logits = torch.randn(b, n, generator=gen) * 2
    cb = torch.randn(n, generator=gen) * 0.1 if bias else None
    marked = pad == "marked"  # the router marked rows 9.. as padding with id -1 (vLLM)
    pad = 9 if marked else pad
    valid = None if pad is None else torch.arange(b) < pad
    ref = oea_topk(logits, cfg, 5, policy=policy, valid=valid, correction_bias=cb)  # type: ignore[arg-type]
    tw = torch.rand(b, k + s, generator=gen)
    ti = torch.randint(0, n, (b, k + s), dtype=torch.int32, generator=gen)
    if marked:
        ti[pad:, :k] = -1
    w, i = F.oea_select(
        tw, ti, logits, cb, k0=5, scoring=scoring, policy=policy, renormalize=True,
        routed_scaling_factor=None if rsf == 1.0 else rsf,
        apply_routed_scaling_factor_on_output=rsf != 1.0, num_fused_shared_experts=s,
        num_expert_group=ng, topk_group=tg,
        num_token_non_padded=None if pad is None or marked else torch.tensor(pad),
    )  # fmt: skip
    rows = slice(None) if pad is None else slice(0, pad)
    assert i.dtype == ti.dtype and w.dtype == tw.dtype and i.shape == ti.shape
    assert torch.equal(i[rows, :k].long(), ref.topk_ids[rows, :k])
    assert torch.equal(w[rows, :k], ref.topk_weights[rows, :k])
    assert torch.equal(i[:, k:], ti[:, k:]) and torch.equal(w[:, k:], tw[:, k:])  # shared slots
    if pad is not None:  # padded rows keep the router's values
        assert torch.equal(i[pad:], ti[pad:]) and torch.equal(w[pad:], tw[pad:])


def test_module_stays_graph_safe() -> None:
    text = F.__loader__.get_source(F.__name__) or ""  # type: ignore[union-attr]
    code = text.split('"""', 2)[2]  # the docstring names what it avoids
    for banned in ("torch.unique", "nonzero", ".item()", "routescope"):
        assert banned not in code


SRC = "def f(x):\n    a, b = g(\n        x,\n    )\n    return a\n"


def test_codemod_inserts_after_the_statement_and_keeps_the_rest() -> None:
    out = insert_call(SRC, 2, 4, "    a, b = g(\n        x,\n    )", "import m\n", "a = m.h(a)\n")
    assert (
        out
        == "import m\ndef f(x):\n    a, b = g(\n        x,\n    )\n    a = m.h(a)\n    return a\n"
    )


def test_codemod_refuses_when_the_point_text_differs() -> None:
    with pytest.raises(RoutescopeError, match="differs from what the trace read"):
        insert_call(SRC, 2, 4, "    a, b = g(y)", "import m\n", "a = 1\n")


def test_codemod_refuses_when_no_statement_spans_the_lines() -> None:
    with pytest.raises(RoutescopeError, match="no statement spans"):
        insert_call(SRC, 3, 4, "x", "import m\n", "a = 1\n")


def test_added_file_diff() -> None:
    assert diff.added("p/m.py", "x = 1\n") == (
        "diff --git a/p/m.py b/p/m.py\nnew file mode 100644\n--- /dev/null\n+++ b/p/m.py\n"
        "@@ -0,0 +1,1 @@\n+x = 1\n"
    )


def test_the_flag_the_patch_names_is_the_modules() -> None:
    from routescope.verdict.rules import load_oea_rules

    assert load_oea_rules().frameworks["sglang"]["patch"]["env"] == F.ENV


def test_building_a_patch_needs_no_torch() -> None:
    """The core install has no torch: the patch builder reads the module it adds as text."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['torch'] = None\n"  # `import torch` now raises ImportError
        "import routescope.cli.patch, routescope.patch.build\n"
        "assert 'torch' not in [m for m, v in sys.modules.items() if v is not None]\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
