"""Prebuilt instance images (the ``swebench`` image source), used as they are: SWE-bench's official ones, and the
published images of the training sets laid out like them (SWE-Gym, SWE-smith: ``published.published_image``).

Naming, as swebench's harness names them (``image_builder/image_spec.py``): ``swebench/sweb.eval.x86_64.<id>:latest``
with ``__`` escaped as ``_1776_`` (Docker Hub allows no dunders), lowercased. Layout: the repo at ``/testbed``
(``base_commit`` checked out, remote removed), conda at ``/opt/miniconda3`` with the env ``testbed``; the official eval
script runs ``source /opt/miniconda3/bin/activate && conda activate testbed`` before the tests (``make_eval_script_list``).

The image is pulled when missing (a present one is used as it is) and gets one thin layer
(``swe-srl/official:<id>-<hash>``; the hash covers the official image's id and our harness tools):

* the harness tools in ``/usr/local/bin``, their ``#!`` line set to the first Python >= 3.9 the image has
  (:data:`TOOL_PYTHONS`: conda's base first; ``harness.pin_tool_python``), never the testbed env's (3.5-3.8 for older
  repos), which ``#!/usr/bin/env python3`` would find once ``testbed`` is activated;
* the label :data:`~swe_srl.infra.executables.SESSION_INIT_LABEL` = :data:`ACTIVATE`: every sandbox session on the
  image runs it at top level first (``sandbox/shell_keeper.py``), so grading and episodes run in the testbed env the way
  the official eval script does; the executables listing runs it too.

* a check that ``base_commit`` is in ``/testbed``, after a training set's start-state commands
  (``published.published_setup``: SWE-smith's images hold the clean commit, the task is the bug committed on
  it); a record naming its branch instead of a commit (SWE-smith without a mirror) gets that branch at ``HEAD``, so
  diffs against ``base_commit`` resolve. A SWE-smith record whose ``base_commit`` was resolved from a mirror names a
  commit the image cannot have (the bug commit made here has another id): the layer fails, pointing at the offline
  build from that mirror.

Nothing else changes: no other file under ``/testbed``, no package, no environment variable.
"""

from __future__ import annotations

import shlex
import tempfile
from pathlib import Path

from rich.console import Console

from swe_srl.benchmark.instances import Instance
from swe_srl.benchmark.published import published_image, published_setup
from swe_srl.benchmark.training_sets import is_commit
from swe_srl.errors import ImageBuildError
from swe_srl.infra.engine import docker_client, engine_cli, image_exists
from swe_srl.infra.executables import SESSION_INIT_LABEL, list_executables
from swe_srl.infra.harness import harness_files, pin_tool_python
from swe_srl.infra.image_build import build_context, file_lock, run_logged
from swe_srl.infra.images import recipe_hash, safe_tag
from swe_srl.infra.sources import qualified

NAMESPACE = "swebench"
ARCH = "x86_64"
ACTIVATE = "source /opt/miniconda3/bin/activate && conda activate testbed"
TOOL_PYTHONS = ("/opt/miniconda3/bin/python3", "/opt/miniconda3/bin/python", "/usr/bin/python3", "/usr/local/bin/python3")  # fmt: skip
OFFICIAL_LABEL = "swe-srl.official-image"


def official_image_name(instance_id: str, *, namespace: str = NAMESPACE, arch: str = ARCH, tag: str = "latest") -> str:  # fmt: skip
    """The official image of ``instance_id``: ``swebench/sweb.eval.x86_64.django_1776_django-11099:latest``."""
    return f"{namespace}/sweb.eval.{arch}.{instance_id}:{tag}".replace("__", "_1776_").lower()


def prebuilt_image(instance: Instance) -> str:
    """The prebuilt image of ``instance``: a training set's published image, else SWE-bench's official one."""
    return published_image(instance) or official_image_name(instance.instance_id)


