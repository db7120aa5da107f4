"""The bundled suite: tasks/bundled.json (recipes over real PyPI sdists) → SWE-bench records in the cache.

Built by an explicit step (``swe-srl tasks build``, run by setup); ``load_instances("bundled")`` only reads the
result and never downloads.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from pathlib import Path

from rich.console import Console

from swe_srl import paths
from swe_srl.benchmark.instances import Instance, load_jsonl
from swe_srl.benchmark.repos import extract_sdist, fetch_sdist, git_snapshot
from swe_srl.errors import TaskError
from swe_srl.infra.engine import engine_answers
from swe_srl.infra.sandbox.factory import open_sandbox
from swe_srl.synth.mutations import unified_diff
from swe_srl.synth.synthesis import Library, SandboxRunner, TaskRecipe, build_instance, check_mutation, mutate

BUNDLED_RECIPES = "bundled.json"


def _library(entry: dict) -> Library:
    fields = {
        k: tuple(v) if isinstance(v, list) else v
        for k, v in entry.items()
        if k in Library.__dataclass_fields__
    }
    return Library(**fields)


def _validate_library(
    lib: Library, tree: Path, recipes: list[TaskRecipe]
) -> dict[str, tuple[str, list[str]]]:
    """Re-run every mutation of ``lib`` in one container: ``{id: (log, PASS_TO_PASS)}`` of those reproducing."""

    commit = git_snapshot(tree, f"{lib.name} {lib.version} (clean)")
    clean = Instance(f"{lib.key}-clean", lib.repo, commit, "", "", "", version=lib.version,
                     extra={"env": lib.env(), "repo_dir": str(tree)})  # fmt: skip
    ok: dict[str, tuple[str, list[str]]] = {}
    with open_sandbox(clean, profile="validation") as sandbox:
        runner = SandboxRunner(sandbox, clean)
        base, _ = runner.run("")
        for recipe in recipes:
            mutated, _ = mutate(tree, recipe)
            tests, log = runner.run(unified_diff(recipe.file, (tree / recipe.file).read_text(), mutated))
            split = check_mutation(base, tests)
            if split and split[0] == sorted(recipe.FAIL_TO_PASS):
                ok[recipe.id] = (log, split[1])
    return ok


def _materialize(recipes_path: Path, root: Path, validate: bool, console) -> list[dict]:

    records = []
    for entry in json.loads(recipes_path.read_text())["libraries"]:
        lib = _library(entry["library"])
        tree = extract_sdist(fetch_sdist(lib.name, lib.version, lib.sha256 or None), root / "src" / lib.key)
        recipes = [TaskRecipe(**{**t, "FAIL_TO_PASS": tuple(t["FAIL_TO_PASS"])}) for t in entry["tasks"]]
        passing = list(entry["clean_passing"])
        keep = {r.id: ("", [t for t in passing if t not in r.FAIL_TO_PASS]) for r in recipes}
        if validate:
            console.print(f"validating {len(recipes)} {lib.name} tasks in a container...")
            keep = _validate_library(lib, tree, recipes)
            for dropped in sorted({r.id for r in recipes} - set(keep)):
                console.print(f"[yellow]warning:[/] {dropped} no longer reproduces its FAIL_TO_PASS; skipped")
        for recipe in recipes:
            if recipe.id in keep:
                log, p2p = keep[recipe.id]
                record = build_instance(
                    lib, tree, recipe, root / "repos" / recipe.id, list(recipe.FAIL_TO_PASS), p2p, log
                )
                record.update(split=lib.split, suite="bundled", validated=validate)
                records.append(record)
        shutil.rmtree(tree / ".git", ignore_errors=True)
    return records


def materialize_bundled(*, validate: bool | None = None, force: bool = False) -> list[Instance]:
    """Build the bundled suite from ``tasks/bundled.json`` into the cache (``swe-srl tasks build``); idempotent.

    ``validate`` (default: when a Docker engine answers, unless ``SWE_SRL_BUNDLED_VALIDATE=0``) re-runs every
    mutation in a container and drops tasks whose FAIL_TO_PASS no longer reproduces.
    """
    recipes_path = paths.resource_dir("tasks") / BUNDLED_RECIPES
    if not recipes_path.is_file():
        raise TaskError(f"bundled recipes {recipes_path} are missing; reinstall swe-srl")
    out = paths.bundled_suite_file()
    root = out.parent
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if force or not out.is_file():
            if validate is None:
                validate = os.environ.get("SWE_SRL_BUNDLED_VALIDATE", "1") != "0" and engine_answers()
            console = Console(stderr=True)
            console.print(f"building the bundled suite into {root} (validate={validate})...")
            records = _materialize(recipes_path, root, validate, console)
            paths.atomic_write_text(out, "".join(json.dumps(r) + "\n" for r in records))
    return load_jsonl(out)
