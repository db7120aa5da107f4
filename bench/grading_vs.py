"""Grading time of this tree against another commit's (issue #62's target: within +10% of the tree before its
checks, cc25570): N bundled gold patches, each graded by the ref's code and by ours, alternating which goes first,
on the same images, in the same run. Prints the median whole-grade and test-command time of each and the ratio.

Each side is a worker process (the same script, with ``PYTHONPATH`` set to its tree, checked: it says which files
it imported ``swe_srl`` from); the ref is a ``git worktree`` outside the repository, made here when absent.

Usage: python bench/grading_vs.py [--ref cc25570] [--tree /tmp/h4/ref] [N]   (default N=12; images are built
first, and each side grades the first patch once untimed)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from grading import bundled_spread
from rich.console import Console
from rich.table import Table

OURS = Path(__file__).resolve().parents[1]
MARK = "@@grading_vs "
WORKER = f"""\
import json, sys, time
import swe_srl, swe_srl.grading.runner as runner
from swe_srl.benchmark.instances import load_instances

print({MARK!r} + json.dumps([swe_srl.__file__, runner.__file__]), flush=True)
by_id = {{i.instance_id: i for i in load_instances("bundled")}}
for line in sys.stdin:
    inst = by_id[line.strip()]
    start = time.perf_counter()
    result = runner.grade(inst, inst.patch)
    whole = time.perf_counter() - start
    text = (result.log or "") + (result.reason or "")
    row = [result.status, result.reason, result.timings, whole, "runner tampered" in text]
    print({MARK!r} + json.dumps(row), flush=True)
"""


class Side:
    """A worker process grading with the code of ``tree``."""

    def __init__(self, name: str, tree: Path):
        self.name, self.tree = name, tree
        env = dict(os.environ, PYTHONPATH=str(tree))
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WORKER],
            cwd=tree,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        files = self._answer()
        outside = [f for f in files if not Path(f).resolve().is_relative_to(tree)]
        if outside:
            self.close()
            raise SystemExit(f"{name}: swe_srl imported from {outside}, not from {tree}")
        print(f"{name}: swe_srl from {Path(files[0]).parent}")

    def _answer(self):
        for line in self.proc.stdout:
            if line.startswith(MARK):
                return json.loads(line[len(MARK) :])
            sys.stdout.write(line)
        raise SystemExit(f"{self.name}: the worker ended (exit {self.proc.wait()})")

    def grade(self, instance_id: str) -> dict[str, float]:
        self.proc.stdin.write(instance_id + "\n")
        self.proc.stdin.flush()
        status, reason, timings, whole, tampered = self._answer()
        if status != "resolved" or tampered:
            self.close()
            raise SystemExit(
                f"{self.name}: {instance_id} graded {status} ({reason}), tamper report: {tampered}"
            )
        phases = {k: timings.get(k, 0.0) for k in ("start", "apply", "tests")}
        return {**phases, "rest": whole - sum(phases.values()), "whole": whole}

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def worktree(ref: str, path: Path) -> Path:
    if not path.exists():
        subprocess.run(["git", "-C", str(OURS), "worktree", "add", "--detach", str(path), ref], check=True)
    head = subprocess.run(
        ["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    )
    want = subprocess.run(
        ["git", "-C", str(OURS), "rev-parse", ref], capture_output=True, text=True, check=True
    )
    if head.stdout != want.stdout:
        raise SystemExit(
            f"{path} holds {head.stdout.strip()[:12]}, not {ref}: remove it or pass another --tree"
        )
    return path.resolve()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("count", nargs="?", type=int, default=12)
    parser.add_argument("--ref", default="cc25570")
    parser.add_argument("--tree", type=Path, default=Path("/tmp/h4/ref"))
    args = parser.parse_args()
    picked = bundled_spread(args.count)
    sides = [Side(f"ref {args.ref}", worktree(args.ref, args.tree)), Side("ours", OURS)]
    load = os.getloadavg()
    try:
        for side in sides:  # warm-up, untimed
            side.grade(picked[0].instance_id)
        times: dict[str, list[dict[str, float]]] = {side.name: [] for side in sides}
        for k, inst in enumerate(picked):  # alternate which goes first, so drift hits both
            for side in sides if k % 2 == 0 else sides[::-1]:
                times[side.name].append(side.grade(inst.instance_id))
    finally:
        for side in sides:
            side.close()
    keys = ("start", "apply", "tests", "rest", "whole")
    medians = {n: {k: statistics.median(t[k] for t in rows) for k in keys} for n, rows in times.items()}
    table = Table(
        title=f"grading {args.count} bundled gold patches, median seconds (all resolved, no tamper report)"
    )
    table.add_column("code")
    for column in ("start", "apply", "test command", "rest (screen...)", "whole grade"):
        table.add_column(column, justify="right")
    for name, row in medians.items():
        table.add_row(name, *(f"{row[k]:.2f}" for k in keys))
    ref, ours = medians.values()
    table.add_row("ours / ref", *(f"{ours[k] / ref[k] - 1:+.1%}" for k in keys))
    Console().print(table)
    end = os.getloadavg()
    print(f"load average at start {load[0]:.1f} {load[1]:.1f}, at end {end[0]:.1f} {end[1]:.1f}")


if __name__ == "__main__":
    main()
