"""Training config: YAML + dotted overrides; unknown keys and bad values are named."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("trl")

from swe_srl.errors import ConfigError  # noqa: E402
from swe_srl.train.config import load_config  # noqa: E402

pytestmark = pytest.mark.train


def test_yaml_then_overrides(tmp_path: Path):
    path = tmp_path / "c.yaml"
    path.write_text("advantage: rloo\ntrl:\n  beta: 0.0\n  learning_rate: 1.0e-5\n", encoding="utf-8")
    cfg = load_config(path, ["trl.learning_rate=5e-6", "dynamic_sampling.epsilon=0.05", "lora.enabled=true"])
    assert cfg.advantage == "rloo"
    assert (cfg.trl["beta"], cfg.trl["learning_rate"]) == (0.0, 5e-6)  # over the preset's
    assert cfg.trl["num_generations"] == 8  # the rest: the cpu-tiny preset's
    assert cfg.dynamic_sampling.epsilon == 0.05 and cfg.lora.enabled


ERROR_CASES = [
    # (overrides, text the error must contain)
    (["advantag=rloo"], "'advantag'"),  # unknown top-level key
    (["dynamic_sampling.epsilonn=0.2"], "'dynamic_sampling.epsilonn'"),  # unknown nested key
    (["trl.num_generationz=4"], "trl.num_generationz"),  # unknown TRL option
    (["advantage=ppo"], "'advantage'"),  # bad enum value
    (["dynamic_sampling.epsilon=-1"], "'dynamic_sampling.epsilon'"),  # out of range
    (["noequals"], "noequals"),  # malformed override
    (["stage=rlvr"], "--init"),  # rlvr needs a checkpoint
]


@pytest.mark.parametrize(("overrides", "needle"), ERROR_CASES)
def test_errors_name_the_key(overrides, needle):
    with pytest.raises(ConfigError) as info:
        load_config(None, overrides)
    assert needle in str(info.value)


def test_unknown_key_in_yaml_names_file_and_key(tmp_path: Path):
    path = tmp_path / "bad.yaml"
    path.write_text("lora:\n  rank: 8\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"'lora\.rank'.*bad\.yaml|bad\.yaml.*'lora\.rank'"):
        load_config(path)


WRONG_TYPES = [
    # (override, the type named in the message)
    ("trl.learning_rate=abc", "float"),
    ("trl.max_steps=2.5", "int"),
    ("trl.bf16=maybe", "bool"),
    ("trl.lr_scheduler_kwargs=[1, 2]", "dict"),
    ("trl.log_level=loud", "one of"),
]


@pytest.mark.parametrize(("override", "expected"), WRONG_TYPES)
def test_wrong_typed_trl_values_name_key_value_and_type(override, expected):
    key, _, value = override.partition("=")
    with pytest.raises(ConfigError) as info:
        load_config(None, [override])
    message = str(info.value)
    assert "\n" not in message and key in message and expected in message
    assert value.split(",")[0].strip("[") in message


@pytest.mark.parametrize(
    "key", ["output_dir", "resume_from_checkpoint", "eval_strategy", "remove_unused_columns"]
)
def test_trl_options_swe_srl_owns_are_refused_with_the_reason(key):
    from swe_srl.train.trl_options import REFUSED

    with pytest.raises(ConfigError) as info:
        load_config(None, [f"trl.{key}=x"])
    assert f"trl.{key}" in str(info.value) and REFUSED[key] in str(info.value)


def test_rloo_has_no_normalize_then_sum():
    with pytest.raises(ConfigError, match="multi_objective_aggregation"):
        load_config(None, ["advantage=rloo", "trl.multi_objective_aggregation=normalize_then_sum"])


def test_use_vllm_without_vllm_fails_at_config_time():
    from swe_srl.train.trl_options import vllm_available

    if vllm_available():
        pytest.skip("vLLM is installed here")
    with pytest.raises(ConfigError, match=r"trl\.use_vllm=true needs vLLM.*pip install vllm"):
        load_config(None, ["trl.use_vllm=true", "trl.vllm_mode=server"])


def test_report_to_a_logger_that_is_not_installed_fails_at_config_time():
    import importlib.util

    if importlib.util.find_spec("swanlab"):
        pytest.skip("swanlab is installed here")
    with pytest.raises(
        ConfigError, match="trl.report_to=swanlab needs the swanlab package: pip install swanlab"
    ):
        load_config(None, ["trl.report_to=[tensorboard, swanlab]"])


def test_sft_weight_is_for_the_srl_stage():
    with pytest.raises(ConfigError, match="loss.sft_weight"):
        load_config(None, ["loss.sft_weight=0.1"], stage="rlvr", init="ckpt")
    assert load_config(None, ["loss.sft_weight=0.1"]).loss.sft_weight == 0.1
    with pytest.raises(ConfigError, match="loss.replay_weight is for the SRL stage"):
        load_config(None, ["loss.replay_weight=0.1"], stage="rlvr", init="ckpt")
    assert (
        load_config(None, [], stage="rlvr", init="ckpt").loss.replay_weight == 0
    )  # the tiny default: SRL only
    assert load_config(None, [], method="sft").loss.replay_weight == 0
    assert load_config(None, []).loss.replay_weight == 0.1


def test_trl_version_outside_the_tested_range_is_refused(monkeypatch):
    from importlib.metadata import version

    from swe_srl.errors import TrainingError
    from swe_srl.train.trl_options import TESTED_RANGE, check_trl_version

    assert check_trl_version() == version("trl")
    monkeypatch.delenv("SWE_SRL_ANY_TRL", raising=False)
    for other in ("1.17.0", "2.0.1", "0.9.6"):
        with pytest.raises(TrainingError, match=rf"TRL {other} is installed.*trl{TESTED_RANGE}"):
            check_trl_version(other)
    monkeypatch.setenv("SWE_SRL_ANY_TRL", "1")
    assert check_trl_version("1.17.0") == "1.17.0"


def test_pyproject_pins_the_tested_trl_range():
    pyproject = (Path(__file__).parents[2] / "pyproject.toml").read_text(encoding="utf-8")
    from swe_srl.train.trl_options import TESTED_RANGE

    assert f'"trl{TESTED_RANGE}"' in pyproject


def test_presets_are_the_bottom_layer(tmp_path: Path):
    from swe_srl.train.config import CPU
    from swe_srl.train.presets import REAL_TRL_DEFAULTS
    from swe_srl.train.tiny.preset import TINY_TRL_DEFAULTS
    from swe_srl.train.trl_options import vllm_available

    tiny, named = load_config(None, []), load_config(None, [], preset="cpu-tiny")
    assert (tiny.model, tiny.preset) == (
        "tiny",
        "cpu-tiny",
    ) and tiny == named  # --model tiny, cpu-tiny: the default
    assert {k: tiny.trl[k] for k in TINY_TRL_DEFAULTS} == TINY_TRL_DEFAULTS  # written out in cfg.trl
    small = load_config(None, [], preset="cpu-small", model="m")
    assert small.trl["max_steps"] == 20 and small.trl["num_generations"] == 4 and small.max_prompt_tokens
    path = tmp_path / "c.yaml"
    path.write_text("preset: cpu-small\ntrl:\n  learning_rate: 3.0e-4\n", encoding="utf-8")
    layered = load_config(path, ["trl.max_steps=5"], model="m")
    assert layered.preset == "cpu-small" and layered.trl["learning_rate"] == 3e-4  # YAML over the preset
    assert layered.trl["max_steps"] == 5 and layered.trl["num_generations"] == 4  # --set over both, rest kept
    paper = load_config(None, ["lora.enabled=true"], preset="paper-gpu")
    assert paper.model == "Qwen/Qwen2.5-Coder-7B-Instruct" and paper.lora.enabled
    device = CPU["trl"] if paper.trl.get("use_cpu") else {}  # the CPU adjustments, applied at load time
    expected = {**REAL_TRL_DEFAULTS, **device}
    assert {k: paper.trl[k] for k in REAL_TRL_DEFAULTS} == {k: expected[k] for k in REAL_TRL_DEFAULTS}
    assert paper.trl["bf16"] is (not device)
    assert paper.trl["use_vllm"] is vllm_available()
    assert load_config(None, [], preset="paper-gpu", model="local/path").model == "local/path"
    with pytest.raises(ConfigError, match="cpu-small trains a small local model: pass --model PATH"):
        load_config(None, [], preset="cpu-small")
    with pytest.raises(ConfigError, match="unknown preset 'gpu'.*cpu-small"):
        load_config(None, [], preset="gpu")


def test_explicit_trl_options_beat_the_cpu_adjustments(tmp_path: Path):
    """report_to / disable_tqdm / bf16 / gradient_checkpointing: the run's trl options win over our defaults."""
    from swe_srl.train.policy import grpo_args

    sets = ["trl.report_to=tensorboard", "trl.disable_tqdm=false", "trl.gradient_checkpointing=true"]
    args = grpo_args(load_config(None, sets, output=str(tmp_path)))
    assert args.report_to == ["tensorboard"] and args.disable_tqdm is False and args.gradient_checkpointing
    quiet = grpo_args(load_config(None, [], output=str(tmp_path)))
    assert quiet.report_to == [] and quiet.disable_tqdm is True and quiet.gradient_checkpointing is False


