"""sys.modules: the process's table of imported modules, as imports read it."""

from __future__ import annotations

from collections.abc import Callable

from routescope.analysis.engine.containers import UNTOLD, DictVal, Entries, key_of
from routescope.analysis.engine.values import ModuleVal, Unknown, Value


class ModuleTable(DictVal):
    """sys.modules. Imports go through it, and a module's body, which runs once for the
    process, reads it as every path left it so far: routescope keeps one table for the process
    (PathState.store), so a module registered on one way through is registered on every way
    after it (registering is what code does with it; paths that differ in it are rare). A
    module registered under a name routescope cannot tell (`sys.modules[m.__name__] = m` of a
    module made with an f-string name) is taken as a name of its own: it leaves the modules
    registered by name where they are (replacing one is not what such code does)."""

    __slots__ = ()
    process_wide = True

    def written(self, e: Entries, key: Value, value: Value) -> Entries:
        if key_of(key) is UNTOLD:
            return Entries(e.items, Unknown("a module registered under an unknown name"))
        return e.with_item(key, value)


def aliased(table: ModuleTable, dotted: str, resolved: Callable[[Value], Value]) -> str:
    """The framework module an import of `dotted` loads: where a framework package was
    written into sys.modules under a name the import starts with, that package (its
    submodules found in its own directory, as its `__path__` finds them)."""
    if not dotted:
        return dotted
    items = table.base.items  # (one table for the process: see ModuleTable)
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        hit = items.get(".".join(parts[:n]))
        if hit is None:
            continue
        mod = resolved(hit[1])
        return ".".join([mod.name, *parts[n:]]) if isinstance(mod, ModuleVal) else dotted
    return dotted
