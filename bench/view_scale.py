"""How fast ``swe-srl view`` opens big runs: the first page of a 500-instance eval run and of a samples file of
100k+ lines, next to a baseline measured in the same run that loads every record first (what a viewer without the
on-demand index would do: every result and trajectory of the eval run; every line of the samples file, its prompts
built, as ``read_samples`` does).

The samples file's index (built in the background once its first page is shown) is timed built and read back
from its cache, and a later page and a filter are timed once it is there. The eval run holds SWE-bench Verified's 500 instances (their ids and repositories; ``--dataset``), each with a real
OpenHands trajectory (the shared import, cycled; ``--trajectories``), written by ``RunDir.write``. The samples file
is ``decompose``'s format 2 of those trajectories, repeated under new ids until it has ``--samples`` lines.

Usage: python bench/view_scale.py [--samples 100000] [--work /tmp/view-scale]   (a second call reuses --work's files)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from swe_srl.eval.rundir import RunDir
from swe_srl.paths import atomic_write_text, cache_dir
from swe_srl.trajectories.decompose import decompose
from swe_srl.trajectories.importers import import_trajectories
from swe_srl.trajectories.sample_file import expand
from swe_srl.view.index import LineIndex
from swe_srl.view.open import open_site

DATASET = "/work/shared/data/swebench-verified.jsonl"
TRAJECTORIES = "/work/shared/data/trajectories/openhands-claude35-verified/completions"


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default=DATASET, help="SWE-bench-schema JSONL: the eval run's instances")
    ap.add_argument("--trajectories", default=TRAJECTORIES, help="trajectories to give the instances")
    ap.add_argument("--samples", type=int, default=100_000, help="sample lines at least")
    ap.add_argument("--work", type=Path, default=Path("/tmp/view-scale"))
    return ap.parse_args()


def eval_run(out: Path, dataset: Path, trajs: list) -> Path:
    """A 500-instance eval run: each instance with a trajectory, statuses resolved/unresolved/error in turn."""
    rows = [json.loads(line) for line in dataset.read_text().splitlines() if line.strip()]
    run, records = RunDir(out), []
    for k, row in enumerate(rows):
        traj = dataclasses.replace(trajs[k % len(trajs)], instance_id=row["instance_id"])
        status = ("resolved", "unresolved", "error")[k % 3]
        record = {"instance_id": row["instance_id"], "repo": row["repo"], "model_patch": traj.patch,
                  "status": status, "exit_reason": "infra_error" if status == "error" else "submitted",
                  "steps": len(traj.steps), "format_errors": 0, "error": None, "wall_s": 60.0 + k,
                  "tests": {t: "PASSED" for t in json.loads(row["FAIL_TO_PASS"])}, "log": "log",
                  "trajectory": traj.to_dict()}  # fmt: skip
        records.append(run.write(record))
    run.publish(records, "bench", {"dataset": str(dataset), "protocol": "agent"})
    return out


def samples_file(path: Path, trajs: list, lines: int) -> Path:
    """``decompose``'s samples file of ``trajs`` under new ids, repeated until it has ``lines`` sample lines."""
    one, _ = decompose(trajs, history=4)
    per_copy = len(one.rows())
    copies = -(-lines // per_copy)
    many = [
        dataclasses.replace(t, instance_id=f"{t.instance_id}-copy{c}") for c in range(copies) for t in trajs
    ]
    samples, _ = decompose(many, history=4)
    atomic_write_text(path, samples.text())
    return path


def count_lines(path: Path) -> int:
    with open(path, "rb") as handle:
        return sum(1 for _ in handle)


def timed(fn) -> tuple[float, object]:
    started = time.perf_counter()
    value = fn()
    return time.perf_counter() - started, value


def first_page(path: Path) -> float:
    return timed(lambda: open_site(path).render("index.html"))[0]


def load_eval(path: Path) -> int:
    """Baseline: every result and every trajectory loaded."""
    results = [json.loads(p.read_bytes()) for p in sorted((path / "results").glob("*.json"))]
    trajs = [json.loads(p.read_bytes()) for p in sorted((path / "trajectories").glob("*.jsonl"))]
    return len(results) + len(trajs)


def load_samples(path: Path) -> int:
    """Baseline: every line parsed and every prompt built (``read_samples``)."""
    with open(path, encoding="utf-8") as handle:
        records = [(f"{path}:{n}", json.loads(line)) for n, line in enumerate(handle, 1) if line.strip()]
    return len(expand(records))


def main() -> None:
    args = parse_args()
    os.environ["SWE_SRL_HOME"] = str(
        args.work / "home"
    )  # the index cache of this bench, apart from the user's
    console = Console(width=max(Console().width, 150))
    trajs = import_trajectories(args.trajectories)
    run, samples = args.work / "eval", args.work / "samples.jsonl"
    if not (run / "report.json").is_file():  # a second call reuses the files of --work
        with console.status("writing the 500-instance eval run"):
            eval_run(run, Path(args.dataset), trajs)
    if not samples.is_file() or count_lines(samples) < args.samples:
        with console.status(f"writing a samples file of {args.samples:,}+ lines"):
            samples_file(samples, trajs, args.samples)
    lines = count_lines(samples)
    mib = samples.stat().st_size / 2**20
    table = Table(title="swe-srl view: first page (s), ours vs loading every record first")
    for column in ("what", "ours: first page", "baseline: load all", "ours: other"):
        table.add_column(column, justify="left" if column == "what" else "right")
    eval_first = first_page(run)
    site = open_site(run)
    biggest = max(site.main.rows, key=lambda r: r["steps"] or 0)
    instance_s = timed(lambda: site.render(biggest["page"]))[0]
    eval_base = timed(lambda: load_eval(run))[0]
    table.add_row("eval run, 500 instances", f"{eval_first:.3f}", f"{eval_base:.3f}",
                  f"instance page ({biggest['steps']} steps): {instance_s:.3f}")  # fmt: skip
    shutil.rmtree(cache_dir("view-index"))  # the index is built, not read from an earlier run's cache
    samples_first, site = timed(lambda: open_site(samples))
    samples_first += timed(lambda: site.render("index.html"))[0]
    build_s = timed(site.main.index.entries)[0]  # the background build, waited for (then cached)
    cached_s = timed(LineIndex(samples).entries)[0]  # a viewer opening the same file again
    last = -(-len(site.main.sample_entries()) // 50)
    deep_s = timed(lambda: site.render(f"page/{last}.html"))[0]
    filtered_s = timed(lambda: site.render("index.html", {"split": "train", "step": "7"}))[0]
    samples_base = timed(lambda: load_samples(samples))[0]
    other = f"index {build_s:.3f} (cached: {cached_s:.3f}); then page {last}: {deep_s:.3f}, a filter: {filtered_s:.3f}"
    table.add_row(
        f"samples file, {lines:,} lines ({mib:.0f} MiB)", f"{samples_first:.3f}", f"{samples_base:.3f}", other
    )
    console.print(table)


if __name__ == "__main__":
    main()
