"""pip's extra-index-url: fallbacks asked in order when the primary index lacks the project."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from routescope.errors import RoutescopeError
from routescope.source import open_source
from routescope.source.pipconf import extra_index_urls, index_urls
from tests.source.conftest import TOPK
from tests.source.fakeindex import INDEX, FakeIndex

MAIN = "https://main.test/simple"
EMPTY = "https://empty.test/simple"


def client_with_empty_indexes(fake: FakeIndex, asked: list[str]) -> httpx.Client:
    """The fake index behind INDEX; MAIN and EMPTY answer 404 for every project."""

    def handle(request: httpx.Request) -> httpx.Response:
        asked.append(str(request.url))
        if str(request.url).startswith((MAIN, EMPTY)):
            return httpx.Response(404)
        return fake.handle(request)

    return httpx.Client(transport=httpx.MockTransport(handle))


def test_extra_indexes_are_fallbacks_in_order(
    index: FakeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIP_INDEX_URL", MAIN)
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", f"{EMPTY}/  {INDEX}")
    asked: list[str] = []
    tree = open_source("fw==1.0", client=client_with_empty_indexes(index, asked), progress=False)
    assert tree.read_bytes("fw/layers/topk.py") == TOPK
    assert asked[:3] == [f"{MAIN}/fw/", f"{EMPTY}/fw/", f"{INDEX}/fw/"]


def test_primary_index_wins_when_it_has_the_project(
    index: FakeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", MAIN)
    asked: list[str] = []
    open_source("fw==1.0", client=client_with_empty_indexes(index, asked), progress=False)
    assert not any(url.startswith(MAIN) for url in asked)


def test_no_index_has_it_names_every_index(
    index: FakeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIP_INDEX_URL", MAIN)
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", EMPTY)
    with pytest.raises(RoutescopeError, match=f"no such package on the index {MAIN} nor {EMPTY}"):
        open_source("fw==1.0", client=client_with_empty_indexes(index, []))


def test_extra_index_url_from_pip_conf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    monkeypatch.setenv("PIP_INDEX_URL", MAIN)
    conf = tmp_path / "pip.conf"
    conf.write_text(
        f"[global]\nextra-index-url =\n    {EMPTY}/\n    file:///opt/pypi/simple\n    {INDEX}\n"
        f"    {MAIN}\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    assert extra_index_urls() == [EMPTY, INDEX, MAIN]
    assert index_urls() == [MAIN, EMPTY, INDEX]  # the primary one is not asked twice
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", INDEX)
    assert extra_index_urls() == [INDEX]
