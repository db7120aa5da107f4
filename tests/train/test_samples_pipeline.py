"""From trajectories + a task set to cached samples (oracle files at base_commit, splits), the tiny model's
context window, and the effect-layer wiring of `swe-srl train` (no Docker: the evaluator is only built)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("trl")

from swe_srl.core.prompts import SYSTEM_PROMPT, build_messages  # noqa: E402
from swe_srl.errors import TrainingError  # noqa: E402
from swe_srl.train.config import load_config  # noqa: E402
from swe_srl.train.data import read_samples  # noqa: E402
from swe_srl.train.fitting import fit_rows  # noqa: E402
from swe_srl.train.run import build_effect, build_reward
from swe_srl.train.samples import (
    build_samples,  # noqa: E402
    resolve_samples,
)
from swe_srl.train.tiny.model import build_tokenizer  # noqa: E402
from swe_srl.trajectories.oracle import oracle_contents  # noqa: E402
from swe_srl.trajectories.schema import Step, Trajectory, write_jsonl  # noqa: E402

pytestmark = pytest.mark.train
GIT = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@e",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@e",
}


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT}
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout


@pytest.fixture
def task_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """Two instances on one repo (splits train/test) and one trajectory each; the worktree has moved on."""
    monkeypatch.setenv("SWE_SRL_HOME", str(tmp_path / "home"))
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    base = _git(repo, "rev-parse", "HEAD").strip()
    (repo / "calc.py").write_text(
        "LATER EDIT\n"
    )  # oracle contents must come from base_commit, not the worktree
    patch = "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
    records, trajs = [], []
    for name, split in (("a", "train"), ("b", "test")):
        iid = f"demo__calc-{name}"
        record = {
            "instance_id": iid,
            "repo": "demo/calc",
            "base_commit": base,
            "patch": patch,
            "test_patch": "",
        }
        records.append(
            {**record, "problem_statement": f"add is wrong ({name})", "split": split, "repo_dir": str(repo)}
        )
        steps = [
            Step("look", "cat calc.py", "def add..."),
            Step("fix", "sed -i 's/-/+/' calc.py"),
            Step("done", "submit"),
        ]
        trajs.append(Trajectory(iid, f"add is wrong ({name})", steps, patch))
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in records))
    write_jsonl(tmp_path / "trajs.jsonl", trajs)
    return tasks, tmp_path / "trajs.jsonl"


def test_oracle_samples_from_base_commit_with_splits_and_cache(task_set):
    from swe_srl.benchmark.instances import load_instances

    tasks, trajs = task_set
    instances = load_instances(str(tasks))
    assert oracle_contents(instances)["demo__calc-a"] == {"calc.py": "def add(a, b):\n    return a - b\n"}
    first = build_samples([str(trajs)], instances=instances, oracle_files=True)
    rows = read_samples(first.path)
    assert len(rows) == 6 and {r["split"] for r in rows} == {"train", "test"}
    assert all(
        "2|     return a - b" in r["prompt"][1]["content"] and "LATER EDIT" not in r["prompt"][1]["content"]
        for r in rows
    )  # training's default: numbered windows around the gold hunks
    assert {r["oracle"] for r in rows} == {"window:10"}
    whole = build_samples([str(trajs)], instances=instances, oracle_files=True, oracle_window=None)
    assert whole.path != first.path and {r["oracle"] for r in read_samples(whole.path)} == {"whole"}
    assert all(
        '<file path="calc.py">\ndef add(a, b):\n    return a - b\n</file>' in r["prompt"][1]["content"]
        for r in read_samples(whole.path)
    )
    mtime = first.path.stat().st_mtime_ns
    again = build_samples([str(trajs)], instances=instances, oracle_files=True)
    assert again.path == first.path and again.path.stat().st_mtime_ns == mtime  # reused from the cache
    plain = build_samples([str(trajs)], instances=instances, oracle_files=False)
    assert plain.path != first.path and "<file path=" not in plain.path.read_text()
    assert len(first.trajectories) == 2


def test_cli_style_config_resolves_trajectories_with_tasks(task_set):
    tasks, trajs = task_set
    config = load_config(None, [], trajectories=[str(trajs)], tasks=str(tasks), oracle_files=True)
    sample_set = resolve_samples(config)
    rows = read_samples(sample_set.path)
    assert all('<file path="calc.py">' in r["prompt"][1]["content"] for r in rows)
    with pytest.raises(TrainingError, match="--tasks"):
        resolve_samples(load_config(None, [], tasks=str(tasks)))


def test_task_set_without_splits_uses_the_one_split_rule(task_set, tmp_path: Path):
    from swe_srl.benchmark.instances import load_instances, split_of

    tasks, trajs = task_set
    unsplit = tmp_path / "unsplit.jsonl"
    unsplit.write_text("".join(json.dumps({k: v for k, v in json.loads(line).items() if k != "split"}) + "\n"
                               for line in tasks.read_text().splitlines()))  # fmt: skip
    sample_set = build_samples([str(trajs)], instances=load_instances(str(unsplit)))
    rows = read_samples(sample_set.path)
    assert rows and all(r["split"] == split_of(r["instance_id"]) for r in rows)  # the instance-id hash rule


def test_effect_wiring(task_set):
    from swe_srl.rewards.effect.evaluator import SandboxEffect
    from swe_srl.train.samples import SampleSet
    from swe_srl.trajectories.schema import read_jsonl

    tasks, trajs = task_set
    known = SampleSet(trajs, list(read_jsonl(trajs)))
    cases = [
        # effect off: no evaluator
        ({"effect": "off"}, known, None),
        # the srl reward has no effect layer
        ({"effect": "cached", "reward": "srl"}, known, "--reward layered"),
        # --samples alone: the trajectories to replay are unknown
        ({"effect": "cached"}, SampleSet(trajs), "--trajectories"),
    ]
    for options, sample_set, error in cases:
        config = load_config(None, [], tasks=str(tasks), **options)
        if error:
            with pytest.raises(TrainingError, match=error):
                build_effect(config, sample_set)
        else:
            assert build_effect(config, sample_set) is None
    config = load_config(None, [], tasks=str(tasks), trajectories=[str(trajs)], effect="full")
    effect = build_effect(config, resolve_samples(config))
    assert (
        isinstance(effect, SandboxEffect) and effect.mode == "full" and len(effect.steps._trajectories) == 2
    )
    reward = build_reward(config, effect)
    assert reward.effect is effect and reward.effect_mode == "full"
    # `--samples F --trajectories T --tasks D --effect cached`: the given samples, replayed against T
    samples = resolve_samples(config).path
    config = load_config(
        None, [], samples=str(samples), trajectories=[str(trajs)], tasks=str(tasks), effect="cached"
    )
    sample_set = resolve_samples(config)
    effect = build_effect(config, sample_set)
    assert (
        sample_set.path == samples
        and isinstance(effect, SandboxEffect)
        and len(effect.steps._trajectories) == 2
    )
    # `--samples F --effect cached` alone: a clear error naming --trajectories
    config = load_config(None, [], samples=str(samples), effect="cached")
    with pytest.raises(TrainingError, match="--trajectories"):
        build_effect(config, resolve_samples(config))


def test_fit_rows_keeps_system_problem_and_latest_step_within_the_context():
    tok = build_tokenizer(["hello world " * 50, "cat calc.py", "OBSERVATION:\nok", SYSTEM_PROMPT], 300)
    history = [(f"cat f{i}.py", "line\n" * 80) for i in range(6)]
    messages = build_messages("problem " * 100, history)
    row = {"prompt": messages, "expert_action": "ls"}
    assert fit_rows([row], 100_000, tok)[0]["prompt"] == messages  # fits: unchanged
    budget = 1600  # the system prompt (~760 tokens here) + the problem (~640) + the latest step, cut
    fitted = fit_rows([row], budget, tok)[0]["prompt"]
    ids = tok.apply_chat_template(fitted, add_generation_prompt=True, tokenize=True)
    ids = ids["input_ids"] if hasattr(ids, "keys") else ids
    assert len(ids) <= budget  # the real template's count, not an estimate
    assert fitted[0] == messages[0]  # the system prompt whole
    assert fitted[1]["content"].startswith("<problem_statement>\nproblem problem")  # the problem's head
    assert fitted[-2] == messages[-2]  # the latest action whole
    assert fitted[-1]["content"].startswith("OBSERVATION:") and fitted[-1]["content"].endswith("line")
    assert len(fitted) < len(messages)  # older steps went first
