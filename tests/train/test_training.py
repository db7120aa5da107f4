"""Tiny-model training through the real pipeline: parameters change, metrics logged, checkpoints reload,
zero-variance groups give no gradient, resume continues."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from conftest import TINY, ConstantReward, StandInReward  # noqa: E402

from swe_srl.train.config import load_config  # noqa: E402
from swe_srl.train.run import run_training  # noqa: E402

pytestmark = pytest.mark.train

FAST = [
    *TINY,
    "trl.save_steps=2",
    "eval.every=0",
    "eval.max_samples=2",
]


def _weights(path: Path) -> dict[str, torch.Tensor]:
    from transformers import AutoModelForCausalLM

    return {k: v.detach().clone() for k, v in AutoModelForCausalLM.from_pretrained(path).state_dict().items()}


def test_tiny_training_end_to_end(samples_file: Path, tmp_path: Path):
    out = tmp_path / "run"
    cfg = load_config(
        None,
        [*FAST, "trl.max_steps=2", "advantage=rloo", "wise_ft=0.5"],
        samples=str(samples_file),
        output=str(out),
    )
    summary = run_training(cfg, reward_func=StandInReward(), command="run-1")
    assert summary["steps"] == 2 and summary["command"] == "run-1"
    assert summary["format_warmup"]["steps"] == 4
    before, after = _weights(out / "tiny-model"), _weights(out / "checkpoint-2")
    assert any(not torch.equal(before[k], after[k]) for k in before), "no parameter changed"
    # final/ is the WiSE-FT mix of the start and the trained weights (wise_ft), the checkpoint as trained
    assert summary["wise_ft"] == 0.5
    final = _weights(out / "final")
    for key, weight in final.items():
        torch.testing.assert_close(weight, (before[key] + after[key]) / 2, msg=key)
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in records if "reward" in r]
    assert len(train) == 2
    for key in (
        "reward",
        "kl",
        "entropy",
        "completions/mean_length",
        "format_compliance",
        "dynamic_sampling/kept_ratio",
        "reward_components/format",
        "learning_rate",
    ):
        assert key in train[-1], key
    assert any("eval/mean_reward" in r for r in records)
    assert (out / "training_curves.png").stat().st_size > 1000
    assert json.loads((out / "summary.json").read_text())["steps"] == 2
    card = (out / "final" / "README.md").read_text()
    for needle in (
        "embedded tiny Qwen2-shaped model",  # the base model
        f"file `{samples_file}`",  # the data and its counts
        "35 train (7 instances), 5 held out (1 instances)",
        "Supervised Reinforcement Learning (SRL)",  # the method
        "advantage: `rloo`",
        "ε = 0.1",
        "KL β = 0.05",
        "SFT term λ = 0.0",
        "final weights: WiSE-FT, 0.5 × start + 0.5 × trained",
        f"**{summary['eval'][-1]['mean_reward']:+.3f}** at step 2",  # final held-out metric
        "```\nrun-1\n```",  # the command
        "trl 1.16",
    ):
        assert needle in card, needle
    assert "fine-tuned version of" not in (out / "README.md").read_text()  # not TRL's template
    # resume continues from checkpoint-2; the earlier evaluation stays in the summary
    cfg = load_config(
        None,
        [*FAST, "trl.max_steps=3", "wise_ft=0.5"],
        samples=str(samples_file),
        output=str(out),
        resume=True,
    )
    resumed = run_training(cfg, reward_func=StandInReward(), command="run-2")
    assert resumed["steps"] == 3 and [e["step"] for e in resumed["eval"]] == [2, 3]
    # final/ after the resume: the resumed GRPO's checkpoint mixed with the same start
    trained, final = _weights(out / "checkpoint-3"), _weights(out / "final")
    assert any(not torch.equal(trained[k], after[k]) for k in trained)
    for key, weight in final.items():
        torch.testing.assert_close(weight, (before[key] + trained[key]) / 2, msg=key)
    steps = [
        json.loads(x)["step"] for x in (out / "metrics.jsonl").read_text().splitlines() if '"reward"' in x
    ]
    assert steps == [1, 2, 3]


def test_zero_variance_groups_contribute_no_gradient(samples_file: Path, tmp_path: Path):
    out = tmp_path / "const"
    overrides = [*FAST, "trl.max_steps=1", "dynamic_sampling.max_rounds=2", "eval.max_samples=0"]
    overrides.append("loss.replay_weight=0")  # the tiny default's replay anchor would move it on its own
    cfg = load_config(None, overrides, samples=str(samples_file), output=str(out))
    run_training(cfg, reward_func=ConstantReward())
    before, after = _weights(out / "tiny-model"), _weights(out / "final")
    assert all(torch.equal(before[k], after[k]) for k in before), "a dropped group moved the policy"
    record = next(json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines() if "reward" in x)
    assert record["dynamic_sampling/kept_ratio"] == 0.0
    assert record["dynamic_sampling/rounds"] == 2.0


def test_lora_trains_adapters_only_in_srl_and_rlvr(samples_file: Path, tmp_path: Path):
    """--lora: SRL saves a peft adapter (the base weights never move) and the RLVR stage wraps its policy the same."""
    from peft import PeftModel

    from swe_srl.train.rlvr_run import _trainer

    out = tmp_path / "lora"
    sets = [*FAST, "trl.max_steps=1", "eval.max_samples=0", "lora.enabled=true", "lora.r=4"]
    cfg = load_config(None, sets, samples=str(samples_file), output=str(out))
    run_training(cfg, reward_func=StandInReward())
    assert (out / "final" / "adapter_config.json").is_file()
    adapter = json.loads((out / "final" / "adapter_config.json").read_text())
    assert adapter["r"] == 4 and Path(adapter["base_model_name_or_path"]) == out / "tiny-model"

    rows = [{"prompt": [{"role": "user", "content": "fix it"}], "instance_id": "x"}]
    rlvr = load_config(
        None, ["lora.enabled=true"], stage="rlvr", init=str(out / "tiny-model"), output=str(tmp_path)
    )
    trainer, _ = _trainer(rlvr, rows, lambda tokenizer, prefix: None, None)
    assert isinstance(trainer.model, PeftModel)
    trainable = {n for n, p in trainer.model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n for n in trainable)


def test_model_path_uses_the_method_defaults_and_overrides(samples_file: Path, tmp_path: Path):
    """--model (a local HF checkpoint): the paper preset's TRL values apply (lr 5e-7 constant, β 0, 8 generations,
    clip 1.0) unless overridden, prompts are not cut to the tiny context, and training runs."""
    from swe_srl.train.config import TinyOptions
    from swe_srl.train.data import read_samples
    from swe_srl.train.policy import grpo_args
    from swe_srl.train.run import build_trainer
    from swe_srl.train.tiny.model import make_tiny_policy, sample_texts

    plain = TinyOptions(slots=False)  # a stand-in for a real checkpoint: no slot tokens
    model = make_tiny_policy(sample_texts(read_samples(samples_file)), tmp_path / "hf-model", plain)
    cfg = load_config(None, [], model=str(model), samples=str(samples_file), output=str(tmp_path / "a"))
    args = grpo_args(cfg)
    assert (args.learning_rate, args.beta, args.num_generations, args.max_grad_norm) == (5e-7, 0.0, 8, 1.0)
    assert args.lr_scheduler_type == "constant" and args.max_completion_length == 512

    small = [
        "trl.num_generations=4",
        "trl.per_device_train_batch_size=8",
        "trl.gradient_accumulation_steps=1",
    ]
    small += ["trl.max_completion_length=8", "trl.max_steps=1", "eval.max_samples=0", "trl.save_steps=1"]
    cfg = load_config(None, small, model=str(model), samples=str(samples_file), output=str(tmp_path / "b"))
    summary = run_training(cfg, reward_func=StandInReward())
    assert summary["steps"] == 1 and summary["model"] == str(model) and "format_warmup" not in summary
    long_row = max(read_samples(samples_file), key=lambda r: len(r["prompt"]))
    rows = [long_row] * 8  # one generation batch (8 prompts): fewer are refused
    trainer, _ = build_trainer(cfg, rows, [], StandInReward())
    assert trainer.train_dataset[0]["prompt"] == long_row["prompt"]  # whole prompt, no tiny-context cut
    cut = load_config(
        None,
        [*small, "max_prompt_tokens=40"],
        model=str(model),
        samples=str(samples_file),
        output=str(tmp_path / "c"),
    )
    trainer, _ = build_trainer(cut, rows, [], StandInReward())
    prompt = trainer.train_dataset[0]["prompt"]
    assert prompt != long_row["prompt"] and len(prompt) < len(long_row["prompt"])  # fitted (core.prompts)
    assert (
        prompt[0] == long_row["prompt"][0] and prompt[-2] == long_row["prompt"][-2]
    )  # system, latest action kept
    first = next(
        json.loads(x) for x in (tmp_path / "b" / "metrics.jsonl").read_text().splitlines() if "reward" in x
    )
    assert first["learning_rate"] == 5e-7
    # swap_library_names (the tiny start's, here an --init of the tiny checkpoint): GRPO trains on the samples with
    # each library's own names swapped for another's
    rows = [r for r in read_samples(samples_file) if r.get("split") != "test"]
    swap = load_config(
        None,
        [*small, "swap_library_names=1.0"],
        init=str(model),
        samples=str(samples_file),
        output=str(tmp_path / "d"),
    )
    trainer, _ = build_trainer(swap, rows, [], StandInReward())
    swapped = [trainer.train_dataset[k]["expert_action"] for k in range(len(rows))]
    assert sum(a != r["expert_action"] for a, r in zip(swapped, rows, strict=True)) >= len(rows) // 2
    for row, action in zip(rows, swapped, strict=True):
        own = row["instance_id"].split("__")[1].split("-")[0]  # demo__pkg3-3: pkg3
        if own in row["expert_action"]:
            assert own not in action  # another library's name in its place
        assert (
            action.split()[0] == row["expert_action"].split()[0]
        )  # grep, cat, sed, python, ls: every library's
