"""The image-source probe against a real engine and a registry stand-in on localhost (the engine treats localhost
registries as insecure, so plain HTTP serves): pullable, not in the registry, unreachable (and not asked again)."""

from __future__ import annotations

import hashlib
import json
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from swe_srl.infra.sources import probe_image

pytestmark = pytest.mark.docker

CONFIG = json.dumps(
    {"architecture": "amd64", "os": "linux", "rootfs": {"type": "layers", "diff_ids": []}}
).encode()
CONFIG_DIGEST = "sha256:" + hashlib.sha256(CONFIG).hexdigest()
MANIFEST = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                       "config": {"mediaType": "application/vnd.docker.container.image.v1+json",
                                  "size": len(CONFIG), "digest": CONFIG_DIGEST}, "layers": []}).encode()  # fmt: skip
MANIFEST_DIGEST = "sha256:" + hashlib.sha256(MANIFEST).hexdigest()
UNKNOWN = json.dumps({"errors": [{"code": "MANIFEST_UNKNOWN", "message": "manifest unknown"}]}).encode()


class Registry(BaseHTTPRequestHandler):
    """The registry API v2 for one image, ``there:latest``; any other manifest is unknown."""

    asked: list[str] = []

    def _send(self, code: int, body: bytes, ctype: str, digest: str | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Docker-Distribution-API-Version", "registry/2.0")
        if digest:
            self.send_header("Docker-Content-Digest", digest)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self) -> None:
        self.asked.append(self.path)
        if self.path == "/v2/":
            self._send(200, b"{}", "application/json")
        elif self.path.startswith("/v2/there/manifests/"):
            self._send(200, MANIFEST, "application/vnd.docker.distribution.manifest.v2+json", MANIFEST_DIGEST)
        elif self.path == f"/v2/there/blobs/{CONFIG_DIGEST}":
            self._send(200, CONFIG, "application/octet-stream", CONFIG_DIGEST)
        else:
            self._send(404, UNKNOWN, "application/json")

    do_HEAD = do_GET

    def log_message(self, *args: object) -> None:
        pass


def _serve(port: int = 0) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", port), Registry)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def registry(docker_engine) -> Iterator[int]:
    server = _serve()
    yield server.server_address[1]
    server.shutdown()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_pullable_and_absent_images(registry: int) -> None:
    assert probe_image(f"localhost:{registry}/there:latest") == (True, f"pullable from localhost:{registry}")
    found, what = probe_image(f"localhost:{registry}/absent:latest")
    assert not found and what.startswith(f"not local; not in registry localhost:{registry} (404"), what
    assert "/v2/absent/manifests/latest" in Registry.asked


def test_an_unreachable_registry_is_asked_once(docker_engine) -> None:
    port = _free_port()
    found, what = probe_image(f"localhost:{port}/there:latest")
    assert not found and f"registry localhost:{port} unreachable" in what and "refused" in what, what
    server = _serve(port)  # it answers now, but this process does not ask it again
    try:
        Registry.asked.clear()
        again = probe_image(f"localhost:{port}/there:latest")
        assert not again[0] and "unreachable" in again[1] and Registry.asked == []
    finally:
        server.shutdown()


def test_a_local_image_needs_no_registry(tiny_image: str) -> None:
    assert probe_image(tiny_image) == (True, "present locally")


def test_setup_with_the_official_source_reports_the_registry_and_builds_the_bases(docker_engine) -> None:
    from swe_srl.infra.images import base_image_tag

    proc = subprocess.run([sys.executable, "-m", "swe_srl.cli", "setup", "--source", "swebench", "--python", "3.11"],
                          capture_output=True, text=True, timeout=1800)  # fmt: skip
    text = " ".join(proc.stderr.split())  # rich wraps long lines
    assert proc.returncode == 0, text
    found = r"present locally|pullable from docker\.io|not local; (registry docker\.io unreachable|not in registry docker\.io)"
    assert re.search(f"official images: django__django-11099: ({found})", text), text
    assert "base 3.11 (" in text and base_image_tag("3.11") in text and "setup done" in text
