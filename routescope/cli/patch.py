"""`routescope patch MODEL`: a ready OEA patch for the traced decode path; `--check` re-verifies."""

from __future__ import annotations

from pathlib import Path

import typer

from routescope.errors import ExitCode, RoutescopeError
from routescope.oea.config import GROUP_POLICIES, GroupPolicy


def patch(
    model: str | None = typer.Argument(None, help="Hub id, directory or config.json."),
    framework: str = typer.Option(
        ..., "--framework", help="Published framework, e.g. sglang==0.5.23 or vllm==0.33.0."
    ),
    gpu: str = typer.Option("sm120", "--gpu", help="GPU profile id or alias."),
    tp: int = typer.Option(1, "--tp", min=1, help="Tensor-parallel size."),
    ep: int | None = typer.Option(None, "--ep", min=1, help="Expert-parallel size."),
    quant: str | None = typer.Option(
        None, "--quant", help="as for inspect: a --quantization choice, nvfp4 or bf16."
    ),
    k0: int = typer.Option(5, "--k0", min=1, help="Experts every token keeps (OEA's k0)."),
    group_policy: str = typer.Option(
        "free", "--group-policy", help="free | within-selected-groups (OEA105)."
    ),
    output: Path | None = typer.Option(None, "-o", "--output", help="Write the patch here."),
    check: Path | None = typer.Option(None, "--check", help="Re-verify this patch instead."),
    offline: bool = typer.Option(False, "--offline", help="Use only local caches."),
) -> int:
    """Write an OEA patch (unified diff, wheel paths) made by a LibCST codemod at the point."""
    from routescope import api

    if check is not None:
        return _check(check, framework, offline)
    from routescope.patch.build import PatchRequest, make_patch

    if model is None:
        raise RoutescopeError("MODEL", "required unless --check is given")
    if group_policy not in GROUP_POLICIES:
        raise RoutescopeError("--group-policy", f"expected one of {', '.join(GROUP_POLICIES)}")
    policy: GroupPolicy = "free" if group_policy == "free" else "within-selected-groups"
    req = api.InspectRequest(
        model=model, framework=framework, gpu=gpu, tp=tp, ep=ep, quant=quant, offline=offline
    )
    made = make_patch(PatchRequest(req, k0, policy))
    if output is None:
        typer.echo(made.text, nl=False)
    else:
        output.write_text(made.text)
        typer.echo(f"wrote {output}: {', '.join(made.files)}; enable with {made.env}={k0}")
    return ExitCode.OK


def _check(path: Path, framework: str, offline: bool) -> int:
    from routescope.patch.check import check_patch

    try:
        text = path.read_text()
    except OSError as exc:
        raise RoutescopeError(str(path), exc.strerror or "cannot read") from None
    result = check_patch(text, framework, offline=offline)
    typer.echo(f"{path} against {framework}:")
    typer.echo(f"  applies: {'yes' if result.applies else 'no'} (git apply --check)")
    if not result.applies:
        typer.echo("".join(f"    {ln}\n" for ln in result.apply_output.splitlines()), nl=False)
    typer.echo(f"  insertion point on the decode path: {'yes' if result.on_path else 'no'}")
    typer.echo("  moved or changed:" + ("" if result.moved else " nothing"))
    typer.echo("".join(f"    {ln}\n" for ln in result.moved), nl=False)
    return ExitCode.OK if result.ok else ExitCode.CHECK_FAILED


def register(app: typer.Typer) -> None:
    app.command("patch")(patch)
