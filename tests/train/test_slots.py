"""Slotted names (``tiny.slots``): the prompt's code names become slot tokens the policy writes, mapped back before
any reward sees them; a slotted tiny model writes a held-out library's names it never saw in training."""

from __future__ import annotations

import json
import pickle
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from conftest import TINY, StandInReward, make_samples  # noqa: E402

from swe_srl.agent.models import HFPolicy  # noqa: E402
from swe_srl.errors import TrainingError  # noqa: E402
from swe_srl.rewards import score_output  # noqa: E402
from swe_srl.train.config import TinyOptions, load_config  # noqa: E402
from swe_srl.train.heldout import greedy_outputs  # noqa: E402
from swe_srl.train.run import run_training  # noqa: E402
from swe_srl.train.tiny.model import build_model, build_tokenizer, format_warmup, sample_texts  # noqa: E402
from swe_srl.train.tiny.slots import (  # noqa: E402
    TOKENS,
    SlotView,
    UnslottedReward,
    policy_action,
    slot_names,
    slotted,
    unslot,
    unslotted_outputs,
    uses_slots,
    view_of,
)

pytestmark = pytest.mark.train

PROBLEM = (
    "<problem_statement>\nRegression in inflection: test_titleize fails\n\n"
    "test_inflection.py::test_titleize[x-X]: fails\n</problem_statement>\n\n"
    '<file path="inflection/__init__.py">\n12| def titleize(word):\n13|     return humanize(word)\n</file>'
)
ROW = {
    "prompt": [
        {
            "role": "system",
            "content": "Paths are under /testbed. def keep_me(): in the system prompt is no name.",
        },
        {"role": "user", "content": PROBLEM},
        {"role": "assistant", "content": "```bash\nsed -n '10,14p' inflection/__init__.py\n```"},
        {"role": "user", "content": "OBSERVATION:\ndef titleize(word):"},
    ],
    "expert_action": "python -m pytest -q 'test_inflection.py::test_titleize[x-X]' && grep -n cli_only setup.py",
}


def test_names_come_from_the_prompt_paths_first_in_order_of_first_appearance():
    names = slot_names(PROBLEM)
    # whole paths first, then the words, test ids and defined names outside them; 'humanize' is only called, the
    # word 'test_inflection' stands only inside its path
    assert names == [
        "test_inflection.py",
        "inflection/__init__.py",
        "inflection",
        "test_titleize",
        "titleize",
    ]
    # a path relative to the checkout whatever its prefix; a shared folder or a builtin is no word slot
    assert slot_names("/testbed/tests/test_x.py and ./tests/test_x.py, len(x)") == ["tests/test_x.py"]
    assert slot_names("find . -name __init__.py") == []  # a path of unslottable words is no slot
    assert slot_names("no code here") == []


def test_a_prompt_naming_more_paths_than_slots_keeps_the_first_ones():
    text = " ".join(f"pkg/module_{i}.py" for i in range(len(TOKENS) + 8))
    names = slot_names(text)
    assert names == [f"pkg/module_{i}.py" for i in range(len(TOKENS))]


def test_a_slotted_row_keeps_the_system_prompt_and_maps_back_exactly():
    row = slotted(ROW)
    assert row["prompt"][0] == ROW["prompt"][0]
    user = row["prompt"][1]["content"]
    assert "Regression in <n2>: <n3> fails" in user and '<file path="<n1>">' in user
    assert "<n0>::<n3>[x-X]" in user and "def <n4>(word)" in user and "inflection" not in user
    assert row["prompt"][2]["content"] == "```bash\nsed -n '10,14p' <n1>\n```"
    assert row["expert_action"] == ROW["expert_action"]  # rewards compare with the expert's own text
    target = policy_action(row)
    # names the prompt does not hold (cli_only, setup.py) stay as they are: only the prompt picks names
    assert target == "python -m pytest -q '<n0>::<n3>[x-X]' && grep -n cli_only setup.py"
    assert unslot(target, row["slots"]) == ROW["expert_action"]
    assert unslot("cat /testbed/<n1>", row["slots"]) == "cat /testbed/inflection/__init__.py"
    assert unslot("cat <n2>/<n9>.py", row["slots"]) == "cat inflection/<n9>.py"  # an unknown slot stays
    assert policy_action(ROW) == ROW["expert_action"]  # a plain row is its own target


class _Seen:
    __name__ = "seen"

    def __init__(self):
        self.last_components, self.completions = [{"format": 1.0}], []

    def __call__(self, prompts, completions, **columns):
        self.completions.append(completions)
        texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
        return [score_output(t, e).total for t, e in zip(texts, columns["expert_action"], strict=True)]


