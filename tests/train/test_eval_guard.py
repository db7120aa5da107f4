"""`swe-srl train` refuses SWE-bench evaluation instances before any work, unless --allow-eval-instances."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")

from conftest import make_samples  # noqa: E402

pytestmark = pytest.mark.train


def test_train_refuses_verified_ids_and_names_them(tmp_path: Path) -> None:
    rows = make_samples(n_instances=12)
    for row in rows:  # the same samples, but under SWE-bench test-set ids
        row["instance_id"] = (
            row["instance_id"].replace("demo__", "django__django-").split("-pkg")[0]
            + "-1"
            + row["instance_id"].rsplit("-", 1)[1]
        )
        row["split"] = "train"
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "swe_srl.cli", "train", "--samples", str(samples), "-o", str(out)]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert "SWE-bench evaluation instance" in output and "django__django-10" in output
    assert "--allow-eval-instances" in output and "Traceback" not in output
    assert not (out / "tiny-model").exists() and not (out / "metrics.jsonl").exists()  # no work started
