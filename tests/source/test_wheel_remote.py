"""Published wheels over a mock index: range reads, cache, and every fault the fetch can meet."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import httpx
import pytest

from routescope.errors import RoutescopeError
from routescope.source import cache, open_source, registry
from routescope.source.cache import blob_path
from routescope.source.wheel import WheelTree
from tests.source.conftest import FILES, TOPK
from tests.source.fakeindex import FakeIndex, build_wheel


def test_reads_members_verified_and_metadata(index: FakeIndex) -> None:
    tree = open_source("fw==1.0", client=index.client(), progress=False)
    assert tree.origin == "pypi:fw==1.0 (fw-1.0-py3-none-any.whl)"
    assert tree.files() == sorted(FILES)
    assert tree.read_bytes("fw/layers/topk.py") == TOPK
    assert tree.metadata().requirement("kern") == "kern==0.3.1"


def test_prefetch_coalesces_neighbours_into_one_request(index: FakeIndex) -> None:
    tree = open_source("fw==1.0", client=index.client(), progress=False)
    before = len(index.requests)
    tree.prefetch(FILES)
    assert len(index.requests) - before == 1
    assert all(tree.read_bytes(p) == data for p, data in FILES.items())
    assert len(index.requests) - before == 1  # served from the cache


def test_warm_open_makes_no_request(index: FakeIndex) -> None:
    open_source("fw==1.0", client=index.client(), progress=False).prefetch(FILES)
    index.down = httpx.ConnectError
    tree = open_source("fw==1.0", client=index.client(), progress=False)
    assert tree.read_bytes("fw/utils.py") == FILES["fw/utils.py"]
    offline = open_source("fw==1.0", offline=True)
    assert offline.read_bytes("fw/layers/topk.py") == TOPK


def test_offline_names_cached_versions_when_missing(index: FakeIndex) -> None:
    open_source("fw==1.0", client=index.client(), progress=False)
    with pytest.raises(RoutescopeError, match=r"cached versions: 1\.0"):
        open_source("fw==1.2", offline=True)
    tree = open_source("fw==1.0", offline=True)
    with pytest.raises(RoutescopeError, match="not cached"):
        tree.read_bytes("fw/utils.py")


def test_unknown_package(index: FakeIndex) -> None:
    with pytest.raises(RoutescopeError, match="no such package"):
        open_source("nope==1.0", client=index.client())


def test_unknown_version_suggests_nearest(index: FakeIndex) -> None:
    with pytest.raises(RoutescopeError, match=r"nearest published: 1\.0, 1\.2"):
        open_source("fw==1.1", client=index.client())


@pytest.mark.parametrize(
    "fault", [httpx.ConnectError, httpx.ConnectTimeout], ids=["down", "timeout"]
)
def test_registry_unreachable_says_what_is_cached(index: FakeIndex, fault: type[Exception]) -> None:
    open_source("fw==1.0", client=index.client(), progress=False)
    index.down = fault
    with pytest.raises(RoutescopeError, match=r"unreachable.*usable with --offline: 1\.0"):
        open_source("fw==1.2", client=index.client())


def test_ranges_refused_falls_back_to_whole_wheel(index: FakeIndex) -> None:
    index.refuse_ranges = True
    tree = open_source("fw==1.0", client=index.client(), progress=False)
    assert tree.read_bytes("fw/layers/topk.py") == TOPK
    n = len(index.requests)
    tree.read_bytes("fw/utils.py")
    assert len(index.requests) == n  # the whole wheel is local now


def test_whole_wheel_with_wrong_sha256_is_refused(index: FakeIndex) -> None:
    index.refuse_ranges = True
    wheel = index.wheels["fw"]["fw-1.0-py3-none-any.whl"]

    def tamper(request: httpx.Request) -> None:
        if "files.test" in str(request.url):  # serve different bytes than the index hashed
            index.wheels["fw"]["fw-1.0-py3-none-any.whl"] = wheel[:9] + b"!" + wheel[10:]

    index.on_request = tamper
    with pytest.raises(RoutescopeError, match="does not match the index's sha256"):
        open_source("fw==1.0", client=index.client(), progress=False)


def test_truncated_transfer_is_an_error(index: FakeIndex) -> None:
    index.truncate = True
    with pytest.raises(RoutescopeError, match="truncated"):
        open_source("fw==1.0", client=index.client(), progress=False)


def test_corrupted_member_is_fetched_again(index: FakeIndex) -> None:
    index.corrupt_name, index.corrupt_times = b"fw/layers/topk.py", 1
    tree = open_source("fw==1.0", client=index.client(), progress=False)
    assert tree.read_bytes("fw/layers/topk.py") == TOPK
    assert index.corrupt_times == 0


def test_persistent_corruption_is_an_error(index: FakeIndex) -> None:
    index.corrupt_name, index.corrupt_times = b"fw/layers/topk.py", 99
    tree = open_source("fw==1.0", client=index.client(), progress=False)
    with pytest.raises(RoutescopeError, match="does not match its RECORD sha256"):
        tree.read_bytes("fw/layers/topk.py")
    assert not blob_path(hashlib.sha256(TOPK).hexdigest()).exists()


def test_record_mismatch_is_refused(index: FakeIndex) -> None:
    bad = build_wheel("fw", "2.0", FILES, record_override={"fw/utils.py": b"other"})
    index.add("fw", "2.0", bad)
    tree = open_source("fw==2.0", client=index.client(), progress=False)
    with pytest.raises(RoutescopeError, match="RECORD sha256"):
        tree.read_bytes("fw/utils.py")


def test_corrupt_blob_on_disk_is_fetched_again(index: FakeIndex) -> None:
    tree = open_source("fw==1.0", client=index.client(), progress=False)
    tree.read_bytes("fw/layers/topk.py")
    blob = blob_path(hashlib.sha256(TOPK).hexdigest())
    blob.write_bytes(b"garbage")
    again = open_source("fw==1.0", client=index.client(), progress=False)
    assert again.read_bytes("fw/layers/topk.py") == TOPK


@pytest.mark.parametrize(
    "member", ["../evil.py", "/abs/evil.py", "fw/../../evil.py", "C:/evil.py", "fw\\..\\x.py"]
)
def test_member_path_escaping_the_tree_is_refused(index: FakeIndex, member: str) -> None:
    index.add("fw", "3.0", build_wheel("fw", "3.0", FILES, extra_members={member: b"x=1\n"}))
    with pytest.raises(RoutescopeError, match="escapes the tree"):
        open_source("fw==3.0", client=index.client())


def test_not_a_zip_is_a_clear_error(index: FakeIndex) -> None:
    index.add("fw", "4.0", b"this is not a zip file at all" * 10)
    with pytest.raises(RoutescopeError, match="corrupt wheel"):
        open_source("fw==4.0", client=index.client())


def _big_and_small(index: FakeIndex, version: str, big_tag: str, small_tag: str) -> bytes:
    """Two platform wheels of fw==`version`, one larger; the larger one's bytes."""
    big = build_wheel("fw", version, {**FILES, "fw/big.py": b"#" * 5000})
    index.add("fw", version, big, tag=big_tag)
    index.add("fw", version, build_wheel("fw", version, FILES), tag=small_tag)
    return big


