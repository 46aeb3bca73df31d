"""What the engine may assume about the target machine: platform primitives, packages, env,
sink classifiers and function summaries. Built from rules/frameworks/<name>.toml and the
deployment (GPU profile, --env, --set); every value carries its origin."""

from __future__ import annotations

import fnmatch
import inspect
import posixpath
import sys
from dataclasses import dataclass, field
from typing import Any

from routescope.analysis.engine.values import Const, Value

# What computes a top-k, by how it is built: a compiled extension's kernel (an op of a C/CUDA
# extension, a CUDA module compiled or loaded at run time), a triton.jit kernel, a function
# torch.compile compiles, plain torch ops, or a MoE kernel that routes inside its own launch.
KINDS = ("cuda_kernel", "triton", "torch_compile", "torch", "fused_moe_kernel")


@dataclass(frozen=True, slots=True)
class SinkRule:
    id: str
    kind: str  # one of KINDS
    external: str = ""  # glob on the external callee, "sgl_kernel.*"
    decorator: str = ""  # glob on a framework function's decorator, "torch.compile"
    args: tuple[str, ...] = ()  # the call's keyword arguments reports show (routing_method_type)
    provider: str = ""  # the library the kernel comes from: sgl_kernel, flashinfer, jit, torch...

    def matches_external(self, name: str) -> bool:
        return bool(self.external) and fnmatch.fnmatchcase(name, self.external)

    def matches_decorator(self, names: tuple[str, ...]) -> bool:
        return bool(self.decorator) and any(fnmatch.fnmatchcase(d, self.decorator) for d in names)


# kernels recognised by how they are built, whatever the framework
TRITON_JIT = SinkRule("triton.jit", "triton", decorator="triton.jit", provider="triton")
TORCH_COMPILE = SinkRule("torch.compile", "torch_compile", decorator="torch.compile",
                         provider="torch")  # fmt: skip
TORCH_TOPK = SinkRule("torch.topk", "torch", external="torch.topk", provider="torch")
# Python's own run-time values of library names: a static checker's switch is off when the
# code runs, so `if TYPE_CHECKING:` blocks never run
RUNTIME: dict[str, Value] = {
    "typing.TYPE_CHECKING": Const(False, ("typing.TYPE_CHECKING is False at run time",)),
    "typing_extensions.TYPE_CHECKING": Const(False, ("typing.TYPE_CHECKING is False at run time",)),
    # inspect.Parameter's kinds: Python's own enum values, compared and collected by code that
    # reads a signature (library/inspection.py)
    **{
        f"inspect.Parameter.{k.name}": Const(k, ("inspect.Parameter",))
        for k in inspect._ParameterKind
    },
}

# an op of a compiled torch extension (torch.ops.<namespace>.<op>)
TORCH_OP = SinkRule("torch.ops", "cuda_kernel", external="torch.ops.*")
# a function of a CUDA module compiled or loaded at run time (tvm-ffi, torch cpp_extension)
JIT_MODULE = SinkRule("jit-module", "cuda_kernel", provider="jit")


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """What the server's filesystem queries about its model path find: the checkpoint as
    routescope read it. `files` None: its listing is not known (queries under it stay Unknown)."""

    root: str  # the model_path the server is given
    local: bool  # a local directory (False: a hub id, not a path on this machine)
    files: frozenset[str] | None
    origin: str
    # JSON files of the checkpoint routescope read (relpath -> what they hold): what the
    # server's own open() and json.load() of them find
    documents: dict[str, Any] = field(default_factory=dict, compare=False)

    def document(self, path: str) -> tuple[str, Any] | None:
        """(relpath, contents) of a JSON file of the checkpoint routescope read, at `path`."""
        root = posixpath.normpath(self.root)
        norm = posixpath.normpath(path)
        if not self.local or not norm.startswith(root + "/"):
            return None
        rel = norm[len(root) + 1 :]
        return (rel, self.documents[rel]) if rel in self.documents else None

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


