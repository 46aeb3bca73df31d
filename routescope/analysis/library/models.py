"""Every library model module, imported for what importing it registers."""

from routescope.analysis.library import (
    configs,
    copying,
    devices,
    environ,
    files,
    functools,
    inspection,
    iterators,
    kernels,
    numbers,
    packages,
    paths,
    python,
    regex,
    torch,
    typing,
)

__all__ = [
    "configs",
    "copying",
    "devices",
    "environ",
    "files",
    "functools",
    "inspection",
    "iterators",
    "kernels",
    "numbers",
    "packages",
    "paths",
    "python",
    "regex",
    "torch",
    "typing",
]
