"""Bad input fails before any work with one line naming the value and the choices, exit code 2, no traceback (the
real CLI in a subprocess); the predictions-file reader's errors name file:line (in process)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from swe_srl.benchmark.instances import load_instances
from swe_srl.errors import PolicyError, TaskError
from swe_srl.eval.predictions import read_predictions


def _cli(*args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "swe_srl.cli", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def bundled_id() -> str:
    try:
        return load_instances("bundled:test")[0].instance_id
    except TaskError as exc:
        pytest.skip(str(exc))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--dataset", "bundled:tset"], "unknown split 'tset' of bundled: choose from train, dev, test"),
        (["--policy", "gpld"], "unknown policy 'gpld'; expected one of: gold | empty | replay:TRAJ.jsonl"),
        (["--policy", "hf:/nonexistent"], "model path '/nonexistent' does not exist"),
        (["--policy", "replay:/nonexistent.jsonl"], "replay trajectory file '/nonexistent.jsonl' does not exist"),
        (["--policy", "predictions:/nonexistent.jsonl"], "predictions file '/nonexistent.jsonl' does not exist"),
        (["--dataset", "no-such-dataset"], "unknown dataset 'no-such-dataset'"),
    ],
)  # fmt: skip
def test_eval_rejects_bad_input_in_one_line(
    args: list[str], message: str, tmp_path: Path, bundled_id
) -> None:
    args = ["--policy", "gold", *args] if "--policy" not in args else args
    proc = _cli("eval", *args, "-o", str(tmp_path / "out"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    (line,) = proc.stderr.strip().splitlines()  # one line
    assert line.startswith("error: ") and message in line, line
    assert (
        "Traceback" not in proc.stdout + proc.stderr and not (tmp_path / "out").exists()
    )  # no work was done


def test_eval_rejects_an_output_path_that_is_a_file(tmp_path: Path, bundled_id) -> None:
    out = tmp_path / "report.txt"
    out.write_text("not a folder")
    proc = _cli("eval", "--policy", "gold", "--instances", bundled_id, "-o", str(out))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == f"error: output '{out}': '{out}' is a file; give a folder (-o)"


def test_eval_rejects_a_prediction_for_an_unknown_instance(tmp_path: Path, bundled_id) -> None:
    preds = tmp_path / "preds.jsonl"
    rows = [{"instance_id": bundled_id, "model_name_or_path": "m", "model_patch": ""},
            {"instance_id": "nobody__nothing-1", "model_name_or_path": "m", "model_patch": ""}]  # fmt: skip
    preds.write_text("".join(json.dumps(r) + "\n" for r in rows))
    proc = _cli(
        "eval", "--policy", f"predictions:{preds}", "--instances", bundled_id, "-o", str(tmp_path / "o")
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "1 prediction(s) for instance ids the dataset does not have: nobody__nothing-1" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not (tmp_path / "o").exists()


def test_train_rejects_a_missing_model_before_loading_anything(tmp_path: Path) -> None:
    proc = _cli("train", "--model", "/nonexistent", "--max-steps", "1", "-o", str(tmp_path / "run"))
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip() == (
        "error: --model: model path '/nonexistent' does not exist (give a saved model directory or a hub id "
        "like org/name)"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"instance_id": "a", "model_patch": ""}\nnot json\n', r"p\.jsonl:2: not valid JSON"),
        ('{"instance_id": "a", "model_patch": 3}\n', r"p\.jsonl:1: 'model_patch' of a must be a string"),
        ('{"model_patch": ""}\n', r"p\.jsonl:1: 'instance_id' must be a non-empty string"),
        ('{"instance_id": "a"}\n{"instance_id": "a"}\n', r"p\.jsonl:2: a second prediction for 'a'"),
        ('[{"instance_id": "a"}, 5]', r"p\.jsonl\[1\]: expected an object"),
        ('[{"instance_id": "b"}]', r"1 prediction\(s\) for instance ids the dataset does not have: b"),
    ],
)
def test_predictions_file_errors_name_the_record(text: str, message: str, tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text(text)
    with pytest.raises(PolicyError, match=message):
        read_predictions(path, known_ids=["a"])


def test_predictions_file_reads_jsonl_and_json_lists(tmp_path: Path) -> None:
    rows = [{"instance_id": "a", "model_name_or_path": "sys", "model_patch": "diff"},
            {"instance_id": "b", "model_name_or_path": "sys", "model_patch": None}]  # fmt: skip
    (tmp_path / "p.jsonl").write_text("".join(json.dumps(r) + "\n\n" for r in rows))
    (tmp_path / "p.json").write_text(json.dumps(rows))
    for name in ("p.jsonl", "p.json"):
        found = read_predictions(tmp_path / name, known_ids=["a", "b", "c"])
        assert {k: (p.model_name_or_path, p.model_patch) for k, p in found.items()} == {
            "a": ("sys", "diff"),
            "b": ("sys", ""),  # a null patch is the empty patch
        }
