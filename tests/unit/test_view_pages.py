"""Pages the browser test does not open, rendered by the site as the server serves them: a one-shot protocol's
run (published rows, generations, the reason of an empty patch) and a ``--seeds`` folder."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

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
