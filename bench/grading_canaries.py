"""What canary tests (grading/canaries.py) cost a grade: N bundled gold patches graded as ``grade`` does (canaries
planted in every test file the command runs) and with planting switched off (the baseline), alternating, in the
same run. Prints the median test-phase time (planting included) and whole-grade time of each, and the increase.

Usage: python bench/grading_canaries.py [N]   (images are built first, outside the timings; default N=8)
"""

from __future__ import annotations

import statistics
import sys
import time

from grading import bundled_spread
from rich.console import Console
from rich.table import Table

import swe_srl.grading.runner as runner
from swe_srl.grading.planting import Planted, plant


def timed(inst, planting) -> tuple[float, float]:
    runner.plant = planting
    start = time.perf_counter()
    result = runner.grade(inst, inst.patch)
    assert result.status == "resolved", (inst.instance_id, result.status, result.reason)
    return result.timings["tests"], time.perf_counter() - start


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    picked = bundled_spread(count)
    modes = {"canaries": plant, "none (baseline)": lambda *args, **kwargs: Planted()}
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in modes}
    for k, inst in enumerate(picked):
        order = list(modes) if k % 2 == 0 else list(reversed(modes))  # alternate which goes first
        for name in order:
            times[name].append(timed(inst, modes[name]))
    runner.plant = plant
    table = Table(title=f"grading {count} bundled gold patches, canaries vs none (medians)")
    for column in ("mode", "tests phase", "whole grade"):
        table.add_column(column)
    medians = {n: [statistics.median(t[i] for t in times[n]) for i in (0, 1)] for n in modes}
    for name, (tests, whole) in medians.items():
        table.add_row(name, f"{tests:.2f} s", f"{whole:.2f} s")
    base, ours = medians["none (baseline)"], medians["canaries"]
    table.add_row("increase", f"{ours[0] / base[0] - 1:+.1%}", f"{ours[1] / base[1] - 1:+.1%}")
    Console().print(table)


if __name__ == "__main__":
    main()
