"""What the reporters' interpreter and test-identity checks (benchmark/report_integrity.py) cost a grade: N bundled
gold patches graded with the pytest reporter as it is, and with the same reporter whose checks are stubbed out
(the baseline), alternating, in the same run. Prints the median test-command time and whole-grade time of each.

Usage: python bench/grading_checks.py [N]   (images are built first, outside the timings; default N=8)
"""

from __future__ import annotations

import statistics
import sys
import time

from grading import bundled_spread
from rich.console import Console
from rich.table import Table

import swe_srl.grading.channel as channel
from swe_srl.grading.runner import grade

CHECKED = channel.PYTEST_REPORT_PLUGIN
UNCHECKED = (
    CHECKED
    + (  # later definitions win: the checks become no-ops, the rest of the reporter is unchanged
        "\n\ndef _integrity(where, lenient=False):\n    return None\n\n\n"
        "def _verify(obj, name, namespace=None):\n    return None\n\n\n_OWN = tuple(_own().items())\n"
    )
)


def timed(inst, plugin: str) -> tuple[float, float]:
    channel.PYTEST_REPORT_PLUGIN = plugin
    start = time.perf_counter()
    result = grade(inst, inst.patch)
    assert result.status == "resolved", (inst.instance_id, result.status, result.reason)
    assert "runner tampered" not in result.log, result.log[-1500:]
    return result.timings["tests"], time.perf_counter() - start


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    picked = bundled_spread(count)
    rows: dict[str, list[tuple[float, float]]] = {"checks off (baseline)": [], "checks on": []}
    for i, inst in enumerate(picked):  # alternate which goes first, so drift hits both
        order = [("checks off (baseline)", UNCHECKED), ("checks on", CHECKED)]
        for name, plugin in order if i % 2 == 0 else order[::-1]:
            rows[name].append(timed(inst, plugin))
    channel.PYTEST_REPORT_PLUGIN = CHECKED
    table = Table(title=f"grading {count} bundled gold patches, median seconds")
    for column in ("reporter", "test command", "whole grade"):
        table.add_column(column)
    for name, times in rows.items():
        table.add_row(name, *(f"{statistics.median(t[k] for t in times):.2f}" for k in (0, 1)))
    base, checked = (statistics.median(t[0] for t in rows[k]) for k in rows)
    Console().print(table)
    Console().print(f"test command: {100 * (checked / base - 1):+.1f}% with the checks")


if __name__ == "__main__":
    main()
