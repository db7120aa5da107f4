"""Samples JSONL → dataset; tiny policy reloads; the --oracle-files prompt carries the oracle files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("trl")

from conftest import make_samples  # noqa: E402

from swe_srl.errors import TrainingError  # noqa: E402
from swe_srl.train.config import TinyOptions  # noqa: E402
from swe_srl.train.data import read_samples, split_rows, to_dataset  # noqa: E402
from swe_srl.train.tiny.model import make_tiny_policy, sample_texts  # noqa: E402

pytestmark = pytest.mark.train


def test_dataset_columns_and_split(samples_file: Path):
    rows, test = split_rows(read_samples(samples_file))
    train = to_dataset(rows)
    assert {"prompt", "expert_action", "instance_id", "step"} <= set(train.column_names)
    assert train[0]["prompt"][0]["role"] == "system"
    assert {r["split"] for r in test} == {"test"} and len(test) == 5 and len(train) == 35


def test_split_by_instance_hash_when_no_split_field():
    rows = [{**r, "split": None} for r in make_samples(n_instances=40)]
    train, test = split_rows(rows, test_fraction=0.25)
    assert test and train
    assert not {r["instance_id"] for r in train} & {
        r["instance_id"] for r in test
    }  # no instance on both sides


BAD = [
    # (line content, text the error must contain)
    ("not json", ":1: not valid JSON"),  # broken line
    (json.dumps({"prompt": []}), "'expert_action'"),  # missing field
    (json.dumps({"prompt": "text", "expert_action": "ls"}), "'prompt' must be a list"),  # not conversational
]


@pytest.mark.parametrize(("line", "needle"), BAD)
def test_bad_samples_are_named(tmp_path: Path, line: str, needle: str):
    path = tmp_path / "s.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(TrainingError, match=needle.replace("(", r"\(")):
        read_samples(path)


def test_tiny_policy_reloads_with_auto_classes(tmp_path: Path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = make_tiny_policy(sample_texts(make_samples()), tmp_path / "tiny")
    tok, model = AutoTokenizer.from_pretrained(path), AutoModelForCausalLM.from_pretrained(path)
    text = "<think>look</think>\ngrep -rn 'def load' src/"
    ids = tok(text)["input_ids"]
    assert tok.decode(ids) == text
    assert len(tok("</think>")["input_ids"]) == 1  # one token: reachable by chance
    prompt = tok.apply_chat_template(
        [{"role": "user", "content": "hi"}], add_generation_prompt=True, tokenize=False
    )
    assert prompt.endswith("<think>")
    # trained on these few texts: BPE stops when no pair repeats, well under the default's 2048 (+ the 2 think tokens)
    assert model.config.vocab_size == len(tok) and 256 < len(tok) < 1000


def test_tiny_mlp_ratio_sets_the_mlp_width_of_the_saved_model(tmp_path: Path):
    from transformers import AutoModelForCausalLM

    narrow = TinyOptions(hidden_size=64, mlp_ratio=0.5, warmup_steps=0)
    path = make_tiny_policy(sample_texts(make_samples()), tmp_path / "tiny", narrow)
    model = AutoModelForCausalLM.from_pretrained(path)
    assert model.config.intermediate_size == 32
    assert model.model.layers[0].mlp.up_proj.out_features == 32
    default = AutoModelForCausalLM.from_pretrained(
        make_tiny_policy(sample_texts(make_samples()), tmp_path / "d")
    )
    assert default.config.intermediate_size == 2 * TinyOptions().hidden_size


def test_oracle_prompt_contains_files_and_plain_does_not():
    from swe_srl.trajectories.decompose import decompose
    from swe_srl.trajectories.schema import Step, Trajectory

    traj = Trajectory(
        instance_id="demo__x-1",
        problem="load() fails on empty input",
        steps=[
            Step(thought="look", action="cat src/x.py"),
            Step(thought="fix", action="sed -i s/a/b/ src/x.py"),
        ],
    )
    oracle = {"demo__x-1": {"src/x.py": "def load(x):\n    return x[0]\n"}}
    with_files = decompose([traj], oracle_files=oracle)[0].rows()
    plain = decompose([traj], oracle_files=None)[0].rows()
    rendered = json.dumps(with_files[0]["prompt"])
    assert "src/x.py" in rendered and "return x[0]" in rendered
    assert "return x[0]" not in json.dumps(plain[0]["prompt"])
    train, _ = split_rows(with_files, test_fraction=0.0)
    assert "return x[0]" in train[0]["prompt"][1]["content"]  # survives into the training dataset


def test_format_warmup_teaches_the_format_and_is_optional(tmp_path: Path):
    """The warm-up lowers the target loss and makes greedy output parse; warmup_steps=0 leaves a random init."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from swe_srl.core.actions import parse_output
    from swe_srl.train.config import TinyOptions

    rows = [r for r in make_samples() if r["split"] == "train"]
    # the target loss alone (the prompt's tokens have their own test: test_loss_options)
    options = TinyOptions(
        hidden_size=32, vocab_size=300, warmup_steps=80, max_prompt_tokens=96, warmup_prompt_weight=0.0
    )
    path = make_tiny_policy(sample_texts(rows), tmp_path / "warm", options, warmup_rows=rows)
    record = json.loads((path / "warmup.json").read_text())
    assert record["steps"] == 80 and record["loss_last"] < record["loss_first"] / 2
    assert not list(tmp_path.glob(".warm-*")), "staging directory left behind"

    tok, model = AutoTokenizer.from_pretrained(path), AutoModelForCausalLM.from_pretrained(path)
    prompt = tok.apply_chat_template(rows[0]["prompt"], add_generation_prompt=True, tokenize=False)
    ids = tok(prompt, return_tensors="pt", add_special_tokens=False)
    with torch.no_grad():
        out = model.generate(**ids, do_sample=False, max_new_tokens=24, pad_token_id=tok.pad_token_id)
    completion = tok.decode(out[0, ids["input_ids"].shape[1] :], skip_special_tokens=True)
    assert parse_output("<think>" + completion).action  # closes the think block, then writes an action

    cold = make_tiny_policy(
        sample_texts(rows),
        tmp_path / "cold",
        options.model_copy(update={"warmup_steps": 0}),
        warmup_rows=rows,
    )
    assert not (cold / "warmup.json").exists()
