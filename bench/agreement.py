"""A real agent's verdicts, reproduced: replay a public run's trajectories in episodes and compare the grades.

Imports the run (``swe-srl trajectories import``'s importer, any public format, ``resolved_labels.json`` beside it,
or ``--reports DIR``: the SWE-bench harness's ``DIR/ID/report.json`` per instance, as mini-swe-agent runs publish
them), replays each trajectory in an episode (``--policy replay:FILE``, in the shell its agent used:
``Trajectory.shell``) on the instances whose repository has a clone in
``--repos-dir``, grades the replayed patches, and prints the agreement with the run's published labels:
resolved/resolved, unresolved/unresolved, each disagreement, and each instance that could not be run with its cause
(also written to ``OUT/agreement.json``).

Usage: python bench/agreement.py --repos-dir /work/.mirror --out /tmp/agreement [--instances a,b] [--workers N]
       [--only-built] [--cause django/django="repository too large to fetch here"] [--reports LOGS] [TRAJECTORIES]
The run directory is resumable (``swe-srl eval``'s): a second call grades only what is missing.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from swe_srl.benchmark.instances import Instance, load_instances, select_instances
from swe_srl.benchmark.repos import git, repo_source
from swe_srl.errors import SweSrlError, TaskError
from swe_srl.eval.run import evaluate
from swe_srl.eval.settings import EvalSettings
from swe_srl.infra.engine import image_exists
from swe_srl.infra.recipes import instance_image_names
from swe_srl.paths import atomic_write_text
from swe_srl.trajectories.importers import import_trajectories
from swe_srl.trajectories.schema import write_jsonl

SHARED = "/work/shared/data/trajectories/openhands-claude35-verified/completions"
DATASET = "/work/shared/data/swebench-verified.jsonl"


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trajectories", nargs="?", default=SHARED, help="a public run: file, folder or HF id")
    ap.add_argument("--dataset", default=DATASET)
    ap.add_argument("--repos-dir", type=Path, required=True, help="clones or mirrors of the repositories")
    ap.add_argument("--out", type=Path, required=True, help="run folder (resumable)")
    ap.add_argument("--instances", default="", help="only these ids (comma-separated)")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument(
        "--only-built", action="store_true", help="list instances whose image is not built as not run"
    )
    ap.add_argument("--cause", action="append", default=[], help="REPO=why it has no clone here")
    ap.add_argument("--reports", type=Path, help="the run's published verdicts: a folder of ID/report.json")
    return ap.parse_args()


def report_labels(folder: Path) -> dict[str, bool]:
    """Instance id → resolved, from the SWE-bench harness's per-instance ``ID/report.json`` under ``folder``
    (``{ID: {"resolved": …}}``, or the inner object alone as some runs publish it)."""
    labels = {}
    for path in sorted(folder.glob("*/report.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        iid = path.parent.name
        inner = data.get(iid, data) if isinstance(data, dict) else None
        if not isinstance(inner, dict) or not isinstance(inner.get("resolved"), bool):
            raise SystemExit(f"error: {path}: no boolean 'resolved' (a SWE-bench harness report.json?)")
        labels[iid] = inner["resolved"]
    if not labels:
        raise SystemExit(f"error: --reports {folder}: no ID/report.json files under it")
    return labels


def missing_objects(clone: Path, commit: str) -> str | None:
    """Why ``clone`` cannot check ``commit`` out (objects of its tree absent, e.g. a mirror's largest blobs)."""
    listed = git(clone, "rev-list", "--objects", "--no-walk", "--missing=print", commit, check=False)
    missing = {line[1:] for line in listed.splitlines() if line.startswith("?")}
    if not missing:
        return None
    tree = git(clone, "ls-tree", "-r", commit, check=False).splitlines()
    paths = [line.split("\t", 1)[1] for line in tree if line.split()[2:3] and line.split()[2] in missing]
    return f"the clone lacks {len(missing)} object(s) of the base commit: {', '.join(paths) or sorted(missing)[0]}"


def fetchable(instances: list[Instance], repos_dir: Path, causes: dict[str, str]) -> dict[str, str]:
    """Instance id → why it cannot be run here: no clone of its repository, or one without its base commit's files."""
    clones: dict[str, Path | str] = {}
    for repo in sorted({i.repo for i in instances}):
        try:
            clones[repo] = repo_source(repo, repos_dir)
        except TaskError as exc:
            clones[repo] = causes.get(repo) or str(exc).split(";")[0]
    out = {}
    for i in instances:
        clone = clones[i.repo]
        why = clone if isinstance(clone, str) else missing_objects(clone, i.base_commit)
        if why:
            out[i.instance_id] = why
    return out


def verdicts(run_dir: Path) -> dict[str, dict]:
    """The run folder's records by id, errors included (``results/ID.json`` of ``swe-srl eval``)."""
    records = [json.loads(p.read_text()) for p in sorted((run_dir / "results").glob("*.json"))]
    return {r["instance_id"]: r for r in records}


def first_line(text: str | None) -> str:
    lines = [x for x in (text or "").splitlines() if x.strip()]
    return lines[0][:160] if lines else "(no message)"


def agreement_rows(labels: dict[str, bool], records: dict[str, dict], skipped: dict[str, str]) -> list[tuple]:
    """(id, published, ours, kind, cause) per instance; kind: agree | disagree | not run."""
    rows = []
    for iid in sorted(labels):
        published = "resolved" if labels[iid] else "unresolved"
        record = records.get(iid)
        if iid in skipped or record is None:
            rows.append((iid, published, "-", "not run", skipped.get(iid, "not in this run's selection")))
        elif record["status"] not in ("resolved", "unresolved"):
            why = record.get("reason") or record.get("exit_reason") or record["status"]
            rows.append(
                (iid, published, record["status"], "not run", f"{why}: {first_line(record.get('error'))}")
            )
        else:
            kind = "agree" if record["status"] == published else "disagree"
            rows.append((iid, published, record["status"], kind, record.get("reason") or ""))
    return rows


def print_rows(rows: list[tuple], console: Console) -> None:
    count = {k: sum(r[3] == k for r in rows) for k in ("agree", "disagree", "not run")}
    both = {s: sum(r[3] == "agree" and r[1] == s for r in rows) for s in ("resolved", "unresolved")}
    summary = Table(title="agreement with the published labels")
    for column in ("resolved/resolved", "unresolved/unresolved", "disagreements", "could not be run"):
        summary.add_column(column, justify="right")
    summary.add_row(
        str(both["resolved"]), str(both["unresolved"]), str(count["disagree"]), str(count["not run"])
    )
    console.print(summary)
    detail = Table(title="disagreements and instances not run")
    for column in ("instance", "published", "ours", "kind", "cause"):
        detail.add_column(column)
    for row in rows:
        if row[3] != "agree":
            detail.add_row(*row)
    console.print(detail)


def main() -> None:
    args = parse_args()
    console = Console(width=160)
    reported = report_labels(args.reports) if args.reports else {}
    trajectories = import_trajectories(args.trajectories)
    for t in trajectories:
        t.resolved = reported.get(t.instance_id, t.resolved)
    labels = {t.instance_id: bool(t.resolved) for t in trajectories if t.resolved is not None}
    ids = [i.strip() for i in args.instances.split(",") if i.strip()] or sorted(labels)
    todo = select_instances(load_instances(args.dataset), ids)
    causes = dict(c.split("=", 1) for c in args.cause)
    skipped = fetchable(todo, args.repos_dir, causes)
    if args.only_built:
        for i in todo:
            tags = [] if i.instance_id in skipped else instance_image_names(i, repos_dir=args.repos_dir)
            if tags and not any(image_exists(tag) for tag in tags):
                skipped[i.instance_id] = "its image is not built (--only-built)"
    runnable = [i for i in todo if i.instance_id not in skipped]
    args.out.mkdir(parents=True, exist_ok=True)
    native = args.out / "replayed-trajectories.jsonl"
    write_jsonl(native, [t for t in trajectories if t.instance_id in {i.instance_id for i in runnable}])
    settings = EvalSettings(f"replay:{native}", max_steps=200, repos_dir=str(args.repos_dir))
    if runnable:
        try:
            evaluate(settings, runnable, args.out / "run", workers=args.workers, dataset=args.dataset)
        except SweSrlError as exc:
            raise SystemExit(f"error: {exc}") from None
    records = verdicts(args.out / "run")
    rows = agreement_rows({k: v for k, v in labels.items() if k in ids}, records, skipped)
    print_rows(rows, console)
    fields = ("instance_id", "published", "ours", "kind", "cause")
    atomic_write_text(
        args.out / "agreement.json", json.dumps([dict(zip(fields, r, strict=True)) for r in rows], indent=1)
    )
    console.print(f"rows: {args.out / 'agreement.json'}  run: {args.out / 'run'}")


if __name__ == "__main__":
    main()
