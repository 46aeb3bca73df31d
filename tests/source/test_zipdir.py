"""The central-directory reader on real zipfile output, zip64 included."""

from __future__ import annotations

import io
import zipfile

import pytest

from routescope.source import zipdir


def _zip(files: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compression) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _read_all(blob: bytes) -> dict[str, bytes]:
    cd, z64 = zipdir.find_eocd(blob, 0)
    if cd is None:
        assert z64 is not None
        cd = zipdir.parse_zip64_eocd(blob[z64 : z64 + 56])
    members = zipdir.parse_central_directory(blob[cd.offset : cd.offset + cd.size], cd)
    return {m.name: zipdir.extract_member(m, blob[m.offset : m.end]) for m in members}


FILES = {"a/x.py": b"x = 1\n" * 50, "a/é.py": "y = 'ü'\n".encode(), "b/z.txt": b""}


@pytest.mark.parametrize(
    "method", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED], ids=["stored", "deflated"]
)
def test_reads_every_member(method: int) -> None:
    assert _read_all(_zip(FILES, method)) == FILES


def test_zip64_end_record(monkeypatch: pytest.MonkeyPatch) -> None:
    # zipfile writes zip64 end records once the entry count passes this limit
    monkeypatch.setattr(zipfile, "ZIP_FILECOUNT_LIMIT", 1)
    blob = _zip(FILES)
    assert zipdir.ZIP64_EOCD_SIG in blob
    assert zipdir.find_eocd(blob, 0)[0] is None
    assert _read_all(blob) == FILES


def test_truncated_file_has_no_end_record() -> None:
    with pytest.raises(zipdir.ZipFormatError, match="end-of-central-directory"):
        zipdir.find_eocd(_zip(FILES)[:-30], 0)


def test_crc_mismatch_detected() -> None:
    blob = _zip({"a.py": b"hello world\n"}, zipfile.ZIP_STORED)
    cd, _ = zipdir.find_eocd(blob, 0)
    assert cd is not None
    (m,) = zipdir.parse_central_directory(blob[cd.offset : cd.offset + cd.size], cd)
    record = bytearray(blob[m.offset : m.end])
    record[-3] ^= 0xFF
    with pytest.raises(zipdir.ZipFormatError, match="CRC"):
        zipdir.extract_member(m, bytes(record))
