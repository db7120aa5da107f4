"""``swe-srl tasks list|build|validate|synth`` and ``swe-srl images build --dataset D``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import typer

from swe_srl.benchmark.instances import load_instances
from swe_srl.benchmark.repos import extract_sdist, fetch_sdist
from swe_srl.cli.infra import IMAGE_SOURCE_HELP
from swe_srl.errors import TaskError
from swe_srl.grading.validate import RATES, VALID, validate
from swe_srl.infra.recipes import instance_image
from swe_srl.infra.sandbox.base import GRADING_NETWORK_ENV
from swe_srl.infra.sandbox.nodes import warm_images
from swe_srl.infra.sandbox.placement import SANDBOXES_HELP, sandbox_address, select_sandboxes
from swe_srl.infra.sources import select_image_source
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
    validate: bool | None = typer.Option(
        None, help="re-run every mutation in a container (default: if Docker answers)"
    ),
    force: bool = typer.Option(False, "--force", help="rebuild even if the suite is already built"),
) -> None:
    """Build the bundled suite from tasks/bundled.json into the cache (PyPI sdists, once); idempotent."""
    typer.echo(f"{len(materialize_bundled(validate=validate, force=force))} bundled tasks ready")


@tasks_app.command("validate")
def validate_cmd(
    dataset: str = typer.Argument("bundled"),
    out: Path = typer.Option(
        Path("validation"), "-o", "--out", help="state, logs and valid.jsonl (resumable)"
    ),
    repos_dir: Path = typer.Option(None, help="folder of local clones (offline)"),
    workers: int = typer.Option(1, help="instances in parallel"),
    prune_images: bool = typer.Option(
        False, "--prune-images", help="remove each instance image once validated"
    ),
    image_source: str = typer.Option(None, "--image-source", help=IMAGE_SOURCE_HELP),
    grading_network: bool = typer.Option(
        False, "--grading-network", help="give grading containers a network, as the official harness does"
    ),
) -> None:
    """Grade gold (must resolve) and empty (must not) patches for every instance of DATASET.

    Prints each instance's verdicts with their causes; writes OUT/valid.jsonl, the records of the environment-valid
    instances (use it as --dataset). A rerun skips instances already validated on the same image.
    """

    select_image_source(image_source)
    if grading_network:  # this process and the workers it starts
        os.environ[GRADING_NETWORK_ENV] = "1"

    def show(iid: str, entry: dict, skipped: bool) -> None:
        mark = "ok" if entry["valid"] else "INVALID"
        causes = "; ".join(f"{k}: {entry[k + '_cause']}" for k in ("gold", "empty") if entry[k + "_cause"])
        typer.echo(f"{iid}: {mark} gold={entry['gold']} empty={entry['empty']}"
                   + (" (validated before)" if skipped else "") + (f" — {causes}" if causes else ""))  # fmt: skip

    state = validate(load_instances(dataset), out, repos_dir=repos_dir, workers=workers,
                     prune_images=prune_images, progress=show)  # fmt: skip
    bad = sorted(i for i, e in state.items() if not e["valid"])
    for repo, row in json.loads((out / RATES).read_text()).items():
        n = row["instances"]
        typer.echo(f"{repo}: gold resolved {row['gold_resolved']}/{n}, empty resolved {row['empty_resolved']}/{n}, "
                   f"environment errors {row['errors']}, approximate Python {row['approximate_python']}")  # fmt: skip
    typer.echo(
        f"{len(state) - len(bad)}/{len(state)} environment-valid → {out / VALID} (rates: {out / RATES})"
    )
    if bad:
        raise TaskError(f"invalid instances (gold not resolved or empty not unresolved): {', '.join(bad)}")


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


def images_build_cmd(
    dataset: str = typer.Option("bundled"),
    repos_dir: Path = typer.Option(None),
    image_source: str = typer.Option(None, "--image-source", help=IMAGE_SOURCE_HELP),
    sandboxes: str = typer.Option(None, "--sandboxes", metavar="WHERE", help=SANDBOXES_HELP + " (ray: on every "
                                  "sandbox node, to warm them before a run)"),
) -> None:  # fmt: skip
    """Build (or pull, for official images) the instance images of every instance of DATASET."""

    select_image_source(image_source)
    select_sandboxes(sandboxes)
    if (address := sandbox_address()) is not None:
        for node, tags in warm_images(load_instances(dataset), address, repos_dir).items():
            typer.echo(f"{node}: {len(tags)} image(s) ready")
        return
    for inst in load_instances(dataset):
        typer.echo(f"{inst.instance_id}: {instance_image(inst, repos_dir=repos_dir)}")
