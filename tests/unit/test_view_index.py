"""The viewer's index (byte offsets and small fields of a JSONL file, read on demand) and its kind detection."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from swe_srl.errors import ConfigError
from swe_srl.view.detect import detect
from swe_srl.view.index import PARSE_LIMIT, LineIndex, fields_of, head
from swe_srl.view.samples import PAGE, Samples

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
import view_runs  # noqa: E402


def _jsonl(path: Path, records: list[dict], blank_every: int = 0) -> Path:
    lines = []
    for n, record in enumerate(records):
        lines.append(json.dumps(record) + "\n")
        if blank_every and n % blank_every == 0:
            lines.append("\n")  # blank lines are no records
    path.write_text("".join(lines), encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWE_SRL_HOME", str(tmp_path / "home"))  # the index cache of these tests


def test_index_holds_each_records_offset_and_fields_and_reads_one_record(tmp_path: Path):
    records = [{"kind": "sample", "instance_id": f"i{n % 3}", "split": "test" if n % 2 else "train", "step": n,
                "expert_action": "é" * n} for n in range(20)]  # fmt: skip
    index = LineIndex(_jsonl(tmp_path / "s.jsonl", records, blank_every=4))
    entries = index.entries()
    assert [e.number for e in entries] == list(range(20))
    assert [index.read(e) for e in entries] == records  # multi-byte text: offsets are bytes, not characters
    assert [e.step for e in index.select(instance_id="i1", split="test")] == [1, 7, 13, 19]
    assert len(index.select(instance_id="", split=None)) == 20  # empty filters select everything
    assert index.entries() is entries  # built once
    cached = list((tmp_path / "home" / "view-index").glob("*.json"))
    assert len(cached) == 1 and LineIndex(index.path).entries() == entries  # and cached for the next viewer
    with index.path.open("a") as handle:  # another version of the file: indexed again
        handle.write(json.dumps({"kind": "sample", "instance_id": "new", "step": 99}) + "\n")
    assert [e.step for e in LineIndex(index.path).select(instance_id="new")] == [99]
    assert len(list((tmp_path / "home" / "view-index").glob("*.json"))) == 2


def test_a_long_line_is_searched_for_its_fields_not_parsed():
    record = {"kind": "trajectory", "ref": 3, "instance_id": 'a"b', "problem": "x" * (PARSE_LIMIT * 2)}
    assert fields_of(json.dumps(record).encode()) == ("trajectory", 'a"b', None, None, 3, None, None)


def test_head_reads_only_the_first_records(tmp_path: Path):
    path = _jsonl(tmp_path / "s.jsonl", [{"n": n} for n in range(10)])
    with path.open("a") as handle:
        handle.write("{not json\n")  # never reached: the first page does not read the whole file
    assert head(path, 3) == ([{"n": 0}, {"n": 1}, {"n": 2}], True)
    with pytest.raises(ConfigError, match=r"s.jsonl:11: not a JSON line"):
        head(path, 20)


def test_samples_pages_show_the_prompts_the_model_sees(tmp_path: Path):
    """Every page (first page from the start of the file, later ones through the index) holds the prompts that
    reading the whole file gives (``SampleFile.rows``: the history window and the fitter applied)."""
    trajs = [view_runs.trajectory(f"demo__p-{n}", steps=30) for n in range(4)]
    path = view_runs.samples_file(tmp_path / "samples.jsonl", trajs, history=2)
    from swe_srl.trajectories.sample_file import expand

    records = [(f"{path}:{n}", json.loads(line)) for n, line in enumerate(path.read_text().splitlines(), 1)]
    expected = [row["prompt"] for row in expand(records)]
    samples = Samples(path)
    first = samples.render("index.html", {})[1]
    second = samples.render("page/2.html", {})[1]
    assert [r["prompt"] for r in first["rows"] + second["rows"]] == expected[: 2 * PAGE]
    assert all(len(r["prompt"]) <= 2 + 2 * 2 for r in first["rows"])  # at most the last 2 steps
    only = samples.render("index.html", {"instance": "demo__p-2", "step": "7"})[1]
    assert [(r["instance_id"], r["step"]) for r in only["rows"]] == [("demo__p-2", 7)]


def test_kind_detection_and_its_one_line_errors(tmp_path: Path):
    data = view_runs.dataset(tmp_path / "data.jsonl")
    run = view_runs.eval_run(tmp_path / "eval", data)
    trajs = view_runs.trajectories_file(tmp_path / "trajs.jsonl")
    samples = view_runs.samples_file(tmp_path / "samples.jsonl", [view_runs.trajectory("demo__x-1")])
    (tmp_path / "train").mkdir()
    (tmp_path / "train" / "metrics.jsonl").write_text('{"step": 1, "reward": 0.5}\n')
    (tmp_path / "seeds" / "seed-0").mkdir(parents=True)
    (tmp_path / "seeds" / "seed-0" / "summary.json").write_text("{}")
    swe_agent = tmp_path / "swe-agent-run" / "a.traj"  # a run's folder of trajectory files, and one of them
    swe_agent.parent.mkdir()
    swe_agent.write_text(json.dumps({"trajectory": [{"action": "ls", "observation": "", "thought": ""}]}))
    paths = (run, tmp_path / "train", tmp_path / "seeds", trajs, swe_agent.parent, swe_agent, samples)
    assert [detect(p) for p in paths] == ["eval", "train", "seeds", "trajectories", "trajectories", "trajectories",
                                          "samples"]  # fmt: skip
    (tmp_path / "empty").mkdir()
    (tmp_path / "other.jsonl").write_text('{"hello": 1}\n')
    for bad, why in ((tmp_path / "nope", "no such file or folder"), (tmp_path / "empty", "a folder holding none"),
                     (data, "neither a sample nor a trajectory"), (tmp_path / "other.jsonl", "(hello)")):  # fmt: skip
        with pytest.raises(ConfigError, match=r"expected an eval run folder") as caught:
            detect(bad)
        assert why in str(caught.value) and "\n" not in str(caught.value)
