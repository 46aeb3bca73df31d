"""`routescope gpus`: the GPU profiles routescope knows, with their aliases."""

from __future__ import annotations

import json
from dataclasses import asdict

import typer

from routescope.hardware import all_profiles
from routescope.render import TextOrJson
from routescope.render.style import console


def gpus(
    fmt: TextOrJson = typer.Option(TextOrJson.text, "--format", help="Output format."),
) -> None:
    """List the known GPU profiles (use any id or alias with --gpu)."""
    profiles = all_profiles()
    if fmt is TextOrJson.json:
        typer.echo(json.dumps([asdict(p) for p in profiles], indent=2))
        return
    from rich.table import Table

    table = Table(title="GPU profiles", title_justify="left")
    for col in ("family", "device", "name", "capability", "SMs", "smem/block", "bandwidth"):
        table.add_column(col)
    for p in profiles:
        table.add_row(
            p.family,
            p.device,
            p.device_name,
            f"{p.capability[0]}.{p.capability[1]}",
            str(p.sm_count),
            f"{p.max_shared_memory_per_block:,} B",
            f"{p.memory_bandwidth_tbps} TB/s",
        )
    console().print(table)


def register(app: typer.Typer) -> None:
    app.command("gpus")(gpus)
