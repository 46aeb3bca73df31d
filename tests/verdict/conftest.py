"""Reports of real deployments against the real framework wheels (cached after the first fetch)."""

from __future__ import annotations

from functools import cache
from typing import Any

from routescope import api
from tests.conftest import REPO


@cache
def report(
    model: str, version: str, gpu: str, tp: int = 8, quant: str | None = None,
    framework: str = "sglang",
) -> dict[str, Any]:  # fmt: skip
    req = api.InspectRequest(
        model=str(REPO / model), framework=f"{framework}=={version}", gpu=gpu, tp=tp, quant=quant
    )
    doc = api.inspect(req)
    doc["model"]["ref"] = model  # the absolute checkout path must not leak into snapshots
    doc["model"]["config_path"] = model
    return doc
