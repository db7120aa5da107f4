"""The paper's samples: `decompose --history K` (the last K expert steps in each prompt, K in the header, applied by
every reader), `--holdout-trajectories N` (whole trajectories as the held-out split) and `--expand` (self-contained
samples with their `messages`)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from swe_srl.core.prompts import TokenCounter, build_messages, fit_messages, omitted_note, window_messages
from swe_srl.errors import ConfigError, TrainingError
from swe_srl.train.data import read_samples, split_rows
from swe_srl.trajectories.decompose import decompose
from swe_srl.trajectories.schema import Step, Trajectory

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "trajectories"
SOURCES = [str(FIXTURES / n) for n in ("openhands.json", "swe_smith.json", "toy__calc-2.traj.json")]


def traj(instance_id: str = "toy__calc-1", n: int = 7, obs: str = "output line\n" * 30) -> Trajectory:
    steps = [Step(f"thought {i}", f"cat part{i}.py", f"{obs}end {i}") for i in range(n)]
    return Trajectory(instance_id, f"calc is wrong ({instance_id})", [*steps, Step("done", "submit")])


def pairs(prompt: list[dict[str, str]]) -> int:
    return sum(m["role"] == "assistant" for m in prompt)


def write(tmp_path: Path, trajs: list[Trajectory], name: str = "samples.jsonl", **options) -> Path:
    samples, _ = decompose(trajs, **options)
    path = tmp_path / name
    path.write_text(samples.text(), encoding="utf-8")
    return path


def test_window_keeps_the_last_k_pairs_and_says_how_many_are_not_shown() -> None:
    t = traj()
    history = [(s.action, s.observation) for s in t.steps[:5]]
    full = build_messages(t.problem, history)
    windowed = build_messages(t.problem, history, window=2)
    assert windowed == window_messages(full, 2)
    assert windowed[0] == full[0] and windowed[2:] == full[-4:] and pairs(windowed) == 2
    assert windowed[1]["content"] == full[1]["content"] + omitted_note(3)
    assert windowed[1]["content"].endswith("\n\n[3 earlier steps not shown]")
    assert build_messages(t.problem, history, window=5) == full  # nothing left out: no line
    assert build_messages(t.problem, history, window=0)[1:] == [
        {"role": "user", "content": full[1]["content"] + omitted_note(5)}
    ]


def test_the_fitter_counts_window_and_fit_in_one_line() -> None:
    t = traj(n=9, obs="a long observation line\n" * 200)
    history = [(s.action, s.observation) for s in t.steps[:8]]
    windowed = build_messages(t.problem, history, window=4, observation_chars=0)
    counter = TokenCounter()
    fitted = fit_messages(windowed, counter.total(windowed) // 5, counter)
    dropped = pairs(windowed) - pairs(fitted)
    assert dropped >= 1
    assert fitted[1]["content"].endswith(omitted_note(4 + dropped))
    assert "omitted to fit" not in fitted[1]["content"] and fitted[1]["content"].count("earlier steps") == 1
    unwindowed = build_messages(t.problem, history, observation_chars=0)  # no window: today's line
    assert "earlier steps omitted to fit the context]" in fit_messages(unwindowed, 600, counter)[1]["content"]


@pytest.mark.parametrize("max_tokens", [None, 420])  # 420: most prompts fitted
def test_samples_hold_at_most_k_pairs_and_readers_build_them_like_build_messages(
    tmp_path: Path, max_tokens: int | None
) -> None:
    trajs = [traj(), traj("toy__calc-2", n=3)]
    path = write(tmp_path, trajs, history=2, max_tokens=max_tokens)
    header = json.loads(path.read_text().splitlines()[0])
    assert header["history"] == 2
    train, _ = split_rows(read_samples(path), test_fraction=0.0)  # what training reads
    assert len(train) == 8 + 4
    by_hash = {t.content_hash(): t for t in trajs}
    counter = TokenCounter()
    for row in train:
        assert pairs(row["prompt"]) <= 2 and row["prompt"][-1]["role"] != "assistant"
        t, k = by_hash[row["trajectory_hash"]], row["step"]
        expected = build_messages(t.problem, [(s.action, s.observation) for s in t.steps[:k]], window=2)
        if max_tokens is not None:
            expected = fit_messages(expected, max_tokens, counter)
        assert row["prompt"] == expected
        if k > 2:
            assert f"[{k - 2} earlier steps not shown]" in row["prompt"][1]["content"]


def test_no_history_is_todays_file_byte_for_byte(tmp_path: Path) -> None:
    trajs = [traj(), traj("toy__calc-2", n=3)]
    plain = write(tmp_path, trajs, "plain.jsonl")
    assert "history" not in json.loads(plain.read_text().splitlines()[0])
    assert plain.read_text() == write(tmp_path, trajs, "again.jsonl", history=None).read_text()
    full = read_samples(plain)
    assert max(pairs(r["prompt"]) for r in full) == 7
    windowed = read_samples(write(tmp_path, trajs, "k2.jsonl", history=2))
    # the effect layer's inputs: the same expert state (instance, trajectory, absolute step) per sample
    located = [(r["instance_id"], r["trajectory_hash"], r["step"], r["expert_action"]) for r in full]
    assert located == [
        (r["instance_id"], r["trajectory_hash"], r["step"], r["expert_action"]) for r in windowed
    ]


def test_a_bad_history_in_the_header_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, [traj()], history=2)
    lines = path.read_text().splitlines()
    lines[0] = json.dumps({**json.loads(lines[0]), "history": "two"})
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TrainingError, match=rf"{path.name}:1: header 'history' must be a whole number"):
        read_samples(path)
    with pytest.raises(ConfigError, match="--history -1"):
        decompose([traj()], history=-1)


def test_holdout_trajectories_are_whole_seeded_and_order_free() -> None:
    trajs = [traj(f"toy__calc-{i}", n=2 + i % 3) for i in range(8)]
    samples, stats = decompose(trajs, holdout_trajectories=3)
    held = {r["instance_id"] for r in samples.samples if r["split"] == "test"}
    assert len(held) == 3 and stats.held_out_trajectories == 3 and stats.held_out_alongside == 0
    for t in trajs:  # whole trajectories: every sample of one on one side
        assert len({r["split"] for r in samples.samples if r["instance_id"] == t.instance_id}) == 1
    assert stats.splits["test"] == sum(len(t.steps) for t in trajs if t.instance_id in held)
    assert samples.header["holdout_trajectories"] == 3 and samples.header["holdout_seed"] == 0
    again, _ = decompose(list(reversed(trajs)), holdout_trajectories=3)
    assert {r["instance_id"] for r in again.samples if r["split"] == "test"} == held
    seeds = [{r["instance_id"] for r in decompose(trajs, holdout_trajectories=3, holdout_seed=s)[0].samples
              if r["split"] == "test"} for s in range(1, 6)]  # fmt: skip
    assert any(choice != held for choice in seeds)
    with pytest.raises(ConfigError, match="--holdout-trajectories 9: only 8 trajectories give train samples"):
        decompose(trajs, holdout_trajectories=9)


def test_holdout_keeps_an_instance_on_one_side_and_draws_from_train_only() -> None:
    twins = [traj("toy__calc-1"), traj("toy__calc-1", n=4), *(traj(f"toy__calc-{i}") for i in range(2, 6))]
    for seed in range(6):
        samples, stats = decompose(twins, holdout_trajectories=1, holdout_seed=seed)
        held = {r["instance_id"] for r in samples.samples if r["split"] == "test"}
        assert len(held) == 1
        assert stats.held_out_alongside == (1 if held == {"toy__calc-1"} else 0)
    splits = {f"toy__calc-{i}": "train" for i in range(1, 6)} | {"toy__calc-5": "dev"}
    for seed in range(6):
        samples, _ = decompose(twins, splits=splits, holdout_trajectories=2, holdout_seed=seed)
        assert {r["split"] for r in samples.samples if r["instance_id"] == "toy__calc-5"} == {"dev"}
    train, test = split_rows([*samples.rows()], test_fraction=0.0)  # the split rule keeps the record's split
    assert {r["split"] for r in test} == {"test"} and test and train


def test_cli_history_holdout_and_expand(tmp_path: Path) -> None:
    from swe_srl.cli.app import app

    compact, expanded = tmp_path / "samples.jsonl", tmp_path / "expanded.jsonl"
    args = ["decompose", *SOURCES, "--history", "2", "--holdout-trajectories", "1"]
    result = CliRunner().invoke(app, [*args, "-o", str(compact)])
    assert result.exit_code == 0, result.output
    assert "held-out trajectories drawn" in result.output and "samples in split: test" in result.output
    result = CliRunner().invoke(app, [*args, "--expand", "-o", str(expanded)])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in expanded.read_text().splitlines()]
    assert lines[0]["kind"] == "header" and lines[0]["expanded"] and lines[0]["history"] == 2
    rows = lines[1:]
    assert rows and all("messages" in r and "prompt" not in r and "kind" not in r for r in rows)
    assert all(r["messages"][-1]["role"] == "user" and pairs(r["messages"]) <= 2 for r in rows)
    as_read = [{"prompt": r["messages"], **{k: v for k, v in r.items() if k != "messages"}} for r in rows]
    assert as_read == read_samples(compact)  # the same prompts
    assert read_samples(expanded) == read_samples(compact)  # and training reads either
    assert sum(r["split"] == "test" for r in rows) >= 1 and sum(r["split"] == "train" for r in rows) >= 1
    bad = CliRunner().invoke(app, ["decompose", *SOURCES, "--history", "-1", "-o", str(compact)])
    assert bad.exit_code != 0 and "--history" in bad.output and "greater than or equal to 0" in bad.output


def test_import_keeps_the_resolved_trajectories_of_one_model(tmp_path: Path) -> None:
    from swe_srl.cli.app import app

    (record,) = json.loads((FIXTURES / "swe_smith.json").read_text())
    variants = [
        ("a", True, "m1"),
        ("b", False, "m1"),
        ("c", None, "m1"),
        ("d", True, "m2"),
        ("e", True, "m1"),
    ]
    rows = [
        {**record, "instance_id": f"toy__calc.abc123.{n}", "resolved": r, "model": m} for n, r, m in variants
    ]
    raw, out = tmp_path / "raw.json", tmp_path / "trajs.jsonl"
    raw.write_text(json.dumps(rows))
    args = ["trajectories", "import", str(raw), "-o", str(out), "--resolved-only", "--model", "m1"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    kept = [json.loads(line) for line in out.read_text().splitlines()]
    assert [t["instance_id"].rsplit(".", 1)[1] for t in kept] == ["a", "e"]
    assert re.search(r"left out: not resolved\s*│\s*2\s*│", result.output)
    assert re.search(r"left out: another model\s*│\s*1\s*│", result.output)
    result = CliRunner().invoke(app, ["trajectories", "import", str(raw), "-o", str(out)])
    assert (
        result.exit_code == 0 and len(out.read_text().splitlines()) == 5 and "left out" not in result.output
    )
