"""Image layers base → env → instance, each tagged by a content hash of its recipe.

* **base** (``swe-srl/base:py3.11-bookworm-<hash>``): Debian minbase + python3 + git + procps, a venv at
  ``/opt/venv`` first on PATH, the host CA bundle trusted (``PIP_CERT``). Built offline with ``debootstrap`` +
  ``docker import`` (``images/base/bootstrap.sh``; Python 3.9, 3.11, 3.13) or, with a registry, from
  ``python:X.Y-slim`` (any X.Y); which one: ``sources.resolve_source``. Official SWE-bench images: ``official.py``.
* **env** (``swe-srl/env:<name>-<hash>``): a repo's dependencies for one version (``EnvRecipe.setup_script``).
* **instance** (``swe-srl/instance:<name>-<hash>``): ``/testbed`` holding only ``base_commit`` (no later commits,
  no remotes, one branch) + the ``harness/`` tools on PATH.

A changed recipe changes the tag (rebuild); an unchanged one is reused. Builds of one tag are serialized across
processes with a file lock. Nothing secret is baked in: no build args, the CA bundle is public data.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from swe_srl import paths
from swe_srl.errors import ConfigError, ImageBuildError
from swe_srl.infra.engine import docker_client, engine_cli, image_exists
from swe_srl.infra.executables import list_executables
from swe_srl.infra.harness import harness_files, pin_tool_python
from swe_srl.infra.image_build import (
    build_context,
    checkout_base_commit,
    file_lock,
    init_submodule,
    run_logged,
)
from swe_srl.infra.orphan_guard import unmount_under
from swe_srl.infra.sources import resolve_source

SUITES = {"3.9": "bullseye", "3.11": "bookworm", "3.13": "trixie"}
CA_BUNDLES = ("/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem")
IMAGE_CA_PATH = "/etc/ssl/certs/ca-certificates.crt"
BASE_ENV = {
    "PATH": "/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "VIRTUAL_ENV": "/opt/venv",
    "PIP_CERT": IMAGE_CA_PATH,
    "REQUESTS_CA_BUNDLE": IMAGE_CA_PATH,
    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    "PIP_NO_INPUT": "1",
    "DEBIAN_FRONTEND": "noninteractive",
    "LANG": "C.UTF-8",
}

__all__ = [
    "EnvRecipe",
    "InstanceRecipe",
    "base_image_tag",
    "ensure_base_image",
    "ensure_env_image",
    "ensure_instance_image",
    "image_exists",
]


def recipe_hash(*parts: str | bytes) -> str:
    """A short content hash (12 hex digits) of the recipe parts."""
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()[:12]


def safe_tag(name: str) -> str:
    """``name`` made valid as (part of) a Docker tag."""
    return re.sub(r"[^A-Za-z0-9_.-]", "-", name).strip(".-")[:80] or "unnamed"


def host_ca_bundle() -> Path:
    """The host's CA bundle (copied into base images so TLS through a local CA works)."""
    for candidate in CA_BUNDLES:
        if Path(candidate).is_file():
            return Path(candidate)
    raise ImageBuildError(
        f"no CA bundle found on the host (looked at {', '.join(CA_BUNDLES)}); install ca-certificates"
    )


def _recipe_dir() -> Path:
    return paths.resource_dir("images") / "base"


def _packages() -> list[str]:
    text = (_recipe_dir() / "packages.txt").read_text()
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def base_image_tag(python: str = "3.11", *, source: str = "auto") -> str:
    """The tag :func:`ensure_base_image` builds for ``python`` (content hash of the recipe and CA bundle)."""
    source = resolve_source(source, python)
    if source == "debootstrap" and python not in SUITES:
        raise ConfigError(f"python={python!r}: debootstrap base images exist for {', '.join(SUITES)}")
    if not re.fullmatch(r"3\.\d+", python):
        raise ConfigError(f"python={python!r}: base images need a Python X.Y such as 3.11")
    recipe = _recipe_dir()
    parts = [
        source,
        python,
        SUITES.get(python, "slim"),
        repr(sorted(BASE_ENV.items())),
        (recipe / "packages.txt").read_bytes(),
    ]
    parts += [(recipe / "bootstrap.sh").read_bytes(), host_ca_bundle().read_bytes()]
    flavor = SUITES[python] if source == "debootstrap" else "slim"
    return f"swe-srl/base:py{python}-{flavor}-{recipe_hash(*parts)}"


