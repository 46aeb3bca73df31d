"""The checkpoint as the framework sees it: its config object and its files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from routescope.analysis.engine.containers import str_dict
from routescope.analysis.engine.facts import Checkpoint
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import (
    Const,
    External,
    Instance,
    Unknown,
    UnknownKind,
    Value,
)
from routescope.analysis.library import heterogeneous
from routescope.analysis.phases.block import holding
from routescope.intake.build import read_through
from routescope.intake.quant import HF_QUANT_CONFIG
from routescope.intake.spec import RoutingSpec
from routescope.intake.transformers_view import SubConfig


def config_instance(spec: RoutingSpec) -> Instance:
    fields: dict[str, Value] = {}
    for key, value in spec.config_view.items():
        prov = spec.config_view_origin.get(key)
        origin = prov.describe() if prov else "config"
        if key == "per_layer_config":  # transformers' heterogeneous config, as it keeps it
            heterogeneous.install(fields, value, origin)
            continue
        fields[key] = config_value(value, origin, key)
    return Instance(None, _torch_dtypes(fields), "config")


def _torch_dtypes(fields: dict[str, Value]) -> dict[str, Value]:
    """transformers' PretrainedConfig turns the dtype string into a torch.dtype and answers to
    both names (`dtype`, and the older `torch_dtype`)."""
    for key in ("dtype", "torch_dtype"):
        v = fields.get(key)
        if isinstance(v, Const) and isinstance(v.value, str) and v.value.isidentifier():
            fields[key] = External(f"torch.{v.value}", v.origins)
    for key, alias in (("dtype", "torch_dtype"), ("torch_dtype", "dtype")):
        if isinstance(fields.get(key), External):
            fields.setdefault(alias, fields[key])
    return fields


def served_config(spec: RoutingSpec, text: Instance) -> Instance:
    """The config object the framework loads: for a wrapper (a multimodal checkpoint whose
    routing keys sit in `text_config`), its own top-level keys around the text config."""
    if not spec.routing_config_path or not spec.outer_view:
        return text
    fields = {k: config_value(v, f"config.json {k}", k) for k, v in spec.outer_view.items()}
    fields[spec.routing_config_path] = text
    return Instance(None, _torch_dtypes(fields), "config")


def served_through(spec: RoutingSpec, class_name: str) -> Instance | str | None:
    """The config object as transformers' `class_name` builds it from the file (a framework
    registers that class for the file's model_type): None when routescope read it through
    that class already; a string saying why it cannot be built."""
    got = read_through(spec, class_name)
    if isinstance(got, str):
        return got
    if got is spec:
        return None
    return served_config(got, config_instance(got))


def sidecar_value(spec: RoutingSpec) -> Value:
    """ModelOpt's hf_quant_config.json beside config.json as a dict the framework reads (what
    a framework that loads it itself gets), None when the checkpoint has none."""
    if spec.sidecar is None:
        return Const(None, ("no hf_quant_config.json beside config.json",))
    return config_value(spec.sidecar, "hf_quant_config.json", "hf_quant_config")


def config_value(value: Any, origin: str, key: str) -> Value:
    if _literal(value):
        return Const(value, (origin,))
    if isinstance(value, SubConfig):  # a config object of its own: read by attribute
        fields = {k: config_value(v, origin, f"{key}.{k}") for k, v in value.items()}
        return Instance(None, fields, "config")
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        # a nested table (rope_scaling, quantization_config): a dict the framework reads
        return str_dict({k: config_value(v, origin, f"{key}.{k}") for k, v in value.items()})
    return Unknown(f"config.{key}", kind=UnknownKind.INPUT)


def _literal(v: Any) -> bool:
    return isinstance(v, (int, float, str, bool, type(None))) or (
        isinstance(v, (list, tuple)) and all(_literal(x) for x in v)
    )


def checkpoint_of(spec: RoutingSpec) -> Checkpoint:
    """The model path the server is given, and what its filesystem queries about it find: a
    hub id is no local path; a directory holds its files; a lone config.json stands for a
    checkpoint directory holding just that file."""
    ref = spec.model
    documents = {HF_QUANT_CONFIG: spec.sidecar} if spec.sidecar is not None else {}
    if ref.kind == "hub":
        cp = Checkpoint(ref.ref, False, None, "a hub id (not a local path until downloaded)")
    elif ref.kind == "dir":
        root = Path(ref.ref)
        try:
            files = frozenset(
                p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()
            )
        except OSError:
            files = None
        cp = Checkpoint(ref.ref, True, files, "the files in the model directory", documents)
    else:
        read = {"config.json", *documents}
        cp = Checkpoint(
            str(Path(ref.config_path).parent),
            True,
            frozenset(read),
            f"a checkpoint directory holding only the files read ({', '.join(sorted(read))})",
            documents,
        )
    return cp


def served_unquantized(spec: RoutingSpec, asked: str | None, quant_config: Value) -> str | None:
    """A note where the checkpoint declares a quantization, none was asked for, and the
    release builds the MoE block with no quantization config (a release that reads no
    sidecar quantization file): its layers are the unquantized ones, which the checkpoint's
    quantized weights are not laid out for. Loading is not traced, so this is said, not
    decided."""
    declared = spec.quant
    if declared is None or asked is not None or declared.file != HF_QUANT_CONFIG:
        return None
    if not (isinstance(quant_config, Const) and quant_config.value is None):
        return None
    return (f"the checkpoint declares {declared.scheme} ({declared.file}), but this release "
            "builds the MoE block with no quantization config: its layers are unquantized, "
            "which the checkpoint's quantized weights are not laid out for (weight loading is "
            "not traced); --quant names the method the release should use")  # fmt: skip


def experts_unquantized(
    spec: RoutingSpec,
    asked: str | None,
    quant_config: Value,
    built: list[tuple[PathState, Value, Value]],
    unquantized: tuple[str, ...],
    path_guessed: bool,
) -> list[str]:
    """The note of `experts_unquantized_note` where every way through the build made the
    experts so (a way that quantized them, the configuration undecided between them, says
    nothing: unknown, not wrong); none, or one."""
    said: list[str | None] = []
    for st, block, _ in built:
        notes = [experts_unquantized_note(spec, asked, quant_config,
                                          st.fields(module)["quant_method"], unquantized,
                                          path_guessed)
                 for module in holding(st, block, "quant_method")]  # fmt: skip
        said.append(next((n for n in notes if n), None))
    return [said[0]] if said and said[0] and all(said) else []


def experts_unquantized_note(
    spec: RoutingSpec,
    asked: str | None,
    quant_config: Value,
    method: Value | None,
    unquantized: tuple[str, ...],
    path_guessed: bool,
) -> str | None:
    """A note where the checkpoint declares its experts quantized, the release built a
    quantization config, and that config gave the experts layer no method of its own: its
    `method` is one of the classes the rules name as the unquantized experts' (a
    mixed-precision config that knows fewer per-layer algorithms than the checkpoint names,
    and returns None for the experts' one). The checkpoint's expert weights are not laid out
    for those layers; loading is not traced, so this is said, not decided. None where --quant
    bf16 asked for it, the checkpoint excludes its experts, or no config was built
    (served_unquantized says that)."""
    declared = spec.quant
    if declared is None or asked == "bf16" or not isinstance(method, Instance):
        return None
    if method.cls is None or method.cls.qualname.rpartition(":")[2] not in unquantized:
        return None
    if isinstance(quant_config, Const) and quant_config.value is None:
        return None
    if any(_names_routed_experts(str(e)) for e in declared.excluded):
        return None  # (which experts it leaves unquantized is the file's to say)
    made_by = (
        f" ({quant_config.cls.qualname.rpartition(':')[2]})"
        if isinstance(quant_config, Instance) and quant_config.cls is not None
        else ""
    )
    guess = ("; the module path the config looked them up by is routescope's guess (see the "
             "note on it)" if path_guessed else "")  # fmt: skip
    return (
        f"the experts are built unquantized ({method.cls.qualname.rpartition(':')[2]}): the "
        f"quantization config this release builds for the checkpoint's {declared.scheme} "
        f"({declared.file}){made_by} gives them no method of its own, and the checkpoint's "
        f"quantized expert weights are not laid out for them (weight loading is not "
        f"traced){guess}"
    )


def _names_routed_experts(pattern: str) -> bool:
    """Can an excluded-module pattern of the checkpoint name its routed experts? It mentions
    experts other than the shared ones (`*mlp.experts*` does; `*.shared_experts.*`, which
    several published NVFP4 files exclude, does not). A reading of the file's text, not of
    the module paths the release matches the patterns against."""
    return "expert" in pattern.lower().replace("shared_expert", "")
