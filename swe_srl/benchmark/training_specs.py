"""Specs of training-set instances (SWE-Gym, SWE-smith) for an offline build, and the one error for an instance
that has neither a spec nor a way around one (what their published images run: ``published.published_spec``).

An offline build (our recipes, ``infra/recipes.py``) needs an environment spec: the record's ``env`` or the
swebench spec table's entry for its repo/version. SWE-Gym's 11 repositories are not in swebench's table (their
specs live in SWE-Gym's fork of swebench, ``SWE-Gym/SWE-Bench-Fork``; ``SWE_SRL_SWEBENCH_SPECS`` may point at a
JSON dump of its ``MAP_REPO_VERSION_TO_SPECS``), and SWE-smith's install recipes are its own ``RepoProfile``s. Such
an instance runs in its published image (``published.published_image``) instead.
"""

from __future__ import annotations

from typing import Any

from swe_srl.benchmark.instances import Instance
from swe_srl.benchmark.published import published_image
from swe_srl.benchmark.specs import instance_spec
from swe_srl.benchmark.training_sets import HINTS, TRAINING_SETS, is_commit
from swe_srl.errors import TaskError

PREBUILT_SOURCE = "swebench"
"""The image source (``--image-source``) of prebuilt images used as they are."""


def offline_spec(instance: Instance) -> dict[str, Any]:
    """:func:`~swe_srl.benchmark.specs.instance_spec`, or one ``TaskError`` for a training-set instance an offline
    build cannot make: it names the instance, the repo, the published image and ``--image-source``."""
    source = instance.extra.get("source")
    if source not in TRAINING_SETS:
        return instance_spec(instance, published=False)
    image = published_image(instance)
    way = f"run its published image {image} (--image-source {PREBUILT_SOURCE})"
    if TRAINING_SETS[source] == "swe-smith" and not is_commit(instance.base_commit):
        raise TaskError(
            f"{instance.instance_id}: the {source} record names no base_commit, and branch "
            f"{instance.base_commit!r} of {instance.repo} was not resolved (no repo_dir holding it): an offline "
            f"build needs the branch's commit id in base_commit; or {way}"
        )
    try:
        return instance_spec(instance, published=False)
    except TaskError:
        version = f" version {instance.version!r}" if instance.version else ""
        table = HINTS[TRAINING_SETS[source]]
        raise TaskError(
            f"{instance.instance_id}: {source} repo {instance.repo}{version} has no environment spec for an offline "
            f"build (not in the spec table; {table}); {way}, or give the record an 'env' spec"
        ) from None
