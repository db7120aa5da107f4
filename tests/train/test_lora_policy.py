"""A LoRA checkpoint evaluates as ``hf:ADAPTER_DIR``: the base model comes from the adapter config, the adapter
is applied, and the policy generates (trained with ``swe-srl train --lora`` on the tiny default)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("peft")

from conftest import TINY  # noqa: E402

from swe_srl.agent.models import HFPolicy, adapter_base  # noqa: E402
from swe_srl.agent.policies import make_policy  # noqa: E402
from swe_srl.errors import PolicyError  # noqa: E402

pytestmark = pytest.mark.train


@pytest.fixture(scope="module")
def adapter_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from conftest import make_samples

    root = tmp_path_factory.mktemp("lora")
    samples = root / "samples.jsonl"
    samples.write_text("".join(json.dumps(r) + "\n" for r in make_samples()), encoding="utf-8")
    sets = [x for s in [*TINY, "eval.max_samples=0", "lora.r=4", "reward=srl"] for x in ("--set", s)]
    cmd = [
        sys.executable,
        "-m",
        "swe_srl.cli",
        "train",
        "--lora",
        "--max-steps",
        "1",
        "--samples",
        str(samples),
    ]
    proc = subprocess.run(
        [*cmd, *sets, "--output", str(root / "run")], capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return root / "run" / "final"


def test_adapter_dir_loads_its_base_and_generates(adapter_dir: Path):
    base = json.loads((adapter_dir / "adapter_config.json").read_text())["base_model_name_or_path"]
    assert adapter_base(str(adapter_dir)) == base and (Path(base) / "config.json").is_file()
    policy = HFPolicy(str(adapter_dir), max_new_tokens=6)
    messages = [{"role": "user", "content": "calc.add(2, 3) gives the wrong result."}]
    texts = policy.generate_batch([messages, messages[:1]])
    assert len(texts) == 2 and texts[0] == policy.generate(messages)
    made = make_policy(f"hf:{adapter_dir}")
    assert isinstance(made, HFPolicy) and made.name == f"hf:{adapter_dir}"


def test_adapter_weights_are_applied_to_the_base(adapter_dir: Path, tmp_path: Path):
    """An adapter whose LoRA B matrices are non-zero: the policy's weights are base + B·A·scale, not the base."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    base = adapter_base(str(adapter_dir))
    peft_model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base), str(adapter_dir))
    with torch.no_grad():
        for name, param in peft_model.named_parameters():
            if "lora_B" in name:
                param.fill_(0.05)
    moved = tmp_path / "moved"
    peft_model.save_pretrained(moved)
    AutoTokenizer.from_pretrained(adapter_dir).save_pretrained(moved)
    expected = peft_model.merge_and_unload().state_dict()
    bare = AutoModelForCausalLM.from_pretrained(base).state_dict()
    weights = HFPolicy(str(moved)).model.state_dict()
    assert set(weights) == set(bare)
    assert all(torch.allclose(weights[k], expected[k]) for k in bare)
    assert any(not torch.equal(weights[k], bare[k]) for k in bare)


def test_adapter_with_missing_base_is_a_policy_error(adapter_dir: Path, tmp_path: Path):
    broken = tmp_path / "adapter"
    broken.mkdir()
    config = json.loads((adapter_dir / "adapter_config.json").read_text())
    config["base_model_name_or_path"] = str(tmp_path / "gone")
    (broken / "adapter_config.json").write_text(json.dumps(config))
    with pytest.raises(PolicyError, match="base model"):
        HFPolicy(str(broken))
