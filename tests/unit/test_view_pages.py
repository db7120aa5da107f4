"""Pages the browser test does not open, rendered by the site as the server serves them: a one-shot protocol's
run (published rows, generations, the reason of an empty patch), a ``--seeds`` folder, and GRPO groups read from
a completion log with rewards that differ."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from swe_srl.view.groups import completion_steps, read_groups
from swe_srl.view.open import open_site

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
import view_runs  # noqa: E402


def test_oneshot_run_shows_published_rows_generations_and_why_a_patch_is_empty(tmp_path: Path):
    data = view_runs.dataset(tmp_path / "data.jsonl")
    site = open_site(view_runs.oneshot_run(tmp_path / "run", data))
    index = site.render("index.html")
    assert "oracle-file editing" in index and "SRL" in index and "14.8%" in index  # Table 5's rows
    assert "measured (this run)" in index and "tokens: 1624 prompt" in index  # summed over the instances
    patched = site.render("instance/demo__alpha-1.html")
    assert "&lt;solution&gt;&lt;script&gt;" in patched and "<script>window" not in patched  # output escaped
    assert "812 prompt + 64 completion tokens" in patched and "matched after stripping whitespace" in patched
    empty = site.render("instance/demo__beta-2.html")
    assert 'id="empty-reason"' in empty and "unreadable answer: no &lt;solution&gt; block" in empty
    assert "cut at the budget" in empty


def test_seeds_folder_lists_its_seeds_and_serves_each_run(tmp_path: Path):
    seeds = tmp_path / "seeds"
    for seed in (0, 1):
        run = seeds / f"seed-{seed}"
        run.mkdir(parents=True)
        (run / "metrics.jsonl").write_text(json.dumps({"step": 1, "reward": 0.25 + seed}) + "\n")
        row = {"id": "x#0", "instance_id": "demo__x-1", "step": 0, "prompt": "p", "expert_action": "ls",
               "initial_output": "<think>t</think>\npwd", "final_output": "<think>t</think>\nls",
               "initial_reward": {"srl": 0.1, "layered": 0.2}, "final_reward": {"srl": 1.0, "layered": 1.0}}  # fmt: skip
        (run / "heldout.jsonl").write_text(json.dumps(row) + "\n")
    means = {"final": {"srl": 0.5, "layered": 0.6}, "initial": {"srl": 0.1, "layered": 0.2}}
    record = {
        "method": "srl",
        "runs": [{"seed": s, "steps": 1, "samples": 1, "means": means} for s in (0, 1)],
    }
    (seeds / "seeds.json").write_text(json.dumps(record))
    shutil.copytree(seeds / "seed-1", seeds / "not-a-seed")
    site = open_site(seeds)
    assert site.routes() == ["index.html", "seed-0/index.html", "seed-1/index.html"]
    index = site.render("index.html")
    assert 'href="seed-0/index.html"' in index and "0.600" in index
    page = site.render("seed-1/index.html")
    assert 'href="../static/viewer.css"' in page and "+0.800" in page  # the gain, layered
    assert "1.250" in page  # seed-1's own metrics


def test_grpo_groups_rank_each_prompts_completions_by_reward(tmp_path: Path):
    """A completion log as TRL 1.16 writes it (``pd.DataFrame(table).to_parquet``): a group per prompt, ranked."""
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    prompts = [[{"role": "system", "content": "s"}, {"role": "user", "content": f"fix {k}"}] for k in (1, 2)]
    rewards = [0.2, 0.9, -1.0, 0.5, 0.1, 0.3, 0.3, 0.7]
    table = {
        "step": [3] * 8,
        "prompt": [prompts[k // 4] for k in range(8)],
        "completion": [[{"role": "assistant", "content": f"<think>t</think>\ncmd {k}"}] for k in range(8)],
        "srl_layered": rewards,
        "srl_layered/syntax": [r / 2 for r in rewards],
        "srl_layered_format_error": ["" if r > -1 else "no_think" for r in rewards],
        "advantage": [r - 0.5 for r in rewards],
    }
    (tmp_path / "completions").mkdir()
    pd.DataFrame(table).to_parquet(tmp_path / "completions" / "completions_00003.parquet")
    assert completion_steps(tmp_path) == [3]
    groups = read_groups(tmp_path, 3)
    assert [g["prompt"][1]["content"] for g in groups] == ["fix 1", "fix 2"]
    assert [c["text"].split()[-1] for c in groups[0]["completions"]] == ["1", "3", "0", "2"]
    assert [c["reward"] for c in groups[1]["completions"]] == [0.7, 0.3, 0.3, 0.1]
    worst = groups[0]["completions"][-1]
    assert worst["layers"] == {"syntax": -0.5} and worst["notes"] == {"srl_layered_format_error": "no_think"}
    assert groups[0]["spread"] == pytest.approx(1.9) and groups[0]["layer_names"] == ["syntax"]


def test_eval_instances_and_held_out_rows_link_to_each_other(tmp_path: Path):
    data = view_runs.dataset(tmp_path / "data.jsonl")
    run = view_runs.eval_run(tmp_path / "eval", data)
    train = tmp_path / "train"
    train.mkdir()
    row = {"id": "a#1", "instance_id": "demo__alpha-1", "step": 1, "prompt": "p", "expert_action": "cat a.py",
           "initial_output": "x", "final_output": "<think>t</think>\ncat a.py",
           "initial_reward": {"srl": 0.0, "layered": 0.0}, "final_reward": {"srl": 1.0, "layered": 1.0}}  # fmt: skip
    (train / "heldout.jsonl").write_text(json.dumps(row) + "\n")
    site = open_site(run, train=train)
    assert "train/index.html" in site.routes()
    assert 'href="../train/index.html#held-demo__alpha-1"' in site.render("instance/demo__alpha-1.html")
    held = site.render("train/index.html")
    assert 'id="held-demo__alpha-1"' in held and 'href="../instance/demo__alpha-1.html"' in held
    assert "train/index.html#" not in site.render("instance/demo__beta-2.html")  # no held-out row of it


def test_a_grade_s_cross_check_and_screen_flags_are_shown(tmp_path: Path):
    # a run failed closed on the runner's output: the page shows the channel's status beside the output's
    data = view_runs.dataset(tmp_path / "data.jsonl")
    run = view_runs.eval_run(tmp_path / "run", data)
    (path,) = [
        p for p in (run / "results").glob("*.json") if json.loads(p.read_text())["status"] == "unresolved"
    ]
    note = "tests/test_b.py::test_fix: channel PASSED, stdout FAILED"
    record = json.loads(path.read_text()) | {
        "reason": f"channel and runner output disagree: {note}",
        "cross_check": [note],
        "flags": [{"path": "demo/core.py", "rule": "profile or trace hook", "line": "sys.setprofile(_swap)"}],
    }
    path.write_text(json.dumps(record))
    page = open_site(run).render(f"instance/{record['instance_id']}.html")
    assert 'id="cross-check"' in page and note in page
    assert 'id="screen-flags"' in page and "profile or trace hook" in page and "sys.setprofile(_swap)" in page
