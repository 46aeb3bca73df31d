"""Library entry points; the CLI is a thin layer over these."""

from __future__ import annotations

from routescope.intake import RoutingSpec, load_spec


def inspect_model(model: str, *, offline: bool = False, revision: str | None = None) -> RoutingSpec:
    """Read a model's routing facts (hub id, directory or config.json) with provenance."""
    return load_spec(model, offline=offline, revision=revision)