def setup_script(instance: Instance, image: str) -> str:
    """Bash run in the layer: the training set's start-state commands, then ``base_commit`` made resolvable or
    checked to be there."""
    base, where = (
        instance.base_commit,
        f"{instance.instance_id}: base_commit {instance.base_commit!r} is not in {image}",
    )
    fix = "build it offline from the mirror that resolved it (--image-source registry|debootstrap)"
    check = (
        f"git -C /testbed cat-file -e {shlex.quote(base + '^{commit}')} || {{ echo {shlex.quote(f'swe-srl: {where}; {fix}')} >&2; exit 1; }}"
        if is_commit(base)
        else f"git -C /testbed branch -f {shlex.quote(base)} HEAD"
    )
    return "\n".join(["set -euo pipefail", *published_setup(instance), check]) + "\n"


def _dockerfile(official: str) -> str:
    pin = pin_tool_python(sorted(harness_files()), TOOL_PYTHONS, always=True)
    return (
        f"FROM {official}\nCOPY harness/ /usr/local/bin/\nCOPY setup.sh /tmp/swe-srl-setup.sh\n"
        f"RUN chmod 0755 {' '.join(f'/usr/local/bin/{name}' for name in sorted(harness_files()))} && {pin}"
        " && bash /tmp/swe-srl-setup.sh && rm -f /tmp/swe-srl-setup.sh\n"
        f'LABEL "{SESSION_INIT_LABEL}"="{ACTIVATE}" "{OFFICIAL_LABEL}"="{official}"\n'
    )


def layer_tag(instance: Instance, official: str, official_id: str) -> str:
    """``swe-srl/official:<instance id>-<hash>``: the hash covers the image id, the layer, its setup and the tools
    (one SWE-smith image serves many instances, each its own layer)."""
    tools = [f"{name}\0".encode() + data for name, data in harness_files().items()]
    parts = (official_id, _dockerfile(official), setup_script(instance, official), *tools)
    return f"swe-srl/official:{safe_tag(instance.instance_id.lower())}-{recipe_hash(*parts)}"


def official_layer_name(instance: Instance) -> str:
    """The tag :func:`ensure_official_image` makes, without pulling or building (the prebuilt image's name when it
    is not here yet: the layer's tag depends on its id)."""
    official = prebuilt_image(instance)
    if not image_exists(official):
        return official
    return layer_tag(instance, official, docker_client().images.get(official).id)


def official_provenance(instance: Instance) -> dict[str, object]:
    """The prebuilt image under the layer: name, id and registry digests (none for a locally built one)."""
    official = prebuilt_image(instance)
    attrs = docker_client().images.get(official).attrs
    return {"official_image": official, "official_image_id": attrs.get("Id"),
            "official_digests": attrs.get("RepoDigests") or []}  # fmt: skip


def ensure_official_image(instance: Instance, *, console: Console | None = None) -> str:
    """The prebuilt image of ``instance`` (pulled unless present) with our thin layer on top; returns its tag."""
    official = prebuilt_image(instance)
    if not image_exists(official):
        with file_lock(official):
            if not image_exists(official):
                run_logged(
                    [*engine_cli(), "pull", qualified(official)],
                    f"{engine_cli()[0]} pull {official}",
                    console,
                )
    tag = layer_tag(instance, official, docker_client().images.get(official).id)
    if image_exists(tag):
        return tag
    with file_lock(tag), tempfile.TemporaryDirectory(prefix="swe-srl-official-") as tmp:
        if image_exists(tag):
            return tag
        files = {f"harness/{name}": data for name, data in harness_files().items()}
        files["setup.sh"] = setup_script(instance, official).encode()
        try:
            build_context(tag, _dockerfile(official), files, console, context=Path(tmp))
        except ImageBuildError as exc:
            raise ImageBuildError(f"the thin swe-srl layer over {official} failed: {exc}") from None
        list_executables(tag)
    return tag
