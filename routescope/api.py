"""Library entry points; the CLI is a thin layer over these."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from routescope.analysis.phases.deployment import Deployment, ep_given_once
from routescope.analysis.phases.frameworks import FrameworkRules, load_framework
from routescope.errors import RoutescopeError
from routescope.hardware import resolve_gpu
from routescope.intake import RoutingSpec, load_spec
from routescope.source.tree import SourceTree
from routescope.timing import phase
from routescope.tracecache import traced_report

_T = TypeVar("_T")


class _Beside(Generic[_T]):
    """`work()` run in a daemon thread while the caller goes on; result() waits for it and
    returns its value or raises its exception. A daemon, so that a process ending on another
    error does not wait for it (a network timeout); what it writes is written atomically."""

    def __init__(self, work: Callable[[], _T]) -> None:
        self._work = work
        self._value: _T | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="routescope-beside", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._value = self._work()
        except BaseException as e:  # handed to the caller's thread by result()
            self._error = e

    def result(self) -> _T:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]


_FRAMEWORK = re.compile(r"^([A-Za-z][\w.\-]*)==([\w.\-+]+)$")


def inspect_model(model: str, *, offline: bool = False, revision: str | None = None) -> RoutingSpec:
    """Read a model's routing facts (hub id, directory or config.json) with provenance."""
    return load_spec(model, offline=offline, revision=revision)


@dataclass(frozen=True, slots=True)
class InspectRequest:
    model: str
    framework: str | None = None  # "sglang==0.5.9"
    framework_src: str | None = None  # a checkout or unpacked tree
    gpu: str = "sm120"
    tp: int = 1
    ep: int | None = None
    quant: str | None = None
    server_args: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    packages: dict[str, bool] = field(default_factory=dict)  # --package NAME=true|false
    offline: bool = False
    revision: str | None = None


def parse_assignments(items: list[str], what: str, literal: bool) -> dict[str, Any]:
    """["k=v", ...] -> {k: v}; with `literal`, true/false/numbers/null are parsed as JSON."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise RoutescopeError(f"{what} {item}", "expected KEY=VALUE")
        parsed: Any = value
        if literal:
            try:
                parsed = json.loads(value)
            except (ValueError, RecursionError):
                parsed = value
        out[key.strip()] = parsed
    return out


def parse_packages(items: list[str]) -> dict[str, bool]:
    """["triton_kernels=false", ...] -> {"triton_kernels": False} (true/false only)."""
    out: dict[str, bool] = {}
    for name, value in parse_assignments(items, "--package", literal=True).items():
        if not isinstance(value, bool):
            raise RoutescopeError(f"--package {name}={value}", "expected NAME=true or NAME=false")
        out[name] = value
    return out


def open_framework(
    framework: str, *, offline: bool = False
) -> tuple[FrameworkRules, SourceTree, str]:
    """`sglang==0.5.12` -> its rules, its published source (fetched lazily) and the version."""
    from routescope.source.open import open_source

    m = _FRAMEWORK.match(framework)
    if m is None:
        raise RoutescopeError(
            f"--framework {framework}", "expected NAME==VERSION, e.g. sglang==0.5.23"
        )
    version = m.group(2)
    rules = load_framework(m.group(1).lower())  # unknown framework: fail before any download
    tree = open_source(f"{rules.data['distribution']}=={version}", offline=offline)
    return rules, tree, version


def inspect(req: InspectRequest) -> dict[str, Any]:
    """The full report for one model (and, with a framework, one deployment)."""
    return inspect_with_spec(req)[1]


def inspect_with_spec(req: InspectRequest) -> tuple[RoutingSpec, dict[str, Any]]:
    """The model's RoutingSpec and the report, reading the model and the source once each.

    A published release is opened (its index page and listing fetched: network waits) while
    the model's config is read (transformers builds its class: CPU), in a second thread; the
    model's error, if both fail, is the one reported, as when they ran one after the other."""
    opening: _Beside[tuple[FrameworkRules, SourceTree, str]] | None = None
    if req.framework is not None and req.framework_src is None:
        opening = _Beside(lambda: open_framework(req.framework or "", offline=req.offline))
    with phase("intake: the model's config"):
        spec = load_spec(req.model, offline=req.offline, revision=req.revision)
    gpu = resolve_gpu(req.gpu)
    if req.framework is None and req.framework_src is None:
        from routescope.report import build_report

        return spec, build_report(spec)
    version: str | None
    if opening is not None:
        with phase(f"source: open {req.framework} (the part not done beside the intake)"):
            rules, tree, version = opening.result()
        name = rules.id
    else:
        from routescope.source.open import open_source

        with phase(f"source: open {req.framework_src}"):
            tree = open_source(req.framework_src or "", offline=req.offline)
        name, version = tree.name, tree.version
    rules = load_framework(name)
    ep_given_once(rules, req.ep, req.server_args)
    dep = Deployment(
        gpu=gpu,
        tp=req.tp,
        ep=req.ep,
        quant=req.quant,
        server_args=dict(req.server_args),
        env=dict(req.env),
        packages=dict(req.packages),
    )

    def index() -> Any:
        from routescope.analysis.index import Index  # only a trace needs it

        return Index(tree)

    return spec, traced_report(tree, index, rules, spec, dep, version)
