"""`routescope check`: the pre-deployment CI gate (policy + lock file -> exit 0, 1 or 2)."""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path

import typer

from routescope.errors import ExitCode, RoutescopeError
from routescope.fsutil import atomic_write_text


def check(
    policy: Path | None = typer.Option(
        None, "--policy", help="routescope.toml or pyproject.toml (default: found in .)."
    ),
    lock: Path | None = typer.Option(
        None, "--lock", help="Lock file (default: routescope.lock next to the policy)."
    ),
    update_lock: bool = typer.Option(
        False, "--update-lock", help="Record the current paths in the lock file."
    ),
    annotations: bool | None = typer.Option(
        None,
        "--annotations/--no-annotations",
        help="GitHub Actions annotations (default: when GITHUB_ACTIONS is set).",
    ),
    junit: Path | None = typer.Option(None, "--junit", help="Write JUnit XML here."),
    sarif: Path | None = typer.Option(None, "--sarif", help="Write SARIF 2.1.0 here."),
    offline: bool = typer.Option(False, "--offline", help="Use only local caches."),
) -> None:
    """Fail (exit 1) when a model's decode routing path changed from the lock or breaks a rule;
    exit 2 when it cannot be decided or the policy is wrong."""  # fmt: skip
    from routescope.check.policy import PolicyError
    from routescope.render import (
        check_annotations,
    )

    annotate = annotations if annotations is not None else bool(os.environ.get("GITHUB_ACTIONS"))
    try:
        code = _run(policy, lock, update_lock, annotate, junit, sarif, offline)
    except PolicyError as exc:
        if annotate:
            sys.stdout.write(check_annotations.render_error(exc.path, exc.line, exc.message))
        raise
    except RoutescopeError:
        raise
    except Exception:  # a crash is "could not decide" (2), never "check failed" (1)
        traceback.print_exc()
        print("routescope: internal error (exit 2); please report it", file=sys.stderr)
        raise typer.Exit(ExitCode.ERROR) from None
    raise typer.Exit(code)


def _run(policy_path: Path | None, lock: Path | None, update_lock: bool, annotate: bool,
         junit: Path | None, sarif: Path | None, offline: bool) -> int:  # fmt: skip
    from routescope.check import load_policy, run_check
    from routescope.check.policy import find_policy
    from routescope.render import (
        check_annotations,
        check_junit,
        check_sarif,
        check_summary,
        check_text,
    )

    policy = load_policy(policy_path or find_policy(Path.cwd()))
    result = run_check(policy, lock, update_lock=update_lock, offline=offline)
    sys.stdout.write(check_text.render(result))
    if annotate:
        sys.stdout.write(check_annotations.render(result))
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as fh:
            fh.write(check_summary.render(result))
    if junit is not None:
        atomic_write_text(junit, check_junit.render(result))
    if sarif is not None:
        atomic_write_text(sarif, check_sarif.render(result))
    return int(result.exit_code)


def register(app: typer.Typer) -> None:
    app.command("check")(check)
