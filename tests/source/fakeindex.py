"""Small real wheels built with zipfile, served by an httpx.MockTransport package index."""

from __future__ import annotations

import base64
import hashlib
import io
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

INDEX = "https://index.test/simple"
FILES = "https://files.test/packages"


def record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build_wheel(
    name: str,
    version: str,
    files: dict[str, bytes],
    *,
    requires: tuple[str, ...] = (),
    compression: int = zipfile.ZIP_DEFLATED,
    record_override: dict[str, bytes] | None = None,
    extra_members: dict[str, bytes] | None = None,
) -> bytes:
    """A wheel holding `files`; RECORD hashes `record_override[path]` instead when given."""
    dist = f"{name}-{version}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    meta += "".join(f"Requires-Dist: {r}\n" for r in requires)
    members = dict(files)
    members[f"{dist}/METADATA"] = meta.encode()
    members[f"{dist}/WHEEL"] = b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    rows = []
    for path, data in members.items():
        hashed = (record_override or {}).get(path, data)
        rows.append(f"{path},{record_hash(hashed)},{len(data)}")
    rows.append(f"{dist}/RECORD,,")
    members[f"{dist}/RECORD"] = ("\n".join(rows) + "\n").encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compression) as zf:
        for path, data in {**members, **(extra_members or {})}.items():
            zf.writestr(path, data)
    return buf.getvalue()


@dataclass
class FakeIndex:
    """A package index + file host. Faults: refuse_ranges, truncate, corrupt (n times), down."""

    wheels: dict[str, dict[str, bytes]] = field(default_factory=dict)  # name -> filename -> bytes
    refuse_ranges: bool = False
    truncate: bool = False
    corrupt_times: int = 0
    corrupt_name: bytes = b""
    down: type[Exception] | None = None
    requests: list[str] = field(default_factory=list)
    bytes_served: int = 0
    on_request: Callable[[httpx.Request], None] | None = None

    def add(self, name: str, version: str, wheel: bytes, tag: str = "py3-none-any") -> str:
        filename = f"{name}-{version}-{tag}.whl"
        self.wheels.setdefault(name, {})[filename] = wheel
        return filename

    def client(self) -> httpx.Client:
        return httpx.Client(transport=httpx.MockTransport(self.handle))

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(f"{request.url} {request.headers.get('range', '')}".strip())
        if self.on_request:
            self.on_request(request)
        if self.down is not None:
            raise self.down("simulated outage", request=request)  # type: ignore[call-arg]
        url = str(request.url)
        if url.startswith(INDEX + "/"):
            return self._project(url[len(INDEX) + 1 :].strip("/"))
        if url.startswith(FILES + "/"):
            return self._file(url[len(FILES) + 1 :], request.headers.get("range"))
        return httpx.Response(404)

    def _project(self, name: str) -> httpx.Response:
        if name not in self.wheels:
            return httpx.Response(404)
        files = [
            {
                "filename": fn,
                "url": f"{FILES}/{fn}",
                "size": len(data),
                "hashes": {"sha256": hashlib.sha256(data).hexdigest()},
            }
            for fn, data in self.wheels[name].items()
        ]
        return httpx.Response(
            200,
            json={"meta": {"api-version": "1.1"}, "name": name, "files": files},
            headers={"content-type": "application/vnd.pypi.simple.v1+json"},
        )

    def _file(self, filename: str, range_header: str | None) -> httpx.Response:
        data = next((w[filename] for w in self.wheels.values() if filename in w), None)
        if data is None:
            return httpx.Response(404)
        if self.refuse_ranges or range_header is None:
            if self.corrupt_times and self.corrupt_name and self.corrupt_name in data:
                self.corrupt_times -= 1
                at = data.index(self.corrupt_name) + len(self.corrupt_name) + 40
                data = data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1 :]
            self.bytes_served += len(data)
            return httpx.Response(200, content=data)
        m = re.fullmatch(r"bytes=(\d*)-(\d*)", range_header)
        assert m, range_header
        if m.group(1) == "":
            start, end = max(0, len(data) - int(m.group(2))), len(data) - 1
        else:
            start, end = int(m.group(1)), min(int(m.group(2)), len(data) - 1)
        body = data[start : end + 1]
        if self.corrupt_times and m.group(1) and self.corrupt_name and self.corrupt_name in body:
            self.corrupt_times -= 1
            at = body.index(self.corrupt_name) + len(self.corrupt_name) + 40
            body = body[:at] + bytes([body[at] ^ 0xFF]) + body[at + 1 :]
        if self.truncate:
            body = body[: len(body) // 2]
        self.bytes_served += len(body)
        return httpx.Response(
            206, content=body, headers={"content-range": f"bytes {start}-{end}/{len(data)}"}
        )
