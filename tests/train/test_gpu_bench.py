"""bench/gpu_run.sh end to end on CPU (``GPU_RUN_TINY=1``): the same script and bench code the GPU run uses, on a
tiny shape: both trainers train at paper-lora's micro-batch, and the HF batched generation part runs."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("trl")
pytest.importorskip("peft")
pytestmark = pytest.mark.train

ROOT = Path(__file__).resolve().parents[2]


def test_gpu_run_tiny_runs_both_trainers_and_generation(tmp_path: Path):
    env = {**os.environ, "GPU_RUN_TINY": "1", "OUT": str(tmp_path)}
    proc = subprocess.run(
        ["bash", "bench/gpu_run.sh"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads((tmp_path / "train_gpu.json").read_text(encoding="utf-8"))
    plain, ours = report["results"]
    assert (plain["trainer"], ours["trainer"]) == ("plain", "ours")
    assert plain["steps"] == ours["steps"] == 2 and report["batch"]["per_device_train_batch_size"] == 4
    assert ours["planned_gib"] > 0 and report["ours_over_plain"] > 0
    assert report["hf_generation"]["new_tokens"] == 4 * 8  # every row generates its tokens, in one batch
    log = (tmp_path / "train_gpu.log").read_text(encoding="utf-8")
    assert "ours / plain s/step" in log and "hf generate:" in log
