"""The scripted expert resolves every bundled training task, with real observations, deterministically."""

import subprocess
import sys
import time
from pathlib import Path

import pytest

from swe_srl.trajectories.schema import read_jsonl

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def scripted(docker_engine):
    from swe_srl.benchmark.instances import load_instances
    from swe_srl.trajectories.scripted import default_trajectories

    path = default_trajectories(split="train")
    return list(read_jsonl(path)), load_instances("bundled:train")


def test_every_train_task_resolved(scripted) -> None:
    trajs, instances = scripted
    assert sorted(t.instance_id for t in trajs) == sorted(i.instance_id for i in instances)
    for traj in trajs:
        assert traj.resolved is True and traj.source == "scripted"
        assert 5 <= len(traj.steps) <= 9, [s.action for s in traj.steps]
        assert traj.steps[-1].action == "submit"
        assert traj.patch.strip(), traj.instance_id
        # observations are real command output: every command step printed something or exited 0
        for step in traj.steps[:-1]:
            assert step.exit_code is not None and step.thought.strip()


def test_trajectories_are_varied(scripted) -> None:
    trajs, _ = scripted
    first_words = {s.action.split()[0] for t in trajs for s in t.steps}
    # locate, inspect, test and edit commands all show up across the suite
    assert {"python", "submit"} <= first_words
    assert first_words & {"grep", "find", "ls"}
    assert first_words & {"sed", "cat", "str_replace_editor"}


def test_same_seed_same_trajectory(scripted) -> None:
    from swe_srl.trajectories.scripted import scripted_trajectories

    trajs, instances = scripted
    by_id = {i.instance_id: i for i in instances}
    # one whose failing test prints object addresses, as toolz's curry tests do (else the first); and pytest times
    traj = next((t for t in trajs if any(" at 0x7f0000000001" in s.observation for s in t.steps)), trajs[0])
    (again,) = scripted_trajectories([by_id[traj.instance_id]], seed=0, progress=False)
    assert [s.action for s in again.steps] == [s.action for s in traj.steps]
    assert again.patch == traj.patch
    # the observations too, byte for byte: the samples, the tokenizer and the warm-up are built from them
    assert [s.observation for s in again.steps] == [s.observation for s in traj.steps]
    assert any(" in 0.01s" in s.observation for s in traj.steps)


def test_expert_seeds_give_each_train_task_several_runs(docker_engine) -> None:
    from swe_srl.train.data import read_samples
    from swe_srl.train.samples import default_sample_set

    sample_set = default_sample_set(True, expert_seeds=2)
    runs: dict[tuple[str, str], set[str]] = {}
    for sample in read_samples(sample_set.path):
        runs.setdefault((sample["split"], sample["instance_id"]), set()).add(sample["trajectory_hash"])
    train = [len(h) for (split, _), h in runs.items() if split == "train"]
    # two runs per train task (two seeds may, rarely, script the same trajectory); dev and test keep one
    assert train and max(train) == 2 and sum(n == 2 for n in train) >= len(train) - 1, train
    assert {len(h) for (split, _), h in runs.items() if split != "train"} == {1}
    # a run holding out test never reads dev, so it does not generate dev's trajectories; train is the same
    rows = read_samples(default_sample_set(True, expert_seeds=2, heldout="test").path)
    assert {r["split"] for r in rows} == {"train", "test"}
    trained = [r for r in read_samples(sample_set.path) if r["split"] == "train"]
    assert [r["prompt"] for r in rows if r["split"] == "train"] == [r["prompt"] for r in trained]


def _waits_on_flock(pid: int) -> bool:
    """Whether process ``pid`` is blocked waiting for a ``flock`` (``/proc/locks`` marks waiters with ``->``)."""
    lines = Path("/proc/locks").read_text().splitlines()
    return any("->" in line and line.split("->", 1)[1].split()[3] == str(pid) for line in lines)


def test_concurrent_runs_share_one_generation(docker_engine) -> None:
    """Two runs starting together used to generate the scripted trajectories twice; the observations' timings differ
    between generations, so the two runs trained on different samples. A second caller now waits for the first's
    generation and reuses its file."""
    from swe_srl.benchmark.instances import load_instances
    from swe_srl.infra.image_build import file_lock
    from swe_srl.trajectories.scripted import cache_path

    path = cache_path(load_instances("bundled:dev"), split="dev", seed=97)
    path.unlink(missing_ok=True)
    code = (
        "from swe_srl.trajectories.scripted import default_trajectories as d; print(d(split='dev', seed=97))"
    )
    proc = None
    try:
        with file_lock(path.name):  # stands in for a first run, mid-generation
            proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
            deadline = time.monotonic() + 60
            while not _waits_on_flock(proc.pid) and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.2)
            assert _waits_on_flock(proc.pid), "the second caller did not wait for the generation in progress"
            path.write_text("generated by the first run\n", encoding="utf-8")
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0 and out.strip() == str(path)
        assert path.read_text(encoding="utf-8") == "generated by the first run\n"
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
        path.unlink(missing_ok=True)
