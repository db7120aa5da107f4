"""The shipped multi-GPU launch, as the tests run it on CPU: ``accelerate launch --config_file
configs/accelerate/fsdp.yaml --num_processes 2 -m swe_srl.cli train …`` from the repository root, one thread a
process (two processes share the machine's cores)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def sets(options: list[str]) -> list[str]:
    """``--set`` before each ``key=value``."""
    return [arg for option in options for arg in ("--set", option)]


def launch_fsdp_train(args: list[str], port: int, timeout: int = 1800) -> None:
    """``swe-srl train ARGS`` under the shipped FSDP config on 2 processes; fails with the output's tail unless it
    exits 0. ``port``: the rendezvous port, one per test so that launches never meet."""
    cmd = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--config_file",
        "configs/accelerate/fsdp.yaml",
    ]
    cmd += ["--num_processes", "2", "--main_process_port", str(port), "-m", "swe_srl.cli", "train", *args]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