def test_grpo_config_checks_become_config_errors(tmp_path: Path):
    from swe_srl.train.policy import grpo_args

    cfg = load_config(
        None, ["trl.num_generations=3", "trl.per_device_train_batch_size=8"], output=str(tmp_path)
    )
    with pytest.raises(ConfigError, match="rejected by trl.GRPOConfig"):
        grpo_args(cfg)


def test_reward_default_is_mixed_for_the_tiny_model_only():
    """The tiny model's default reward is the paper's and the layered reward's mean (chosen on dev); effect layers
    get layered; real models take the paper preset's (srl); an explicit --reward always wins."""
    assert load_config(None, []).reward == "mixed"
    assert load_config(None, [], reward="srl").reward == "srl"
    assert load_config(None, [], model="Qwen/Qwen2.5-Coder-7B-Instruct").reward == "srl"
    assert load_config(None, [], effect="cached").reward == "layered"
    assert load_config(None, [], reward="layered").reward == "layered"
    assert load_config(None, ["reward=layered"]).reward == "layered"
    assert load_config(None, [], preset="paper-gpu").reward == "srl"


def test_reward_mix_is_checked_and_reaches_the_reward():
    """reward_mix (the mixed reward's paper share) defaults to an even mix, is refused by name outside [0, 1] and is
    what the run's reward function uses."""
    from swe_srl.train.run import build_reward

    assert load_config(None, []).reward_mix == 0.5
    assert build_reward(load_config(None, ["reward_mix=0.75"])).weights.mix == 0.75
    with pytest.raises(ConfigError, match="reward_mix"):
        load_config(None, ["reward_mix=1.5"])


