"""Official images pulled through Podman from a registry (the Podman job of ``scripts/test.sh``; skipped elsewhere).

A real registry (Debian's ``docker-registry``) on 127.0.0.1 holds the stand-in official image of
``test_official_images``; a second Podman service on the same storage reads a ``registries.conf`` that mirrors
``docker.io`` to it, as a site's mirror does. With the stand-in gone from the engine, ``swe-srl tasks validate`` with
the default image source must find it through the probe (``podman manifest inspect``), pull it as
``docker.io/swebench/…`` (Debian's Podman resolves no short name), build the thin layer and resolve the gold patch.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_official_images import INSTANCE_ID, env_image, official  # noqa: F401 (fixtures)

from swe_srl.infra import podman_build
from swe_srl.infra.engine import docker_client
from swe_srl.infra.official import official_image_name, official_layer_name

pytestmark = pytest.mark.docker
REGISTRIES_CONF = """[[registry]]
prefix = "docker.io"
location = "docker.io"
[[registry.mirror]]
location = "127.0.0.1:{port}"
insecure = true
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait(ready, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < deadline, f"{what} did not start"
        time.sleep(0.2)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as reply:
            return reply.status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def registry(tmp_path_factory) -> Iterator[tuple[int, Path]]:
    """(port, access log) of a registry on 127.0.0.1; skipped off Podman or without ``docker-registry``."""
    if podman_build.local_store() is None:
        pytest.skip("the engine is not a Podman service sharing this user's storage")
    exe = shutil.which("docker-registry")
    if exe is None:
        pytest.skip("docker-registry is not installed (scripts/test_podman.sh installs it)")
    root, port = tmp_path_factory.mktemp("registry"), _free_port()
    config = root / "config.yml"
    config.write_text(f"version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {root / 'data'}\n"
                      f"http:\n  addr: 127.0.0.1:{port}\nlog:\n  level: info\n")  # fmt: skip
    log = root / "registry.log"
    with log.open("w") as out:
        proc = subprocess.Popen([exe, "serve", str(config)], stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait(lambda: _answers(f"http://127.0.0.1:{port}/v2/"), "the registry")
        yield port, log
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def mirrored(registry, tmp_path_factory) -> Iterator[str]:
    """The URL of a second Podman service on the same storage, with ``docker.io`` mirrored to the registry."""
    port, _ = registry
    root = tmp_path_factory.mktemp("mirrored")
    (root / "registries.conf").write_text(REGISTRIES_CONF.format(port=port))
    sock = root / "podman.sock"
    env = podman_build.cli_env() | {"CONTAINERS_REGISTRIES_CONF": str(root / "registries.conf")}
    proc = subprocess.Popen(["podman", "system", "service", "--time=0", f"unix://{sock}"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    try:
        _wait(sock.exists, "the mirrored Podman service")
        yield f"unix://{sock}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _podman(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["podman", *args], env=podman_build.cli_env(), capture_output=True, text=True, check=False
    )


def test_validate_pulls_the_official_image_through_the_mirror(
    registry,  # first: off Podman the test is skipped before the stand-in is built
    mirrored,
    official,  # noqa: F811 (the fixture imported above)
    tmp_path: Path,
) -> None:
    instance, dataset = official
    port, log = registry
    name = official_image_name(INSTANCE_ID)
    image_id = docker_client().images.get(name).id
    pushed = _podman("push", "--tls-verify=false", name, f"127.0.0.1:{port}/{name.split(':')[0]}:latest")
    assert pushed.returncode == 0, pushed.stderr
    layer = official_layer_name(instance)  # the thin layer over it, rebuilt after the pull
    _podman("rmi", "--force", layer)
    assert _podman("untag", image_id.removeprefix("sha256:")).returncode == 0  # its names go; its layers stay
    env = {**os.environ, "SWE_SRL_ENGINE": "podman", "DOCKER_HOST": mirrored}
    check = subprocess.run([sys.executable, "-c", f"from swe_srl.infra.engine import image_exists; print(image_exists({name!r}))"],
                           env=env, capture_output=True, text=True, check=False)  # fmt: skip
    assert check.stdout.strip() == "False", check.stdout + check.stderr
    out = tmp_path / "validation"
    cmd = [sys.executable, "-m", "swe_srl.cli", "tasks", "validate", str(dataset), "-o", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    entry = json.loads((out / "validation.json").read_text())[INSTANCE_ID]
    assert (entry["gold"], entry["empty"], entry["valid"]) == ("resolved", "unresolved", True), entry
    prov = entry["provenance"]
    assert prov["image_source"] == "swebench" and prov["image_source_requested"] == "auto", prov
    assert prov["image_probe"] == {name: "pullable from docker.io"}, prov
    assert prov["official_image_id"] == image_id  # the same image, back by its digest
    assert f"docker.io/{name}" in _podman("images", "--format", "{{.Repository}}:{{.Tag}}").stdout.split()
    assert f"/v2/{name.split(':')[0]}/manifests/latest" in log.read_text()  # asked the mirror, not docker.io
