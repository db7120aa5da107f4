"""The samples file (format 2): shared trajectory/oracle records, prompts built at load exactly as build_messages
gives them, budget fits recorded compactly, oracle windows under a budget, per-instance drop counts."""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from swe_srl.core.prompts import SYSTEM_PROMPT, TokenCounter, build_messages, fit_messages
from swe_srl.errors import TrainingError
from swe_srl.train.data import read_samples
from swe_srl.trajectories.decompose import WINDOW_LADDER, decompose
from swe_srl.trajectories.oracle import patch_windows
from swe_srl.trajectories.schema import Step, Trajectory

CALC = "".join(f"def f{n}(x):\n    return x + {n}\n\n" for n in range(150))  # 450 lines
PATCH = "--- a/calc.py\n+++ b/calc.py\n@@ -226,3 +226,3 @@\n def f75(x):\n-    return x + 75\n+    return x - 75\n \n"


def traj(instance_id: str = "toy__calc-1", n: int = 6, obs: str = "line of output\n" * 40) -> Trajectory:
    steps = [Step(f"thought {i}", f"cat part{i}.py", f"{obs}end {i}") for i in range(n)]
    return Trajectory(instance_id, f"f75 is wrong ({instance_id})", [*steps, Step("done", "submit")])


def history(t: Trajectory, k: int) -> list[tuple[str, str]]:
    return [(s.action, s.observation) for s in t.steps[:k]]


def write(tmp_path: Path, trajs: list[Trajectory], **options) -> tuple[Path, object]:
    samples, stats = decompose(trajs, **options)
    path = tmp_path / "samples.jsonl"
    path.write_text(samples.text(), encoding="utf-8")
    return path, stats


def _word_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    corpus = [SYSTEM_PROMPT, "line of output end cat submit OBSERVATION: def return x"]
    tokenizer.train_from_iterator(corpus, trainers.WordLevelTrainer(special_tokens=["[UNK]"]))
    return tokenizer


@pytest.mark.parametrize("history_thoughts", [False, True])
def test_prompts_built_at_load_are_build_messages(tmp_path: Path, history_thoughts: bool) -> None:
    trajs = [traj(), traj("toy__calc-2", n=3)]
    oracle = {t.instance_id: {"calc.py": CALC} for t in trajs}
    path, _ = write(
        tmp_path, trajs, oracle_files=oracle, observation_chars=300, history_thoughts=history_thoughts
    )
    rows = read_samples(path)
    assert len(rows) == 7 + 4
    for row in rows:
        t = next(t for t in trajs if t.instance_id == row["instance_id"])
        k = row["step"]
        thoughts = [s.thought for s in t.steps[:k]] if history_thoughts else None
        expected = build_messages(
            t.problem, history(t, k), oracle_files={"calc.py": CALC}, observation_chars=300, thoughts=thoughts
        )
        assert row["prompt"] == expected
        assert row["expert_action"] == t.steps[k].action and row["expert_thought"] == t.steps[k].thought
        assert (row["oracle"], row["oracle_files"], row["num_steps"]) == ("whole", ["calc.py"], len(t.steps))
        assert row["trajectory_hash"] == t.content_hash() and row["split"] == "train"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    header = lines[0]
    assert header["kind"] == "header" and header["observation_chars"] == 300
    assert header["history_thoughts"] is history_thoughts and header["oracle"] == "whole"
    assert Counter(r["kind"] for r in lines) == {"header": 1, "trajectory": 2, "oracle": 2, "sample": 11}
    # each trajectory and each instance's files once: the second instance's calc.py is a delta of the first
    assert path.read_text().count("return x + 149") == 1
    assert lines[-1]["kind"] == "sample" and "prompt" not in lines[-1]


