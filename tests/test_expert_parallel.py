"""--ep reaches a release as its rules say (`server_args.expert_parallel`): a size argument
(SGLang's ep_size), or a switch whose size the other parallel sizes fix (vLLM's
enable_expert_parallel, sized TP x DP x PCP): a size the switch cannot give exits 2."""

from __future__ import annotations

import pytest

from routescope.analysis.engine.values import Const
from routescope.analysis.phases.deployment import Deployment, ep_given_once
from routescope.analysis.phases.setup import expert_parallel
from routescope.errors import RoutescopeError
from routescope.hardware import resolve_gpu

SWITCH = {"switch": "on", "size": ["tp", "dp", "pcp"], "where": "make()"}
FIELDS = {"tp", "dp", "pcp", "on", "ep_size"}


def _given(ep: int, tp: int = 8, default_dp: int = 1, how: object = SWITCH, **sa: object) -> object:
    dep = Deployment(gpu=resolve_gpu("sm120"), tp=tp, ep=ep, server_args=dict(sa))
    given = {"tp": Const(tp, ("--tp",)), **{k: Const(v, ("--set",)) for k, v in sa.items()}}
    defaults = {"dp": Const(default_dp), "pcp": Const(1), "on": Const(False), "ep_size": Const(1)}
    got = expert_parallel(how, dep, given, defaults, FIELDS)  # type: ignore[arg-type]
    return {k: (v.value, v.origins) for k, v in got.items() if isinstance(v, Const)}


def test_a_size_argument_takes_the_size() -> None:
    assert _given(4, how="ep_size") == {"ep_size": (4, ("--ep",))}


def test_a_switch_is_on_for_the_size_the_parallel_sizes_make_and_off_for_one() -> None:
    assert _given(8) == {"on": (True, ("--ep",))}
    assert _given(1) == {"on": (False, ("--ep",))}
    assert _given(16, default_dp=2) == {"on": (True, ("--ep",))}  # the release's default DP, 2
    assert _given(16, dp=2) == {"on": (True, ("--ep",))}  # --set dp=2


def test_a_size_the_switch_cannot_give_names_the_one_it_can() -> None:
    with pytest.raises(RoutescopeError) as e:
        _given(4)
    assert e.value.subject == "--ep 4"
    assert "tp 8 x dp 1 x pcp 1 = 8 (make())" in e.value.message
    assert "--ep takes 8, or 1 for none" in e.value.message


def test_a_size_a_release_lacks_counts_as_one() -> None:
    fields = FIELDS - {"pcp"}  # an older release: no context parallelism
    dep = Deployment(gpu=resolve_gpu("sm120"), tp=8, ep=8)
    got = expert_parallel(SWITCH, dep, {"tp": Const(8)}, {"dp": Const(1)}, fields)
    assert (got["on"].value, got["on"].origins) == (True, ("--ep",))  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("how", "sa", "said"),
    [
        (None, {}, "name no expert-parallel option"),
        ({"switch": "absent", "size": ["tp"]}, {}, "have no absent"),
    ],
)
def test_an_ep_the_release_cannot_take_is_refused(how: object, sa: dict[str, object],
                                                  said: str) -> None:  # fmt: skip
    with pytest.raises(RoutescopeError) as e:
        _given(8, how=how, **sa)
    assert said in e.value.message


def test_a_way_out_that_changes_the_argument_stands_over_ep() -> None:
    # the user cannot give both (ep_given_once); a way out's --set of it replaces --ep
    assert _given(8, how="ep_size", ep_size=4) == {}


class _Rules:
    def __init__(self, how: object) -> None:
        self.data = {"server_args": {"expert_parallel": how}}


def test_ep_and_a_set_of_its_argument_from_the_user_are_refused() -> None:
    with pytest.raises(RoutescopeError) as e:
        ep_given_once(_Rules(SWITCH), 8, {"on": True})
    assert (e.value.subject, e.value.message) == (
        "--ep 8",
        "--set on is given too: give one of them",
    )
    ep_given_once(_Rules(SWITCH), None, {"on": True})
    ep_given_once(_Rules("ep_size"), 8, {"on": True})
    ep_given_once(_Rules(None), 8, {"ep_size": 2})


def test_a_size_not_known_here_takes_ep_as_given() -> None:
    dep = Deployment(gpu=resolve_gpu("sm120"), tp=8, ep=4)
    from routescope.analysis.engine.values import Unknown

    defaults = {"dp": Unknown("dp"), "pcp": Const(1)}
    got = expert_parallel(SWITCH, dep, {"tp": Const(8)}, defaults, FIELDS)  # type: ignore[arg-type]
    assert got["on"].value is True  # type: ignore[attr-defined]


def test_a_way_out_that_sets_the_ep_argument_says_it_replaces_ep() -> None:
    # a size argument --ep sets is said with --ep (`--ep 4`, not `--set ep_size=4`); the flags
    # stay runnable; `replaces` names the given flag to drop, and every format says it after
    # them: `--ep 4 (in place of --ep 8)`; a switch stays a --set
    from routescope.report import way_text
    from routescope.wayout import in_place_of_ep

    dep = Deployment(gpu=resolve_gpu("sm120"), tp=4, ep=8)
    flags = ["--set ep_size=4", "--quant fp8"]
    got = in_place_of_ep({"flags": list(flags)}, "ep_size", dep)
    assert got == {"flags": ["--ep 4", "--quant fp8"], "replaces": ["--ep 8"]}
    assert way_text(got) == "--ep 4 --quant fp8 (in place of --ep 8)"
    assert way_text(got, lambda t: f"`{t}`") == "`--ep 4 --quant fp8` (in place of `--ep 8`)"
    switched = in_place_of_ep({"flags": ["--set on=true"]}, SWITCH, dep)
    assert switched == {"flags": ["--set on=true"], "replaces": ["--ep 8"]}
    assert "replaces" not in in_place_of_ep({"flags": ["--set ep_size_max=2"]}, "ep_size", dep)
    # not a size --ep takes (--ep is at least 1): said as the --set it is
    assert in_place_of_ep({"flags": ["--set ep_size=0"]}, "ep_size", dep)["flags"] == [
        "--set ep_size=0"
    ]
    plain = Deployment(gpu=resolve_gpu("sm120"), tp=4)
    assert in_place_of_ep({"flags": list(flags)}, "ep_size", plain) == {
        "flags": ["--ep 4", "--quant fp8"]
    }
