"""``swe-srl images export|import`` on the engine in use: an image goes to a tar file and comes back under the name
swe-srl asks for (on Podman, the same names as ``localhost/…`` or ``docker.io/…``); bad input is one line."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from swe_srl.cli.app import app
from swe_srl.errors import ConfigError, ImageNotFound
from swe_srl.infra.engine import image_exists
from swe_srl.infra.image_transfer import export_images, import_images

pytestmark = pytest.mark.docker


def test_export_then_import_round_trip(tiny_image: str, docker_engine, tmp_path: Path) -> None:
    archive = tmp_path / "tiny.tar"
    result = CliRunner().invoke(app, ["images", "export", tiny_image, "-o", str(archive)])
    assert result.exit_code == 0, result.output
    assert f"wrote 1 image(s) to {archive}" in result.output
    with tarfile.open(archive) as tar:  # the Docker archive format both engines load
        assert "manifest.json" in tar.getnames()
    assert not list(tmp_path.glob(".tiny.tar.tmp*"))  # written whole, no temp file left
    assert tiny_image in import_images(archive)
    assert image_exists(tiny_image)


def test_bad_input_names_the_fix(docker_engine, tmp_path: Path) -> None:
    with pytest.raises(ImageNotFound, match=r"swe-srl/instance:does-not-exist not in the engine"):
        export_images(["swe-srl/instance:does-not-exist"], tmp_path / "x.tar")
    assert not (tmp_path / "x.tar").exists()
    with pytest.raises(ConfigError, match=r"is not a file; write one with `swe-srl images export`"):
        import_images(tmp_path / "missing.tar")
