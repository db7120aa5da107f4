"""SRL → RLVR for real: an SRL checkpoint of the tiny model plays multi-turn SWEEnv episodes (outcome reward) that
feed TRL's GRPO through ``rollout_func``; metrics and a checkpoint that reloads come out."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")

from conftest import make_samples  # noqa: E402

from swe_srl.train.config import load_config  # noqa: E402
from swe_srl.train.run import run_training  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docker"))

pytestmark = [pytest.mark.train, pytest.mark.docker]
TINY = ["tiny.hidden_size=32", "tiny.vocab_size=300", "tiny.warmup_steps=4", "eval.max_samples=0"]


@pytest.fixture(scope="module")
def tiny_tasks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The two-instance calc dataset of the docker tests, images built (skip when no engine answers)."""
    from agent_tasks import make_tiny_dataset

    from swe_srl.benchmark.instances import load_instances
    from swe_srl.errors import DockerUnavailable
    from swe_srl.infra.engine import docker_client
    from swe_srl.infra.recipes import instance_image

    try:
        docker_client()
    except DockerUnavailable as exc:
        pytest.skip(f"no Docker engine answers: {exc}")
    path = make_tiny_dataset(tmp_path_factory.mktemp("rlvr-tasks"))
    for instance in load_instances(str(path)):
        instance_image(instance)
    return path


@pytest.fixture(scope="module")
def srl_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("srl")
    samples = root / "samples.jsonl"
    samples.write_text("".join(json.dumps(r) + "\n" for r in make_samples()), encoding="utf-8")
    sets = [*TINY, "trl.max_steps=1", "trl.num_generations=2", "trl.per_device_train_batch_size=4"]
    sets += ["trl.max_completion_length=8", "reward=srl"]
    run_training(load_config(None, sets, samples=str(samples), output=str(root / "run")))
    return root / "run" / "final"


def test_rlvr_episodes_train_from_srl_checkpoint(tiny_tasks: Path, srl_checkpoint: Path, tmp_path: Path):
    from transformers import AutoModelForCausalLM

    out = tmp_path / "rlvr"
    sets = [*TINY, "trl.max_steps=2", "rlvr.max_turns=2", "rlvr.max_new_tokens=12"]
    sets += ["dynamic_sampling.max_rounds=1", "trl.save_steps=2"]
    cfg = load_config(
        None, sets, stage="rlvr", init=str(srl_checkpoint), tasks=str(tiny_tasks), output=str(out)
    )
    summary = run_training(cfg)
    assert summary["stage"] == "rlvr" and summary["steps"] == 2
    assert summary["episodes"] == 8  # 2 steps × 2 prompts × 2 episodes each
    assert set(summary["instances"]) == {"tiny__calc-add", "tiny__calc-mul"}
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in records if "reward" in r]
    assert len(train) == 2 and all(0.0 <= r["reward"] <= 1.0 for r in train)
    assert (out / "checkpoint-2").is_dir()
    model = AutoModelForCausalLM.from_pretrained(out / "final")
    assert model.config.vocab_size > 0


def test_env_runner_masks_observations_and_grades_submit(tiny_tasks: Path, srl_checkpoint: Path):
    """Scripted turns (fix, then submit): observation tokens are masked 0, the resolved patch scores 1.0."""
    from transformers import AutoTokenizer

    from swe_srl.benchmark.instances import load_instances
    from swe_srl.train.rlvr import EnvEpisodeRunner, prompt_key
    from swe_srl.train.rlvr_run import rlvr_rows

    tok = AutoTokenizer.from_pretrained(srl_checkpoint)
    instances = load_instances(str(tiny_tasks))
    rows = rlvr_rows(load_config(None, [], stage="srl"), instances)
    turns = iter(
        [
            "fix add</think>\n```bash\nsed -i 's/return a - b/return a + b/' calc.py && echo EDITED\n```<|im_end|>",
            "done</think>\n```bash\nsubmit\n```<|im_end|>",
        ]
    )
    runner = EnvEpisodeRunner(
        tok,
        instances,
        prompt_ids={prompt_key(r["prompt"]): r["instance_id"] for r in rows},
        think_prefix="<think>",
    )
    try:
        result = runner.run({"prompt": rows[0]["prompt"]}, lambda ids: tok(next(turns))["input_ids"])
    finally:
        runner.close()
    assert result.reward == 1.0 and result.info["grade_status"] == "resolved"
    observation = tok.decode(
        [t for t, m in zip(result.completion_ids, result.env_mask, strict=True) if not m]
    )
    model_text = tok.decode([t for t, m in zip(result.completion_ids, result.env_mask, strict=True) if m])
    assert "EDITED" in observation and "EDITED" not in model_text.replace("echo EDITED", "")
    assert "submit" in model_text and "submit" not in observation
