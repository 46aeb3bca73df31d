"""The check policy: `[tool.routescope]` in pyproject.toml, or the top level of routescope.toml.

Strict by design: an unknown key, a wrong type, an unpinned hub model or an unknown GPU is a
PolicyError naming the file and line, and the check exits 2 before anything is analysed.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from routescope.analysis.engine.facts import KINDS
from routescope.analysis.phases.frameworks import load_framework
from routescope.check.locate import KeyLines
from routescope.errors import RoutescopeError
from routescope.hardware import resolve_gpu

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

_FRAMEWORK = re.compile(r"^([A-Za-z][\w.\-]*)==([\w.\-+]+)$")
_PINNED = re.compile(r"^[\w.\-]+/[\w.\-]+@[0-9a-f]{40}$")
_TOP = {"models", "framework", "gpus", "tp", "ep", "quant", "set", "env", "packages", "rules"}
_RULES = {"forbid_blockers", "forbid_sink_kinds", "require_oea_insertable",
          "require_selected_path"}  # fmt: skip
# the kind of a path whose routing runs inside the MoE kernel with no kernel named; forbidding it
# also forbids the paths whose sink is that kernel (kind fused_moe_kernel): both route in the MoE
BYPASSED = "bypassed"


class PolicyError(RoutescopeError):
    """A policy mistake at `path`:`line`; the CLI prints it (and annotates it in CI), exit 2."""

    def __init__(self, path: Path, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}", message)
        self.path = path
        self.line = line


@dataclass(frozen=True, slots=True)
class Policy:
    path: Path
    models: tuple[str, ...]  # as written: a path (relative to the policy file) or org/name@sha
    framework: str  # name==version
    gpus: tuple[str, ...]
    tp: int
    quant: str | None
    # the deployment as `inspect` takes it: --set server arguments, --env variables, --package
    # (whether an optional package imports on the server), each a (name, value) pair
    server_args: tuple[tuple[str, Any], ...]
    env: tuple[tuple[str, str], ...]
    packages: tuple[tuple[str, bool], ...]
    forbid_sink_kinds: tuple[str, ...]
    require_oea_insertable: bool
    require_selected_path: bool
    lines: dict[str, int]  # "models", "rules.forbid_sink_kinds", "model:<m>", "gpu:<g>" -> line
    # a blocker (a kernel the path launches that the provider builds for other GPUs) fails
    forbid_blockers: bool = True
    ep: int | None = None  # --ep: the expert-parallel size (None: not given)

    def line(self, key: str) -> int:
        return self.lines.get(key, 1)

    def model_ref(self, model: str) -> str:
        """What intake reads for `model`: a path resolved against the policy's folder, or the id."""
        return model if _PINNED.match(model) else str(self.path.parent / model)


def find_policy(start: Path) -> Path:
    """routescope.toml in `start`, else pyproject.toml there when it has [tool.routescope]."""
    own = start / "routescope.toml"
    if own.is_file():
        return own
    pyproject = start / "pyproject.toml"
    if pyproject.is_file() and re.search(
        r"(?m)^\s*\[\s*tool\.routescope[\].]", pyproject.read_text()
    ):
        return pyproject
    raise RoutescopeError(
        str(start), "no routescope.toml and no [tool.routescope] in pyproject.toml"
    )