def test_budget_fits_are_recorded_and_rebuilt(tmp_path: Path) -> None:
    tokenizer = _word_tokenizer()
    counter = TokenCounter(tokenizer)
    t = traj(n=8)
    full = counter.total(build_messages(t.problem, history(t, 8)))
    fits = []
    for budget in (full // 2, full // 5, counter(SYSTEM_PROMPT) + 60):
        path, stats = write(tmp_path, [t], tokenizer=tokenizer, max_tokens=budget)
        rows = read_samples(path)
        assert len(rows) + stats.dropped_samples["over_budget"] == 9
        for row in rows:
            messages = build_messages(t.problem, history(t, row["step"]))
            assert row["prompt"] == fit_messages(messages, budget, TokenCounter(tokenizer))
            assert counter.total(row["prompt"]) <= budget
        fits += [json.loads(line).get("fit") for line in path.read_text().splitlines()]
    assert any(fit and ["e"] in [edit[1:] for edit in fit["edits"]] for fit in fits)  # elided observations
    assert any(fit and fit["drop"] for fit in fits)  # older steps omitted, recorded as a count
    assert os.path.getsize(path) < sum(len(json.dumps(r)) for r in rows)


def test_oracle_windows_when_whole_files_do_not_fit(tmp_path: Path) -> None:
    t = traj(n=2, obs="x\n")
    whole = {"calc.py": CALC}
    counter = TokenCounter()
    sizes = {
        context: counter.total(
            build_messages(t.problem, history(t, 2), oracle_files=patch_windows(PATCH, whole, context))
        )
        for context in WINDOW_LADDER
    }
    assert counter.total(build_messages(t.problem, history(t, 2), oracle_files=whole)) > 2 * sizes[20]
    options = {"oracle_files": {t.instance_id: whole}, "oracle_patches": {t.instance_id: PATCH}}
    path, stats = write(tmp_path, [t], max_tokens=sizes[20], **options)
    rows = read_samples(path)
    assert [r["oracle"] for r in rows] == ["window:20"] * 3 and stats.oracle == {"window:20": 3}
    content = rows[-1]["prompt"][1]["content"]
    assert "[... lines 1-206 omitted ...]" in content and "227|     return x + 75" in content
    assert rows[-1]["prompt"] == build_messages(
        t.problem, history(t, 2), oracle_files=patch_windows(PATCH, whole, 20)
    )
    # tighter: smaller windows in turn, then drops, counted per instance
    path, stats = write(tmp_path, [t], max_tokens=sizes[5], **options)
    assert {r["oracle"] for r in read_samples(path)} == {"window:5"}
    other = traj("toy__calc-2", n=2, obs="x\n")
    options = {"oracle_files": {i: whole for i in ("toy__calc-1", "toy__calc-2")},
               "oracle_patches": {i: PATCH for i in ("toy__calc-1", "toy__calc-2")}}  # fmt: skip
    _, stats = write(tmp_path, [t, other], max_tokens=counter(SYSTEM_PROMPT), **options)
    assert stats.dropped_by_instance == {"toy__calc-1": {"over_budget": 3}, "toy__calc-2": {"over_budget": 3}}
    assert stats.instance_rows()[0] == ("toy__calc-1", 0, "over_budget 3")
    assert "2 instances lost samples, 2 lost all" in stats.summary()
    assert ("instances losing all", 2) in stats.rows()
    # forced windows, with or without a budget; whole files stay whole without a budget
    path, _ = write(tmp_path, [t], oracle_window=3, **options)
    assert json.loads(path.read_text().splitlines()[0])["oracle"] == "window:3"
    assert read_samples(path)[0]["prompt"][1]["content"].count("|") == 7  # lines 224-230
    path, _ = write(tmp_path, [t], **options)
    assert {r["oracle"] for r in read_samples(path)} == {"whole"}


def test_format_one_files_still_read_and_format_two_errors_name_the_line(tmp_path: Path) -> None:
    t = traj(n=2)
    samples, _ = decompose([t])
    old = tmp_path / "old.jsonl"
    rows = samples.rows()
    old.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "oracle"}) + "\n" for r in rows))
    assert [r["prompt"] for r in read_samples(old)] == [r["prompt"] for r in rows]
    lines = samples.text().splitlines()
    for broken, needle in (
        ([lines[0], *lines[2:]], ":2: sample names trajectory 0"),  # its trajectory record is missing
        ([*lines, json.dumps({"kind": "what"})], ":6: unknown record kind"),
        ([*lines, json.dumps({**json.loads(lines[-1]), "oracle": "whole"})], "no 'whole' oracle files"),
        ([*lines, json.dumps({**json.loads(lines[-1]), "step": 9})], ":6: step 9 is not a step"),
        ([*lines, json.dumps({**json.loads(lines[-1]), "expert_action": " "})], "empty 'expert_action'"),
    ):
        path = tmp_path / "broken.jsonl"
        path.write_text("\n".join(broken) + "\n")
        with pytest.raises(TrainingError, match=needle):
            read_samples(path)


def _task_set(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e"}  # fmt: skip
    (repo / "calc.py").write_text(CALC)
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, env=env)
    base = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    )
    record = {"instance_id": "toy__calc-1", "repo": "toy/calc", "base_commit": base.stdout.strip(),
              "patch": PATCH, "test_patch": "", "problem_statement": "f75", "repo_dir": str(repo)}  # fmt: skip
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(record) + "\n")
    return tasks


def test_cli_oracle_window_and_drops_by_instance(tmp_path: Path) -> None:
    from swe_srl.cli.app import app
    from swe_srl.trajectories.schema import write_jsonl

    tasks, trajs, out = _task_set(tmp_path), tmp_path / "trajs.jsonl", tmp_path / "samples.jsonl"
    write_jsonl(trajs, [traj(n=3)])
    args = ["decompose", str(trajs), "--tasks", str(tasks), "-o", str(out)]
    result = CliRunner().invoke(app, [*args, "--oracle-window", "2"])
    assert result.exit_code == 0, result.output
    rows = read_samples(out)
    assert {r["oracle"] for r in rows} == {"window:2"} and "227|     return x + 75" in rows[0]["prompt"][1][
        "content"
    ]
    big = Step("write", "python - <<'EOF'\n" + "print(1)\n" * 400 + "EOF", "ok")  # ~900 tokens: never cut
    t = traj(n=3)
    write_jsonl(trajs, [Trajectory(t.instance_id, t.problem, [t.steps[0], big, *t.steps[1:]])])
    result = CliRunner().invoke(app, [*args, "--oracle-files", "--max-tokens", "1000"])
    assert result.exit_code == 0, result.output
    assert "samples with oracle: window:" in result.output and "dropped samples by instance" in result.output
    dropped = 5 - len(read_samples(out))
    assert dropped == 1 and "toy__calc-1: over_budget 1 (kept 4)" in result.output
