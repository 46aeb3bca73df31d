"""Framework rule files (rules/frameworks/<id>.toml) -> the engine's Facts for one deployment."""

from __future__ import annotations

import ast
import operator
from dataclasses import dataclass
from functools import cache
from typing import Any

from routescope.analysis.engine.facts import Facts, SinkRule
from routescope.analysis.engine.values import Const, Unknown, UnknownKind, Value
from routescope.errors import RoutescopeError
from routescope.hardware import GpuProfile
from routescope.rules import load_rule_file, rules_dir
from routescope.source.tree import Metadata


@dataclass(frozen=True, slots=True)
class FrameworkRules:
    id: str
    path: str  # the rule file, for evidence
    data: dict[str, Any]

    @property
    def router_classes(self) -> tuple[str, ...]:
        """The router class, or its alternatives in order (the first a release has)."""
        named = self.data["router"]["class"]
        return (named,) if isinstance(named, str) else tuple(named)

    @property
    def router_call(self) -> str:
        return str(self.data["router"]["call"])

    @property
    def cases(self) -> list[dict[str, Any]]:
        return list(self.data.get("cases", []))


def _alternatives(returns: Any) -> str | tuple[tuple[str, str], ...]:
    """A summary's `returns`: an expression, or alternatives, each an expression or a table
    {when_source_has = "...", returns = "..."} (the first that fits the release is taken)."""
    if isinstance(returns, str):
        return returns
    return tuple((str(r.get("when_source_has", "")), str(r["returns"])) if isinstance(r, dict)
                 else ("", str(r)) for r in returns)  # fmt: skip


@cache
def load_framework(name: str) -> FrameworkRules:
    path = rules_dir() / "frameworks" / f"{name}.toml"
    if not path.is_file():
        known = sorted(
            p.stem
            for p in (rules_dir() / "frameworks").glob("*.toml")
            if not p.stem.endswith(".seeds")
        )
        raise RoutescopeError(
            f"--framework {name}", f"no rules for this framework; known: {', '.join(known)}"
        )
    data = load_rule_file(path, "framework")
    return FrameworkRules(data["id"], f"rules/frameworks/{path.name}", data)


_COMPARE = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt,
            "==": operator.eq, "!=": operator.ne}  # fmt: skip


def _fact(text: str, gpu: GpuProfile, origin: str, gpus: int = 1) -> Value:
    """A platform fact's value: `@gpus`, a GPU profile field (`@gpu.capability`), such a field
    compared with a literal (`@gpu.capability >= (10, 0)`: what a kernel library's support probe
    answers on that GPU), or a Python literal."""
    if text == "@gpus":  # the GPUs the server sees: as many as its tensor-parallel ranks
        return Const(gpus, ("--tp: the GPUs the server sees",))
    head, _, rest = text.partition(" ")
    if head.startswith("@gpu.") and rest:
        op, _, literal = rest.partition(" ")
        compare = _COMPARE.get(op)
        try:
            other = ast.literal_eval(literal)
        except (ValueError, SyntaxError):
            compare = None
        if compare is None:
            raise RoutescopeError(origin, f"fact {text!r} is not '@gpu.<field> <op> <literal>'")
        got = _fact(head, gpu, origin, gpus)
        if not isinstance(got, Const):
            return got
        return Const(bool(compare(got.value, other)), (*got.origins, origin))
    if text.startswith("@gpu."):
        field = text.removeprefix("@gpu.")
        value = getattr(gpu, field, None)
        if value is None:
            return Unknown(f"GPU profile has no {field}", kind=UnknownKind.INPUT)
        return Const(value, (f"GPU profile {gpu.family}/{gpu.device}: {field}",))
    try:
        return Const(ast.literal_eval(text), (origin,))
    except (ValueError, SyntaxError):
        raise RoutescopeError(origin, f"fact {text!r} is not a Python literal") from None


