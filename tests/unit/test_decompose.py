"""Decomposition into SRL step samples, and the shared prompt format."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from swe_srl.core.prompts import (
    OBSERVATION_ELIDED,
    SYSTEM_PROMPT,
    TokenCounter,
    build_messages,
    truncate_observation,
)
from swe_srl.train.data import read_samples
from swe_srl.trajectories.decompose import decompose, executed_steps, target_steps
from swe_srl.trajectories.schema import Step, Trajectory

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "trajectories"
KEYS = {
    "prompt",
    "expert_action",
    "expert_thought",
    "instance_id",
    "step",
    "num_steps",
    "trajectory_hash",
    "split",
    "oracle_files",
    "oracle",
}


def decomposed(trajs, **options):
    """The samples with their prompts, as reading the written file gives them, and the stats."""
    samples, stats = decompose(trajs, **options)
    return samples.rows(), stats


def traj(*actions: str, instance_id: str = "toy__calc-1", obs: str = "out") -> Trajectory:
    steps = [Step(thought=f"why {i}", action=a, observation=f"{obs} {i}") for i, a in enumerate(actions)]
    return Trajectory(instance_id=instance_id, problem="Fix add.", steps=steps)


@pytest.mark.parametrize(
    ("actions", "merge", "targets", "dropped"),
    [
        (["ls", "", "  \n "], None, [0], {"empty": 2}),  # empty actions are not targets
        (["# just a note\n# another", "ls"], None, [1], {"comment": 1}),  # comment-only is not a target
        (["ls # list", "cat a.py"], None, [0, 1], {}),  # a trailing comment is fine
        (
            ["pytest tests/test_calc.py -q", "pytest tests/test_calc.py  -q"],
            None,
            [0, 1],
            {},
        ),  # by default every step is a target, near-identical or not
        (
            ["pytest tests/test_calc.py -q", "pytest tests/test_calc.py  -q"],
            0.9,
            [1],
            {"merged": 1},
        ),  # with merge_similar the later of two near-identical consecutive actions is the target
        (["pytest -q", "ls", "pytest -q"], 0.9, [0, 1, 2], {}),  # not consecutive: all targets
        (["cat a.py", "cat b.py"], 0.9, [0, 1], {}),  # short, different: ratio 0.875 ≤ 0.9
        (["a", "a", "a"], 0.9, [2], {"merged": 2}),  # a chain: the last one is the target
        (["submit"], 0.9, [0], {}),  # submit is a target (the paper trains on every action step)
    ],
)
def test_target_steps(
    actions: list[str], merge: float | None, targets: list[int], dropped: dict[str, int]
) -> None:
    chosen, counts = target_steps(traj(*actions).steps, merge)
    assert chosen == targets
    assert dict(counts) == dropped


def test_merge_similar_keeps_every_step_in_histories_and_counts() -> None:
    reads = ["sed -n '1,40p' /testbed/calc.py", "sed -n '41,80p' /testbed/calc.py", "submit"]
    t = traj(*reads)
    samples, stats = decomposed([t])
    assert [s["step"] for s in samples] == [0, 1, 2] and stats.merged == 0  # default: no step disappears
    assert ("not a target: merged similar", 0) in stats.rows()
    merged, stats = decomposed([t], merge_similar=0.8)
    assert [s["step"] for s in merged] == [1, 2] and stats.merged == 1
    assert ("not a target: merged similar", 1) in stats.rows()
    # the later read's history still shows the earlier read and what it printed
    assert merged[0]["prompt"][2:] == [
        {"role": "assistant", "content": f"```bash\n{reads[0]}\n```"},
        {"role": "user", "content": "OBSERVATION:\nout 0"},
    ]
    assert merged[1]["prompt"] == samples[2]["prompt"] and merged[1]["num_steps"] == 3
    assert [s.action for s in executed_steps(t)] == reads  # the effect layer replays every executed step
    assert all(executed_steps(t)[s["step"]].action == s["expert_action"] for s in merged)  # step k indexes it


def test_history_thoughts_option() -> None:
    t = traj("ls", "cat calc.py", "submit")
    plain = decomposed([t])[0][2]["prompt"]
    with_thoughts = decomposed([t], history_thoughts=True)[0][2]["prompt"]
    assert plain[2]["content"] == "```bash\nls\n```"
    assert with_thoughts[2]["content"] == "<think>\nwhy 0\n</think>\n```bash\nls\n```"
    assert with_thoughts[4]["content"] == "<think>\nwhy 1\n</think>\n```bash\ncat calc.py\n```"
    assert with_thoughts == build_messages(
        "Fix add.", [("ls", "out 0"), ("cat calc.py", "out 1")], thoughts=["why 0", "why 1"]
    )
    assert [m for i, m in enumerate(with_thoughts) if i not in (2, 4)] == [
        m for i, m in enumerate(plain) if i not in (2, 4)
    ]
    # an empty thought renders as the plain fenced action
    assert build_messages("P", [("ls", "x")], thoughts=[" "])[2]["content"] == "```bash\nls\n```"


def test_sample_k_holds_steps_before_k() -> None:
    samples, stats = decomposed([traj("ls", "cat calc.py", "submit")])
    assert [s["step"] for s in samples] == [0, 1, 2] and all(set(s) == KEYS for s in samples)
    last = samples[2]
    assert last["expert_action"] == "submit" and last["expert_thought"] == "why 2" and last["num_steps"] == 3
    assert [m["role"] for m in last["prompt"]] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert last["prompt"][0]["content"] == SYSTEM_PROMPT and "Fix add." in last["prompt"][1]["content"]
    assert last["prompt"][4]["content"] == "```bash\ncat calc.py\n```"
    assert last["prompt"][5]["content"] == "OBSERVATION:\nout 1"
    assert samples[0]["split"] == "train" and samples[0]["oracle_files"] == []
    assert len({s["trajectory_hash"] for s in samples}) == 1
    # the prompt is exactly what the evaluation loop builds with prompts.build_messages
    assert last["prompt"] == build_messages("Fix add.", [("ls", "out 0"), ("cat calc.py", "out 1")])
    assert (stats.trajectories, stats.steps, stats.samples) == (1, 3, 3)


def test_splits_and_oracle_files() -> None:
    trajs = [traj("ls", "submit"), traj("ls", instance_id="other__x-2"), traj("ls", instance_id="gone__y-3")]
    splits = {"toy__calc-1": "test", "other__x-2": "train"}
    oracle = {"toy__calc-1": {"calc.py": "def add(a, b):\n    return a - b\n"}}
    samples, stats = decomposed(trajs, splits=splits, oracle_files=oracle)
    assert {s["instance_id"] for s in samples} == {"toy__calc-1"}
    assert samples[0]["split"] == "test" and samples[0]["oracle_files"] == ["calc.py"]
    assert (
        '<file path="calc.py">\ndef add(a, b):\n    return a - b\n</file>'
        in samples[0]["prompt"][1]["content"]
    )
    assert dict(stats.dropped_trajectories) == {"missing_oracle_files": 1, "unknown_instance": 1}


def _word_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.train_from_iterator(
        [SYSTEM_PROMPT, "ls cat submit OBSERVATION: word"],
        trainers.WordLevelTrainer(special_tokens=["[UNK]"]),
    )
    return tokenizer


def test_token_budget_elides_oldest_observations_first() -> None:
    tokenizer = _word_tokenizer()
    count = TokenCounter(tokenizer)
    big = " ".join(["word"] * 100)
    t = traj("ls", "cat a", "cat b", "submit", obs=big)
    full = count.total(decomposed([t])[0][-1]["prompt"])
    samples, stats = decomposed([t], tokenizer=tokenizer, max_tokens=full - 150)
    prompt = samples[-1]["prompt"]
    observations = [m["content"] for m in prompt[3::2]]
    assert observations[0] == observations[1] == f"OBSERVATION:\n{OBSERVATION_ELIDED}"  # oldest two elided
    assert observations[2].endswith("word word 2")  # the last step is never elided
    assert count.total(prompt) <= full - 150
    assert "Fix add." in prompt[1]["content"]
    # tighter: older steps go, the system prompt, the problem and the latest step stay; nothing is dropped
    base = count.total(decomposed([t])[0][0]["prompt"])
    samples, stats = decomposed([t], tokenizer=tokenizer, max_tokens=base + 100)
    assert [s["step"] for s in samples] == [0, 1, 2, 3] and not stats.dropped_samples
    last = samples[-1]["prompt"]
    assert last[0]["content"] == SYSTEM_PROMPT and "earlier steps omitted" in last[1]["content"]
    assert last[-2]["content"] == "```bash\ncat b\n```" and count.total(last) <= base + 100
    # a budget below the system prompt alone cannot be met: every sample is dropped and counted
    samples, stats = decomposed([t], tokenizer=tokenizer, max_tokens=count(SYSTEM_PROMPT) - 1)
    assert stats.dropped_samples["over_budget"] == 4 and samples == []


def test_build_messages_budget_keeps_last_observation_and_truncates() -> None:
    history = [("ls", "a" * 100), ("cat x", "b" * 100)]
    whole = sum(len(m["content"]) for m in build_messages("P", history))
    messages = build_messages("P", history, token_budget=whole - 50, count_tokens=len)
    assert messages[3]["content"].endswith(OBSERVATION_ELIDED) and messages[5]["content"].endswith("b" * 100)
    assert build_messages("P", [("ls", "")])[3]["content"] == "OBSERVATION:\n(no output)"
    cut = truncate_observation("x" * 50 + "y" * 50, 20)
    assert cut.startswith("x" * 10) and cut.endswith("y" * 10) and "[... 80 characters truncated ...]" in cut


def test_deterministic_and_cli(tmp_path: Path) -> None:
    from swe_srl.cli.app import app

    out = tmp_path / "samples.jsonl"
    sources = [str(FIXTURES / n) for n in ("openhands.json", "swe_smith.json", "toy__calc-2.traj.json")]
    result = CliRunner().invoke(app, ["decompose", *sources, "-o", str(out), "--max-tokens", "4000"])
    assert result.exit_code == 0, result.output
    assert "trajectories used" in result.output and "wrote 11 samples" in result.output
    assert re.search(r"not a target: merged similar\s*│\s*0\s*│", result.output)  # always printed
    first = out.read_text()
    records = read_samples(out)
    assert len(records) == 11 and records[-1]["expert_action"] == "submit"
    lines = [json.loads(line) for line in first.splitlines()]
    assert lines[0]["kind"] == "header" and sum(r["kind"] == "sample" for r in lines) == 11
    CliRunner().invoke(app, ["decompose", *sources, "-o", str(out), "--max-tokens", "4000"])
    assert out.read_text() == first
    merged = tmp_path / "merged.jsonl"
    args = ["decompose", *sources, "-o", str(merged), "--merge-similar", "0.5", "--history-thoughts"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    count = len(read_samples(merged))
    assert re.search(rf"not a target: merged similar\s*│\s*{11 - count}\s*│", result.output) and count < 11
    assert "<think>" in read_samples(merged)[-1]["prompt"][2]["content"]
    native = tmp_path / "native.jsonl"
    result = CliRunner().invoke(
        app, ["trajectories", "import", str(FIXTURES / "bad.jsonl"), "-o", str(native), "--skip-bad"]
    )
    assert result.exit_code == 0 and len(native.read_text().splitlines()) == 1


def test_oracle_contents_from_a_local_clone(tmp_path: Path) -> None:
    import subprocess

    from swe_srl.benchmark.instances import Instance
    from swe_srl.trajectories.oracle import oracle_contents

    repo = tmp_path / "toy__calc"
    repo.mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    commit = subprocess.run(
        [*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    (repo / "calc.py").write_text("changed later\n")  # the working tree is not what is read
    patch = (
        "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n"
        "-    return a - b\n+    return a + b\n"
    )
    instance = Instance("toy__calc-1", "toy/calc", commit, patch, "", "Fix add.")
    contents = oracle_contents([instance], tmp_path)
    assert contents == {"toy__calc-1": {"calc.py": "def add(a, b):\n    return a - b\n"}}
