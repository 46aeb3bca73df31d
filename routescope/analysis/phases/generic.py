"""What a release does with an architecture its registry does not name: its generic backend
(a resolver that serves the model through a general-purpose library's own classes), as far as
the release's source and the library version it pins say."""

from __future__ import annotations

import re
from typing import Any

from routescope.analysis.engine.core import Engine
from routescope.analysis.engine.values import ClassVal
from routescope.errors import RoutescopeError


def generic_backend(
    tree: Any,
    engine: Engine,
    generic: dict[str, str],
    arch: str,
    model_type: str | None,
    remote: str | None,
) -> str:
    """What the release does with an architecture no registry names, as far as its source and
    the library it pins say; what was not read is said, never guessed."""
    try:
        resolver = engine.index.find_function(generic["function"])  # type: ignore[attr-defined]
    except RoutescopeError as exc:
        return f"its generic backend ({generic['function']}) could not be read: {exc.message}"
    if resolver is None:
        return f"{tree.origin} has no resolver {generic['function']}: no generic backend serves it"
    at = f"{generic['function']}, {resolver.relpath}:{resolver.line}"
    library = generic.get("library", "the library")
    found, text = _library_class(tree, generic, arch, model_type)
    if found is False and remote:
        return (
            f"{text}, so its generic backend ({at}) takes the checkpoint's own code "
            f"(auto_map AutoModel = {remote}), which routescope never runs or traces"
        )
    if found is False:
        return (f"its generic backend ({at}) takes the class from {library}, and {text}: "
                "the release cannot load this model")  # fmt: skip
    served = f"the release serves it through {generic['serves']} ({at}"
    if found is True:
        return f"{served}; the class: {text}; if it passes the backend's compatibility check)"
    other = f", or the checkpoint's auto_map AutoModel = {remote}" if remote else ""
    return (f"{served}) if {library}, as the server has it, defines the class{other} "
            f"(not checked: {text})")  # fmt: skip


def served_by_backend(
    tree: Any, generic: dict[str, str], lookup_in: str, arch: str, cls: ClassVal
) -> str | None:
    """Where the registry itself maps `arch` to a class of the generic backend (`package`) and
    the rules cannot follow that backend (no `replace`): why no answer is given, with the
    registry's line; None for any other class."""
    # (e.g. a registry entry `"OlmoeForCausalLM": ("transformers", "TransformersMoEForCausalLM")`,
    # rules/frameworks/vllm.toml cites where)
    package = generic.get("package")
    module = cls.qualname.partition(":")[0]
    if (
        not package
        or "replace" in generic
        or not (module == package or module.startswith(package + "."))
    ):
        return None
    where = f"{lookup_in}"
    relpath = lookup_in.replace(".", "/") + ".py"
    try:
        lines = tree.read_bytes(relpath).decode("utf-8", errors="replace").splitlines()
    except (OSError, KeyError, RoutescopeError):
        lines = []
    hit = next((i for i, line in enumerate(lines, 1) if f'"{arch}"' in line), None)
    if hit is not None:
        where = f"{relpath}:{hit}"
    return (
        f"the registry serves it with {cls.qualname.rpartition(':')[2]} ({where}): "
        f"{generic['serves']}; routescope does not follow that backend for this framework yet "
        "(the router is whatever the backend makes of the library's module), so it gives no answer"
    )


def library_source(
    tree: Any, generic: dict[str, str], arch: str, model_type: str
) -> tuple[Any, str] | str:
    """The library's source tree at the framework's pin and the file that defines `arch`
    there, or why not (the reason, as the refusal says it)."""
    found, text = _library_class(tree, generic, arch, model_type)
    if found is not True:
        return text
    from routescope.source.open import open_published

    library = generic["library"]
    version = tree.metadata().pinned(library)
    offline = callable(getattr(tree, "can_fetch", None)) and not tree.can_fetch()
    try:
        lib = open_published(library, version, offline=offline, progress=False)
    except RoutescopeError as exc:
        return f"{library}=={version} not read: {exc.message}"
    return lib, generic["library_module"].format(model_type=model_type.replace("-", "_"))


def _library_class(
    tree: Any, generic: dict[str, str], arch: str, model_type: str | None
) -> tuple[bool | None, str]:
    """Whether the library the generic backend takes classes from, at the framework's pin,
    defines `arch`, with where ("transformers==5.19.0 transformers/models/dots1/
    modeling_dots1.py:539") or why not; None and the reason when that could not be read (no
    exact pin, no model_type, offline and not cached, no network)."""
    from routescope.source.open import open_published

    library, module = generic.get("library"), generic.get("library_module")
    if not library or not module or not model_type:
        return None, "the rules name no library module for it" if model_type else "no model_type"
    try:
        version = tree.metadata().pinned(library)
    except (RoutescopeError, OSError, AttributeError):
        version = None
    if version is None:
        return None, f"{tree.origin} pins no exact {library} version"
    # transformers' own model_type -> module name (models/auto/configuration_auto.py)
    rel = module.format(model_type=model_type.replace("-", "_"))
    offline = callable(getattr(tree, "can_fetch", None)) and not tree.can_fetch()
    try:
        lib = open_published(library, version, offline=offline, progress=False)
        if rel not in lib.files():
            # not where the library keeps this model_type's classes: registered anywhere?
            registry = generic.get("library_registry")
            if registry and registry in lib.files():
                named = f'"{arch}"' in lib.read_bytes(registry).decode("utf-8", "replace")
                if not named:
                    return False, (f"{library}=={version}, which it pins, has no {rel} and "
                                   f"names no {arch} in {registry}")  # fmt: skip
            return None, f"{library}=={version} has no {rel}; where it defines {arch} not found"
        text = lib.read_bytes(rel).decode("utf-8", "replace")
    except RoutescopeError as exc:
        return None, f"{library}=={version} not read: {exc.message}"
    m = re.search(rf"^class {re.escape(arch)}\b", text, re.MULTILINE)
    if m is None:
        return False, f"{library}=={version}, which it pins, defines no class {arch} in {rel}"
    line = text.count("\n", 0, m.start()) + 1
    return True, f"{library}=={version} {rel}:{line}"
