"""The gold patch through the one-generation protocols' edit path, without grading: for every instance whose
repository has a clone in ``--repos-dir``, the gold answer of ``oracle-edit`` and of ``agentless`` (localization:
the gold files; repair: the gold patch as SEARCH/REPLACE) is parsed and applied exactly as a model's answer is, and
the files it yields are compared with the files ``git apply`` makes of the gold patch. An instance whose files are
identical grades as the gold patch does; the others are listed with the cause.

Usage: python bench/protocols_gold.py [--dataset FILE] [--repos-dir /work/.mirror] [--edit-rules agentless|strict]
Prints per repository: instances, identical under oracle-edit, identical under agentless, and each mismatch.
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from rich.console import Console
from rich.table import Table

from swe_srl.benchmark.instances import Instance, load_instances
from swe_srl.core.agentless_edits import post_process
from swe_srl.core.search_replace import apply_edits, parse_edits
from swe_srl.errors import SweSrlError
from swe_srl.eval.protocols.gold import gold_localization, gold_repair
from swe_srl.eval.protocols.prompts import parse_localization
from swe_srl.eval.protocols.sources import BaseTree, oracle_files

DATASET = "/work/shared/data/swebench-verified.jsonl"


def gold_files(instance: Instance, tree: BaseTree) -> dict[str, str | None]:
    """path → text after ``git apply`` of the gold patch on the base files it touches (None: removed)."""
    paths = instance.oracle_files
    base = tree.contents(paths)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for path, text in base.items():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(text)
        subprocess.run(["git", "init", "-q", tmp], check=True)
        subprocess.run(["git", "-C", tmp, "apply", "-"], input=instance.patch.encode(), check=True)
        return {p: (root / p).read_text() if (root / p).exists() else None for p in paths}


def through(instance: Instance, tree: BaseTree, protocol: str, rules: str) -> dict[str, str | None]:
    """The files the protocol's edit path makes of the gold answer (unchanged files keep their base text)."""
    files = oracle_files(instance) if rules == "agentless" else instance.oracle_files
    if protocol == "agentless":
        files, _ = parse_localization(gold_localization(instance), tree.listing())
    contents = tree.contents(files)
    if rules == "agentless":
        applied = post_process(gold_repair(instance, tree), contents)
    else:
        parsed = parse_edits(gold_repair(instance, tree))
        applied = apply_edits(parsed.edits, contents, is_test=tree.is_test, creatable=tree.creatable,
                              exactly_once=True)  # fmt: skip
    if applied.problem:
        return {}
    base = tree.contents(instance.oracle_files)
    return {p: applied.new.get(p, base.get(p)) for p in instance.oracle_files}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default=DATASET)
    parser.add_argument("--repos-dir", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--edit-rules", choices=("agentless", "strict"), default="agentless")
    args = parser.parse_args()
    console = Console()
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    misses: list[str] = []
    skipped: dict[str, int] = defaultdict(int)
    started = time.monotonic()
    for instance in load_instances(args.dataset):
        try:
            tree = BaseTree(instance, args.repos_dir)
        except SweSrlError:
            skipped[instance.repo] += 1
            continue
        expected = gold_files(instance, tree)
        row = counts[instance.repo]
        row[0] += 1
        for k, protocol in enumerate(("oracle-edit", "agentless"), start=1):
            if through(instance, tree, protocol, args.edit_rules) == expected:
                row[k] += 1
            else:
                misses.append(f"{protocol} {instance.instance_id}: files {instance.oracle_files}")
    table = Table(title=f"gold as SEARCH/REPLACE vs git apply of gold ({args.dataset})")
    for column in ("repository", "instances", "oracle-edit identical", "agentless identical"):
        table.add_column(column, justify="left" if column == "repository" else "right")
    for repo, (n, oracle, agentless) in sorted(counts.items()):
        table.add_row(repo, str(n), str(oracle), str(agentless))
    total = [sum(c[k] for c in counts.values()) for k in range(3)]
    table.add_row("all", *map(str, total))
    console.print(table)
    for miss in misses:
        console.print(miss, highlight=False)
    console.print(
        f"no clone here (skipped): {dict(skipped)}; {time.monotonic() - started:.0f} s", highlight=False
    )


if __name__ == "__main__":
    main()
