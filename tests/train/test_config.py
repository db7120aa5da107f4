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
    assert cfg.trl == {"beta": 0.0, "learning_rate": 5e-6}
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
