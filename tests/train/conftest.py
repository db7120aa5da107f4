"""Fixtures for the training tests: project-made step samples and a stand-in reward (until swe_srl.rewards lands)."""

from __future__ import annotations

import difflib
import json
import random
from pathlib import Path

import pytest

from swe_srl.core.actions import parse_output
from swe_srl.errors import ActionFormatError

MODULES = ["utils", "core", "parser", "models", "io", "cli", "config", "cache"]
TEMPLATES = [
    "grep -rn 'def {fn}' src/{pkg}/",
    "cat src/{pkg}/{mod}.py",
    "sed -n '1,40p' src/{pkg}/{mod}.py",
    "sed -i 's/return {fn}(x)/return {fn}(x, strict=True)/' src/{pkg}/{mod}.py",
    "python -m pytest tests/test_{mod}.py -x -q",
    "ls src/{pkg}",
]


def make_samples(n_instances: int = 8, seed: int = 0, oracle: bool = False) -> list[dict]:
    """Plausible decomposed samples: each instance is a 5-step grep/cat/sed/pytest trajectory."""
    rng = random.Random(seed)
    rows = []
    for i in range(n_instances):
        pkg, mod, fn = f"pkg{i}", rng.choice(MODULES), rng.choice(["load", "parse", "render", "merge"])
        actions = [t.format(pkg=pkg, mod=mod, fn=fn) for t in rng.sample(TEMPLATES, 5)]
        problem = f"Calling {fn}() in {pkg}.{mod} raises a TypeError for empty input. Fix it."
        user = problem
        if oracle:
            user += f"\n\nOracle files:\n--- src/{pkg}/{mod}.py\ndef {fn}(x):\n    return x[0]\n"
        history: list[dict] = []
        for step, action in enumerate(actions):
            rows.append(
                {
                    "prompt": [
                        {"role": "system", "content": "You fix bugs with bash."},
                        {"role": "user", "content": user},
                        *history,
                    ],
                    "expert_action": action,
                    "expert_thought": f"step {step}: look at {mod}",
                    "instance_id": f"demo__{pkg}-{i}",
                    "step": step,
                    "num_steps": len(actions),
                    "trajectory_hash": f"h{i}",
                    "split": "test" if i == n_instances - 1 else "train",
                    "oracle_files": [f"src/{pkg}/{mod}.py"] if oracle else [],
                }
            )
            history += [
                {"role": "assistant", "content": f"```bash\n{action}\n```"},
                {"role": "user", "content": f"(output of step {step})"},
            ]
    return rows


TINY = [
    "tiny.hidden_size=32",
    "tiny.vocab_size=300",
    "tiny.warmup_steps=4",  # the format warm-up runs, briefly
    "trl.num_generations=4",
    "trl.per_device_train_batch_size=8",
    "trl.max_completion_length=8",
]
"""Overrides that make the tiny model's training steps cheap (each test adds its own)."""


class ConstantReward:
    """Every completion scores the same: every group has zero variance."""

    __name__ = "constant"

    def __call__(self, prompts, completions, **columns):
        return [0.5] * len(completions)


class StandInReward:
    """Test-only reward: −1 on format error, else similarity of the action to the expert action."""

    __name__ = "stand_in_reward"

    def __init__(self) -> None:
        self.last_components: list[dict[str, float]] = []

    def __call__(self, prompts, completions, expert_action, **columns):
        out, self.last_components = [], []
        for completion, expert in zip(completions, expert_action, strict=True):
            text = completion if isinstance(completion, str) else completion[0]["content"]
            try:
                action = parse_output(text).action
            except ActionFormatError:
                out.append(-1.0)
                self.last_components.append({"format": 0.0})
                continue
            sim = difflib.SequenceMatcher(None, action, expert).ratio()
            out.append(sim)
            self.last_components.append({"format": 1.0, "similarity": sim})
        return out


@pytest.fixture
def samples_file(tmp_path: Path) -> Path:
    path = tmp_path / "samples.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in make_samples()), encoding="utf-8")
    return path
