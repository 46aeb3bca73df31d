"""`routescope gpus`: the GPU profiles routescope knows, with their aliases."""

from __future__ import annotations

import json
from dataclasses import asdict

import typer

from routescope.hardware import aliases_of, all_profiles
from routescope.render import TextOrJson
from routescope.render.style import console


def gpus(
    fmt: TextOrJson = typer.Option(TextOrJson.text, "--format", help="Output format."),
) -> None:
    """List the known GPU profiles (use any id or alias with --gpu)."""
    profiles = all_profiles()
    if fmt is TextOrJson.json:
        typer.echo(json.dumps([{**asdict(p), "aliases": aliases_of(p)} for p in profiles],
                              indent=2))  # fmt: skip
        return
    from rich.table import Table

    table = Table(title="GPU profiles (--gpu takes the device, the family or an alias)",
                  title_justify="left")  # fmt: skip
    table.add_column("family", no_wrap=True)
    table.add_column("device", no_wrap=True)
    table.add_column("cap.", no_wrap=True)
    table.add_column("SMs", justify="right", no_wrap=True)
    table.add_column("TB/s", justify="right", no_wrap=True)
    table.add_column("aliases", ratio=1)
    for p in profiles:
        table.add_row(
            p.family,
            p.device,
            f"{p.capability[0]}.{p.capability[1]}",
            str(p.sm_count),
            f"{p.memory_bandwidth_tbps:g}",
            ", ".join(aliases_of(p)),
        )
    console().print(table)


def register(app: typer.Typer) -> None:
    app.command("gpus")(gpus)
