"""The `routescope` command: a thin typer layer over routescope.api; no analysis here."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

import typer

from routescope import __version__, timing
from routescope.analysis.engine.budget import short_lived_process
from routescope.errors import ExitCode, RoutescopeError
from routescope.intake.transformers_view import keep_torch_out

app = typer.Typer(
    name="routescope",
    help="Which MoE top-k routing path runs during decode, and where OEA fits.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"routescope {__version__}")
        raise typer.Exit(ExitCode.OK)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """routescope: static analysis of MoE routing in serving frameworks."""


def _register() -> None:
    # One module per command; each exposes `register(app)`.
    from routescope.cli import (
        cache,
        check,
        gpus,
        inspect,
        patch,
        report,
        simulate,
        source,
        timeline,
    )

    for module in (inspect, report, check, timeline, patch, simulate, gpus, source, cache):
        module.register(app)


_register()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the process exit code (0 ok, 1 check failed, 2 error). With
    ROUTESCOPE_TIMINGS=1, the phases' wall times follow on stderr."""
    try:
        return _run(list(sys.argv[1:] if argv is None else argv))
    finally:
        if timing.enabled():
            print(timing.table(), file=sys.stderr)


def _run(args: list[str]) -> int:
    try:
        result = app(args=args, prog_name="routescope", standalone_mode=False)
    except RoutescopeError as exc:
        print(f"routescope: error: {exc.subject}: {exc.message}", file=sys.stderr)
        return ExitCode.ERROR
    except typer.Abort:
        print("routescope: aborted", file=sys.stderr)
        return ExitCode.ERROR
    except typer.Exit as exc:
        return int(exc.exit_code)
    except typer.TyperException as exc:  # usage errors: one line, like every other error
        fmt = getattr(exc, "format_message", None)
        message = fmt() if callable(fmt) else str(exc)
        ctx = getattr(exc, "ctx", None)
        where = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
        print(f"routescope: error: {' '.join(str(message).split())}{where}", file=sys.stderr)
        return ExitCode.ERROR
    except OSError as exc:  # the machine refused (a full disk, a read-only folder): one line
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"routescope: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return ExitCode.ERROR
    except KeyboardInterrupt:
        return ExitCode.ERROR
    return int(result) if isinstance(result, int) else ExitCode.OK


def entry() -> NoReturn:
    """The program (the console script, `python -m routescope`): a command is a few traces and
    then exit, so collect garbage rarely, and leave without tearing down the heap a trace
    built: freeing its millions of objects one by one took 2-4 s after a 5 s trace; config
    classes are built with torch kept out (intake/transformers_view.py). Output is
    flushed first; nothing the commands leave open needs closing (files are written
    atomically, worker pools are joined where they are used)."""
    short_lived_process()
    keep_torch_out()
    code = main()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing left to say
            stream.flush()
    os._exit(code)