# the kinds of assumption a report lists (the report schema's enum is this tuple: a test)
ASSUMPTION_KINDS = ("platform", "package", "summary", "environment", "startup", "module field")


@dataclass(frozen=True, slots=True)
class Assumption:
    """A fact an answer rests on that the code cannot show: a platform primitive's value, a
    package's availability, a rule's summary of a function, an environment variable's state,
    a set-up step the rules stage, a module field unread code made (taken as no module)."""

    kind: str  # one of ASSUMPTION_KINDS
    name: str
    value: str
    source: str  # where it comes from: the rule file (and its table), or the user's flag


@dataclass
class Facts:
    attributes: dict[str, Value] = field(default_factory=dict)  # "torch.version.cuda"
    calls: dict[str, Value] = field(default_factory=dict)  # "torch.cuda.get_device_capability"
    env: dict[str, str] = field(default_factory=dict)  # --env K=V
    packages: dict[str, bool] = field(default_factory=dict)  # optional package -> importable
    sinks: list[SinkRule] = field(default_factory=list)
    # qualname -> expression text, or alternatives (a string constant the function's code must
    # hold, or "", and the text): the first that fits the release (Engine.defined_alternative)
    summaries: dict[str, str | tuple[tuple[str, str], ...]] = field(default_factory=dict)
    opaque: list[str] = field(default_factory=list)  # globs of framework functions not entered
    # globs of classes whose objects are built whole: the opaque code their constructor calls
    # is entered (a base's constructor sets what their own code reads)
    built_whole: list[str] = field(default_factory=list)
    bindings: dict[str, Value] = field(default_factory=dict)  # names summaries may use
    # True: a variable the user did not give with --env is unset on the target (each read is
    # reported as an assumption); False: its value is unknown and conditions on it fork.
    env_unset_means_absent: bool = False
    checkpoint: Checkpoint | None = None
    source: str = "the rules"  # the rule file these facts come from
    given_packages: frozenset[str] = frozenset()  # the user's --package entries
    # optional packages the release requires with no condition (installed with it): import
    # name -> its Requires-Dist line (see frameworks.required_packages)
    required: dict[str, str] = field(default_factory=dict)
    # ops the framework registers with a Python implementation (torch.library.Library.impl):
    # "torch.ops.<namespace>.<name>" -> the function that runs when the op is called
    ops: dict[str, Value] = field(default_factory=dict)
    # the fake implementations the framework registers for its compiled ops
    # (torch.library.register_fake): "torch.ops.<namespace>.<name>" -> the function, which
    # gives outputs shaped and laid out as the kernel's (see externals: a kernel's results)
    fakes: dict[str, Value] = field(default_factory=dict)
    # an optional package's version on the target: import name -> (version, where it is said)
    versions: dict[str, tuple[str, str]] = field(default_factory=dict)
    # a distribution's version (importlib.metadata.version): the traced release's, and those it
    # pins; (version, what says so)
    distributions: dict[str, tuple[str, str]] = field(default_factory=dict)
    # the facts read so far, by (kind, name): what the answers rest on
    used: dict[tuple[str, str], Assumption] = field(default_factory=dict)
    # id of a glob list -> (the globs as they were, name -> matched): see _matches
    _glob_memo: dict[int, tuple[list[str], dict[str, bool]]] = field(
        default_factory=dict, repr=False, compare=False
    )

    def assume(self, kind: str, name: str, value: str, source: str) -> None:
        assert kind in ASSUMPTION_KINDS, kind  # (a report names only the kinds it declares)
        self.used.setdefault((kind, name), Assumption(kind, name, value, source))

    def call_fact(self, name: str) -> Value | None:
        """The value a platform primitive returns on the target (rules' platform.calls)."""
        got = self.calls.get(name)
        if got is not None:
            self.assume("platform", f"{name}()", _shown(got), f"{self.source} platform.calls")
        return got

    def attribute_fact(self, name: str) -> Value | None:
        """A platform attribute's value on the target (rules' platform.attributes), or an
        importable package's `__version__` (the version the framework pins), or what Python
        itself holds at run time (typing.TYPE_CHECKING is False)."""
        if name in RUNTIME:
            return RUNTIME[name]
        if name in self.ops:  # the framework's own op: its Python implementation runs
            return self.ops[name]
        top, _, attr = name.partition(".")
        if attr == "__version__" and top in self.versions and self.packages.get(top) is not False:
            version, said = self.versions[top]
            self.assume("package", f"{top}.__version__", version, said)
            return Const(version, (said,))
        got = self.attributes.get(name)
        if got is not None:
            self.assume("platform", name, _shown(got), f"{self.source} platform.attributes")
        return got

    def summary_for(self, qualname: str) -> str | tuple[tuple[str, str], ...] | None:
        """The rules' summary of a framework function (what it returns, as an expression, or
        its alternatives: the engine takes the first that fits the release, see
        Engine.defined_alternative); recorded as an assumption once one is chosen."""
        return self.summaries.get(qualname)

    def summary_used(self, qualname: str, text: str) -> None:
        self.assume("summary", qualname, f"returns {text}", f"{self.source} summaries")

    def env_unset(self, var: str) -> None:
        self.assume("environment", var, "unset", f"{self.source} env_unset = absent")

    def sink_for_external(self, name: str) -> SinkRule | None:
        """The rules' sink for a library's function, else a compiled torch extension's op
        (torch.ops.*) or torch.topk."""
        found = next((s for s in self.sinks if s.matches_external(name)), None)
        if found is not None:
            return found
        if name.startswith("torch.ops.") and name.count(".") >= 3:
            return TORCH_OP
        return TORCH_TOPK if name == "torch.topk" else None

    def sink_for_decorators(self, names: tuple[str, ...]) -> SinkRule | None:
        """The rules' sink for a decorated function, else how Python builds a kernel from a
        function: triton.jit, torch.compile."""
        found = next((s for s in self.sinks if s.matches_decorator(names)), None)
        if found is not None:
            return found
        if any(d == "triton.jit" or d.endswith("triton.jit") for d in names):
            return TRITON_JIT
        if any(d in ("torch.compile", "torch._dynamo.optimize") for d in names):
            return TORCH_COMPILE
        return None

    def package_available(self, module: str) -> bool | None:
        """Whether `module` imports on the target: the user's --package, else the rules'
        packages table; None when neither says."""
        top = module.split(".")[0]
        key = module if module in self.packages else top
        if key == top and top in self.required and top not in self.given_packages:
            self.assume("package", top, "importable", f"{self.required[top]}, its METADATA")
            return True
        got = self.packages.get(key)
        if got is not None:
            source = "--package" if key in self.given_packages else f"{self.source} packages"
            self.assume("package", key, "importable" if got else "not installed", source)
        return got

    def package_assumed(self, module: str) -> None:
        """A package neither the source nor the facts know, taken as importable. Python's own
        modules are part of the interpreter, not of the deployment: not an assumption."""
        top = module.split(".")[0]
        if top in sys.stdlib_module_names:
            return
        self.assume("package", top, "importable (assumed: not in the rules)", "routescope")

    def is_opaque(self, qualname: str) -> bool:
        return self._matches(self.opaque, qualname)

    def is_built_whole(self, class_qualname: str) -> bool:
        return self._matches(self.built_whole, class_qualname)

    def _matches(self, globs: list[str], name: str) -> bool:
        """Whether a glob matches `name`, remembered for these globs (every call a trace makes
        asks about its function: 79k questions, a few hundred names, in one trace)."""
        memo = self._glob_memo.get(id(globs))
        if memo is None or memo[0] != globs:  # (globs changed since: asked again)
            memo = self._glob_memo[id(globs)] = (list(globs), {})
        known = memo[1].get(name)
        if known is None:
            known = memo[1][name] = any(fnmatch.fnmatchcase(name, g) for g in globs)
        return known


def _shown(v: Value) -> str:
    from routescope.analysis.engine.values import describe

    return describe(v)
