"""Build a wheel's listing (central directory + RECORD + METADATA) from range reads."""

from __future__ import annotations

import base64
import csv
import io
import re
from typing import Any

from routescope.errors import RoutescopeError
from routescope.source import zipdir
from routescope.source.remote import RangeReader
from routescope.source.zipdir import Member

TAIL_FETCH = 1 << 20  # one request usually covers the end record, central dir, RECORD, METADATA


def check_member_path(subject: str, name: str) -> None:
    """Refuse a member whose path could escape the tree (absolute, `..`, drive, backslash)."""
    parts = name.split("/")
    if (
        not name
        or name.startswith("/")
        or "\\" in name
        or "\x00" in name
        or re.match(r"^[A-Za-z]:", name)
        or ".." in parts
    ):
        raise RoutescopeError(subject, f"refused: zip member path escapes the tree: {name!r}")


def record_hashes(subject: str, text: str) -> dict[str, str]:
    """RECORD rows -> {path: sha256 hex}; rows without a sha256 (RECORD itself) are left out."""
    out = {}
    for row in csv.reader(io.StringIO(text)):
        if len(row) >= 2 and row[1].startswith("sha256="):
            b64 = row[1][len("sha256=") :]
            try:
                digest = base64.urlsafe_b64decode(b64 + "=" * (-len(b64) % 4))
            except ValueError:
                raise RoutescopeError(subject, f"malformed RECORD hash for {row[0]}") from None
            out[row[0]] = digest.hex()
    return out


def build_listing(reader: RangeReader, subject: str) -> dict[str, Any]:
    """Read the central directory, RECORD and METADATA of the wheel behind `reader`.

    Out: a JSON-able dict {members: [[name, offset, csize, usize, method, crc, flags, end]],
    record: {path: sha256}, metadata: str, size: int}. Raises RoutescopeError when corrupt.
    """
    tail, tail_start, size = reader.tail(TAIL_FETCH)

    def span(start: int, end: int) -> bytes:
        if start >= tail_start:
            return tail[start - tail_start : end - tail_start]
        return reader.read(start, end)

    try:
        cd, z64_offset = zipdir.find_eocd(tail, tail_start)
        if cd is None:
            assert z64_offset is not None
            cd = zipdir.parse_zip64_eocd(span(z64_offset, z64_offset + 56))
        if cd.offset + cd.size > size:
            raise zipdir.ZipFormatError("central directory lies past the end of the file")
        members = zipdir.parse_central_directory(span(cd.offset, cd.offset + cd.size), cd)
    except (zipdir.ZipFormatError, IndexError, ValueError) as exc:
        raise RoutescopeError(subject, f"corrupt wheel: {exc}") from None
    for m in members:
        check_member_path(subject, m.name)
    by_name = {m.name: m for m in members}
    dist_info = sorted({n.split("/")[0] for n in by_name if re.match(r"[^/]+\.dist-info/", n)})
    if len(dist_info) != 1:
        raise RoutescopeError(subject, "not a wheel: expected exactly one .dist-info folder")
    meta = {}
    for leaf in ("RECORD", "METADATA"):
        found = by_name.get(f"{dist_info[0]}/{leaf}")
        if found is None:
            raise RoutescopeError(subject, f"not a wheel: {dist_info[0]}/{leaf} missing")
        try:
            meta[leaf] = zipdir.extract_member(found, span(found.offset, found.end)).decode()
        except (zipdir.ZipFormatError, UnicodeDecodeError) as exc:
            raise RoutescopeError(subject, f"corrupt wheel: {exc}") from None
    return {
        "size": size,
        "members": [
            [m.name, m.offset, m.csize, m.usize, m.method, m.crc, m.flags, m.end] for m in members
        ],
        "record": record_hashes(subject, meta["RECORD"]),
        "metadata": meta["METADATA"],
    }


def members_of(listing: dict[str, Any]) -> dict[str, Member]:
    """The listing's members by name."""
    return {row[0]: Member(*row) for row in listing["members"]}
