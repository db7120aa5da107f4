"""Instance images from SWE-bench specs: spec → env recipe (Python + deps) → instance recipe (/testbed @ commit).

The image source (``infra/sources.py``) decides per instance: ``swebench`` takes the official image
(``infra/official.py``); ``registry`` builds the recipes on ``python:X.Y-slim`` with the spec's exact X.Y;
``debootstrap`` on the offline base with the nearest suite's Python at or above it (``specs.base_python``).
"""

from __future__ import annotations

import re
from pathlib import Path

from swe_srl.benchmark.instances import Instance
from swe_srl.benchmark.repos import repo_source, scm_version, submodule_sources
from swe_srl.benchmark.specs import (
    approximate_python,
    base_python,
    env_setup_script,
    install_script,
    instance_era,
    needs_compiler,
    python_candidates,
)
from swe_srl.benchmark.training_specs import offline_spec
from swe_srl.errors import ImageBuildError, TaskError
from swe_srl.infra.engine import image_exists
from swe_srl.infra.executables import image_executables
from swe_srl.infra.images import (
    EnvRecipe,
    InstanceRecipe,
    docker_client,
    ensure_env_image,
    ensure_instance_image,
    env_image_tag,
    instance_image_tag,
)
from swe_srl.infra.official import (
    ensure_official_image,
    official_layer_name,
    official_provenance,
    prebuilt_image,
)
from swe_srl.infra.sources import SourceChoice, choose_source


def spec_python(instance: Instance) -> str:
    """The spec's Python as X.Y (``3.11`` when the spec names none)."""
    return ".".join(str(offline_spec(instance).get("python", "3.11")).split(".")[:2])


def _spec_python_or_none(instance: Instance) -> str | None:
    try:
        return spec_python(instance)
    except TaskError:  # no spec for an offline build: only a prebuilt image runs it (the build says so)
        return None


def image_choice(instance: Instance, source: str | None = None) -> SourceChoice:
    """Where ``instance``'s image comes from (``sources.choose_source``; memoized per process); its prebuilt image is
    ``official.prebuilt_image`` (SWE-bench's official one, or a training set's published one)."""
    return choose_source(prebuilt_image(instance), _spec_python_or_none(instance) or "", source)


def image_python(instance: Instance, source: str) -> str:
    """The Python of ``instance``'s image from ``source``: the spec's exact X.Y, but debootstrap's nearest suite."""
    return base_python(spec_python(instance)) if source == "debootstrap" else spec_python(instance)


def instance_recipes(
    instance: Instance,
    *,
    repos_dir: Path | None = None,
    source: str = "debootstrap",
    python: str | None = None,
) -> tuple[EnvRecipe, InstanceRecipe]:
    """The env and instance recipes of ``instance`` on a ``source`` base (``registry``|``debootstrap``; nothing is
    built); ``python`` overrides :func:`image_python` (the fallback of :func:`instance_image`)."""
    spec = offline_spec(instance)  # a training-set instance without a spec: one clear error
    env_name = re.sub(r"[^a-z0-9_.-]", "-", f"{instance.repo.split('/')[-1]}-{instance.version}".lower())
    repo_dir = (
        Path(instance.extra["repo_dir"])
        if "repo_dir" in instance.extra
        else repo_source(instance.repo, repos_dir)
    )
    python = python or image_python(instance, source)
    setup = env_setup_script(
        spec, instance_era(instance, spec, repo_dir, python), compiler=needs_compiler(instance)
    )
    env = EnvRecipe(name=env_name, python=python, setup_script=setup, source=source)
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
        submodules=submodule_sources(repo_dir, instance.base_commit, repos_dir)
        if "env" not in instance.extra
        else (),
    )
    return env, recipe


def instance_image(instance: Instance, *, repos_dir: Path | None = None, source: str | None = None) -> str:
    """Build, pull (official images) or reuse the image of ``instance`` from its source (:func:`image_choice`);
    returns the image tag."""
    chosen = image_choice(instance, source).source
    if chosen == "swebench":
        return ensure_official_image(instance)
    tries = [(p, *instance_recipes(instance, repos_dir=repos_dir, source=chosen, python=p))
             for p in env_pythons(instance, chosen)]  # fmt: skip
    # an image built before (maybe on the fallback) first; else the bases in order: pins that do not resolve on the
    # base above are tried on the one below
    order = [t for t in tries if image_exists(instance_image_tag(t[2]))][:1] or tries
    for python, env, recipe in order:
        try:
            ensure_env_image(env)
        except ImageBuildError:
            if python == order[-1][0]:
                raise
            continue
        _used_python[instance_image_tag(recipe)] = python
        return ensure_instance_image(recipe)
    raise AssertionError("unreachable")


_used_python: dict[str, str] = {}
"""Instance image tag → the Python its env was built on (for the provenance)."""


def env_pythons(instance: Instance, source: str) -> list[str]:
    """The Pythons an env of ``instance`` is tried on: debootstrap's nearest base at or above the spec's, then the
    nearest below (``specs.python_candidates``); the spec's own elsewhere."""
    return (
        python_candidates(spec_python(instance))
        if source == "debootstrap"
        else [image_python(instance, source)]
    )


def instance_image_names(
    instance: Instance, *, repos_dir: Path | None = None, source: str | None = None
) -> list[str]:
    """Every tag :func:`instance_image` may make for ``instance`` (one per Python it tries), in the order tried;
    nothing is built or pulled."""
    chosen = image_choice(instance, source).source
    if chosen == "swebench":
        return [official_layer_name(instance)]
    return [
        instance_image_tag(instance_recipes(instance, repos_dir=repos_dir, source=chosen, python=python)[1])
        for python in env_pythons(instance, chosen)
    ]


def instance_image_name(
    instance: Instance, *, repos_dir: Path | None = None, source: str | None = None
) -> str:
    """The tag :func:`instance_image` makes for ``instance``, without building or pulling anything."""
    tags = instance_image_names(instance, repos_dir=repos_dir, source=source)
    return next((tag for tag in tags if tag in _used_python or image_exists(tag)), tags[0])


def image_provenance(instance: Instance, tag: str) -> dict[str, object]:
    """Where the image ``tag`` of ``instance`` comes from: tag, image id, repo digests, Python, the source chosen,
    what was asked for and what the probe found (``image_probe``), and for ``swebench`` the official image."""
    attrs = docker_client().images.get(tag).attrs
    choice, spec = image_choice(instance), _spec_python_or_none(instance)
    python = image_python(instance, choice.source) if spec else None  # no spec (a prebuilt image): unknown
    out = {"image": tag, "image_id": attrs.get("Id"), "digests": attrs.get("RepoDigests") or [],
           **choice.provenance(), "python": _used_python.get(tag, python)}  # fmt: skip
    out["spec_python"] = spec
    out["approximate_python"] = bool(spec) and approximate_python(str(spec), str(out["python"]))
    if choice.source == "swebench":
        out |= official_provenance(instance)
    return out


def instance_executables(instance: Instance, *, repos_dir: Path | None = None) -> frozenset[str]:
    """The executables on the ``PATH`` of ``instance``'s image (built if needed), for the syntax layer."""
    return image_executables(instance_image(instance, repos_dir=repos_dir))
