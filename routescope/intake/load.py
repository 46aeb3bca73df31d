"""Resolve what the user named (hub id, directory, config.json) and read its config.json."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from routescope.errors import RoutescopeError
from routescope.intake.build import build_spec
from routescope.intake.quant import HF_QUANT_CONFIG
from routescope.intake.spec import ModelRef, RoutingSpec

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$")
PROBE_TIMEOUT_S = 3.0


def load_spec(model: str, *, offline: bool = False, revision: str | None = None) -> RoutingSpec:
    """A path to config.json, a directory holding one, or `org/name[@revision]` on the hub;
    with ModelOpt's hf_quant_config.json beside config.json when the checkpoint has one."""
    ref, raw = read_config(model, offline=offline, revision=revision)
    return build_spec(ref, raw, sidecar=read_sidecar(ref, offline=offline))


def read_sidecar(ref: ModelRef, *, offline: bool = False) -> dict[str, Any] | None:
    """hf_quant_config.json beside the config.json read (a directory's, a file's neighbour,
    or the hub repository's at the same revision); None when there is none."""
    if ref.kind == "hub":
        found = _hub_file(ref, HF_QUANT_CONFIG, offline)
        return _read_file(str(found), "file", found)[1] if found is not None else None
    path = Path(ref.config_path).parent / HF_QUANT_CONFIG
    if not path.is_file():
        return None
    return _read_file(str(path), "file", path)[1]


def read_config(
    model: str, *, offline: bool = False, revision: str | None = None
) -> tuple[ModelRef, dict[str, Any]]:
    path = Path(model).expanduser()
    if path.is_dir():
        config = path / "config.json"
        if not config.is_file():
            raise RoutescopeError(model, "directory has no config.json")
        return _read_file(model, "dir", config)
    if path.is_file():
        return _read_file(model, "file", path)
    repo, _, at_rev = model.partition("@")
    if not _HUB_ID.match(repo) or model.endswith((".json", "/")):
        raise RoutescopeError(model, "no such file or directory, and not a hub id (org/name)")
    if why := _not_a_hub_id(repo):
        raise RoutescopeError(model, f"no such file or directory, and not a hub id: {why}")
    config, commit = _hub_config(repo, revision or at_rev or None, offline)
    ref, raw = _read_file(model, "hub", config)
    hub_ref = ModelRef("hub", model, str(config), revision or at_rev or "main", commit, ref.sha256)
    return hub_ref, raw


def _read_file(model: str, kind: str, path: Path) -> tuple[ModelRef, dict[str, Any]]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise RoutescopeError(str(path), f"cannot read: {exc.strerror or exc}") from None
    try:
        raw = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise RoutescopeError(str(path), f"not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        raise RoutescopeError(str(path), f"malformed JSON at {where}: {exc.msg}") from None
    except RecursionError:
        raise RoutescopeError(str(path), "JSON nested too deeply to read") from None
    if not isinstance(raw, dict):
        raise RoutescopeError(str(path), "config.json must hold a JSON object")
    sha = hashlib.sha256(data).hexdigest()
    return ModelRef(kind, model, str(path), sha256=sha), raw


def _not_a_hub_id(repo: str) -> str:
    """Why the hub would refuse `repo` as a repository id ('' when it would not), by the
    hub library's own rule (no `--` or `..`, length, edges), before anything is requested."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id  # type: ignore[attr-defined]  # (lazy export)

    try:
        validate_repo_id(repo)
    except HFValidationError as exc:
        return _first_line(exc).split(": '")[0].rstrip(".")
    return ""


def _endpoint() -> str:
    from huggingface_hub import constants

    return os.environ.get("HF_ENDPOINT", constants.ENDPOINT).rstrip("/")


def _hub_cache() -> str | None:
    """Read at call time, so HF_HUB_CACHE / HF_HOME set after import still count."""
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    if os.environ.get("HF_HOME"):
        return str(Path(os.environ["HF_HOME"]) / "hub")
    return None


def _hub_config(repo: str, revision: str | None, offline: bool) -> tuple[Path, str | None]:
    """config.json through huggingface_hub's cache; the hub is probed once, briefly, first."""
    import huggingface_hub
    from huggingface_hub import constants, errors

    rev = revision or "main"
    local_only = offline or bool(constants.HF_HUB_OFFLINE)
    reason = ""
    if not local_only:
        reason = _probe(repo, rev)
        local_only = bool(reason)
    try:
        found = huggingface_hub.hf_hub_download(
            repo, "config.json", revision=rev, local_files_only=local_only,
            endpoint=_endpoint(), etag_timeout=PROBE_TIMEOUT_S + 2, cache_dir=_hub_cache(),
        )  # fmt: skip
    except (errors.RepositoryNotFoundError, errors.GatedRepoError) as exc:
        raise RoutescopeError(repo, f"hub repository not accessible: {_first_line(exc)}") from None
    except errors.RevisionNotFoundError:
        raise RoutescopeError(f"{repo}@{rev}", "no such revision on the hub") from None
    except errors.EntryNotFoundError as exc:
        if isinstance(exc, errors.LocalEntryNotFoundError):
            why = reason or "offline mode"
            raise RoutescopeError(repo, f"not in the local Hugging Face cache ({why})") from None
        raise RoutescopeError(repo, "the repository has no config.json") from None
    except (errors.HfHubHTTPError, OSError) as exc:
        raise RoutescopeError(repo, f"hub request failed: {_first_line(exc)}") from None
    path = Path(str(found))
    commit = path.parent.name if path.parent.parent.name == "snapshots" else None
    return path, commit


def _hub_file(ref: ModelRef, filename: str, offline: bool) -> Path | None:
    """Another file of the hub repository at the commit config.json came from, through the
    same cache; None when the repository has no such file (or, offline, it is not cached)."""
    import huggingface_hub
    from huggingface_hub import constants, errors

    repo = ref.ref.partition("@")[0]
    rev = ref.commit or ref.revision or "main"
    local_only = offline or bool(constants.HF_HUB_OFFLINE)
    try:
        found = huggingface_hub.hf_hub_download(
            repo, filename, revision=rev, local_files_only=local_only,
            endpoint=_endpoint(), etag_timeout=PROBE_TIMEOUT_S + 2, cache_dir=_hub_cache(),
        )  # fmt: skip
    except errors.EntryNotFoundError:  # none in the repository (or not cached, offline)
        return None
    except (errors.HfHubHTTPError, OSError) as exc:
        why = f"hub request failed: {_first_line(exc)}"
        raise RoutescopeError(f"{repo} {filename}", why) from None
    return Path(str(found))


def _probe(repo: str, rev: str) -> str:
    """'' when the hub answers; else why not (then only the local cache is used)."""
    import httpx

    url = f"{_endpoint()}/{repo}/resolve/{rev}/config.json"
    try:
        httpx.head(url, timeout=PROBE_TIMEOUT_S, follow_redirects=False)
    except httpx.HTTPError as exc:
        return f"hub unreachable at {_endpoint()}: {type(exc).__name__}"
    return ""


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