def ensure_base_image(python: str = "3.11", *, source: str = "auto", console: Console | None = None) -> str:
    """Build the base image for ``python`` unless its tag exists; return the tag.

    ``source``: ``debootstrap`` (offline, Debian mirror only; needs root; 3.9, 3.11, 3.13), ``registry``
    (``python:X.Y-slim``, any X.Y) or ``auto`` (``sources.resolve_source``). Raises ``ImageBuildError`` with the build log's tail on failure.
    """
    tag = base_image_tag(python, source=source)
    if image_exists(tag):
        return tag
    with file_lock(tag):
        if image_exists(tag):
            return tag
        if resolve_source(source, python) == "debootstrap":
            _bootstrap_base(python, tag, console)
        else:
            _registry_base(python, tag, console)
    return tag


def _changes() -> list[str]:
    changes = [f"ENV {key}={value}" for key, value in BASE_ENV.items()]
    return [*changes, "WORKDIR /", 'CMD ["bash"]', "LABEL swe-srl.owner=swe-srl"]


def _bootstrap_base(python: str, tag: str, console: Console | None) -> None:
    suite = SUITES[python]
    scratch = paths.cache_dir("rootfs")
    with tempfile.TemporaryDirectory(prefix=f"{suite}-", dir=scratch) as tmp:
        rootfs = Path(tmp) / "rootfs"
        cmd = [
            "bash",
            str(_recipe_dir() / "bootstrap.sh"),
            suite,
            str(rootfs),
            str(paths.cache_dir("debootstrap") / suite),
            str(host_ca_bundle()),
            str(_recipe_dir() / "packages.txt"),
        ]
        if mirror := os.environ.get("SWE_SRL_DEBIAN_MIRROR"):
            cmd.append(mirror)
        try:
            run_logged(cmd, f"debootstrap {suite} for {tag}", console, cleanup=Path(tmp))
            changes = [arg for change in _changes() for arg in ("--change", change)]
            tar = subprocess.Popen(
                ["tar", "-C", str(rootfs), "--numeric-owner", "-c", "."], stdout=subprocess.PIPE
            )
            try:
                run_logged(
                    [*engine_cli(), "import", *changes, "-", tag],
                    f"{engine_cli()[0]} import {tag}",
                    console,
                    stdin=tar.stdout,
                )
            finally:
                tar.stdout.close()  # type: ignore[union-attr]
                tar.wait()
        finally:
            unmount_under(rootfs)


def _registry_base(python: str, tag: str, console: Console | None) -> None:
    apt = " ".join(p for p in _packages() if not p.startswith("python3"))
    if tuple(int(part) for part in python.split(".")) < (3, 9):
        apt += " python3"  # the distribution's Python (>= 3.9 from bullseye on) runs the harness tools
    env = "\n".join(f'ENV {key}="{value}"' for key, value in BASE_ENV.items())
    dockerfile = f"""FROM python:{python}-slim
COPY host-ca.crt /etc/ssl/certs/swe-srl-host-ca.crt
RUN apt-get update && apt-get install -y --no-install-recommends {apt} \\
 && rm -rf /var/lib/apt/lists/* \\
 && cat /etc/ssl/certs/swe-srl-host-ca.crt >> {IMAGE_CA_PATH} \\
 && python -m venv /opt/venv \\
 && git config --system user.email swe-srl@localhost && git config --system user.name swe-srl \\
 && git config --system --add safe.directory '*' && git config --system init.defaultBranch main
{env}
WORKDIR /
CMD ["bash"]
"""
    build_context(tag, dockerfile, {"host-ca.crt": host_ca_bundle().read_bytes()}, console)


@dataclass(frozen=True)
class EnvRecipe:
    """A repo's dependencies for one version: ``setup_script`` runs as root in the base image (network on)."""

    name: str
    python: str
    setup_script: str
    source: str = "auto"
    """The base image's source (``resolve_source``): ``registry`` takes any X.Y, ``debootstrap`` 3.9/3.11/3.13."""


def env_image_tag(recipe: EnvRecipe) -> str:
    """``swe-srl/env:{name}-{hash}`` where the hash covers the base image tag and the setup script."""
    base = base_image_tag(recipe.python, source=recipe.source)
    return f"swe-srl/env:{safe_tag(recipe.name)}-{recipe_hash(base, recipe.setup_script)}"


