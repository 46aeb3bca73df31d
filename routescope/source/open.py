"""open_source(spec): a published version or a checkout path; open_installed(dist)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from routescope.errors import RoutescopeError
from routescope.source import cache, registry
from routescope.source.listing import build_listing
from routescope.source.local import CheckoutTree, InstalledTree
from routescope.source.remote import RangeReader
from routescope.source.tree import SourceTree, normalize_name
from routescope.source.wheel import WheelTree

if TYPE_CHECKING:  # (imported where a request is made: 50 ms a command need not spend)
    import httpx

SPEC = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([A-Za-z0-9.+!_-]+)\s*$")


def want_progress(progress: bool | None) -> bool:
    """Progress bars only on an interactive terminal, never in CI logs."""
    if progress is not None:
        return progress
    return sys.stderr.isatty() and not os.environ.get("CI")


def open_source(
    spec: str,
    *,
    offline: bool = False,
    progress: bool | None = None,
    client: httpx.Client | None = None,
) -> SourceTree:
    """Open framework source by spec: "sglang==0.5.23" (published) or a directory path.

    A published version is resolved through the package index (pip's index-url) unless its
    listing is cached, in which case no request is made until a missing file is read.
    Raises RoutescopeError for an unknown package/version, no network, or a corrupt wheel.
    """
    m = SPEC.match(spec)
    if m is None:
        path = Path(spec).expanduser()
        if path.exists() or "/" in spec or spec.startswith("."):
            return CheckoutTree(path.resolve())
        raise RoutescopeError(spec, "expected NAME==VERSION (e.g. sglang==0.5.23) or a directory")
    return open_published(m.group(1), m.group(2), offline=offline, progress=progress, client=client)


def open_installed(dist: str) -> SourceTree:
    """The installed distribution `dist`, read through its RECORD without importing it."""
    return InstalledTree(dist)


def open_published(
    name: str,
    version: str,
    *,
    offline: bool = False,
    progress: bool | None = None,
    client: httpx.Client | None = None,
) -> WheelTree:
    """A published wheel of name==version as a WheelTree (see open_source)."""
    name = normalize_name(name)
    subject = f"{name}=={version}"
    show = want_progress(progress)
    http: list[httpx.Client] = [client] if client is not None else []

    def get_client() -> httpx.Client:
        if not http:
            http.append(registry.make_client())
        return http[0]

    release = cache.read_json(cache.release_path(name, version))
    stale = None  # a record chosen under another rule: chosen again, else it still serves
    if release is not None and _chosen_under_another_rule(release) and not offline:
        stale, release = release, None
    listing = (
        cache.read_json(cache.wheel_listing_path(str(release["wheel_sha256"]))) if release else None
    )
    if release is None or listing is None:
        if offline:
            have = cache.cached_versions(name)
            cached = ", ".join(have) if have else "none"
            raise RoutescopeError(subject, f"not cached, and --offline; cached versions: {cached}")
        try:
            files = registry.project_files(get_client(), name)
        except RoutescopeError:
            kept = stale
            old = (
                cache.read_json(cache.wheel_listing_path(str(kept["wheel_sha256"])))
                if kept
                else None
            )
            if kept is None or old is None:
                raise
            # the index is out of reach: the wheel read before serves (its Python is the same)
            return WheelTree(
                old,
                lambda: _reader(get_client(), kept, subject),
                name=name,
                version=version,
                filename=str(kept["filename"]),
                progress=show,
                wheel_sha256=str(kept["wheel_sha256"]),
            )
        data = cache.read_json(cache.project_path(name)) or {}
        wheel = registry.choose_wheel(files, name, version, registry.published_versions(data))
        if wheel.sha256 is None:
            raise RoutescopeError(subject, f"the index lists no sha256 for {wheel.filename}")
        release = {
            "wheel_sha256": wheel.sha256,
            "filename": wheel.filename,
            "url": wheel.url,
            "choice": registry.CHOICE_RULE,
        }
        reader = _reader(get_client(), release, subject)
        listing = cache.read_json(cache.wheel_listing_path(wheel.sha256))
        if listing is None:
            listing = build_listing(reader, subject)
            cache.write_json(cache.wheel_listing_path(wheel.sha256), listing)
        cache.write_json(cache.release_path(name, version), release)
        return WheelTree(
            listing,
            lambda: reader,
            name=name,
            version=version,
            filename=wheel.filename,
            progress=show,
            wheel_sha256=wheel.sha256,
        )
    factory = None if offline else (lambda: _reader(get_client(), release, subject))
    return WheelTree(
        listing,
        factory,
        name=name,
        version=version,
        filename=str(release["filename"]),
        progress=show,
        wheel_sha256=str(release["wheel_sha256"]),
    )


def _chosen_under_another_rule(release: dict[str, object]) -> bool:
    """A cached record whose wheel another choice rule picked (a universal wheel is the
    choice under every rule so far)."""
    universal = str(release.get("filename", "")).endswith("-none-any.whl")
    return release.get("choice") != registry.CHOICE_RULE and not universal


def _reader(client: httpx.Client, release: dict[str, object], subject: str) -> RangeReader:
    sha = str(release["wheel_sha256"])
    return RangeReader(
        client,
        str(release["url"]),
        subject=subject,
        sha256=sha,
        fallback_path=cache.full_wheel_path(sha),
    )
