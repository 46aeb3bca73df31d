"""Hub ids: a local Hugging Face cache layout offline, a fake hub endpoint, an unreachable one."""

from __future__ import annotations

import hashlib
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from routescope.cli import main
from routescope.errors import RoutescopeError
from routescope.intake import load_spec
from tests.conftest import CONFIGS

GLM5 = (CONFIGS / "zai-org--GLM-5.json").read_bytes()
COMMIT = "0123456789abcdef0123456789abcdef01234567"

# fails fast: a retry with back-off (1+2+4 s) or a connect timeout (10 s) waits longer; a
# run that fails at once takes ~0.1 s, which leaves a loaded CI machine room to be slow
FAST_S = 6


def make_cache(root: Path, repo: str, data: bytes, commit: str = COMMIT) -> None:
    """The layout huggingface_hub writes: refs/main -> snapshots/<commit>/config.json."""
    base = root / ("models--" + repo.replace("/", "--"))
    blob = base / "blobs" / hashlib.sha256(data).hexdigest()
    blob.parent.mkdir(parents=True)
    blob.write_bytes(data)
    (base / "refs").mkdir()
    (base / "refs" / "main").write_text(commit)
    snap = base / "snapshots" / commit
    snap.mkdir(parents=True)
    (snap / "config.json").symlink_to(blob)


def test_offline_from_local_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    make_cache(tmp_path, "zai-org/GLM-5", GLM5)
    spec = load_spec("zai-org/GLM-5", offline=True)
    assert spec.num_experts.value == 256
    assert spec.model.kind == "hub"
    assert spec.model.commit == COMMIT


def test_offline_missing_fails_fast(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    start = time.monotonic()
    assert main(["inspect", "nobody/missing-model", "--offline"]) == 2
    assert time.monotonic() - start < FAST_S
    err = capsys.readouterr().err
    assert "nobody/missing-model" in err and "local Hugging Face cache" in err
    assert len(err.strip().splitlines()) == 1


class _FakeHub(BaseHTTPRequestHandler):
    files: ClassVar[dict[str, bytes]] = {}

    def _send(self, body: bool) -> None:
        data = self.files.get(self.path)
        if data is None:
            self.send_response(404)
            self.send_header("X-Error-Code", "EntryNotFound")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("X-Repo-Commit", COMMIT)
        self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if body:
            self.wfile.write(data)

    def do_HEAD(self) -> None:
        self._send(body=False)

    def do_GET(self) -> None:
        self._send(body=True)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def fake_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    _FakeHub.files = {"/zai-org/GLM-5/resolve/main/config.json": GLM5}
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeHub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:  # a network namespace of its own (unshare -rn) leaves loopback down until `ip link`
        socket.create_connection(server.server_address[:2], timeout=2).close()
    except OSError as exc:
        server.shutdown()
        pytest.skip(f"the fake hub needs loopback ({exc}): ip link set lo up")
    url = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("HF_ENDPOINT", url)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    yield url
    server.shutdown()


def test_download_from_fake_hub_then_offline(fake_hub: str) -> None:
    spec = load_spec("zai-org/GLM-5")
    assert spec.model.commit == COMMIT
    assert spec.has_correction_bias.value is True
    # now cached: works offline too
    assert load_spec("zai-org/GLM-5", offline=True).model.commit == COMMIT


def test_unreachable_hub_fails_fast(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    start = time.monotonic()
    with pytest.raises(RoutescopeError, match="hub unreachable"):
        load_spec("zai-org/GLM-5")
    assert time.monotonic() - start < FAST_S


@pytest.mark.parametrize(
    ("given", "why"),
    [
        ("examples/zai-org--GLM-5", "Cannot have -- or .."),  # a mistyped local path
        ("zai-org/GLM..5", "Cannot have -- or .."),
        ("zai-org/" + "x" * 100, "maximum length is 96"),
    ],
)
def test_a_name_the_hub_would_refuse_is_refused_before_any_request(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    given: str,
    why: str,
) -> None:
    """huggingface_hub's own id rule decides, so a path that does not exist is a clear error
    (exit 2, one line naming it), not the library's traceback; no request is made."""
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # would fail if it were asked
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    assert main(["inspect", given]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert given in err and "not a hub id" in err and why in err
