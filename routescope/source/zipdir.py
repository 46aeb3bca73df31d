"""Read a zip's central directory from byte ranges, and one member from its local record.

Only the pieces a remote reader needs: locate the (zip64) end record in the file's tail, parse
the central directory, and inflate one member given the bytes of its local record.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

EOCD_SIG = b"PK\x05\x06"
ZIP64_LOCATOR_SIG = b"PK\x06\x07"
ZIP64_EOCD_SIG = b"PK\x06\x06"
CENTRAL_SIG = b"PK\x01\x02"
LOCAL_SIG = b"PK\x03\x04"
EOCD_MIN = 22
TAIL_MAX = 65_535 + EOCD_MIN  # the end record plus the longest possible comment


class ZipFormatError(ValueError):
    """The bytes are not the zip structure they claim to be (truncated or corrupt)."""


@dataclass(frozen=True, slots=True)
class CentralDirectory:
    """Where the central directory lies (offset, size) and how many entries it holds."""

    offset: int
    size: int
    entries: int


@dataclass(frozen=True, slots=True)
class Member:
    """One central-directory entry; `end` bounds its local record (next record's offset)."""

    name: str
    offset: int
    csize: int
    usize: int
    method: int
    crc: int
    flags: int
    end: int


def find_eocd(tail: bytes, tail_start: int) -> tuple[CentralDirectory | None, int | None]:
    """Locate the end record in `tail` (the file's last bytes, starting at `tail_start`).

    Out: (directory, None) for a plain zip, or (None, zip64_eocd_offset) when the sizes
    overflow and the zip64 end record (at that absolute offset) must be read next.
    """
    at = tail.rfind(EOCD_SIG)
    if at < 0 or len(tail) - at < EOCD_MIN:
        raise ZipFormatError("no end-of-central-directory record (truncated or not a zip)")
    _, _, _, total, cd_size, cd_offset, _ = struct.unpack_from("<HHHHIIH", tail, at + 4)
    loc = at - 20
    # a zip64 locator wins when present (as in zipfile); saturated fields demand one
    if loc >= 0 and tail[loc : loc + 4] == ZIP64_LOCATOR_SIG:
        (z64_offset,) = struct.unpack_from("<Q", tail, loc + 8)
        return None, int(z64_offset)
    if total == 0xFFFF or cd_size == 0xFFFFFFFF or cd_offset == 0xFFFFFFFF:
        raise ZipFormatError("zip64 sizes without a zip64 locator")
    return CentralDirectory(cd_offset, cd_size, total), None


def parse_zip64_eocd(record: bytes) -> CentralDirectory:
    """Parse the zip64 end record (56 bytes from its signature)."""
    if record[:4] != ZIP64_EOCD_SIG or len(record) < 56:
        raise ZipFormatError("bad zip64 end-of-central-directory record")
    total, cd_size, cd_offset = struct.unpack_from("<QQQ", record, 32)
    return CentralDirectory(int(cd_offset), int(cd_size), int(total))


def parse_central_directory(data: bytes, cd: CentralDirectory) -> list[Member]:
    """Parse `data` (exactly the central directory) into members sorted by offset."""
    raw: list[tuple[str, int, int, int, int, int, int]] = []
    pos = 0
    for _ in range(cd.entries):
        if data[pos : pos + 4] != CENTRAL_SIG:
            raise ZipFormatError(f"bad central directory entry at +{pos}")
        (flags, method, crc, csize, usize, nlen, xlen, clen) = struct.unpack_from(
            "<4xHH4xIIIHHH", data, pos + 4
        )
        (offset,) = struct.unpack_from("<I", data, pos + 42)
        name_bytes = data[pos + 46 : pos + 46 + nlen]
        extra = data[pos + 46 + nlen : pos + 46 + nlen + xlen]
        usize, csize, offset = _zip64_fields(extra, usize, csize, offset)
        # bit 11: the name is UTF-8; otherwise the zip spec's default code page
        name = name_bytes.decode("utf-8" if flags & 0x800 else "cp437")
        raw.append((name, offset, csize, usize, method, crc, flags))
        pos += 46 + nlen + xlen + clen
    raw.sort(key=lambda r: r[1])
    members = []
    for i, (name, offset, csize, usize, method, crc, flags) in enumerate(raw):
        end = raw[i + 1][1] if i + 1 < len(raw) else cd.offset
        members.append(Member(name, offset, csize, usize, method, crc, flags, end))
    return members


def _zip64_fields(extra: bytes, usize: int, csize: int, offset: int) -> tuple[int, int, int]:
    pos = 0
    while pos + 4 <= len(extra):
        tag, size = struct.unpack_from("<HH", extra, pos)
        if tag == 0x0001:
            body, at = extra[pos + 4 : pos + 4 + size], 0
            # only the overflowing fields are present, in this order
            if usize == 0xFFFFFFFF:
                (usize,), at = struct.unpack_from("<Q", body, at), at + 8
            if csize == 0xFFFFFFFF:
                (csize,), at = struct.unpack_from("<Q", body, at), at + 8
            if offset == 0xFFFFFFFF:
                (offset,) = struct.unpack_from("<Q", body, at)
            break
        pos += 4 + size
    return usize, csize, offset


def extract_member(member: Member, record: bytes) -> bytes:
    """Inflate `member` from `record`, the bytes from its local header on; check size and CRC."""
    if record[:4] != LOCAL_SIG or len(record) < 30:
        raise ZipFormatError(f"{member.name}: bad local file header")
    if member.flags & 0x1:
        raise ZipFormatError(f"{member.name}: encrypted member")
    nlen, xlen = struct.unpack_from("<HH", record, 26)
    start = 30 + nlen + xlen
    payload = record[start : start + member.csize]
    if len(payload) != member.csize:
        raise ZipFormatError(f"{member.name}: member data truncated")
    if member.method == 0:
        data = payload
    elif member.method == 8:
        try:
            data = zlib.decompressobj(-15).decompress(payload)
        except zlib.error as exc:
            raise ZipFormatError(f"{member.name}: corrupt deflate stream ({exc})") from None
    else:
        raise ZipFormatError(f"{member.name}: unsupported compression method {member.method}")
    if len(data) != member.usize or zlib.crc32(data) != member.crc:
        raise ZipFormatError(f"{member.name}: size or CRC mismatch (corrupt transfer)")
    return data
