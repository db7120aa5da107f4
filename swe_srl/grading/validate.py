"""``swe-srl tasks validate``: grade the gold patch (must resolve) and the empty patch (must not) of every instance.

An instance is *environment-valid* when both verdicts are as they must be and neither is an ``error``. Into ``OUT``::

    OUT/validation.json        per instance: image tag, gold/empty status and cause, valid or not (the resume state)
    OUT/logs/<id>.{gold,empty}.log   the full test logs
    OUT/valid.jsonl            the records of the environment-valid instances: a dataset (``--dataset OUT/valid.jsonl``)
    OUT/rates.json             per repository: instances, gold resolved, empty resolved, errors, approximate Python

Resumable: an instance already in ``validation.json`` whose image tag (the one graded, a fallback Python's
included) is one its recipes make now is skipped (a changed recipe, hence tag, validates it again).
``prune_images``: the image graded is removed once its instance is validated if swe-srl built it; images it did not
build (an official prebuilt image pulled or already here) stay.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import docker

from swe_srl.benchmark.instances import Instance
from swe_srl.benchmark.verdicts import GradeResult
from swe_srl.errors import SweSrlError
from swe_srl.grading.runner import grade
from swe_srl.grading.timeouts import log_tail
from swe_srl.infra.engine import docker_client, image_exists
from swe_srl.infra.executor import LocalExecutor, Task
from swe_srl.infra.recipes import instance_image_names
from swe_srl.infra.sandbox.janitor import OWNER_LABEL
from swe_srl.paths import atomic_write_text

STATE, VALID, RATES = "validation.json", "valid.jsonl", "rates.json"


NETWORK_ERRORS = re.compile(
    r"Network is unreachable|Temporary failure in name resolution|Name or service not known|"
    r"NewConnectionError|nodename nor servname|No route to host"
)
"""What a test that needs the network logs in a grading container (which has none)."""


def network_note(log: str) -> str:
    """A note for a cause when ``log`` shows tests reaching for the network (requests' httpbin.org and tarpit tests:
    the official harness grades with network, this one offline); "" otherwise."""
    match = NETWORK_ERRORS.search(log)
    if not match:
        return ""
    return f" [offline: tests reach for the network ({match.group(0)}); the official harness has it: --grading-network]"


def _cause(result: GradeResult) -> str:
    if result.status == "resolved":
        return result.reason or ""
    return (result.reason or log_tail(result.log, 5)) + network_note(result.log)


def _tags(instance: Instance, repos_dir: Path | None) -> list[str]:
    """The tags the instance's image may have (the fallback Python's too), the likeliest first."""
    try:
        tags = instance_image_names(instance, repos_dir=repos_dir)
    except SweSrlError as exc:  # no source for the repo: grading says so as the cause
        return [f"<unknown: {type(exc).__name__}>"]
    return sorted(tags, key=lambda tag: not image_exists(tag))  # one built before first (a stable sort)


def validate_one(instance: Instance, out: Path, repos_dir: Path | None, tag: str) -> dict[str, Any]:
    """Grade the gold then the empty patch (the gold run is the empty one's reference when no target test runs with
    the empty patch: ``grading/timeouts.py``); the state entry."""
    entry: dict[str, Any] = {}
    for name, patch in (("gold", instance.patch), ("empty", "")):
        result = grade(instance, patch, repos_dir=repos_dir)
        log = out / "logs" / f"{instance.instance_id}.{name}.log"
        atomic_write_text(log, result.log)
        entry |= {name: result.status, f"{name}_cause": _cause(result), f"{name}_log": str(log)}
        entry.setdefault("provenance", result.image)
    # the image graded (maybe a fallback Python's)
    entry["image"] = str((entry.get("provenance") or {}).get("image") or tag)
    entry["valid"] = entry["gold"] == "resolved" and entry["empty"] in ("unresolved", "patch_failed")
    return entry


def _prune(tag: str) -> None:
    """Remove ``tag`` if swe-srl built it (``swe-srl.owner`` label)."""
    with contextlib.suppress(docker.errors.APIError):  # gone already, or in use by a container of another run
        image = docker_client().images.get(tag)
        if (image.labels or {}).get(OWNER_LABEL) == "swe-srl":
            docker_client().images.remove(tag, force=True)


def validate(
    instances: list[Instance],
    out: Path,
    *,
    repos_dir: Path | None = None,
    workers: int = 1,
    prune_images: bool = False,
    progress: Callable[[str, dict[str, Any], bool], None] | None = None,
) -> dict[str, dict[str, Any]]:
    """Validate ``instances`` into ``out`` (see module doc); returns the state (id → entry) of these instances.

    ``progress(instance_id, entry, skipped)`` is called per instance as it finishes (in this thread). Instances run
    on a local executor of ``workers`` threads: stopped (Ctrl-C, SIGTERM), it does not wait for the ones in flight.
    """
    out = Path(out)
    path = out / STATE
    state: dict[str, dict] = json.loads(path.read_text()) if path.exists() else {}
    todo = []
    for instance in instances:
        iid, tags = instance.instance_id, _tags(instance, repos_dir)
        if state.get(iid, {}).get("image") in tags:
            if progress:
                progress(iid, state[iid], True)
        else:
            todo.append(Task(key=iid, fn=validate_one, args=(instance, out, repos_dir, tags[0])))

    def done(iid: str, entry: dict[str, Any]) -> None:  # in this thread, as each one ends
        if prune_images:
            _prune(entry["image"])
        state[iid] = entry
        atomic_write_text(path, json.dumps(state, indent=1, sort_keys=True))
        if progress:
            progress(iid, entry, False)

    # Ctrl-C / SIGTERM stop at once: what finished is kept, the rest is validated by a rerun
    with LocalExecutor(max(1, workers), processes=False) as executor:
        executor.map(todo, on_result=done)
    valid = [i.to_record() for i in instances if state[i.instance_id]["valid"]]
    atomic_write_text(out / VALID, "".join(json.dumps(r) + "\n" for r in valid))
    mine = {i.instance_id: state[i.instance_id] for i in instances}
    atomic_write_text(out / RATES, json.dumps(repo_rates(instances, mine), indent=1, sort_keys=True))
    return mine


def repo_rates(instances: list[Instance], state: dict[str, dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Per repository: ``instances``, ``valid``, ``gold_resolved``, ``empty_resolved`` (must stay 0),
    ``errors`` (either verdict an environment error) and ``approximate_python`` (graded on another minor Python)."""
    rates: dict[str, dict[str, int]] = {}
    for instance in instances:
        entry = state[instance.instance_id]
        row = rates.setdefault(instance.repo, dict.fromkeys(
            ("instances", "valid", "gold_resolved", "empty_resolved", "errors", "approximate_python"), 0))  # fmt: skip
        row["instances"] += 1
        row["valid"] += bool(entry["valid"])
        row["gold_resolved"] += entry["gold"] == "resolved"
        row["empty_resolved"] += entry["empty"] == "resolved"
        row["errors"] += "error" in (entry["gold"], entry["empty"])
        row["approximate_python"] += bool((entry.get("provenance") or {}).get("approximate_python"))
    return rates
