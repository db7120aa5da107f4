"""What a training-set instance runs in: its published image, the commands that put the image at the task's start
state, and the test spec SWE-smith's images run (``training_sets.py`` turns the records into SWE-bench records)."""

from __future__ import annotations

from typing import Any

from swe_srl.benchmark.instances import Instance
from swe_srl.benchmark.training_sets import SWE_SMITH_TEST_CMD, TRAINING_SETS


def published_image(instance: Instance) -> str | None:
    """The published image a training-set instance runs in, used as is (``/testbed``, conda env ``testbed``);
    None for instances of other sources (SWE-bench's own images are named by the image sources)."""
    name = instance.extra.get("image_name")
    return str(name) if name and instance.extra.get("source") in TRAINING_SETS else None


def published_setup(instance: Instance) -> list[str]:
    """Commands that put ``/testbed`` of :func:`published_image` at the task's start state.

    A SWE-smith image holds the clean commit; the task is that commit plus the bug patch, committed (what its
    branch holds, without fetching the branch). SWE-Gym images hold the task's base commit: nothing to do.
    """
    if TRAINING_SETS.get(str(instance.extra.get("source"))) != "swe-smith":
        return []
    bug = str(instance.extra["bug_patch"])
    tag = "SWE_SRL_BUG_EOF"
    while tag in bug:
        tag += "_"
    ident = "-c user.name=swesmith -c user.email=swesmith@swesmith.ai -c commit.gpgsign=false"
    return [
        f"cd /testbed && git apply --whitespace=nowarn - <<'{tag}'\n{bug}\n{tag}",
        f"cd /testbed && git add -A && git {ident} commit -q -m 'Bug Patch'",
    ]


def published_spec(instance: Instance) -> dict[str, Any] | None:
    """The test spec of a SWE-smith instance in its published image: SWE-smith's Python test command over the
    FAIL_TO_PASS files (its harness runs those files only). None for other sources: the spec table's."""
    if TRAINING_SETS.get(str(instance.extra.get("source"))) != "swe-smith":
        return None
    files = sorted({t.split("::", 1)[0] for t in instance.FAIL_TO_PASS})
    return {"test_cmd": SWE_SMITH_TEST_CMD, "test_files": files}
