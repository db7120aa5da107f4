"""``hf:`` evaluation: episodes running in threads share one local model, and their turns that wait together go
through one batched ``generate`` (agent.batching.BatchingPolicy); the model sits on the GPU when there is one."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from swe_srl.agent.batching import BatchingPolicy
from swe_srl.agent.models import HFPolicy, model_device
from swe_srl.errors import PolicyError
from swe_srl.train.data import read_samples
from swe_srl.train.tiny.model import sample_texts
from tests.train.qwen_checkpoint import save_qwen_checkpoint

pytest.importorskip("transformers")


class CountingHF(HFPolicy):
    """The real HF policy, counting its batched generate calls."""

    calls: list[int]

    def generate_batch(self, batch):
        self.calls = [*getattr(self, "calls", []), len(batch)]
        return super().generate_batch(batch)


class Failing(HFPolicy):
    def generate_batch(self, batch):
        raise PolicyError("out of memory")


def _conversation(k: int) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": "You fix bugs with bash."},
        {"role": "user", "content": f"task {k}: ls"},
    ]


def test_concurrent_turns_share_one_generate(samples_file: Path, tmp_path: Path):
    model = save_qwen_checkpoint(tmp_path / "qwen", sample_texts(read_samples(samples_file)))
    policy = CountingHF(str(model), max_new_tokens=6)
    assert policy.model.device.type == model_device()  # cuda when a GPU is visible
    conversations = [_conversation(k) for k in range(4)]
    expected = policy.generate_batch(conversations)  # the same four turns, batched directly
    policy.calls = []
    batching = BatchingPolicy(policy, max_batch=4, wait_s=5.0)
    outputs: dict[int, str] = {}

    def episode(k: int) -> None:
        outputs[k] = batching.generate(conversations[k])

    threads = [threading.Thread(target=episode, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert policy.calls == [4] and batching.batch_sizes == [4]  # four episodes' turns, one generate
    assert [outputs[k] for k in range(4)] == expected
    assert batching.name == policy.name and batching.count_tokens("ls -la") == policy.count_tokens("ls -la")


def test_a_lone_turn_is_not_held_back_and_errors_reach_the_caller(samples_file: Path, tmp_path: Path):
    model = save_qwen_checkpoint(tmp_path / "qwen", sample_texts(read_samples(samples_file)))
    batching = BatchingPolicy(HFPolicy(str(model), max_new_tokens=4), max_batch=8, wait_s=0.05)
    assert isinstance(batching.generate(_conversation(0)), str) and batching.batch_sizes == [1]
    failing = BatchingPolicy(Failing(str(model), max_new_tokens=4), wait_s=0.05)
    with pytest.raises(PolicyError, match="out of memory"):
        failing.generate(_conversation(0))
