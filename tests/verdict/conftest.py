"""Reports of real deployments against the real SGLang wheel (cached after the first fetch)."""

from __future__ import annotations

from functools import cache
from typing import Any

from routescope import api
from tests.conftest import REPO


@cache
def report(
    model: str, version: str, gpu: str, tp: int = 8, quant: str | None = None
) -> dict[str, Any]:
    req = api.InspectRequest(
        model=str(REPO / model), framework=f"sglang=={version}", gpu=gpu, tp=tp, quant=quant
    )
    doc = api.inspect(req)
    doc["model"]["ref"] = model  # the absolute checkout path must not leak into snapshots
    doc["model"]["config_path"] = model
    return doc
