"""A deployment: what the server is started on and with (light: read before any trace)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from routescope.errors import RoutescopeError
from routescope.hardware import GpuProfile


@dataclass(frozen=True, slots=True)
class Deployment:
    gpu: GpuProfile
    tp: int = 1
    # --ep: the expert-parallel size; how a release takes it is its rules' `expert_parallel` (SGLang
    # an ep_size argument, vLLM a switch whose size is fixed by the other parallel sizes)
    ep: int | None = None
    quant: str | None = None  # None: from the checkpoint's quantization_config
    server_args: dict[str, Any] = field(default_factory=dict)  # --set
    env: dict[str, str] = field(default_factory=dict)  # --env
    # --package NAME=true|false: whether an optional package imports on the server (over the
    # rule file's defaults: e.g. triton_kernels, which the sglang wheel does not depend on)
    packages: dict[str, bool] = field(default_factory=dict)


def ep_argument(how: Any) -> str | None:
    """The server argument --ep sets, from the rules' `expert_parallel` (a size argument's name,
    or a switch's table); None where the rules name none."""
    if isinstance(how, str):
        return how
    return str(how["switch"]) if isinstance(how, dict) and how.get("switch") else None


def ep_given_once(rules: Any, ep: int | None, server_args: dict[str, Any]) -> None:
    """--ep and a --set of the argument it sets (the rules' `expert_parallel`) are not both
    taken: exit 2, give one. (A way out may change that argument: its --set then stands.)"""
    target = ep_argument(rules.data.get("server_args", {}).get("expert_parallel"))
    if ep is not None and target in server_args:
        raise RoutescopeError(f"--ep {ep}", f"--set {target} is given too: give one of them")
