"""values.as_data: the (kind, JSON value) a report gives a program for each value the trace read."""

from __future__ import annotations

from routescope.analysis.engine.data import as_data
from routescope.analysis.engine.values import ClassVal, Const, EnumMember, External, Tensor, Unknown


def test_constants_are_themselves_lists_as_tuples() -> None:
    assert as_data(Const(9)) == ("constant", 9)
    assert as_data(Const(2.5)) == ("constant", 2.5)
    assert as_data(Const(None)) == ("constant", None)
    assert as_data(Const("sigmoid")) == ("constant", "sigmoid")
    assert as_data(Const((1, "a", [True]))) == ("constant", (1, "a", (True,)))


def test_what_json_cannot_hold_has_no_value_and_says_what_it_is() -> None:
    assert as_data(Const(float("nan"))) == ("object", None)  # repr still shows it
    assert as_data(Const({"a": 1})) == ("object", None)
    assert as_data(Tensor()) == ("tensor", None)
    assert as_data(Unknown("not given")) == ("unknown", None)


def test_named_values_are_their_names() -> None:
    cls = ClassVal("m:Fmt", None, None)
    assert as_data(EnumMember(cls, "STANDARD", Const(1))) == ("enum", "Fmt.STANDARD")
    assert as_data(cls) == ("class", "m:Fmt")
    assert as_data(External("torch.float32")) == ("external", "torch.float32")


def test_merged_origins_are_each_fact_once_in_the_order_first_seen() -> None:
    from routescope.analysis.engine.values import merge_origins

    a = Const(1, ("config.json n_group", "--tp", "config.json n_group"))
    b = Const(2, ("--tp", "the rules", "config.json topk_group"))
    assert merge_origins(a, b) == (
        "config.json n_group", "--tp", "the rules", "config.json topk_group"
    )  # fmt: skip
    assert merge_origins(a) == ("config.json n_group", "--tp")
    assert merge_origins(Const(3, ("--tp",))) == ("--tp",)
    assert merge_origins() == () and merge_origins(Const(4)) == ()
