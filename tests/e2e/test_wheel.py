"""The wheel, installed non-editable: it carries every module and the checkout's tasks/, harness/ and images/ (as
swe_srl/_resources), its CLI lists the bundled suite, and its instance images get the harness tools.

The wheel is built from a copy of the working tree (no build/ or egg-info left in the checkout) and installed with
``--no-deps`` into a fresh venv that reads the running interpreter's site-packages through a ``.pth`` line (appended
after the venv's own, so they cannot shadow the wheel's ``swe_srl``; ``.pth`` files there, such as an editable
install's finder, are not run). Every command runs outside the checkout.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from swe_srl import paths

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import hashlib, json, swe_srl
from swe_srl import paths
from swe_srl.infra import images
tools = {name: hashlib.sha256(data).hexdigest() for name, data in images._harness_files().items()}
print(json.dumps({"package": swe_srl.__file__, "resources": {n: str(paths.resource_dir(n)) for n in paths.RESOURCES},
                  "suite": str(paths.bundled_suite_file()), "tools": tools}))
"""


def _checkout_files(*folders: str) -> dict[str, Path]:
    """The working tree's files under ``folders`` (tracked or untracked, not ignored) by relative path."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z", "--", *folders],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\0")
    return {rel: ROOT / rel for rel in listed if rel and (ROOT / rel).is_file()}


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src, out = tmp_path_factory.mktemp("src"), tmp_path_factory.mktemp("dist")
    for rel, path in _checkout_files().items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, src / rel)
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--no-build-isolation",
        "-q",
        "-w",
        str(out),
        ".",
    ]
    proc = subprocess.run(cmd, cwd=src, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (built,) = out.glob("swe_srl-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the wheel (non-editable); dependencies come from the running interpreter's."""
    root = tmp_path_factory.mktemp("venv")
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(root)], check=True
    )
    python = root / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(purelib, "_swe_srl_test_deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    cmd = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", str(wheel)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=_clean_env())
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return root


def _in_venv(venv: Path, *cmd: str, cwd: Path) -> str:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300, env=_clean_env())
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def _probe(venv: Path, cwd: Path) -> dict:
    return json.loads(_in_venv(venv, str(venv / "bin" / "python"), "-c", PROBE, cwd=cwd))


def _bundled_ids() -> list[str]:
    from swe_srl.benchmark.instances import load_instances

    if not paths.bundled_suite_file().is_file():
        pytest.skip(
            f"the bundled suite is not built ({paths.bundled_suite_file()}): run `swe-srl tasks build`"
        )
    return sorted(i.instance_id for i in load_instances("bundled"))


def test_wheel_carries_every_module_and_the_resource_folders(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        modules = {rel for rel in _checkout_files("swe_srl") if rel.endswith(".py")}
        assert modules and modules <= names, (
            f"not in the wheel (add to pyproject packages): {modules - names}"
        )
        viewer = {rel for rel in _checkout_files("swe_srl/view") if not rel.endswith(".py")}
        assert viewer and viewer <= names, (
            f"not in the wheel (add to pyproject package-data): {viewer - names}"
        )
        resources = _checkout_files(*paths.RESOURCES)
        assert {f"{name}/" for name in paths.RESOURCES} <= {rel.split("/")[0] + "/" for rel in resources}
        for rel, path in resources.items():
            packed = f"swe_srl/_resources/{rel}"
            assert packed in names, f"{rel} is not in the wheel as {packed}"
            assert zf.read(packed) == path.read_bytes(), packed


def test_installed_package_reads_its_own_resources_and_hashes_the_suite_alike(
    venv: Path, tmp_path: Path
) -> None:
    probe = _probe(venv, tmp_path)
    installed = Path(probe["package"]).parent
    assert installed.is_relative_to(venv) and not installed.is_relative_to(ROOT), probe["package"]
    assert probe["resources"] == {n: str(installed / "_resources" / n) for n in paths.RESOURCES}
    assert probe["suite"] == str(paths.bundled_suite_file())  # same recipes bytes → same cache key


def test_installed_cli_lists_the_bundled_suite(venv: Path, tmp_path: Path) -> None:
    expected = _bundled_ids()
    listing = _in_venv(venv, str(venv / "bin" / "swe-srl"), "tasks", "list", "bundled", cwd=tmp_path)
    assert sorted(line.split("\t")[0] for line in listing.splitlines() if line.strip()) == expected


def test_installed_package_gives_images_the_checkout_harness_tools(venv: Path, tmp_path: Path) -> None:
    harness = _checkout_files("harness").values()
    checkout = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in harness}
    assert {"str_replace_editor", "open", "edit", "swe_agent_tools.py"} <= set(checkout)
    assert _probe(venv, tmp_path)["tools"] == checkout


@pytest.mark.docker
def test_instance_image_built_by_the_installed_package_has_the_tools(
    venv: Path, tmp_path: Path, docker_engine
) -> None:
    from swe_srl.benchmark.instances import load_instances
    from swe_srl.infra.recipes import instance_image

    instance_id = _bundled_ids()[0]
    (instance,) = [i for i in load_instances("bundled") if i.instance_id == instance_id]
    expected = instance_image(instance)  # built (or reused) by the checkout
    script = (
        "from swe_srl.benchmark.instances import load_instances; from swe_srl.infra.recipes import instance_image\n"
        f"print(instance_image(next(i for i in load_instances('bundled') if i.instance_id == {instance_id!r})))"
    )
    tag = _in_venv(venv, str(venv / "bin" / "python"), "-c", script, cwd=tmp_path).strip().splitlines()[-1]
    assert tag == expected
    tools = sorted(p.name for p in _checkout_files("harness").values())
    check = f'ls /usr/local/bin && which {" ".join(tools)} && open "$(git ls-files | head -n 1)" 1'
    out = docker_engine.containers.run(
        tag, ["bash", "-c", check], remove=True, network_disabled=True
    ).decode()
    listed = set(out.split())
    assert set(tools) <= listed and {f"/usr/local/bin/{t}" for t in tools} <= listed, out
    assert "[File:" in out, out


def test_a_package_without_harness_tools_refuses_to_build_images(wheel: Path, tmp_path: Path) -> None:
    unpacked = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(unpacked, [n for n in zf.namelist() if not n.startswith("swe_srl/_resources/harness/")])
    script = "from swe_srl.infra import images\nimages._harness_files()"
    env = {**_clean_env(), "PYTHONPATH": str(unpacked)}
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, env=env
    )
    assert proc.returncode != 0 and "ImageBuildError: no harness tools in" in proc.stderr, proc.stderr[-2000:]
    assert (
        str(unpacked / "harness") in proc.stderr
    )  # the checkout fallback, absent next to an installed package
