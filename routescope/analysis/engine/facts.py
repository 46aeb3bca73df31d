"""What the engine may assume about the target machine: platform primitives, packages, env,
sink classifiers and function summaries. Built from rules/frameworks/<name>.toml and the
deployment (GPU profile, --env, --set); every value carries its origin."""

from __future__ import annotations

import fnmatch
import posixpath
from dataclasses import dataclass, field

from routescope.analysis.engine.values import Value


@dataclass(frozen=True, slots=True)
class SinkRule:
    id: str
    kind: str
    external: str = ""  # glob on the external callee, "sgl_kernel.*"
    decorator: str = ""  # glob on a framework function's decorator, "torch.compile"
    args: tuple[str, ...] = ()  # the call's keyword arguments reports show (routing_method_type)

    def matches_external(self, name: str) -> bool:
        return bool(self.external) and fnmatch.fnmatchcase(name, self.external)

    def matches_decorator(self, names: tuple[str, ...]) -> bool:
        return bool(self.decorator) and any(fnmatch.fnmatchcase(d, self.decorator) for d in names)


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """What the server's filesystem queries about its model path find: the checkpoint as
    routescope read it. `files` None: its listing is not known (queries under it stay Unknown)."""

    root: str  # the model_path the server is given
    local: bool  # a local directory (False: a hub id, not a path on this machine)
    files: frozenset[str] | None
    origin: str

    def query(self, kind: str, path: str) -> bool | None:
        """os.path.exists/isfile/isdir (`kind`: exists, file, dir) of `path`; None: unknown."""
        root = posixpath.normpath(self.root)
        norm = posixpath.normpath(path)
        if norm == root:
            return self.local and kind != "file"
        if not norm.startswith(root + "/") or self.files is None or not self.local:
            return None
        rel = norm[len(root) + 1 :]
        is_dir = any(f.startswith(rel + "/") for f in self.files)
        if kind == "dir":
            return is_dir
        return rel in self.files or (kind == "exists" and is_dir)

    def listing(self, pattern: str) -> list[str] | None:
        """glob.glob(`pattern`) for a pattern inside the model directory (one level, no `**`):
        the matching paths, sorted; None when the listing is not known."""
        root = posixpath.normpath(self.root)
        folder, _, name = posixpath.normpath(pattern).rpartition("/")
        if folder != root or not self.local or self.files is None or "**" in pattern:
            return None
        return sorted(
            f"{root}/{f}" for f in self.files if "/" not in f and fnmatch.fnmatchcase(f, name)
        )


@dataclass
class Facts:
    attributes: dict[str, Value] = field(default_factory=dict)  # "torch.version.cuda"
    calls: dict[str, Value] = field(default_factory=dict)  # "torch.cuda.get_device_capability"
    env: dict[str, str] = field(default_factory=dict)  # --env K=V
    packages: dict[str, bool] = field(default_factory=dict)  # optional package -> importable
    sinks: list[SinkRule] = field(default_factory=list)
    summaries: dict[str, str] = field(default_factory=dict)  # qualname -> expression text
    opaque: list[str] = field(default_factory=list)  # globs of framework functions not entered
    bindings: dict[str, Value] = field(default_factory=dict)  # names summaries may use
    # True: a variable the user did not give with --env is unset on the target (each read is
    # reported as an assumption); False: its value is unknown and conditions on it fork.
    env_unset_means_absent: bool = False
    checkpoint: Checkpoint | None = None

    def sink_for_external(self, name: str) -> SinkRule | None:
        return next((s for s in self.sinks if s.matches_external(name)), None)

    def sink_for_decorators(self, names: tuple[str, ...]) -> SinkRule | None:
        return next((s for s in self.sinks if s.matches_decorator(names)), None)

    def package_available(self, module: str) -> bool | None:
        top = module.split(".")[0]
        return self.packages.get(module, self.packages.get(top))

    def is_opaque(self, qualname: str) -> bool:
        return any(fnmatch.fnmatchcase(qualname, g) for g in self.opaque)