def test_wise_ft_is_off_by_default_and_checked():
    """wise_ft (the saved final policy's share of the trained weights) is 1 (the trained weights) by default, for the
    tiny model and real ones alike; a mix is SRL's only (full weights), refused by name for the SFT baseline, RLVR and
    LoRA, and outside (0, 1]."""
    assert load_config(None, []).wise_ft == 1.0
    assert load_config(None, [], model="Qwen/Qwen2.5-Coder-7B-Instruct").wise_ft == 1.0
    assert load_config(None, ["wise_ft=0.5"]).wise_ft == 0.5
    assert load_config(None, ["wise_ft=0.7"], model="m").wise_ft == 0.7
    assert load_config(None, ["wise_ft=1"], method="sft").wise_ft == 1.0
    for bad in (["wise_ft=0"], ["wise_ft=1.5"]):
        with pytest.raises(ConfigError, match="wise_ft"):
            load_config(None, bad)
    with pytest.raises(ConfigError, match="wise_ft=0.5 .*--method srl"):
        load_config(None, ["wise_ft=0.5"], method="sft")
    with pytest.raises(ConfigError, match="no --lora"):
        load_config(None, ["wise_ft=0.5", "lora.enabled=true"])
    with pytest.raises(ConfigError, match="--stage srl"):
        load_config(None, ["wise_ft=0.5"], stage="rlvr", init="ckpt")