def test_prefers_universal_wheel_else_smallest(index: FakeIndex) -> None:
    big = _big_and_small(
        index, "5.0", "cp312-cp312-manylinux_x86_64", "cp311-cp311-manylinux_x86_64"
    )
    tree = open_source("fw==5.0", client=index.client())
    assert "cp311" in tree.origin
    index.add("fw", "5.0", big, tag="py3-none-any")


def test_prefers_the_servers_platform_wheel(index: FakeIndex) -> None:
    """Without a universal wheel, the Linux x86_64 one (what a GPU server installs, whose
    METADATA's platform-marked pins apply), even when an aarch64 wheel is smaller."""
    _big_and_small(
        index, "5.1", "cp312-cp312-manylinux_2_34_x86_64", "cp312-cp312-manylinux_2_34_aarch64"
    )
    tree = open_source("fw==5.1", client=index.client())
    assert "x86_64" in tree.origin
    assert isinstance(tree, WheelTree)


def test_a_release_record_chosen_under_another_rule_is_chosen_again(index: FakeIndex) -> None:
    """A cache filled before x86_64 was preferred holds a record naming the aarch64 wheel; a
    later run must not keep naming it (CI's persisted cache did, and the committed patches
    disagreed). Offline, the old record still serves: its Python sources are the same."""
    index.add(
        "fw", "5.2", build_wheel("fw", "5.2", FILES), tag="cp312-cp312-manylinux_2_34_aarch64"
    )
    assert "aarch64" in open_source("fw==5.2", client=index.client(), progress=False).origin
    record_path = cache.release_path("fw", "5.2")
    old_record = json.loads(record_path.read_text())
    del old_record["choice"]  # as an older routescope wrote it
    cache.write_json(record_path, old_record)
    index.add("fw", "5.2", build_wheel("fw", "5.2", FILES), tag="cp312-cp312-manylinux_2_34_x86_64")

    stale = open_source("fw==5.2", offline=True, progress=False)
    assert "aarch64" in stale.origin
    index.down = httpx.ConnectError  # the index out of reach: the wheel read before still serves
    assert "aarch64" in open_source("fw==5.2", client=index.client(), progress=False).origin
    index.down = None
    again = open_source("fw==5.2", client=index.client(), progress=False)
    assert "x86_64" in again.origin
    assert again.read_bytes("fw/layers/topk.py") == TOPK
    assert isinstance(again, WheelTree) and isinstance(stale, WheelTree)
    assert again.fingerprint() != stale.fingerprint()  # a cached report names its wheel
    assert json.loads(record_path.read_text())["choice"] == registry.CHOICE_RULE
    assert "x86_64" in open_source("fw==5.2", offline=True, progress=False).origin


def test_two_trees_share_one_cache(index: FakeIndex, tmp_cache: Path) -> None:
    a = open_source("fw==1.0", client=index.client(), progress=False)
    b = open_source("fw==1.0", client=index.client(), progress=False)
    a.prefetch(FILES)
    assert b.read_bytes("fw/utils.py") == FILES["fw/utils.py"]
    assert not list(tmp_cache.rglob("*.tmp"))  # no half-written files left behind


def test_a_forked_copy_reads_over_connections_of_its_own(
    index: FakeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A way-out trial traced in a forked copy (ahead.py) that fetches a member must not use
    the parent's keep-alive connections: the reader makes a client of its own in the copy and
    leaves the parent's open."""
    from routescope.source import remote

    tree = open_source("fw==1.0", client=index.client(), progress=False)
    reader = tree.reader
    assert reader is not None
    parents = reader.client
    made: list[httpx.Client] = []

    def fresh(transport: httpx.BaseTransport | None = None) -> httpx.Client:
        made.append(index.client())
        return made[-1]

    monkeypatch.setattr(registry, "make_client", fresh)
    assert tree.read_bytes("fw/utils.py") == FILES["fw/utils.py"]  # this process: its client
    assert reader.client is parents and not made
    monkeypatch.setattr(reader, "_pid", -1)  # as in a copy: made by another process
    assert tree.read_bytes("fw/layers/topk.py") == TOPK
    assert made and reader.client is made[0]
    assert parents in remote._INHERITED and not parents.is_closed  # kept open, never used
