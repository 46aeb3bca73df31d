"""RoutingSpec: the routing facts of one MoE model, each with where it came from."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from routescope.intake.quant import QuantInfo

T = TypeVar("T")


class Origin(str, Enum):
    """Where a value came from, in the order a framework reading `config.x` would see it."""

    CONFIG = "config.json"  # the key was in the file
    QUANT_SIDECAR = "hf_quant_config.json"  # ModelOpt's quantization file beside config.json
    CLASS_DEFAULT = "transformers"  # the transformers config class for this model_type
    DERIVED = "derived"  # computed from other fields (the note says how)
    MODEL_CODE = "model code"  # read statically from the model's modeling source
    ABSENT = "absent"  # nobody defines it


@dataclass(frozen=True, slots=True)
class Provenance:
    origin: Origin
    key: str | None = None  # "text_config.n_routed_experts", "DeepseekV3Config.n_group"
    note: str = ""

    def describe(self) -> str:
        parts = [self.origin.value]
        if self.key:
            parts.append(self.key)
        text = ": ".join(parts)
        return f"{text} ({self.note})" if self.note else text


@dataclass(frozen=True, slots=True)
class Sourced(Generic[T]):
    """A value with its provenance; `value is None` means unknown or absent."""

    value: T | None
    provenance: Provenance

    @property
    def known(self) -> bool:
        return self.value is not None


class Topology(str, Enum):
    UNGROUPED = "ungrouped"  # plain top-k over all experts
    GROUPED = "grouped"  # n_group > 1: group-limited routing
    DEGENERATE_GROUPED = "degenerate-grouped"  # n_group == 1 but routed by grouped code


@dataclass(frozen=True, slots=True)
class ModelRef:
    """What the user named and what it resolved to."""

    kind: str  # "hub" | "dir" | "file"
    ref: str  # as given
    config_path: str  # the config.json actually read
    revision: str | None = None  # as asked (hub only)
    commit: str | None = None  # the resolved commit (hub only)
    sha256: str = ""  # of the config.json bytes


@dataclass(frozen=True, slots=True)
class RoutingSpec:
    """Routing facts of one model; every field carries its provenance."""

    model: ModelRef
    architectures: Sourced[tuple[str, ...]]
    model_type: Sourced[str]
    routing_config_path: str  # "" or "text_config" or "ffn_config": where routing keys live
    num_experts: Sourced[int]
    top_k: Sourced[int]
    n_group: Sourced[int]
    topk_group: Sourced[int]
    topk_method: Sourced[str]
    scoring_func: Sourced[str]
    norm_topk_prob: Sourced[bool]
    routed_scaling_factor: Sourced[float]
    n_shared_experts: Sourced[int]
    shared_expert_intermediate_size: Sourced[int]
    has_correction_bias: Sourced[bool]
    num_moe_layers: Sourced[int]
    num_hidden_layers: Sourced[int]
    first_k_dense_replace: Sourced[int]
    moe_layer_freq: Sourced[Any]
    decoder_sparse_step: Sourced[int]
    moe_intermediate_size: Sourced[int]
    hidden_size: Sourced[int]
    quantization: Sourced[str]
    topology: Topology
    quant: QuantInfo | None = None  # what the checkpoint's quantization table says, in full
    # the first of the layers num_moe_layers counts (None: not known): the layer a trace builds
    first_moe_layer: int | None = None
    # ModelOpt's hf_quant_config.json beside config.json, as read (None: the checkpoint has none)
    sidecar: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    # The attribute view a framework gets from `config.<name>`: file values over class defaults.
    config_view: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    config_view_origin: dict[str, Provenance] = field(
        default_factory=dict, compare=False, repr=False
    )
    # A wrapper's own top-level keys (the routing level left out): what the framework's
    # config object holds around the text config it serves (empty for plain models)
    outer_view: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    # config.json as read: what a framework's own config class is handed (ownconfig.py)
    config_file: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    notes: tuple[str, ...] = ()

    ROUTING_FIELDS = (
        "num_experts", "top_k", "n_group", "topk_group", "topk_method", "scoring_func",
        "norm_topk_prob", "routed_scaling_factor", "n_shared_experts",
        "shared_expert_intermediate_size", "has_correction_bias", "num_moe_layers",
        "num_hidden_layers", "first_k_dense_replace", "moe_layer_freq", "decoder_sparse_step",
        "moe_intermediate_size", "hidden_size", "quantization",
    )  # fmt: skip

    def sourced(self, name: str) -> Sourced[Any]:
        value: Sourced[Any] = getattr(self, name)
        return value
