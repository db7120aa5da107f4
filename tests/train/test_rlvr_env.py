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
from tests.train.launching import launch_fsdp_train, sets  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docker"))

pytestmark = [pytest.mark.train, pytest.mark.docker]
TINY = [
    "tiny.hidden_size=32",
    "tiny.vocab_size=300",
    "tiny.warmup_steps=4",
    "eval.max_samples=0",
    "tiny.slots=false",
]


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


def test_rlvr_under_the_shipped_fsdp_config_on_two_processes(
    tiny_tasks: Path, srl_checkpoint: Path, tmp_path: Path
):
    """``accelerate launch --config_file configs/accelerate/fsdp.yaml --num_processes 2`` of ``--stage rlvr``: each
    process plays its episodes on whole weights gathered from the shards, and the 2 instances are repeated to fill
    a generation batch of 4 prompts (before, TRL drew no batch from them and the run trained 0 steps)."""
    out = tmp_path / "rlvr-fsdp"
    options = ["trl.max_steps=2", "trl.save_steps=2", "rlvr.max_turns=2", "rlvr.max_new_tokens=12"]
    options += ["trl.per_device_train_batch_size=4", "trl.gradient_accumulation_steps=2"]
    options += ["trl.num_generations=4", "dynamic_sampling.max_rounds=1", "eval.max_samples=0"]
    args = ["--stage", "rlvr", "--init", str(srl_checkpoint), "--tasks", str(tiny_tasks), "-o", str(out)]
    launch_fsdp_train([*args, *sets(options)], port=29521, timeout=1200)
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["steps"] == 2
    assert summary["episodes"] == 16  # this process: 2 steps × 2 micro-batches × 4 episodes
    assert (out / "checkpoint-2" / "pytorch_model_fsdp.bin").is_file()  # sharded, as on GPUs
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert len([r for r in records if "reward" in r]) == 2


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


SCRIPTS = {
    "calc.add": [
        "fix add</think>\n```bash\nsed -i 's/return a - b/return a + b/' calc.py && echo EDITED\n```<|im_end|>",
        "done</think>\n```bash\nsubmit\n```<|im_end|>",
    ],
    "calc.mul": ["no action here<|im_end|>", "done</think>\n```bash\nsubmit\n```<|im_end|>"],
}


class ScriptedBatch:
    """A batched policy: each context's next scripted turn (by the task its prompt names), the batch sizes kept."""

    def __init__(self, tok):
        self.tok, self.turns, self.sizes = tok, {}, []

    def __call__(self, batch):
        self.sizes.append(len(batch))
        out = []
        for ids in batch:
            task = next(t for t in SCRIPTS if t in self.tok.decode(ids))
            turn = self.turns[task] = self.turns.get(task, -1) + 1
            out.append(self.tok(SCRIPTS[task][turn])["input_ids"])
        return out


def test_parallel_episodes_record_what_each_episode_records_alone(tiny_tasks: Path, srl_checkpoint: Path):
    """Two episodes in lock-step (one batched call per turn) keep exactly the tokens, masks and rewards each keeps
    when played alone, one context per call; the per-turn format counts come along."""
    from transformers import AutoTokenizer

    from swe_srl.benchmark.instances import load_instances
    from swe_srl.train.rlvr import EnvEpisodeRunner
    from swe_srl.train.rlvr_run import rlvr_rows

    tok = AutoTokenizer.from_pretrained(srl_checkpoint)
    instances = load_instances(str(tiny_tasks))
    rows = rlvr_rows(load_config(None, [], stage="srl"), instances)
    runs = {}
    for parallel in (1, 2):
        runner = EnvEpisodeRunner(tok, instances, think_prefix="<think>", parallel=parallel)
        policy = ScriptedBatch(tok)
        try:
            runs[parallel] = (runner.run_batch(rows, policy), policy.sizes, len(runner.envs))
        finally:
            runner.close()
    (alone, alone_sizes, alone_envs), (together, sizes, envs) = runs[1], runs[2]
    assert (alone_sizes, alone_envs, sizes, envs) == ([1, 1, 1, 1], 1, [2, 2], 2)
    for a, b in zip(alone, together, strict=True):
        assert (a.prompt_ids, a.completion_ids, a.env_mask) == (b.prompt_ids, b.completion_ids, b.env_mask)
        assert a.reward == b.reward
    add, mul = together
    assert (add.reward, mul.reward) == (1.0, 0.0)
    assert (add.info["format_ok"], add.info["turns"], mul.info["format_ok"], mul.info["turns"]) == (
        2,
        2,
        1,
        2,
    )


