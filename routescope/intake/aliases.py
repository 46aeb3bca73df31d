"""The config.json spellings of each routing field, in the order they are tried.

Paths are relative to the routing level of the config (the top level, or `text_config` of a
multimodal wrapper); a dot descends into a nested dict (DBRX keeps experts in `ffn_config`).
"""

from __future__ import annotations

ALIASES: dict[str, tuple[str, ...]] = {
    "num_experts": (
        "n_routed_experts", "num_experts", "num_local_experts", "moe_num_experts",
        "ffn_config.moe_num_experts",
    ),
    "top_k": (
        "num_experts_per_tok", "moe_topk", "experts_per_token", "moe_top_k",
        "ffn_config.moe_top_k", "num_selected_experts",
        "top_k_experts",  # Gemma 4 (SGLang gemma4_causal.py:280, vLLM gemma4.py:670)
        "num_experts_per_token",  # Kimi-Linear, Kimi-K3 (SGLang kimi_linear.py:117, kimi_k3.py:505)
        "moe_k",  # ERNIE 4.5 (SGLang 0.5.23 ernie4.py:97, vLLM 0.34.0 ernie45_moe.py:187)
    ),
    "n_group": ("n_group", "num_expert_group"),
    "topk_group": ("topk_group",),
    "topk_method": ("topk_method",),
    "scoring_func": ("scoring_func", "score_function", "moe_router_activation_func"),  # (Kimi-K3)
    "norm_topk_prob": ("norm_topk_prob", "moe_renormalize"),  # (Kimi-Linear, Kimi-K3)
    "routed_scaling_factor": ("routed_scaling_factor",),
    "n_shared_experts": (
        "n_shared_experts", "num_shared_experts", "num_shared_expert",
        "moe_num_shared_experts",  # ERNIE 4.5 (SGLang ernie4.py:82, vLLM ernie45_moe.py:133)
    ),
    "shared_expert_intermediate_size": (
        "shared_expert_intermediate_size", "moe_shared_expert_intermediate_size",
        "shared_intermediate_size",
    ),
    "num_hidden_layers": ("num_hidden_layers", "n_layers", "num_layers"),
    "first_k_dense_replace": ("first_k_dense_replace",),
    "moe_layer_freq": ("moe_layer_freq", "moe_layer_frequency"),
    "decoder_sparse_step": ("decoder_sparse_step",),
    "moe_intermediate_size": ("moe_intermediate_size", "ffn_config.ffn_hidden_size"),
    "hidden_size": ("hidden_size", "d_model"),
}  # fmt: skip

# Keys that switch on a score-correction bias when true (besides topk_method == "noaux_tc").
BIAS_FLAGS = ("use_routing_bias", "moe_router_enable_expert_bias")

# Sub-configs of multimodal wrappers that hold the language model (and so the routing).
TEXT_CONFIG_KEYS = ("text_config", "language_config", "llm_config")

# topk_method values that are really grouped-routing code paths (DeepSeek family).
GROUPED_TOPK_METHODS = ("noaux_tc", "group_limited_greedy")
