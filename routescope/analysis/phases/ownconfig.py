"""The config object as the framework's own config class builds it.

A framework that registers its own config class for a model_type re-reads such a checkpoint
through that class (its `get_config`: `REGISTRY[model_type].from_pretrained(path)`), whose
constructor sets defaults and normalisations of its own: a field the checkpoint leaves out has
the framework class's default, not transformers' (a class transformers ships may not declare
it at all). routescope reads config.json through the transformers class; here the framework's
constructor runs on the file's keys (what `from_pretrained` hands it) and what it sets
overrides that view, each value with where it came from (the file's key, or the default at
its file:line). A wrapper's sub-configs (`text_config`) are built by the class's own code and
read the same way.

What the class's transformers base does with the keys it is handed (each becomes an
attribute) is what routescope's view already holds, so only what the framework's code sets
is taken. Where the constructor cannot be followed on one way to its end, the view stays as
routescope read it, and a note says so."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from routescope.analysis.engine.budget import BudgetExceeded
from routescope.analysis.engine.core import Engine
from routescope.analysis.engine.state import PathState
from routescope.analysis.engine.values import (
    ClassVal,
    Const,
    External,
    Instance,
    Unknown,
    UnknownKind,
    Value,
    describe,
    raises,
)
from routescope.analysis.phases.checkpoint import config_value
from routescope.analysis.phases.frameworks import FrameworkRules
from routescope.analysis.phases.runphase import PHASE_STEPS
from routescope.analysis.phases.trace import resolve_entry
from routescope.errors import RoutescopeError
from routescope.intake.aliases import ALIASES
from routescope.intake.spec import RoutingSpec
from routescope.intake.transformers_view import known_model_types
from routescope.timing import phase

# the routing fields' spellings (a top-level name of each): what the note lists when the
# framework's class gives them another value than routescope's view
_ROUTING = frozenset(a for names in ALIASES.values() for a in names if "." not in a)

# the transformers base every config class derives from: its constructor sets the keys it is
# handed as attributes, which routescope's view already holds
_BASES = frozenset(
    {
        "transformers.PretrainedConfig",
        "transformers.PreTrainedConfig",
        "transformers.configuration_utils.PretrainedConfig",
        "transformers.configuration_utils.PreTrainedConfig",
    }
)
_DEPTH = 3  # sub-configs of sub-configs


# what the registry gives for a model_type: `UNDECIDED` when the lookup has several outcomes
UNDECIDED = Unknown("the registry lookup has several outcomes")
# transformers' config class by name -> the config object it builds from the file (None: the
# class routescope read it through already; a string: why it cannot be built)
Through = Callable[[str], "Instance | str | None"]


def registered(engine: Engine, rules: FrameworkRules, model_type: str) -> Value | None:
    """What the framework registers for `model_type` (a class of its own, or transformers'
    class by name): looked up (`REGISTRY[model_type]`, through the registry's own
    `__getitem__` where it has one) in the first of the rules' `config_registry` entries
    (`module:NAME`) this release has; None where it registers nothing."""
    for entry in rules.data.get("config_registry", ()):
        module, _, name = entry.partition(":")
        if isinstance(resolve_entry(engine, entry), Unknown):
            continue  # not in this release
        text = f"{name}[model_type] if model_type in {name} else None"
        got = engine.evaluate_in(
            PathState(envs=[{}]), module, text, {"model_type": Const(model_type)}
        )
        found = {id(v): v for s, v in got if s.raising is None}
        if len(got) != 1 or len(found) != 1:
            return UNDECIDED
        value = next(iter(found.values()))
        if isinstance(value, Const) and value.value is None:
            return None
        return value if isinstance(value, (ClassVal, External)) else UNDECIDED
    return None


def own_config(
    engine: Engine,
    rules: FrameworkRules,
    served: Instance,
    model_type: str,
    config_file: dict[str, Any],
    level: str,
    notes: list[str],
    through: Through | None = None,
) -> Instance:
    """`served` (routescope's view of the checkpoint's config) as the class the framework
    registers for `model_type` builds it: a class of its own runs its constructor on the
    file's keys; a transformers class (by name, or one the framework's class derives from)
    is read through transformers (`through`), the framework class's own class attributes
    over it. `served` itself when the release registers none or the class cannot be
    followed (a note says so). A note names the routing fields (at `level`, the routing
    keys' sub-config or "") the class gives another value."""
    found = registered(engine, rules, model_type)
    if found is None:
        return served
    name = (
        found.qualname.split(":")[-1]
        if isinstance(found, ClassVal)
        else found.name
        if isinstance(found, External)
        else model_type
    )

    def stay(why: str) -> str:
        return (
            f"{model_type} checkpoints are read through the release's own config class "
            f"{name}, {why}: the config's fields are transformers' view of the file"
        )

    if found is UNDECIDED:
        notes.append(
            f"whether the release reads {model_type} checkpoints through a config class of "
            "its own cannot be told (its registry lookup has several outcomes): the "
            "config's fields are transformers' view of the file"
        )
        return served
    upstream = _upstream(found)
    if upstream is not None:
        if isinstance(found, ClassVal) and _runs_own_code(found):
            notes.append(stay("whose constructor runs on transformers' own"))
            return served
        base = through(upstream) if through is not None else None
        if isinstance(base, str):
            notes.append(stay(f"which transformers cannot build here ({base})"))
            return served
        made = base or served
        if isinstance(found, ClassVal):
            made = Instance(None, _class_attributes(dict(made.fields), found.mro(), ()), "config")
            engine.config_classes[id(made)] = (made, found)
    elif isinstance(found, ClassVal) and _BASES & set(found.external_bases()):
        built = _construct(engine, found, config_file)
        if built is None:
            notes.append(stay("whose constructor routescope could not follow to one end"))
            return served
        made = _overlay(built[0], served, built[1], _DEPTH, engine.config_classes)
    else:
        return served
    changed = _changed(_at(served, level), _at(made, level))
    if changed:
        notes.append(
            f"{model_type} checkpoints are read through the release's config class {name}, "
            f"which sets {'; '.join(changed)}"
        )
    return made


def _construct(
    engine: Engine, cls: ClassVal, config_file: dict[str, Any]
) -> tuple[PathState, Instance] | None:
    """`cls(**config.json)` (what `from_pretrained` hands it) on its one way, or None."""
    kwargs = {k: config_value(v, f"config.json: {k}", k) for k, v in config_file.items()}
    steps = PHASE_STEPS["model"]
    engine.budget.push(steps, f"building {cls.qualname} exceeded {steps:,} evaluation steps")
    engine.record_inputs = False  # set-up code: its decisions are not read one by one
    try:
        with phase(f"the config class {cls.qualname}"):
            outs = engine.call(PathState(envs=[{}]), cls, [], kwargs, None)
    except BudgetExceeded:
        outs = []
    finally:
        engine.budget.pop()
        engine.record_inputs = True
    st, inst = outs[0] if len(outs) == 1 else (None, None)
    if st is None or st.raising is not None or st.stopped or not isinstance(inst, Instance):
        return None
    engine.commit_all([st])
    return st, inst


def _upstream(found: Value) -> str | None:
    """The transformers model config class `found` is (External `transformers.X`) or derives
    from (not the bare PretrainedConfig base), by name."""
    if isinstance(found, External):
        return found.name.rsplit(".", 1)[-1] if found.name.startswith("transformers.") else None
    if isinstance(found, ClassVal):
        for base in found.external_bases():
            if base.startswith("transformers.") and base not in _BASES:
                return base.rsplit(".", 1)[-1]
    return None


def _runs_own_code(cls: ClassVal) -> bool:
    """Whether the framework's classes in `cls`'s MRO define a constructor step of their own
    (transformers' dataclass constructor runs it after its own, which routescope does not)."""
    return any(k in c.attrs for c in cls.mro() for k in ("__init__", "__post_init__", "__new__"))


def _at(config: Instance, level: str) -> Instance:
    inner = config.fields.get(level) if level else None
    return inner if isinstance(inner, Instance) else config


def _changed(before: Instance, after: Instance) -> list[str]:
    """The routing fields whose value the framework's class changed, as `name=value (where)`."""
    out: list[str] = []
    for key in sorted(_ROUTING & set(after.fields)):
        old, new = before.fields.get(key), after.fields[key]
        if isinstance(old, Const) and isinstance(new, Const) and old.value == new.value:
            continue
        if old is new:
            continue
        where = new.origins[-1] if new.origins else "its code"
        was = "absent" if old is None else describe(old)
        out.append(f"{key}={describe(new)} ({where}; transformers' view: {was})")
    return out


def _overlay(
    st: PathState,
    view: Instance,
    built: Instance,
    depth: int,
    classes: dict[int, tuple[Instance, ClassVal]],
) -> Instance:
    """routescope's view with what the framework's class set (its instance's attributes,
    then its own class attributes where neither the instance nor the file sets the name);
    its methods and properties are the class's (`classes`, the engine's table)."""
    fields = dict(view.fields)
    own = st.fields(built)
    for key, value in own.items():
        made_by = value.cls if isinstance(value, Instance) else None
        if isinstance(value, Instance) and made_by is not None and depth > 0:
            under = fields.get(key)
            if isinstance(under, Instance) and under.cls is None and under.label == "config":
                value = _overlay(st, under, value, depth - 1, classes)
            elif _BASES & set(made_by.external_bases()):
                value = _overlay(st, Instance(None, {}, "config"), value, depth - 1, classes)
        fields[key] = value
    mro = built.cls.mro() if built.cls is not None else []
    made = Instance(None, _class_attributes(fields, mro, own), "config")
    if built.cls is not None:
        classes[id(made)] = (made, built.cls)
    return made


def _class_attributes(
    fields: dict[str, Value], mro: list[ClassVal], own: dict[str, Value] | tuple[()]
) -> dict[str, Value]:
    """`fields` with the plain class attributes of the framework's classes (`mro`, the most
    derived first) where neither the instance (`own`) nor the file sets the name."""
    for c in reversed(mro):
        for key, value in c.attrs.items():
            if key.startswith("_") or key in own or key == "model_type":
                continue
            if isinstance(value, Const) and not _from_file(fields.get(key)):
                fields[key] = Const(value.value, (f"class attribute {c.qualname}.{key}",))
    return fields


def _from_file(v: Value | None) -> bool:
    return isinstance(v, Const) and any(o.startswith("config.json") for o in v.origins)


def auto_class(auto_map: object, auto: str = "AutoModel") -> str | None:
    """The class config.json's `auto_map` names for `auto` (remote code: `AutoModel`,
    `AutoConfig`), if any."""
    entry = auto_map.get(auto) if isinstance(auto_map, dict) else None
    return entry if isinstance(entry, str) and entry else None


def config_loading(
    engine: Engine, rules: FrameworkRules, tree: Any, spec: RoutingSpec, notes: list[str]
) -> None:
    """Whether the server's `get_config` can build a config for the checkpoint's model_type.
    AutoConfig has a class for it where transformers has one or the release registers one (its
    registry, or `AutoConfig.register` in a file under the rules' `config_sources`); else only
    the class config.json names (auto_map AutoConfig) loads it, with trust_remote_code, and
    otherwise AutoConfig raises ValueError and the server stops. "No class" is said only where
    no transformers the release admits can have one: routescope's own has none and is at least
    as new as the newest the release's requirement allows (transformers adds model types, it
    does not drop them); where the release allows newer, it is not decided, and a note says
    what the answer assumes. The summaries read the facts as bindings (frameworks.LOADS)."""
    out = engine.facts.bindings
    own = auto_class(spec.config_file.get("auto_map"), "AutoConfig")
    named = f"config.json auto_map AutoConfig = {own}" if own else ""
    out["remote_config"] = Const(bool(named), (named or "config.json: no auto_map AutoConfig",))
    model_type = spec.model_type.value
    prefixes = tuple(rules.data.get("config_sources", ()))
    if not isinstance(model_type, str) or not prefixes:
        return
    if registered(engine, rules, model_type) is not None:  # (undecided: not told "none")
        return
    known = known_model_types()
    if known is None or model_type in known[1] or _spelled(tree, prefixes, model_type):
        return  # (a file that names it may register it)
    version = known[0]
    requirement = _requirement(tree)
    none_here = (
        f"transformers {version} here has none, the release registers none (no file under "
        f"{', '.join(prefixes)} names it) and config.json "
        + (f"names its own class ({own}), which loads with --trust-remote-code only" if named
           else "names no class of its own (auto_map AutoConfig)")
    )  # fmt: skip
    if requirement is None or not _bounded_by(requirement, version):
        why = (f"whether the server's transformers (the release requires "
               f"{requirement or 'any'}) has a config class for model_type {model_type!r}: "
               f"{none_here}")  # fmt: skip
        server = ("the server's transformers",)
        out["model_type_known"] = Unknown(why, server, kind=UnknownKind.INPUT)
        notes.append(f"assumed: the server's transformers has a config class for model_type "
                     f"{model_type!r}, which transformers {version} here lacks; with one that "
                     f"lacks it too, get_config's AutoConfig raises ValueError and the server "
                     f"stops (the release requires {requirement or 'any'})")  # fmt: skip
    else:
        out["model_type_known"] = Const(False, (f"the release requires {requirement}",))
    out["model_type_unknown"] = raises(
        "ValueError", f"AutoConfig has no config class for model_type {model_type!r} in any "
        f"transformers the release allows ({requirement or 'any'}): {none_here}"
    )  # fmt: skip


def _spelled(tree: Any, prefixes: tuple[str, ...], model_type: str) -> bool:
    """Whether a file under `prefixes` spells `model_type` (anywhere: over-approximated)."""
    paths = [f for f in tree.files() if f.startswith(prefixes)]
    tree.prefetch(paths)
    needle = model_type.encode()
    return any(needle in tree.read_bytes(f) for f in paths)


def _requirement(tree: Any) -> str | None:
    """The release's requirement on transformers (`transformers<5.23.0,>=5.16.1`), if any."""
    try:
        line = tree.metadata().requirement("transformers")
    except (RoutescopeError, AttributeError, OSError, KeyError, ValueError):
        return None
    return line.split(";")[0].strip() if isinstance(line, str) else None


def _bounded_by(requirement: str, version: str) -> bool:
    """Whether every transformers `requirement` admits is no newer than `version`."""
    try:
        specs = Requirement(requirement).specifier
        mine = Version(version)
    except (InvalidRequirement, InvalidVersion):
        return False
    return any(
        spec.operator in ("==", "===", "<=", "<")
        and not spec.version.endswith(".*")
        and Version(spec.version) <= mine
        for spec in specs
    )  # (below a `<` bound no newer than `version`, or at a version no newer than it)
