"""Grading throughput on the bundled suite: N gold patches with 1 vs 2 workers, and where the time goes.

Usage: python bench/grading.py [N]   (images are built first, outside the timings)
"""

from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor

from rich.console import Console
from rich.table import Table

from swe_srl.benchmark.instances import load_instances
from swe_srl.grading.runner import grade
from swe_srl.infra.recipes import instance_image


def run(instances, workers: int) -> dict[str, float]:
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(lambda i: grade(i, i.patch), instances))
    wall = time.perf_counter() - start
    assert all(r.status == "resolved" for r in results), [(r.instance_id, r.status) for r in results]
    total = {k: sum(r.timings.get(k, 0.0) for r in results) for k in ("start", "apply", "tests")}
    busy = sum(total.values()) or 1.0
    return {
        "wall": wall,
        "per_task": wall / len(results),
        **{f"{k}_share": v / busy for k, v in total.items()},
    }


def bundled_spread(count: int) -> list:
    """``count`` bundled tasks spread over their libraries (every third, then again), their images built first;
    the grading benches' shared choice."""
    picked = (load_instances("bundled")[::3] * 2)[:count]
    for inst in picked:
        instance_image(inst)
    return picked


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    picked = bundled_spread(count)
    rows = {workers: run(picked, workers) for workers in (1, 2)}
    table = Table(title=f"grading {count} bundled gold patches")
    table.add_column("metric")
    for workers in rows:
        table.add_column(f"{workers} worker(s)")
    for key in rows[1]:
        fmt = "{:.0%}" if key.endswith("share") else "{:.2f} s"
        table.add_row(key, *(fmt.format(rows[w][key]) for w in rows))
    Console().print(table)


if __name__ == "__main__":
    main()