def test_library_names_are_swapped_for_the_tiny_model_only():
    """The tiny default trains GRPO on swapped library names (presets.TINY_SWAP, chosen on dev); real models and the
    SFT baseline do not unless asked; an explicit value always wins; a share outside [0, 1] is refused by name."""
    assert load_config(None, []).swap_library_names == 1.0
    assert load_config(None, ["swap_library_names=0"]).swap_library_names == 0.0
    assert load_config(None, [], model="Qwen/Qwen2.5-Coder-7B-Instruct").swap_library_names == 0.0
    assert load_config(None, [], preset="paper-gpu").swap_library_names == 0.0
    with pytest.raises(
        ConfigError, match="swap_library_names=0.5 swaps the tiny model's training names; m is a real"
    ):
        load_config(
            None, ["swap_library_names=0.5"], model="m"
        )  # a real start trains on its rows as they are
    assert load_config(None, [], method="sft").swap_library_names == 0.0  # the SFT baseline: plain samples
    assert load_config(None, ["swap_library_names=1"], method="sft").swap_library_names == 1.0
    with pytest.raises(ConfigError, match="swap_library_names"):
        load_config(None, ["swap_library_names=2"])
    # the new names come from the standard library (an open set, chosen on dev) unless the train pool is asked for
    assert load_config(None, []).swap_pool == "stdlib"
    assert load_config(None, ["swap_pool=train"]).swap_pool == "train"
    with pytest.raises(ConfigError, match="swap_pool"):
        load_config(None, ["swap_pool=pypi"])
    # the warm-up's own swap (off by default) keeps the train pool unless asked
    assert load_config(None, []).tiny.warmup_swap_pool == "train"
    assert load_config(None, ["tiny.warmup_swap_pool=stdlib"]).tiny.warmup_swap_pool == "stdlib"
    with pytest.raises(ConfigError, match="tiny.warmup_swap_pool"):
        load_config(None, ["tiny.warmup_swap_pool=pypi"])


def test_exponent_floats_without_a_dot_are_floats_at_any_depth(tmp_path: Path):
    """PyYAML (YAML 1.1) reads ``5e-4`` as a string; inside a dict that reached TRL's scheduler and failed there,
    after the warm-up. Both ``--set`` and the YAML file read YAML 1.2 floats."""
    config = load_config(None, ["trl.lr_scheduler_kwargs={min_lr: 5e-4}", "trl.learning_rate=1e-3"])
    assert config.trl["lr_scheduler_kwargs"] == {"min_lr": 5e-4} and config.trl["learning_rate"] == 1e-3
    path = tmp_path / "c.yaml"
    path.write_text("trl:\n  learning_rate: 5e-4\n  lr_scheduler_kwargs: {min_lr: 1E-5}\n", encoding="utf-8")
    from_file = load_config(path, [])
    assert from_file.trl["learning_rate"] == 5e-4 and from_file.trl["lr_scheduler_kwargs"]["min_lr"] == 1e-5
    assert load_config(None, ["trl.run_name=e5", "trl.hub_model_id=2e-4x"]).trl["run_name"] == "e5"
