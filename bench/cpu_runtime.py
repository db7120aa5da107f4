"""The tiny policy's CPU runtime, ours next to the previous one in the same run: a short main command each way.

Both run ``swe-srl train --oracle-files`` cut short (``steps`` GRPO steps after ``warmup`` warm-up steps, no
periodic evaluation) in a fresh process: the baseline with one torch thread and glibc's default malloc (freed large
blocks go back to the kernel), ours with the defaults (:mod:`swe_srl.train.tiny.cpu`). Printed: wall, user and system
CPU seconds, minor page faults, peak RSS and the mean GRPO step, and whether the held-out reports are byte-identical
(the settings must not change a number).

    python bench/cpu_runtime.py [steps=6] [warmup=40] [-o OUT_DIR]
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BASELINE = (  # the CLI with keep_freed_memory off
    "import sys, swe_srl.train.tiny.cpu as cpu; cpu.keep_freed_memory = lambda: False; "
    "from swe_srl.cli.app import main; sys.argv[0] = 'swe-srl'; main()"
)
OURS = "import sys; from swe_srl.cli.app import main; sys.argv[0] = 'swe-srl'; main()"


def run(name: str, code: str, extra: list[str], out: Path, steps: int, warmup: int) -> dict:
    """One short main command in a child process; its resource use and mean GRPO step time."""
    out = out / name
    argv = [sys.executable, "-c", code, "train", "--oracle-files", "-o", str(out)]
    argv += [
        "--set",
        f"trl.max_steps={steps}",
        "--set",
        f"tiny.warmup_steps={warmup}",
        "--set",
        "eval.every=0",
    ]
    start = time.perf_counter()
    child = subprocess.Popen(argv + extra, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)  # this child's own resource use
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(
            f"{name}: swe-srl train failed (exit {os.waitstatus_to_exitcode(status)}): {' '.join(argv)}"
        )
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    steps_s = [row["step_time"] for row in rows if "step_time" in row]
    return {
        "run": name,
        "wall_s": round(wall, 1),
        "user_s": round(usage.ru_utime, 1),
        "sys_s": round(usage.ru_stime, 1),
        "minor_faults": usage.ru_minflt,
        "peak_rss_gib": round(usage.ru_maxrss / 2**20, 2),
        "grpo_step_s": round(sum(steps_s) / len(steps_s), 2),
        "heldout_md5": hashlib.md5((out / "heldout.jsonl").read_bytes()).hexdigest(),
    }


def main(argv: list[str]) -> None:
    opts = dict(a.split("=", 1) for a in argv if "=" in a)
    out = Path(argv[argv.index("-o") + 1]) if "-o" in argv else Path(tempfile.mkdtemp(prefix="cpu-runtime-"))
    steps, warmup = int(opts.get("steps", 6)), int(opts.get("warmup", 40))
    base = run("baseline", BASELINE, ["--set", "tiny.threads=1"], out, steps, warmup)
    ours = run("ours", OURS, [], out, steps, warmup)
    for row in (base, ours):
        print(json.dumps(row))
    print(
        f"wall {base['wall_s']}s -> {ours['wall_s']}s, GRPO step {base['grpo_step_s']}s -> {ours['grpo_step_s']}s, "
        f"page faults {base['minor_faults']} -> {ours['minor_faults']}, "
        f"same held-out report: {base['heldout_md5'] == ours['heldout_md5']}"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
