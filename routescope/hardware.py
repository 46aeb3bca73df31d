"""GPU profiles from rules/hardware: one file per family, each with its devices and aliases."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from routescope.errors import RoutescopeError
from routescope.rules import load_rule_file, rule_files


@dataclass(frozen=True, slots=True)
class GpuProfile:
    """One concrete device of a family; the facts the trace engine asks of `torch.cuda`."""

    family: str  # "sm120"
    family_name: str
    capability: tuple[int, int]
    max_shared_memory_per_block: int  # bytes
    device: str  # "rtx-pro-6000"
    device_name: str  # what torch.cuda.get_device_name() returns
    sm_count: int
    memory_bandwidth_tbps: float
    memory_gib: float

    @property
    def bandwidth_bytes_per_s(self) -> float:
        return self.memory_bandwidth_tbps * 1e12

    @property
    def memory_mib(self) -> int:
        """Device memory as nvidia-smi's memory.total reports it (MiB), from the datasheet size."""
        return int(self.memory_gib * 1024)

    @property
    def mem_get_info(self) -> tuple[int, int]:
        """torch.cuda.mem_get_info() when the server starts: (free, total) bytes, all free."""
        total = int(self.memory_gib * 2**30)
        return (total, total)


def _norm(name: str) -> str:
    return name.strip().lower().replace("_", "-").replace(" ", "-")


@cache
def _table() -> tuple[
    dict[str, GpuProfile], tuple[GpuProfile, ...], dict[GpuProfile, tuple[str, ...]]
]:
    by_name: dict[str, GpuProfile] = {}
    every: list[GpuProfile] = []
    spelled: dict[GpuProfile, tuple[str, ...]] = {}  # the aliases, as the rule file writes them
    for path in rule_files("hardware"):
        fam = load_rule_file(path, "hardware")
        cap = (fam["capability"][0], fam["capability"][1])
        for i, dev in enumerate(fam["devices"]):
            prof = GpuProfile(
                family=fam["id"],
                family_name=fam["name"],
                capability=cap,
                max_shared_memory_per_block=fam["max_shared_memory_per_block"],
                device=dev["id"],
                device_name=dev["name"],
                sm_count=dev["sm_count"],
                memory_bandwidth_tbps=dev["memory_bandwidth_tbps"],
                memory_gib=dev["memory_gib"],
            )
            every.append(prof)
            names = [dev["id"], dev["name"], *dev.get("aliases", [])]
            if i == 0:  # the family's names select its first (reference) device
                names += [fam["id"], *fam["aliases"]]
            spelled[prof] = tuple(names[2:])
            for name in names:
                key = _norm(name)
                if key in by_name and by_name[key] != prof:
                    raise RoutescopeError(str(path), f"GPU alias {name!r} is defined twice")
                by_name[key] = prof
    ordered = tuple(sorted(every, key=lambda p: (-p.capability[0], -p.capability[1])))
    return by_name, ordered, spelled


def all_profiles() -> tuple[GpuProfile, ...]:
    return _table()[1]


def aliases_of(profile: GpuProfile) -> list[str]:
    """The names --gpu takes for `profile` besides its device id and full name, as the rule
    file spells them (the family's names select its first device)."""
    return list(_table()[2].get(profile, ()))


def resolve_gpu(name: str) -> GpuProfile:
    """`sm120`, `sm_120`, `12.0`, `rtx-pro-6000`, `h200`, ... -> its profile, or exit-2 error."""
    by_name = _table()[0]
    found = by_name.get(_norm(name))
    if found is None:
        known = ", ".join(
            sorted({p.family for p in all_profiles()} | {p.device for p in all_profiles()})
        )
        raise RoutescopeError(f"--gpu {name}", f"unknown GPU; known: {known}")
    return found
