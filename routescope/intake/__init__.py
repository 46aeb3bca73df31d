"""Model intake: a Hugging Face config -> RoutingSpec with provenance for every field."""

from routescope.intake.load import load_spec, read_config
from routescope.intake.spec import ModelRef, Origin, Provenance, RoutingSpec, Sourced, Topology

__all__ = [
    "ModelRef", "Origin", "Provenance", "RoutingSpec", "Sourced", "Topology",
    "load_spec", "read_config",
]  # fmt: skip
