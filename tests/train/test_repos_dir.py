"""`swe-srl train --repos-dir DIR` (config key `repos_dir`): a task set whose records name only `owner/name` reads
its repository from a local clone in DIR, offline, everywhere training reads one: the samples' oracle files and
RLVR's prompts (git, no Docker), the effect layer's images and expert states, and RLVR episodes' images and grading
(real containers)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")

from swe_srl.benchmark.instances import load_instances  # noqa: E402
from swe_srl.core.actions import SUBMIT, format_output  # noqa: E402
from swe_srl.errors import ConfigError  # noqa: E402
from swe_srl.train.config import load_config  # noqa: E402
from swe_srl.train.data import read_samples  # noqa: E402
from swe_srl.train.rlvr_run import rlvr_env_kwargs, rlvr_instances, rlvr_rows  # noqa: E402
from swe_srl.train.run import build_effect, build_reward  # noqa: E402
from swe_srl.train.samples import resolve_samples  # noqa: E402
from swe_srl.trajectories.schema import Step, Trajectory, write_jsonl  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docker"))

pytestmark = pytest.mark.train
FIX = "sed -i 's/return a - b/return a + b/' calc.py"


@pytest.fixture
def offline_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    """(DIR holding a bare mirror `tiny__calc`, the docker tests' calc tasks without `repo_dir`, one trajectory
    per task): SWE_SRL_HOME is the test's (empty repos cache, expert states and effect caches), so only DIR has the
    repository, and its source worktree has moved on past the base commit."""
    from agent_tasks import make_tiny_dataset

    monkeypatch.setenv("SWE_SRL_HOME", str(tmp_path / "home"))
    records = [json.loads(line) for line in make_tiny_dataset(tmp_path / "src").read_text().splitlines()]
    repos = tmp_path / "repos"
    subprocess.run(
        ["git", "clone", "-q", "--mirror", records[0]["repo_dir"], str(repos / "tiny__calc")], check=True
    )
    (Path(records[0]["repo_dir"]) / "calc.py").write_text("MOVED ON\n")
    trajs = []
    for record, split in zip(records, ("train", "test"), strict=True):
        del record["repo_dir"]
        record["split"] = split
        steps = [Step("look", "cat calc.py"), Step("fix", FIX), Step("done", "submit")]
        trajs.append(Trajectory(record["instance_id"], record["problem_statement"], steps, record["patch"]))
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in records))
    write_jsonl(tmp_path / "trajs.jsonl", trajs)
    return repos, tasks, tmp_path / "trajs.jsonl"


def _config(repos: Path, tasks: Path, trajs: Path, **values):
    return load_config(None, [], trajectories=[str(trajs)], tasks=str(tasks), repos_dir=str(repos), **values)


def test_oracle_files_and_rlvr_prompts_read_the_clone_in_repos_dir(offline_set) -> None:
    repos, tasks, trajs = offline_set
    config = _config(repos, tasks, trajs, oracle_files=True, reward="layered", effect="cached")
    assert config.repos_path == repos
    sample_set = resolve_samples(config)  # the clone's base commit, not the worktree that moved on
    prompts = [r["prompt"][1]["content"] for r in read_samples(sample_set.path)]
    assert len(prompts) == 6 and all("return a - b" in p and "MOVED ON" not in p for p in prompts)
    effect = build_effect(config, sample_set)  # the Docker side: test_effect_layer_and_rlvr_episode_...
    assert effect.repos_dir == repos and effect.steps.repos_dir == repos
    assert build_reward(config, effect, sample_set).inputs.repos_dir == repos
    rows = rlvr_rows(config, rlvr_instances(config))
    assert [r["instance_id"] for r in rows] == ["tiny__calc-add"]
    assert "return a - b" in rows[0]["prompt"][1]["content"]


def test_repos_dir_from_the_yaml_and_a_missing_folder_refused_by_name(offline_set, tmp_path: Path) -> None:
    repos, _, _ = offline_set
    yaml = tmp_path / "run.yaml"
    yaml.write_text(f"repos_dir: {repos}\n")
    assert load_config(yaml, []).repos_path == repos
    missing = r"invalid value for 'repos_dir' in defaults: .*'/nowhere' is no folder"
    with pytest.raises(ConfigError, match=missing):
        load_config(None, [], repos_dir="/nowhere")
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "swe_srl.cli", "train", "--repos-dir", str(tmp_path / "no"), "-o", str(run)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    (line,) = proc.stderr.strip().splitlines()
    assert "'repos_dir'" in line and "is no folder" in line and not run.exists()


@pytest.mark.docker
def test_effect_layer_and_rlvr_episode_run_on_images_built_from_the_clone(offline_set, docker_engine) -> None:
    from swe_srl.env.swe_env import SWEEnv

    repos, tasks, trajs = offline_set
    config = _config(repos, tasks, trajs, reward="layered", effect="full")
    sample_set = resolve_samples(config)
    instance = load_instances(str(tasks))[0]
    traj = next(t for t in sample_set.trajectories if t.instance_id == instance.instance_id)
    with build_effect(config, sample_set) as effect:
        assert effect.evaluate(instance, traj, 0, "ls").value == 1.0  # a harmless read where the expert read
        other = effect.evaluate(instance, traj, 1, "sed -i 's/return a - b/return b + a/' calc.py")
        assert other.value > 0.5 and other.tests["test_add.py::test_add"] == "PASSED"  # the tests ran
        assert effect.evaluate(instance, traj, 1, "true").value == 0.0  # no change where the expert fixed
        assert effect.sandbox_starts == 1 and effect.test_runs >= 1
    env = SWEEnv(instances=rlvr_instances(config), reward_mode="outcome", **rlvr_env_kwargs(config))
    try:
        env.reset(options={"instance_id": instance.instance_id})
        env.step(format_output("fix it", FIX))
        _, reward, terminated, _, info = env.step(format_output("done", SUBMIT))
    finally:
        env.close()
    assert terminated and reward == 1.0 and info["grade_status"] == "resolved"  # graded from the clone too
