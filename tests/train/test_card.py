"""The model card says what the run trained on: the swapped share, and the names' pool only where names were swapped."""

from types import SimpleNamespace

from swe_srl.train.card import model_card
from swe_srl.train.config import load_config

DATA = {
    "trajectory_sources": ["bundled:train"],
    "trajectories": 2,
    "trajectory_instances": 2,
    "train_samples": 10,
    "train_instances": 2,
    "test_samples": 4,
    "test_instances": 1,
    "samples_file": "samples.jsonl",
}
ARGS = SimpleNamespace(
    beta=0.0, loss_type="grpo", epsilon=0.2, epsilon_high=None, entropy_coef=0.0, num_generations=4,
    temperature=1.0, max_completion_length=32, learning_rate=3e-4, lr_scheduler_type="cosine",
)  # fmt: skip


def _data_line(config) -> str:
    card = model_card(config, ARGS, "tiny", DATA, {}, "swe-srl train --oracle-files")
    return next(line for line in card.splitlines() if "library names swapped" in line)


def test_card_names_the_pool_only_when_names_are_swapped():
    assert _data_line(load_config(None, [])) == (
        "- library names swapped (swe_srl.train.tiny.augment) in 100% of the training samples (new names from: stdlib)"
    )
    assert _data_line(load_config(None, ["swap_pool=train"])).endswith("(new names from: train)")
    plain = _data_line(load_config(None, [], method="sft"))  # the SFT baseline imitates the plain samples
    assert plain == "- library names swapped (swe_srl.train.tiny.augment) in 0% of the training samples"


def test_card_names_the_mixed_rewards_share():
    def reward_line(config) -> str:
        card = model_card(config, ARGS, "tiny", DATA, {}, "swe-srl train --oracle-files")
        return next(line for line in card.splitlines() if line.startswith("- reward:"))

    assert reward_line(load_config(None, [])) == (
        "- reward: `mixed` (0.5 × paper similarity + 0.5 × layered) (effect layer: off)"
    )
    assert "(0.75 × paper similarity + 0.25 × layered)" in reward_line(load_config(None, ["reward_mix=0.75"]))
    assert reward_line(load_config(None, [], reward="srl")) == "- reward: `srl`"
