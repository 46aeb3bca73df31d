"""What the sketch reads at the insertion point, from the router call and the router's settings
(vLLM 0.10.1.1, where the layer's select_experts is the router: a helper reading its wheel found
the sketch multiplying the weights by None and naming the bias through the class)."""

from __future__ import annotations

import ast
from typing import Any

from routescope.patch.call import value_text
from routescope.verdict.sketch import from_constraints


def test_a_value_handed_to_the_router_call_under_its_own_name_is_that_argument() -> None:
    """`FusedMoE.select_experts(..., e_score_correction_bias=e_score_correction_bias)`: OEA's
    correction_bias is the call's argument of the router attribute's name, not an attribute
    of the class the call is made on."""
    given = {"e_score_correction_bias": "e_score_correction_bias", "top_k": "top_k"}
    text = value_text("correction_bias", set(), given, "FusedMoE",
                      lambda n: "e_score_correction_bias", lambda n: (False, None))  # fmt: skip
    assert text == "e_score_correction_bias"
    # (no such argument: through the object the call is made on, as before)
    text = value_text("correction_bias", set(), {}, "self.router",
                      lambda n: "e_score_correction_bias", lambda n: (False, None))  # fmt: skip
    assert text == "self.router.e_score_correction_bias"


def _doc(factor: dict[str, Any] | None, on: bool | None) -> dict[str, Any]:
    def const(v: Any) -> dict[str, Any]:
        return {"value": v, "kind": "constant", "repr": repr(v), "origins": []}

    router = {"top_k": const(8), "renormalize": const(True), "num_expert_group": const(8),
              "correction_bias": {"value": None, "kind": "tensor", "repr": "tensor",
                                  "origins": []}}  # fmt: skip
    if on is not None:
        router["apply_routed_scaling_factor_on_output"] = const(on)
    if factor is not None:
        router["routed_scaling_factor"] = factor
    return {"dispatch": {"router": router}, "routing": {"scoring_func": {"value": "sigmoid"}}}


def test_no_factor_to_scale_by_writes_no_scaling() -> None:
    """A router without a scaling factor (None: the model scales the output itself) or with
    1.0 leaves the weights as they are: no `new_w * None`; a real factor folded into the
    weights is applied, an undecided one under its test."""
    none = {"value": None, "kind": "constant", "repr": "None", "origins": []}
    for factor in (none, None, {"value": 1.0, "kind": "constant", "repr": "1.0", "origins": []}):
        for on in (True, None):
            text = from_constraints(_doc(factor, on), "", None, "router_logits")
            ast.parse(text)
            assert "new_w = new_w *" not in text, (factor, on)
    real = {"value": 2.5, "kind": "constant", "repr": "2.5", "origins": []}
    assert "new_w = new_w * routed_scaling_factor" in from_constraints(
        _doc(real, True), "", None, "router_logits"
    )
    assert "if apply_routed_scaling_factor_on_output:" in from_constraints(
        _doc(real, None), "", None, "router_logits"
    )
