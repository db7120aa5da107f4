"""Specs of training-set instances (SWE-Gym, SWE-smith): what an offline build uses, what their published images
run, and the one error for an instance that has neither a spec nor a way around one.

An offline build (our recipes, ``infra/recipes.py``) needs an environment spec: the record's ``env`` or the
swebench spec table's entry for its repo/version. SWE-Gym's 11 repositories are not in swebench's table (their
specs live in SWE-Gym's fork of swebench, ``SWE-Gym/SWE-Bench-Fork``; ``SWE_SRL_SWEBENCH_SPECS`` may point at a
JSON dump of its ``MAP_REPO_VERSION_TO_SPECS``), and SWE-smith's install recipes are its own ``RepoProfile``s. Such
an instance runs in its published image (``training_sets.published_image``) instead.
"""

from __future__ import annotations

from typing import Any

from swe_srl.benchmark.instances import Instance
from swe_srl.benchmark.specs import instance_spec
from swe_srl.benchmark.training_sets import TRAINING_SETS, is_commit, published_image
from swe_srl.errors import TaskError

SWE_SMITH_TEST_CMD = "pytest --disable-warnings --color=no --tb=no --verbose"
"""SWE-smith's ``PythonProfile.test_cmd``, run over the FAIL_TO_PASS files (a few repos' profiles differ)."""
HINTS = {
    "swe-gym": "SWE-Gym's specs are in SWE-Gym/SWE-Bench-Fork: SWE_SRL_SWEBENCH_SPECS may name a JSON dump of them",
    "swe-smith": "SWE-smith's install recipes are its own repo profiles",
}
PREBUILT_SOURCE = "swebench"
"""The image source (``--image-source``) of prebuilt images used as they are."""


def offline_spec(instance: Instance) -> dict[str, Any]:
    """:func:`~swe_srl.benchmark.specs.instance_spec`, or one ``TaskError`` for a training-set instance an offline
    build cannot make: it names the instance, the repo, the published image and ``--image-source``."""
    source = instance.extra.get("source")
    if source not in TRAINING_SETS:
        return instance_spec(instance)
    image = published_image(instance)
    way = f"run its published image {image} (--image-source {PREBUILT_SOURCE})"
    if TRAINING_SETS[source] == "swe-smith" and not is_commit(instance.base_commit):
        raise TaskError(
            f"{instance.instance_id}: the {source} record names no base_commit, and branch "
            f"{instance.base_commit!r} of {instance.repo} was not resolved (no repo_dir holding it): an offline "
            f"build needs the branch's commit id in base_commit; or {way}"
        )
    try:
        return instance_spec(instance)
    except TaskError:
        version = f" version {instance.version!r}" if instance.version else ""
        table = HINTS[TRAINING_SETS[source]]
        raise TaskError(
            f"{instance.instance_id}: {source} repo {instance.repo}{version} has no environment spec for an offline "
            f"build (not in the spec table; {table}); {way}, or give the record an 'env' spec"
        ) from None


def published_spec(instance: Instance) -> dict[str, Any] | None:
    """The test spec of a SWE-smith instance in its published image: SWE-smith's Python test command over the
    FAIL_TO_PASS files (its harness runs those files only). None for other sources: the spec table's."""
    if TRAINING_SETS.get(str(instance.extra.get("source"))) != "swe-smith":
        return None
    files = sorted({t.split("::", 1)[0] for t in instance.FAIL_TO_PASS})
    return {"test_cmd": SWE_SMITH_TEST_CMD, "test_files": files}
