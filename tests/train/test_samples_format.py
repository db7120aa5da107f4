"""`swe-srl train --samples F` on the file `swe-srl decompose` writes (format 2: shared records, prompts built when
the dataset loads)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")

from swe_srl.core.prompts import build_messages  # noqa: E402
from swe_srl.train.data import read_samples, split_rows  # noqa: E402
from swe_srl.trajectories import import_trajectories  # noqa: E402

pytestmark = pytest.mark.train
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "trajectories"
SOURCES = [str(FIXTURES / n) for n in ("openhands.json", "swe_smith.json", "toy__calc-2.traj.json")]
FAST = ["tiny.hidden_size=32", "tiny.vocab_size=300", "tiny.warmup_steps=0", "trl.num_generations=2",
        "trl.per_device_train_batch_size=4", "trl.max_completion_length=8", "eval.every=0", "eval.max_samples=0",
        "trl.save_steps=1"]  # fmt: skip


def _cli(*args: str) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [sys.executable, "-m", "swe_srl.cli", *args], capture_output=True, text=True, timeout=500
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def test_train_reads_decomposed_samples(tmp_path: Path) -> None:
    samples = tmp_path / "samples.jsonl"
    _cli("decompose", *SOURCES, "-o", str(samples))
    assert json.loads(samples.read_text().splitlines()[0])["kind"] == "header"
    train, test = split_rows(read_samples(samples), test_fraction=0.0)
    trajs = {t.content_hash(): t for source in SOURCES for t in import_trajectories(source)}
    for row in train:
        t, k = trajs[row["trajectory_hash"]], row["step"]
        history = [(s.action, s.observation) for s in t.steps[:k]]
        assert row["prompt"] == build_messages(t.problem, history, shell=t.shell)  # mini runs per action
    out = tmp_path / "run"
    sets = [x for s in [*FAST, "trl.max_steps=1"] for x in ("--set", s)]
    _cli("train", "--samples", str(samples), "-o", str(out), *sets)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 1