# What the rules' summaries of a release's `get_config` read (`hf_config if model_type_known or
# (remote_config and trust_remote_code) else model_type_unknown`): until the checkpoint is read
# (ownconfig.config_loading), that AutoConfig has a class for its model_type.
LOADS: dict[str, Value] = {"model_type_known": Const(True), "remote_config": Const(False),
                           "model_type_unknown": Const(None)}  # fmt: skip


def build_facts(
    rules: FrameworkRules,
    gpu: GpuProfile,
    env: dict[str, str],
    packages: dict[str, bool] | None = None,
    gpus: int = 1,
) -> Facts:
    """The platform as the framework's code will see it on `gpu`, plus the user's --env and
    --package."""
    d = rules.data
    platform = d.get("platform", {})
    calls = {
        k: _fact(v, gpu, f"{rules.path} platform.calls {k}", gpus)
        for k, v in platform.get("calls", {}).items()
    }
    attributes = {
        k: _fact(v, gpu, f"{rules.path} platform.attributes {k}", gpus)
        for k, v in platform.get("attributes", {}).items()
    }
    sinks = [
        SinkRule(
            s["id"],
            s["kind"],
            s.get("external", ""),
            s.get("decorator", ""),
            tuple(s.get("args", ())),
            s.get("provider", ""),
        )
        for s in d["sinks"]
    ]
    facts = Facts(
        attributes=attributes,
        calls=calls,
        env=dict(env),
        packages={**d["packages"], **(packages or {})},
        sinks=sinks,
        summaries={s["function"]: _alternatives(s["returns"]) for s in d.get("summaries", [])},
        opaque=list(d.get("opaque", [])),
        built_whole=list(d.get("built_whole", [])),
        env_unset_means_absent=d.get("env_unset", "absent") == "absent",
        source=str(rules.path),
        given_packages=frozenset(packages or {}),
    )
    facts.bindings.update(LOADS)
    return facts


def of_the_release(
    facts: Facts, rules: FrameworkRules, tree: Any, version: str | None, origin: str
) -> None:
    """What the release's METADATA (read once) tells the facts: the versions it pins, the
    packages it requires, and each distribution's version (the release's own included)."""
    dists: dict[str, str] = rules.data.get("package_distributions", {})
    try:
        meta = tree.metadata() if dists else None
    except (RoutescopeError, OSError, AttributeError, KeyError, ValueError):
        meta = None  # a tree without METADATA says nothing
    facts.versions = pinned_versions(dists, meta)
    facts.required = required_packages(dists, meta)
    facts.distributions = {dists[p]: v for p, v in facts.versions.items() if p in dists}
    if version is not None:
        facts.distributions[rules.data["distribution"]] = (version, f"the traced release, {origin}")


def required_packages(dists: dict[str, str], meta: Metadata | None) -> dict[str, str]:
    """The optional packages the release requires with no condition (a Requires-Dist line with
    no environment marker, naming a distribution of the rules' `package_distributions`): each
    is installed with the release, so it imports on the target. Import name -> the line (with
    the release's name). A line under a marker (an extra, a platform) says nothing."""
    if meta is None:
        return {}
    out: dict[str, str] = {}
    for package, dist in dists.items():
        line = meta.requirement(dist)
        if line and ";" not in line:
            out[package] = f"Requires-Dist: {line.strip()} ({meta.name} {meta.version})"
    return out


def pinned_versions(dists: dict[str, str], meta: Metadata | None) -> dict[str, tuple[str, str]]:
    """Each optional package's version as the release pins it in its METADATA (Requires-Dist
    `dist==V`, the rules' `package_distributions` naming the distribution): what the trace
    takes `package.__version__` to be. A loose pin says nothing."""
    if meta is None:
        return {}
    out: dict[str, tuple[str, str]] = {}
    for package, dist in dists.items():
        version = meta.pinned(dist)
        if version:
            out[package] = (version, f"{dist}=={version}, pinned by {meta.name} {meta.version}")
    return out
