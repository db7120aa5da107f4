"""Instance images from SWE-bench specs: spec → env recipe (Python + deps) → instance recipe (/testbed @ commit)."""

from __future__ import annotations

import re
from pathlib import Path

from swe_srl.benchmark.instances import Instance
from swe_srl.benchmark.repos import repo_source, scm_version
from swe_srl.benchmark.specs import base_python, env_setup_script, install_script, instance_spec
from swe_srl.infra.executables import image_executables
from swe_srl.infra.images import (
    EnvRecipe,
    InstanceRecipe,
    docker_client,
    ensure_env_image,
    ensure_instance_image,
    env_image_tag,
    instance_image_tag,
    resolve_source,
)


def instance_recipes(
    instance: Instance, *, repos_dir: Path | None = None
) -> tuple[EnvRecipe, InstanceRecipe]:
    """The env and instance recipes of ``instance`` (nothing is built)."""
    spec = instance_spec(instance)
    env_name = re.sub(r"[^a-z0-9_.-]", "-", f"{instance.repo.split('/')[-1]}-{instance.version}".lower())
    env = EnvRecipe(
        name=env_name, python=base_python(spec.get("python", "3.11")), setup_script=env_setup_script(spec)
    )
    repo_dir = (
        Path(instance.extra["repo_dir"])
        if "repo_dir" in instance.extra
        else repo_source(instance.repo, repos_dir)
    )
    script = install_script(instance, spec)
    if "env" not in instance.extra and (version := scm_version(repo_dir, instance.base_commit)):
        # /testbed has no tags: without this setuptools_scm repos install as 0.1.dev1 (pytest's minversion fails)
        dist = re.sub(r"[^A-Z0-9]+", "_", instance.repo.split("/")[-1].upper())
        script = f"export SETUPTOOLS_SCM_PRETEND_VERSION_FOR_{dist}={version}\n{script}"
    recipe = InstanceRecipe(
        name=instance.instance_id.lower(),
        env_image=env_image_tag(env),
        repo_dir=repo_dir,
        base_commit=instance.base_commit,
        install_script=script,
    )
    return env, recipe


def instance_image(instance: Instance, *, repos_dir: Path | None = None) -> str:
    """Build (if needed) the env and instance images of ``instance``; returns the instance image tag."""
    env, recipe = instance_recipes(instance, repos_dir=repos_dir)
    ensure_env_image(env)
    return ensure_instance_image(recipe)


def instance_image_name(instance: Instance, *, repos_dir: Path | None = None) -> str:
    """The tag :func:`instance_image` builds for ``instance``, without building anything."""
    return instance_image_tag(instance_recipes(instance, repos_dir=repos_dir)[1])


def image_provenance(instance: Instance, tag: str) -> dict[str, object]:
    """Where the image ``tag`` of ``instance`` comes from: tag, image id, repo digests, base source, Python."""
    attrs = docker_client().images.get(tag).attrs
    return {"image": tag, "image_id": attrs.get("Id"), "digests": attrs.get("RepoDigests") or [],
            "image_source": resolve_source(), "python": base_python(instance_spec(instance).get("python", "3.11"))}  # fmt: skip


def instance_executables(instance: Instance, *, repos_dir: Path | None = None) -> frozenset[str]:
    """The executables on the ``PATH`` of ``instance``'s image (built if needed), for the syntax layer."""
    return image_executables(instance_image(instance, repos_dir=repos_dir))