def test_the_reward_sees_the_names_not_the_slots():
    row = slotted(ROW)
    inner = _Seen()
    reward = pickle.loads(pickle.dumps(UnslottedReward(inner)))  # TRL may pickle reward functions
    out = "<think>\nrun it\n</think>\n```bash\n" + policy_action(row) + "\n```"
    scores = reward([row["prompt"]], [out], expert_action=[row["expert_action"]], slots=[row["slots"]])
    assert scores == [pytest.approx(score_output(unslot(out, row["slots"]), row["expert_action"]).total)]
    assert scores[0] == pytest.approx(1.0)  # the expert's action, written in slots
    assert reward.last_components == [{"format": 1.0}]
    chat = [{"role": "assistant", "content": out}]
    conversational = UnslottedReward(inner)
    conversational([row["prompt"]], [chat], expert_action=[row["expert_action"]], slots=[row["slots"]])
    assert "inflection" in inner.completions[-1][0][0]["content"]


def _packages(rows, slots: bool, save: Path | None = None) -> tuple[list[str], list[str]]:
    """Warm a tiny model up on the train rows (slotted or not); the package names (``pkgN``) its greedy outputs write
    on the test instance, whose own package (``pkg7``) no train sample holds, and the outputs (saved to ``save``)."""
    train = [r for r in rows if r["split"] == "train"]
    test = [r for r in rows if r["split"] == "test"]
    options = TinyOptions(hidden_size=64, vocab_size=400, warmup_steps=120, warmup_lr=3e-3, slots=slots)
    tokenizer = build_tokenizer(sample_texts(train, slots), options.vocab_size, slots)
    assert uses_slots(tokenizer) is slots
    model = build_model(tokenizer, options)
    format_warmup(model, tokenizer, train, options)
    shown = view_of(tokenizer).rows(test)
    raw = greedy_outputs(model, tokenizer, [r["prompt"] for r in shown], 24, 8, "<think>")
    outputs = unslotted_outputs(raw, shown)
    if save is not None:
        model.save_pretrained(save)
        tokenizer.save_pretrained(save)
    return [p for o in outputs for p in re.findall(r"pkg\d", o)], outputs


def test_a_slotted_tiny_model_writes_a_held_out_name_the_plain_one_cannot(tmp_path: Path):
    rows = make_samples(8, seed=3, oracle=True)  # pkg0..pkg6 train, pkg7 test
    assert not any("pkg7" in json.dumps(r) for r in rows if r["split"] == "train")
    written, outputs = _packages(rows, slots=True, save=tmp_path / "slotted")
    assert written and set(written) == {"pkg7"}, outputs  # every package it names is the test instance's own
    # the agent's policy (`swe-srl eval --policy hf:DIR`, episodes) reads and writes the same way
    # (the CLI injects the tiny view: `view_of` is plain for any model without slot tokens)
    policy = HFPolicy(str(tmp_path / "slotted"), max_new_tokens=24, view_for=view_of)
    test = [r["prompt"] for r in rows if r["split"] == "test"]
    assert isinstance(policy.view, SlotView) and policy.generate_batch(test) == outputs
    written, outputs = _packages(rows, slots=False)
    assert written and "pkg7" not in written, outputs  # it names train packages it memorised


def test_a_slotted_run_records_slotted_prompts_and_mapped_back_outputs(tmp_path: Path):
    out, samples_file = tmp_path / "run", tmp_path / "samples.jsonl"
    samples_file.write_text(
        "".join(json.dumps(r) + "\n" for r in make_samples(oracle=True)), encoding="utf-8"
    )
    overrides = [*TINY, "tiny.slots=true", "trl.max_steps=1", "eval.every=0", "eval.max_samples=2"]
    cfg = load_config(None, overrides, samples=str(samples_file), output=str(out))
    run_training(cfg, reward_func=StandInReward(), command="slots")
    assert all(t in json.loads((out / "final" / "tokenizer.json").read_text())["added_tokens"].__repr__()
               for t in TOKENS[:2])  # fmt: skip
    lines = [json.loads(x) for x in (out / "heldout.jsonl").read_text().splitlines()]
    assert lines and all("slots" in line for line in lines) and any(line["slots"] for line in lines)
    assert any("<n0>" in line["prompt"] for line in lines)  # the prompt exactly as the slotted policy read it
    for line in lines:
        for key in ("initial_output", "final_output"):
            assert not any(slot in line[key] for slot in line["slots"]), line[key]  # mapped back
            for mode, value in line[key.replace("output", "reward")].items():
                assert value == score_output(line[key], line["expert_action"], mode=mode).total
    # RLVR episodes show plain text: a slotted checkpoint is refused before any work, naming why
    rlvr = load_config(None, [*TINY, "stage=rlvr"], init=str(out / "final"), output=str(tmp_path / "rlvr"))
    with pytest.raises(TrainingError, match="slotted policy"):
        run_training(rlvr)
