"""`routescope simulate`: how much OEA cuts the distinct experts per layer T, and what it costs.

torch is needed (the `sim` extra) and imported only when the command runs.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import typer

from routescope.errors import RoutescopeError
from routescope.fsutil import atomic_write_text
from routescope.hardware import resolve_gpu
from routescope.intake import RoutingSpec, load_spec
from routescope.oea.config import GROUP_POLICIES, GroupPolicy, RouterConfig
from routescope.oea.cost import BYTES_PER_PARAM, MoeSizes
from routescope.oea.sources import parse_source
from routescope.render import TextOrJson
from routescope.render.style import console


def _ints(text: str, flag: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise RoutescopeError(f"{flag} {text}", "expected comma-separated integers") from None
    if not values:
        raise RoutescopeError(flag, "needs at least one value")
    return values


def _sizes(
    spec: RoutingSpec | None, hidden: int | None, inter: int | None, quant: str
) -> MoeSizes | None:
    """Byte-model sizes: --hidden/--moe-intermediate override the spec's hidden_size and
    moe_intermediate_size; shared experts come from the spec only (None -> no times)."""
    shared_total = 0
    if spec is not None:  # (a value that is no count, e.g. a list per kind of expert: unknown)
        hidden = hidden or _count(spec.hidden_size.value)
        inter = inter or _count(spec.moe_intermediate_size.value)
        n_shared = _count(spec.n_shared_experts.value) or 0
        shared_size = _count(spec.shared_expert_intermediate_size.value)
        if shared_size:  # Qwen2-MoE style: the size of each shared expert (usually one)
            shared_total = shared_size * max(1, n_shared)
        elif n_shared and inter:  # DeepSeek style: n_shared experts of the routed size
            shared_total = n_shared * inter
    if not hidden or not inter:
        return None
    return MoeSizes(hidden, inter, shared_total, quant)


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def simulate(
    model: str | None = typer.Argument(None, help="Hub id, model directory or config.json."),
    gpu: str = typer.Option(..., "--gpu", help="GPU id or alias (see `routescope gpus`)."),
    batch: str = typer.Option("1,8,16,32,64", "--batch", help="Batch sizes, comma-separated."),
    k0: str = typer.Option("3,5", "--k0", help="OEA baseline experts per token, comma-separated."),
    source: str = typer.Option("uniform", "--source",
                               help="uniform | zipf:S | correlated:R | a trace file."),
    seed: int = typer.Option(0, "--seed", help="Seed of the synthetic sources."),
    steps: int = typer.Option(200, "--steps", help="Synthetic decode batches per cell."),
    quant: str = typer.Option("bf16", "--quant", help="bf16 | fp8 | nvfp4 (expert weights)."),
    policy: str = typer.Option("free", "--policy", help="free | within-selected-groups."),
    quality: float = typer.Option(0.95, "--quality",
        help="Share of each token's top-k weight mass OEA must keep: the gain at equal "
             "quality uses the smallest swept k0 that keeps it."),
    fmt: TextOrJson = typer.Option(TextOrJson.text, "--format", help="Output format."),
    plot: Path | None = typer.Option(None, "--plot", help="Write T vs batch size as SVG."),
    experts: int | None = typer.Option(None, "--experts", help="No model: number of experts."),
    top_k: int | None = typer.Option(None, "--top-k", help="No model: experts per token."),
    hidden: int | None = typer.Option(None, "--hidden", help="hidden_size (prices bytes)."),
    moe_inter: int | None = typer.Option(None, "--moe-intermediate",
                                         help="moe_intermediate_size (prices bytes)."),
    offline: bool = typer.Option(False, "--offline", help="Use the local HF cache only."),
    revision: str | None = typer.Option(None, "--revision", help="Hub revision."),
) -> None:  # fmt: skip
    """Simulate OEA's effect on distinct experts per layer (T) and MoE-layer decode time."""
    if importlib.util.find_spec("torch") is None:
        raise RoutescopeError("simulate", "needs torch: pip install 'routescope[sim]'")
    if quant not in BYTES_PER_PARAM:
        raise RoutescopeError(f"--quant {quant}", f"unknown; known: {', '.join(BYTES_PER_PARAM)}")
    if policy not in GROUP_POLICIES:
        raise RoutescopeError(f"--policy {policy}", f"one of {', '.join(GROUP_POLICIES)}")
    if plot is not None and plot.suffix.lower() != ".svg":
        raise RoutescopeError(f"--plot {plot}", "only .svg plots are written")
    profile = resolve_gpu(gpu)
    spec = None
    if model is not None:
        spec = load_spec(model, offline=offline, revision=revision)
        cfg = RouterConfig.from_spec(spec)
        name = model
    elif experts is not None and top_k is not None:
        cfg = RouterConfig(num_experts=experts, top_k=top_k)
        name = "(no model)"
    else:
        raise RoutescopeError("MODEL", "give a model, or --experts and --top-k")
    from routescope.oea.run import simulate as run

    report = run(
        cfg, model=name, gpu=profile, source=parse_source(source),
        batches=_ints(batch, "--batch"), k0s=_ints(k0, "--k0"), seed=seed, steps=steps,
        policy=_policy(policy), sizes=_sizes(spec, hidden, moe_inter, quant),
        num_layers=None if spec is None else spec.num_hidden_layers.value,
        quality_target=quality,
    )  # fmt: skip
    if plot is not None:
        from routescope.render.simulate_svg import render

        atomic_write_text(plot, render(report))
    if fmt is TextOrJson.json:
        typer.echo(json.dumps(report.to_json(), indent=2))
        return
    from routescope.render.simulate_text import table

    out = console()
    out.print(table(report, out.width))


def _policy(text: str) -> GroupPolicy:
    return "within-selected-groups" if text == "within-selected-groups" else "free"


def register(app: typer.Typer) -> None:
    app.command("simulate")(simulate)