def ensure_env_image(recipe: EnvRecipe, *, console: Console | None = None) -> str:
    """Build the env image of ``recipe`` (and its base image) unless it exists; return the tag."""
    tag = env_image_tag(recipe)
    if image_exists(tag):
        return tag
    base = ensure_base_image(recipe.python, source=recipe.source, console=console)
    with file_lock(tag):
        if not image_exists(tag):
            dockerfile = (
                f"FROM {base}\nCOPY setup.sh /tmp/swe-srl-setup.sh\n"
                "RUN bash -euxo pipefail /tmp/swe-srl-setup.sh && rm -f /tmp/swe-srl-setup.sh\n"
                "WORKDIR /testbed\n"
            )
            build_context(tag, dockerfile, {"setup.sh": recipe.setup_script.encode()}, console)
    return tag


@dataclass(frozen=True)
class InstanceRecipe:
    """A repo at ``base_commit`` in ``/testbed`` (no later history) on top of ``env_image``."""

    name: str
    env_image: str
    repo_dir: Path
    base_commit: str
    install_script: str = ""
    """Bash run as root in ``/testbed`` after the checkout (e.g. ``pip install -e .``)."""
    submodules: tuple[tuple[str, str, str], ...] = ()
    """``(path, commit, local clone)`` of each git submodule checked out in ``/testbed`` (``repos.submodule_sources``)."""


_harness_files = harness_files  # its name before infra/harness.py (tests/e2e/test_wheel.py)


def instance_image_tag(recipe: InstanceRecipe) -> str:
    """``swe-srl/instance:{name}-{hash}``; the hash covers env image, commit, install script and harness tools."""
    harness = [f"{name}\0".encode() + data for name, data in harness_files().items()]
    subs = [
        f"submodule\0{path}\0{commit}".encode() for path, commit, _ in recipe.submodules
    ]  # none: tags as before
    digest = recipe_hash(recipe.env_image, recipe.base_commit, recipe.install_script, *harness, *subs)
    return f"swe-srl/instance:{safe_tag(recipe.name)}-{digest}"


def ensure_instance_image(recipe: InstanceRecipe, *, console: Console | None = None) -> str:
    """Build the instance image of ``recipe`` unless it exists; return the tag.

    ``/testbed`` is a fresh git repo holding only ``base_commit`` (fetched with depth 1 from ``repo_dir``) on the
    single branch ``main``, with no remotes; ``harness/`` executables go to ``/usr/local/bin``.
    """
    tag = instance_image_tag(recipe)
    if image_exists(tag):
        return tag
    if not image_exists(recipe.env_image):
        raise ImageBuildError(
            f"env image {recipe.env_image!r} of instance {recipe.name!r} does not exist; build it first"
        )
    with file_lock(tag), tempfile.TemporaryDirectory(prefix="swe-srl-instance-") as tmp:
        if image_exists(tag):
            return tag
        ctx = Path(tmp)
        checkout_base_commit(Path(recipe.repo_dir), recipe.base_commit, ctx / "testbed")
        for (
            path,
            commit,
            source,
        ) in recipe.submodules:  # each a one-commit repo at its recorded commit, initialized
            checkout_base_commit(Path(source), commit, ctx / "testbed" / path)
            init_submodule(ctx / "testbed", path)
        files = {f"harness/{name}": data for name, data in harness_files().items()}
        files["install.sh"] = recipe.install_script.encode()
        dockerfile = (
            f"FROM {recipe.env_image}\nCOPY testbed /testbed\nCOPY harness/ /usr/local/bin/\n"
            "COPY install.sh /tmp/swe-srl-install.sh\nWORKDIR /testbed\n"
            f"RUN chmod 0755 /usr/local/bin/* 2>/dev/null; {pin_tool_python(sorted(harness_files()))}"
            " && bash -euxo pipefail /tmp/swe-srl-install.sh && rm -f /tmp/swe-srl-install.sh\n"
        )
        (ctx / "harness").mkdir()
        build_context(tag, dockerfile, files, console, context=ctx)
        list_executables(tag)  # stored with the image, for the syntax layer (infra/executables.py)
    return tag


__all__ += ["docker_client", "instance_image_tag", "env_image_tag", "recipe_hash", "resolve_source"]
