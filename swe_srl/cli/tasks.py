"""``swe-srl tasks list|build|validate|synth`` and ``swe-srl images build --dataset D``."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import typer

from swe_srl.benchmark.instances import load_instances
from swe_srl.benchmark.repos import extract_sdist, fetch_sdist
from swe_srl.cli.infra import images_app  # the shared ``images`` group
from swe_srl.errors import TaskError
from swe_srl.eval.run import EvalSettings, evaluate
from swe_srl.infra.recipes import instance_image
from swe_srl.paths import atomic_write_text
from swe_srl.synth.bundled import materialize_bundled
from swe_srl.synth.synthesis import Library, LocalRunner, candidate_recipes, synthesize

tasks_app = typer.Typer(help="Task datasets: the bundled suite, synthesis, validation.", no_args_is_help=True)


@tasks_app.command("list")
def list_cmd(dataset: str = typer.Argument("bundled")) -> None:
    """List the instances of DATASET (the bundled suite once `swe-srl tasks build` built it)."""
    for inst in load_instances(dataset):
        typer.echo(
            f"{inst.instance_id}\t{inst.repo}\t{inst.extra.get('split', '-')}\tF2P={len(inst.FAIL_TO_PASS)}"
        )


@tasks_app.command("build")
def build_cmd(
    validate: bool | None = typer.Option(None, help="re-run every mutation in a container (default: if Docker answers)"),
    force: bool = typer.Option(False, "--force", help="rebuild even if the suite is already built"),
) -> None:
    """Build the bundled suite from tasks/bundled.json into the cache (PyPI sdists, once); idempotent."""
    typer.echo(f"{len(materialize_bundled(validate=validate, force=force))} bundled tasks ready")


@tasks_app.command("validate")
def validate_cmd(dataset: str = typer.Argument("bundled"), workers: int = typer.Option(1)) -> None:
    """Grade gold (must resolve) and empty (must not) patches for every instance of DATASET."""

    instances = load_instances(dataset)
    with tempfile.TemporaryDirectory() as tmp:
        gold = evaluate(EvalSettings("gold", direct=True), instances, Path(tmp) / "gold", workers=workers)
        empty = evaluate(EvalSettings("empty", direct=True), instances, Path(tmp) / "empty", workers=workers)
    bad = [i for i, s in gold["per_instance"].items() if s != "resolved"]
    bad += [i for i, s in empty["per_instance"].items() if s == "resolved"]
    typer.echo(f"gold {gold['resolved']}/{gold['total']}, empty {empty['resolved']}/{empty['total']}")
    if bad:
        raise TaskError(
            f"invalid instances (gold unresolved or empty resolved): {', '.join(sorted(set(bad)))}"
        )


@tasks_app.command("synth")
def synth_cmd(
    pypi: str = typer.Option(..., help="library==version (PyPI sdist)"),
    repo: str = typer.Option(..., help="GitHub-style name recorded in the records, e.g. pytoolz/toolz"),
    files: list[str] = typer.Option(..., "--file", help="source file(s) to mutate"),
    tests: list[str] = typer.Option(..., "--tests", help="test files/dirs to run"),
    count: int = typer.Option(10),
    seed: int = typer.Option(0),
    split: str = typer.Option("train"),
    out: Path = typer.Option(..., "-o", help="output folder: instances.jsonl + repos/"),
) -> None:
    """Inject AST bugs into a PyPI library, keep those its tests catch, write SWE-bench records."""

    name, _, version = pypi.partition("==")
    lib = Library(name, version, repo, tuple(tests), split=split)
    tree = extract_sdist(fetch_sdist(name, version), out / "src")
    cands = candidate_recipes(lib, tree, files, count=count, seed=seed)
    records = synthesize(lib, tree, LocalRunner(tree, lib.test_files), cands, out / "repos",
                         progress=lambda r, ok: typer.echo(f"{r.id} {r.operator}: {'kept' if ok else 'dropped'}"))  # fmt: skip
    atomic_write_text(
        out / "instances.jsonl", "".join(json.dumps(r | {"split": split}) + "\n" for r in records)
    )
    typer.echo(f"{len(records)}/{len(cands)} tasks kept → {out / 'instances.jsonl'}")


def images_build_cmd(dataset: str = typer.Option("bundled"), repos_dir: Path = typer.Option(None)) -> None:
    """Build the env + instance images of every instance of DATASET."""

    for inst in load_instances(dataset):
        typer.echo(f"{inst.instance_id}: {instance_image(inst, repos_dir=repos_dir)}")


def register(app: typer.Typer) -> None:

    app.add_typer(tasks_app, name="tasks")
    images_app.command("build")(images_build_cmd)