def load_policy(path: Path) -> Policy:
    """Read and validate the policy at `path`; every mistake is a PolicyError with its line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RoutescopeError(str(path), exc.strerror or "cannot read") from exc
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        raise PolicyError(path, int(m.group(1)) if m else 1, f"not valid TOML: {exc}") from exc
    where = KeyLines(text)
    root: tuple[str, ...] = ("tool", "routescope") if path.name == "pyproject.toml" else ()
    table: Any = doc
    for part in root:
        table = table.get(part) if isinstance(table, dict) else None
    if not isinstance(table, dict):
        raise PolicyError(path, 1, "no [tool.routescope] table")
    return _Reader(path, where, root).read(table)


class _Reader:
    def __init__(self, path: Path, where: KeyLines, root: tuple[str, ...]) -> None:
        self.path, self.where, self.root = path, where, root
        self.lines: dict[str, int] = {}

    def at(self, *key: str) -> int:
        return self.where.line(*self.root, *key) or self.where.line(*self.root) or 1

    def fail(self, key: tuple[str, ...], message: str, line: int | None = None) -> PolicyError:
        return PolicyError(self.path, line or self.at(*key), message)

    def read(self, table: dict[str, Any]) -> Policy:
        prefix = ".".join(self.root)
        for key in sorted(set(table) - _TOP):
            known = ", ".join(sorted(_TOP))
            raise self.fail(
                (key,), f"unknown key {prefix + '.' if prefix else ''}{key!r}; known: {known}"
            )
        rules = table.get("rules", {})
        if not isinstance(rules, dict):
            raise self.fail(("rules",), "rules must be a table")
        for key in sorted(set(rules) - _RULES):
            raise self.fail(
                ("rules", key), f"unknown rule {key!r}; known: {', '.join(sorted(_RULES))}"
            )
        for key in _TOP - {"rules"}:
            self.lines[key] = self.at(key)
        for key in _RULES:
            self.lines[f"rules.{key}"] = self.at("rules", key)
        framework = self._framework(table)
        return Policy(
            path=self.path,
            models=self._models(table),
            framework=framework,
            gpus=self._gpus(table),
            tp=self._size(table, "tp", 1),
            ep=self._size(table, "ep", None),
            quant=self._str(table, ("quant",), None),
            server_args=self._pairs(
                table, "set", (str, int, float, bool), "a string, number or boolean"
            ),
            env=self._pairs(table, "env", (str,), "a string"),
            packages=self._pairs(table, "packages", (bool,), "true or false"),
            forbid_sink_kinds=self._kinds(rules),
            require_oea_insertable=self._bool(rules, "require_oea_insertable", False),
            require_selected_path=self._bool(rules, "require_selected_path", True),
            forbid_blockers=self._bool(rules, "forbid_blockers", True),
            lines=dict(sorted(self.lines.items())),
        )

    def _strings(self, table: dict[str, Any], key: tuple[str, ...]) -> list[str]:
        value = table.get(key[-1])
        if value is None:
            raise self.fail(key[:1], f"missing required key {key[-1]!r}")
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            raise self.fail(key, f"{key[-1]} must be a non-empty list of strings")
        if len(set(value)) != len(value):
            raise self.fail(key, f"{key[-1]} lists an entry twice")
        return list(value)

    def _str(self, table: dict[str, Any], key: tuple[str, ...], default: str | None) -> str | None:
        value = table.get(key[-1], default)
        if value is not None and not isinstance(value, str):
            raise self.fail(key, f"{key[-1]} must be a string")
        return value

    def _pairs(self, table: dict[str, Any], key: str, types: tuple[type, ...],
               what: str) -> tuple[tuple[str, Any], ...]:  # fmt: skip
        """A table of name = value (`[set]`, `[env]`, `[packages]`), each value one of `types`."""
        value = table.get(key, {})
        if not isinstance(value, dict):
            raise self.fail((key,), f"{key} must be a table of name = value")
        for name, v in value.items():
            if not isinstance(v, types):
                raise self.fail((key, name), f"{key}.{name} must be {what}")
        return tuple(sorted(value.items()))

    def _bool(self, rules: dict[str, Any], key: str, default: bool) -> bool:
        value = rules.get(key, default)
        if not isinstance(value, bool):
            raise self.fail(("rules", key), f"rules.{key} must be true or false")
        return value

    def _size(self, table: dict[str, Any], key: str, default: Any) -> Any:
        """A parallel size (`tp`, `ep`): a positive integer."""
        value = table.get(key, default)
        if value is default:
            return value
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise self.fail((key,), f"{key} must be a positive integer")
        return value

    def _framework(self, table: dict[str, Any]) -> str:
        value = self._str(table, ("framework",), None)
        if value is None:
            raise self.fail((), "missing required key 'framework' (e.g. \"sglang==0.5.12\")")
        m = _FRAMEWORK.match(value)
        if m is None:
            raise self.fail(("framework",), f"framework {value!r}: expected NAME==VERSION")
        try:
            load_framework(m.group(1).lower())
        except RoutescopeError as exc:
            raise self.fail(("framework",), exc.message) from exc
        return value

    def _models(self, table: dict[str, Any]) -> tuple[str, ...]:
        models = self._strings(table, ("models",))
        for model in models:
            line = self.where.value_line((*self.root, "models"), model)
            self.lines[f"model:{model}"] = line or self.at("models")
            if _PINNED.match(model):
                continue
            if not (self.path.parent / model).exists():
                if re.match(r"^[\w.\-]+/[\w.\-]+(@.*)?$", model) and not model.endswith(".json"):
                    why = "a hub model must be pinned to a commit: org/name@<40-hex sha>"
                else:
                    why = f"no such file or folder (relative to {self.path.parent})"
                raise self.fail(("models",), f"model {model!r}: {why}", line)
        return tuple(models)

    def _gpus(self, table: dict[str, Any]) -> tuple[str, ...]:
        gpus = self._strings(table, ("gpus",))
        for gpu in gpus:
            line = self.where.value_line((*self.root, "gpus"), gpu)
            self.lines[f"gpu:{gpu}"] = line or self.at("gpus")
            try:
                resolve_gpu(gpu)
            except RoutescopeError as exc:
                raise self.fail(("gpus",), f"gpu {gpu!r}: {exc.message}", line) from exc
        return tuple(gpus)

    def _kinds(self, rules: dict[str, Any]) -> tuple[str, ...]:
        value = rules.get("forbid_sink_kinds", [])
        key = ("rules", "forbid_sink_kinds")
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(key, "rules.forbid_sink_kinds must be a list of strings")
        known = {*KINDS, BYPASSED}  # how a kernel is built, whatever the framework
        for kind in value:
            if kind not in known:
                line = self.where.value_line((*self.root, *key), kind)
                raise self.fail(
                    key, f"unknown sink kind {kind!r}; known: {', '.join(sorted(known))}", line
                )
        return tuple(value)
