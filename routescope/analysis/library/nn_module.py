"""What torch.nn.Module itself gives its instances: the attributes a lookup on a framework
module falls back to once its class and fields do not answer (records.closed_attributes)."""

from __future__ import annotations

# torch.nn.Module's own attributes (dir() of torch 2.x, plus `training` set by its __init__):
# a module's other attributes are its fields (parameters, buffers and submodules included, as
# register_* and setattr record them)
# fmt: off
MODULE_ATTRS = frozenset((
    "T_destination", "add_module", "apply", "bfloat16", "buffers", "call_super_init",
    "children", "compile", "cpu", "cuda", "double", "dump_patches", "eval", "extra_repr",
    "float", "forward", "get_buffer", "get_extra_state", "get_parameter", "get_submodule",
    "half", "ipu", "load_state_dict", "modules", "mtia", "named_buffers", "named_children",
    "named_modules", "named_parameters", "parameters", "register_backward_hook",
    "register_buffer", "register_forward_hook", "register_forward_pre_hook",
    "register_full_backward_hook", "register_full_backward_pre_hook",
    "register_load_state_dict_post_hook", "register_load_state_dict_pre_hook",
    "register_module", "register_parameter", "register_state_dict_post_hook",
    "register_state_dict_pre_hook", "requires_grad_", "set_extra_state", "set_submodule",
    "share_memory", "state_dict", "to", "to_empty", "train", "training", "type", "xpu",
    "zero_grad"
))
# and its private bookkeeping: the attributes its __init__ sets and its private methods (dir()
# and vars() of torch 2.13's Module, names with one leading underscore); any other private name
# is a field or absent, as any other (`getattr(layer, "_already_called_...", False)`: False)
MODULE_PRIVATE = frozenset((
    "_apply", "_backward_hooks", "_backward_pre_hooks", "_buffers", "_call_impl",
    "_compiled_call_impl", "_forward_hooks", "_forward_hooks_always_called",
    "_forward_hooks_with_kwargs", "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs",
    "_get_backward_hooks", "_get_backward_pre_hooks", "_get_name", "_is_full_backward_hook",
    "_load_from_state_dict", "_load_state_dict_post_hooks", "_load_state_dict_pre_hooks",
    "_maybe_warn_non_full_backward_hook", "_modules", "_named_members",
    "_non_persistent_buffers_set", "_parameters", "_register_load_state_dict_pre_hook",
    "_register_state_dict_hook", "_replicate_for_data_parallel", "_save_to_state_dict",
    "_slow_forward", "_state_dict_hooks", "_state_dict_pre_hooks", "_version",
    "_wrapped_call_impl"
))
# fmt: on
MODULE_BASES = {"torch.nn.Module", "nn.Module", "torch.nn.modules.module.Module"}
