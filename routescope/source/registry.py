"""Ask the package index (PEP 691 Simple API, JSON) which files a project has published."""

from __future__ import annotations

import bisect
import difflib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from routescope.errors import RoutescopeError
from routescope.source import cache
from routescope.source.pipconf import index_urls
from routescope.source.tree import normalize_name

if TYPE_CHECKING:  # (imported where a request is made: 50 ms a command need not spend)
    import httpx

SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"


@dataclass(frozen=True, slots=True)
class WheelFile:
    """One published wheel: where it is, how big, its sha256 (from the index)."""

    filename: str
    url: str
    size: int | None
    sha256: str | None
    version: str
    yanked: bool


def make_client(transport: httpx.BaseTransport | None = None) -> httpx.Client:
    """The HTTP client routescope uses (tests pass an httpx.MockTransport)."""
    import httpx

    timeout = httpx.Timeout(10.0, connect=5.0)  # a few seconds: a dead mirror must not hang CI
    return httpx.Client(timeout=timeout, follow_redirects=True, transport=transport, http2=False)


def unreachable(subject: str, name: str, why: str) -> RoutescopeError:
    """The error for a registry we cannot reach, naming what works offline instead."""
    have = cache.cached_versions(name)
    usable = f"cached and usable with --offline: {', '.join(have)}" if have else "nothing cached"
    return RoutescopeError(subject, f"package index unreachable ({why}); {usable}")


def project_files(client: httpx.Client, name: str) -> list[WheelFile]:
    """Every wheel the index lists for `name`; raises RoutescopeError on 404 or no network.

    The primary index (pip's index-url) is asked first; pip's extra-index-url entries are
    fallbacks, asked in order only when the ones before have no such project (404).
    """
    norm = normalize_name(name)
    indexes = index_urls()
    for base in indexes:
        data = _project_answer(client, name, f"{base}/{norm}/", base)
        if data is not None:
            cache.write_json(cache.project_path(norm), data)
            return parse_files(data, norm, f"{base}/{norm}/")
    raise RoutescopeError(name, f"no such package on the index {' nor '.join(indexes)}")


def _project_answer(client: httpx.Client, name: str, url: str, base: str) -> dict[str, Any] | None:
    """The index's PEP 691 answer for one project, or None when it has no such project."""
    import httpx

    try:
        resp = client.get(url, headers={"Accept": SIMPLE_JSON})
    except httpx.TimeoutException:
        raise unreachable(name, name, f"timed out: {url}") from None
    except httpx.TransportError as exc:
        raise unreachable(name, name, f"{type(exc).__name__}: {url}") from None
    if resp.status_code == 404:
        return None
    if resp.status_code != 200:
        raise unreachable(name, name, f"HTTP {resp.status_code} from {url}")
    if not resp.headers.get("content-type", "").startswith(SIMPLE_JSON.split("+")[0]):
        raise RoutescopeError(
            name, f"the index {base} does not answer the JSON Simple API (PEP 691)"
        )
    try:
        data: dict[str, Any] = resp.json()
    except ValueError:
        raise RoutescopeError(name, f"the index sent invalid JSON for {url}") from None
    return data


def parse_files(data: dict[str, Any], norm: str, base_url: str) -> list[WheelFile]:
    """The wheels in a PEP 691 project answer (relative URLs resolved against `base_url`)."""
    import httpx

    out = []
    for entry in data.get("files", []):
        filename = str(entry.get("filename", ""))
        parts = filename[:-4].split("-") if filename.endswith(".whl") else []
        if len(parts) < 5 or normalize_name(parts[0]) != norm:
            continue
        out.append(
            WheelFile(
                filename=filename,
                url=str(httpx.URL(base_url).join(str(entry["url"]))),
                size=entry.get("size"),
                sha256=(entry.get("hashes") or {}).get("sha256"),
                version=parts[1],
                yanked=bool(entry.get("yanked")),
            )
        )
    return out


def published_versions(data: dict[str, Any]) -> list[str]:
    """All versions the project lists (PEP 700 `versions`, else derived from filenames)."""
    versions = data.get("versions")
    if not isinstance(versions, list):
        versions = []
        for entry in data.get("files", []):
            m = re.match(r"[^-]+-([^-]+?)(?:-|\.tar\.gz$|\.zip$)", str(entry.get("filename")))
            if m:
                versions.append(m.group(1))
    return cache.sort_versions(sorted(set(map(str, versions))))


# Which wheel choose_wheel picks, as data: a cached release record made under another rule is
# chosen again (a record from before x86_64 was preferred names an aarch64 wheel).
CHOICE_RULE = "universal, else linux-x86_64, else smallest"


def choose_wheel(
    files: list[WheelFile], name: str, version: str, all_versions: list[str]
) -> WheelFile:
    """The wheel to read for `version`: py3-none-any if published, else the one the GPU
    servers install (Linux x86_64), else the smallest one.

    Python sources are the same across platform wheels, but the requirements a wheel's METADATA
    pins (flashinfer, torch) carry platform markers, and a report names the wheel it read: the
    one a deployment runs is the honest choice.
    """
    candidates = [f for f in files if f.version == version]
    if not candidates:
        near = nearest_versions(version, all_versions)
        hint = f"; nearest published: {', '.join(near)}" if near else ""
        what = "no wheel for" if version in all_versions else "no published version"
        raise RoutescopeError(f"{name}=={version}", f"{what} {name}=={version}{hint}")
    live = [f for f in candidates if not f.yanked] or candidates
    universal = [f for f in live if f.filename.endswith("-none-any.whl")]
    return min(
        universal or live,
        key=lambda f: (not _linux_x86_64(f.filename), f.size or 0, f.filename),
    )


def _linux_x86_64(filename: str) -> bool:
    """A wheel for Linux on x86_64 (`manylinux_2_34_x86_64`, `linux_x86_64`, ...)?"""
    platform = filename.removesuffix(".whl").rsplit("-", 1)[-1]
    return "linux" in platform and platform.endswith("x86_64")


def nearest_versions(version: str, versions: list[str], k: int = 2) -> list[str]:
    """Published versions next to `version` (k either side in PEP 440 order)."""
    from packaging.version import InvalidVersion, Version

    try:
        want = Version(version)
        parsed = [Version(v) for v in versions]
    except InvalidVersion:
        return difflib.get_close_matches(version, versions, n=2 * k)
    ordered = sorted(zip(parsed, versions, strict=True))
    i = bisect.bisect_left([v for v, _ in ordered], want)
    return [text for _, text in ordered[max(0, i - k) : i + k]]
