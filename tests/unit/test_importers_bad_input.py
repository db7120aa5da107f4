"""Bad input: without ``--skip-bad`` the first one stops the run naming file and line; with it, it is skipped and
named; nothing is half-written either way."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from swe_srl.cli.app import app
from swe_srl.errors import TrajectoryFormatError
from swe_srl.train.data import read_samples
from swe_srl.trajectories.importers import import_with_stats

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "trajectories"


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A mini-swe-agent run directory with a good trajectory, a 0-byte and a truncated one, and a JSONL file with
    one bad line between two good ones."""
    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "mini_run", run)
    (run / "a__b-1").mkdir()
    (run / "a__b-1" / "a__b-1.traj.json").write_bytes(b"")
    text = (FIXTURES / "toy__calc-11.traj.json").read_text()
    (run / "a__b-2.traj.json").write_text(text[: len(text) // 2])
    good = (FIXTURES / "native.jsonl").read_text().strip()
    (run / "native.jsonl").write_text(
        f'{good}\n{{"instance_id": "x", "steps": [\n{good.replace("-5", "-6")}\n'
    )
    return run


def test_first_bad_input_stops_naming_file_and_line(run_dir: Path) -> None:
    with pytest.raises(TrajectoryFormatError, match=r"a__b-1\.traj\.json: empty file \(0 bytes\)$"):
        import_with_stats(str(run_dir))
    (run_dir / "a__b-1" / "a__b-1.traj.json").unlink()
    with pytest.raises(
        TrajectoryFormatError, match=r"a__b-2\.traj\.json: invalid JSON, truncated .*line \d+ column"
    ):
        import_with_stats(str(run_dir))
    (run_dir / "a__b-2.traj.json").unlink()
    with pytest.raises(TrajectoryFormatError, match=r"native\.jsonl:2: invalid JSON"):
        import_with_stats(str(run_dir))


def test_skip_bad_skips_and_names_each_bad_input(run_dir: Path) -> None:
    trajs, stats = import_with_stats(str(run_dir), skip_bad=True)
    assert sorted(t.instance_id for t in trajs) == ["toy__calc-10", "toy__calc-5", "toy__calc-6"]
    assert len(stats.skipped) == 3 and stats.records == 6
    assert stats.skipped[0].endswith("a__b-1.traj.json: empty file (0 bytes)")
    assert (
        "a__b-2.traj.json: invalid JSON" in stats.skipped[1]
        and "native.jsonl:2: invalid JSON" in stats.skipped[2]
    )
    assert [Path(p).name for p in stats.ignored] == [
        "exit_statuses_1764580000.0.yaml",
        "minisweagent.log",
        "preds.json",
        "swe-bench_verified__test__toy-run.json",  # sb-cli's report: a sidecar folder
    ]


def test_cli_writes_nothing_on_error_and_names_skips(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text("previous\n")
    for command in (["trajectories", "import", str(run_dir)], ["decompose", str(run_dir)]):
        result = CliRunner().invoke(app, [*command, "-o", str(out)])
        assert isinstance(result.exception, TrajectoryFormatError) and "empty file" in str(result.exception)
        assert out.read_text() == "previous\n"  # untouched
        assert not list(tmp_path.glob(".out.jsonl.tmp*"))
    result = CliRunner().invoke(app, ["trajectories", "import", str(run_dir), "-o", str(out), "--skip-bad"])
    assert result.exit_code == 0, result.output
    assert len(out.read_text().splitlines()) == 3
    assert "skipped: " in result.output and "native.jsonl:2: invalid JSON" in result.output
    assert f"not a trajectory file: {run_dir / 'preds.json'}" in result.output
    samples = tmp_path / "samples.jsonl"
    result = CliRunner().invoke(app, ["decompose", str(run_dir), "-o", str(samples), "--skip-bad"])
    assert result.exit_code == 0, result.output
    assert "a__b-1.traj.json: empty file (0 bytes)" in result.output
    assert len(read_samples(samples)) == 4 + 3 + 3  # toy__calc-10, -5, -6: every step a target
