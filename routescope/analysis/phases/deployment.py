"""A deployment: what the server is started on and with (light: read before any trace)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from routescope.hardware import GpuProfile


@dataclass(frozen=True, slots=True)
class Deployment:
    gpu: GpuProfile
    tp: int = 1
    quant: str | None = None  # None: from the checkpoint's quantization_config
    server_args: dict[str, Any] = field(default_factory=dict)  # --set
    env: dict[str, str] = field(default_factory=dict)  # --env
    # --package NAME=true|false: whether an optional package imports on the server (over the
    # rule file's defaults: e.g. triton_kernels, which the sglang wheel does not depend on)
    packages: dict[str, bool] = field(default_factory=dict)
