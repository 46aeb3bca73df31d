"""Published versions of a framework, and which of them the cache can serve offline."""

from __future__ import annotations

from typing import TYPE_CHECKING

from routescope.errors import RoutescopeError
from routescope.source import cache, registry

if TYPE_CHECKING:  # (imported where a request is made: 50 ms a command need not spend)
    import httpx


def list_versions(
    name: str, *, offline: bool = False, client: httpx.Client | None = None
) -> list[tuple[str, bool]]:
    """[(version, cached)] in PEP 440 order. Offline, the index's last cached answer is used."""
    if offline:
        data = cache.read_json(cache.project_path(name))
        if data is None:
            have = cache.cached_versions(name)
            if not have:
                raise RoutescopeError(name, "--offline and nothing cached for this package")
            return [(v, True) for v in have]
    else:
        http = client or registry.make_client()
        registry.project_files(http, name)  # raises for unknown package / no network
        data = cache.read_json(cache.project_path(name)) or {}
    cached = set(cache.cached_versions(name))
    return [(v, v in cached) for v in registry.published_versions(data)]