def test_batched_generation_matches_one_context_per_call(srl_checkpoint: Path):
    """Left-padded batched greedy turns are the turns each context gets alone, each cut after its end token."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from swe_srl.agent.models import generate_ids

    tok = AutoTokenizer.from_pretrained(srl_checkpoint)
    model = AutoModelForCausalLM.from_pretrained(srl_checkpoint).eval()
    contexts = [tok("calc.add(2, 3) is wrong")["input_ids"], tok("x")["input_ids"]]
    assert len(contexts[0]) > len(contexts[1])
    batched = generate_ids(model, tok, contexts, 12)
    alone = [generate_ids(model, tok, [c], 12)[0] for c in contexts]
    assert batched == alone and all(0 < len(t) <= 12 for t in batched)


def test_rlvr_logs_per_turn_format_and_held_out_resolve_rate(
    tiny_tasks: Path, srl_checkpoint: Path, tmp_path: Path
):
    """calc-add trains, calc-mul is held out (split: test): the format metric is the share of model turns that
    parse, and the greedy held-out episodes are graded into eval/resolve_rate (metrics.jsonl, summary.json)."""
    records = [json.loads(line) for line in tiny_tasks.read_text().splitlines()]
    for record in records:
        record["split"] = "test" if record["instance_id"] == "tiny__calc-mul" else "train"
    tasks = tmp_path / "split.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    out = tmp_path / "rlvr"
    sets = [*TINY, "trl.max_steps=1", "rlvr.max_turns=2", "rlvr.max_new_tokens=12"]
    sets += ["dynamic_sampling.max_rounds=1", "trl.per_device_train_batch_size=2", "rlvr.instances=1"]
    cfg = load_config(None, sets, stage="rlvr", init=str(srl_checkpoint), tasks=str(tasks), output=str(out))
    summary = run_training(cfg)
    assert summary["instances"] == ["tiny__calc-add"] and summary["held_out"] == ["tiny__calc-mul"]
    assert summary["episodes"] == 2 and summary["parallel"] == 4
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    [train] = [r for r in metrics if "reward" in r]
    assert 0.0 <= train["format_compliance"] <= 1.0
    [evaluation] = [r for r in metrics if "eval/resolve_rate" in r]
    assert evaluation["eval/instances"] == 1 and evaluation["eval/resolve_rate"] in (0.0, 1.0)
    assert summary["eval/resolve_rate"] == evaluation["eval/resolve_rate"]


PER_ACTION_TURNS = [
    "away</think>\n```bash\ncd /tmp && pwd\n```<|im_end|>",
    "fix add</think>\n```bash\npwd && sed -i 's/return a - b/return a + b/' calc.py\n```<|im_end|>",
    "done</think>\n```bash\nsubmit\n```<|im_end|>",
]


def test_rlvr_with_per_action_shell(tiny_tasks: Path, srl_checkpoint: Path, tmp_path: Path):
    """``rlvr.shell: per-action`` from a config file: a one-step run trains on the episodes' outcome rewards and
    records the shell; its prompts say each command is a fresh bash, and its env runs them so: after ``cd /tmp`` the
    next command starts in /testbed, where the relative fix lands and resolves (the episode records the shell)."""
    from transformers import AutoTokenizer

    from swe_srl.benchmark.instances import load_instances
    from swe_srl.core.prompts import PER_ACTION_NOTE
    from swe_srl.core.shells import PER_ACTION
    from swe_srl.train.rlvr import EnvEpisodeRunner
    from swe_srl.train.rlvr_run import rlvr_env_kwargs, rlvr_rows

    config = tmp_path / "rlvr.yaml"
    config.write_text("rlvr:\n  shell: per-action\n", encoding="utf-8")
    out = tmp_path / "rlvr"
    sets = [*TINY, "trl.max_steps=1", "rlvr.max_turns=2", "rlvr.max_new_tokens=12", "rlvr.instances=1"]
    sets += ["dynamic_sampling.max_rounds=1", "trl.per_device_train_batch_size=2", "rlvr.eval_instances=0"]
    cfg = load_config(
        config, sets, stage="rlvr", init=str(srl_checkpoint), tasks=str(tiny_tasks), output=str(out)
    )
    summary = run_training(cfg)
    assert (summary["steps"], summary["episodes"], summary["shell"]) == (1, 2, PER_ACTION)
    assert "shell: per-action" in (out / "config.yaml").read_text(encoding="utf-8")
    [train] = [r for r in map(json.loads, (out / "metrics.jsonl").read_text().splitlines()) if "reward" in r]
    assert 0.0 <= train["reward"] <= 1.0

    tok = AutoTokenizer.from_pretrained(srl_checkpoint)
    instances = load_instances(str(tiny_tasks))
    row = rlvr_rows(cfg, instances)[0]
    assert row["instance_id"] == "tiny__calc-add" and PER_ACTION_NOTE in row["prompt"][0]["content"]
    runner = EnvEpisodeRunner(tok, instances, think_prefix="<think>", env_kwargs=rlvr_env_kwargs(cfg))
    turns = iter(PER_ACTION_TURNS)
    try:
        result = runner.run(row, lambda ids: tok(next(turns))["input_ids"])
    finally:
        runner.close()
    episode = result.episode
    assert [s.observation.splitlines()[0] for s in episode.steps[:2]] == ["/tmp", "/testbed"]
    assert episode.trajectory.shell == PER_ACTION and PER_ACTION_NOTE in tok.decode(result.prompt_ids)
    assert (result.reward, result.info["grade_status"]) == (1.0, "resolved")
