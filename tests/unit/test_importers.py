"""Importers: golden files per format (tests/fixtures/trajectories) and, when present, the shared real samples."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest

from swe_srl.errors import TrajectoryFormatError
from swe_srl.trajectories.formats import editor_command, extract_problem, instance_id_of
from swe_srl.trajectories.importers import detect_format, import_trajectories, import_with_stats
from swe_srl.trajectories.schema import read_jsonl, write_jsonl

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "trajectories"
SHARED = Path(os.environ.get("SWE_SRL_SHARED", Path(__file__).resolve().parents[3] / "shared"))
SAMPLES = SHARED / "data" / "trajectories"
PROBLEM = "calc.add returns the difference of its arguments instead of the sum."

GOLDEN = [
    # SWE-agent .traj: special commands kept (they replay through harness/), edit → heredoc, instance id from the
    # file name, trailing newline stripped
    (
        "toy__calc-1.traj",
        "swe-agent",
        "toy__calc-1",
        [
            "find . -name calc.py",
            "open calc.py",
            "edit 2:2 <<'end_of_edit'\n    return a + b\nend_of_edit",
            "submit",
        ],
        None,
    ),
    # mini-swe-agent: one ```bash block per turn; the turn without one is not an action; final echo → submit
    (
        "toy__calc-2.traj.json",
        "mini-swe-agent",
        "toy__calc-2",
        ["cat calc.py", "sed -i 's/a - b/a + b/' calc.py", "submit"],
        None,
    ),
    # SWE-smith <function=…> blocks: editor calls become str_replace_editor bash lines
    (
        "swe_smith.json",
        "swe-smith",
        "toy__calc.abc123.func_pm_op_swap__x1",
        [
            "grep -rn 'def add' /testbed",
            "str_replace_editor view /testbed/calc.py --view_range 1 2",
            "str_replace_editor str_replace /testbed/calc.py --old_str '    return a - b' --new_str '    return a + b  # it'\"'\"'s the sum'",
            "submit",
        ],
        True,
    ),
    # OpenHands/SWE-Gym: two calls in one message, think is not an action, /workspace/<repo> → /testbed,
    # final response message's finish → submit, run suffix _0 dropped from the instance id
    (
        "openhands.json",
        "openhands",
        "toy__calc-3",
        [
            "ls /testbed",
            "cat /testbed/calc.py",
            "str_replace_editor create /testbed/calc.py --file_text 'def add(a, b):\n    return a + b  # it'\"'\"'s the sum\n'",
            "submit",
        ],
        True,
    ),
    # nebius: last fenced block of each ai text; a text without a command is not an action
    (
        "nebius.json",
        "nebius",
        "toy__calc-4",
        ['search_dir "def add"', "python -m pytest -q", "submit"],
        False,
    ),
    # native JSONL
    (
        "native.jsonl",
        "native",
        "toy__calc-5",
        ["cat calc.py", "sed -i 's/a - b/a + b/' calc.py", "submit"],
        True,
    ),
]


@pytest.mark.parametrize(("name", "source", "instance_id", "actions", "resolved"), GOLDEN)
def test_golden_files(
    name: str, source: str, instance_id: str, actions: list[str], resolved: bool | None
) -> None:
    (traj,) = import_trajectories(str(FIXTURES / name))
    assert (traj.source, traj.instance_id, traj.resolved) == (source, instance_id, resolved)
    assert [s.action for s in traj.steps] == actions
    assert traj.problem == PROBLEM


def test_observations_thoughts_and_exit_codes() -> None:
    (oh,) = import_trajectories(str(FIXTURES / "openhands.json"))
    assert oh.steps[1].observation.startswith("def add(a, b):") and oh.steps[1].exit_code == 0
    assert (
        oh.steps[2].thought == "The operator is wrong.\n\nRewrite the file."
    )  # think tool joins the next step
    assert (
        oh.steps[3].thought == "All done, summary here.\n\nFinishing."
    )  # text-only turn joins the next step
    assert oh.patch == "diff --git a/calc.py b/calc.py\n"
    (mini,) = import_trajectories(str(FIXTURES / "toy__calc-2.traj.json"))
    assert mini.steps[0].observation == "def add(a, b):\n    return a - b" and mini.steps[0].exit_code == 0
    assert mini.steps[0].thought == "Look at the code first."
    (neb,) = import_trajectories(str(FIXTURES / "nebius.json"))
    assert neb.steps[0].observation == "Found 1 matches"  # SWE-agent prompt suffix stripped
    assert neb.steps[1].thought == "Thinking out loud without a command.\n\nRun the tests."


def test_editor_actions_round_trip_through_shlex() -> None:
    args = {
        "command": "str_replace",
        "path": "/t/a.py",
        "old_str": "-x = '$HOME'\\n",
        "new_str": 'y = "`z`"\n',
    }
    argv = shlex.split(editor_command(args))
    assert argv == [
        "str_replace_editor",
        "str_replace",
        "/t/a.py",
        "--old_str",
        args["old_str"],
        "--new_str",
        args["new_str"],
    ]


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        ({"instance_id": "a", "steps": []}, "native"),  # native schema
        ({"trajectory": [{"action": "ls", "observation": ""}]}, "swe-agent"),  # SWE-agent items carry action
        ({"trajectory": [{"role": "ai", "text": "x"}]}, "nebius"),  # nebius items carry role + text
        ({"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "x"}}]}]}, "openhands"),
        (
            {"messages": json.dumps([{"role": "assistant", "content": "<function=bash>"}])},
            "swe-smith",
        ),  # JSON string
        ({"messages": [{"role": "assistant", "content": "```bash\nls\n```"}]}, "mini-swe-agent"),
        ({"history": [{"role": "assistant", "action": "ls"}]}, "swe-agent"),  # SWE-agent, history only
        ({"trajectory": [], "history": [{"role": "user", "content": "x"}]}, "swe-agent"),  # ran no step
        ({"history": [{"role": "user", "content": "x"}]}, None),  # a bare chat history is no trajectory
        ({"trajectory_format": "mini-swe-agent-1.1", "messages": []}, "mini-swe-agent"),
        (
            {"messages": [{"role": "assistant", "content": "```mswea_bash_command\nls\n```"}]},
            "mini-swe-agent",
        ),
        ({"hello": 1}, None),  # nothing known
        ([1, 2], None),  # not an object
    ],
)
def test_detect_format(record: object, expected: str | None) -> None:
    assert detect_format(record) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<pr_description>\nBug\n</pr_description>", "Bug"),  # OpenHands / SWE-smith / mini
        ("ISSUE:\nBug here\n\nINSTRUCTIONS:\nx", "Bug here"),  # SWE-agent / nebius
        ("just the issue", "just the issue"),  # fallback: whole text
    ],
)
def test_extract_problem(text: str, expected: str) -> None:
    assert extract_problem(text) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("a__b-12_3", "a__b-12"), ("a__b-12", "a__b-12"), ("x__y.abc.pr_6055", "x__y.abc.pr_6055")],
)
def test_instance_id_run_suffix(raw: str, expected: str) -> None:
    assert instance_id_of(raw) == expected


def test_bad_record_names_file_and_index_or_is_skipped() -> None:
    with pytest.raises(TrajectoryFormatError, match=r"bad\.jsonl:2: not a trajectory"):
        import_trajectories(str(FIXTURES / "bad.jsonl"))
    trajs, stats = import_with_stats(str(FIXTURES / "bad.jsonl"), skip_bad=True)
    assert len(trajs) == 1 and stats.records == 3 and len(stats.skipped) == 2
    with pytest.raises(TrajectoryFormatError, match="unknown trajectory format 'bogus'"):
        import_trajectories(str(FIXTURES / "native.jsonl"), fmt="bogus")


def test_malformed_arguments_are_a_format_error(tmp_path: Path) -> None:
    record = {
        "instance_id": "a__b-1",
        "messages": [
            {
                "role": "assistant",
                "tool_calls": [{"id": "1", "function": {"name": "execute_bash", "arguments": "{not json"}}],
            }
        ],
    }
    (tmp_path / "x.json").write_text(json.dumps([record]))
    with pytest.raises(TrajectoryFormatError, match=r"x\.json#0: tool call arguments"):
        import_trajectories(str(tmp_path / "x.json"))


def test_native_round_trip_and_directory_with_labels(tmp_path: Path) -> None:
    trajs = import_trajectories(str(FIXTURES / "openhands.json"))
    write_jsonl(tmp_path / "out.jsonl", trajs)
    assert list(read_jsonl(tmp_path / "out.jsonl")) == trajs
    run = tmp_path / "run" / "completions"
    run.mkdir(parents=True)
    record = json.loads((FIXTURES / "openhands.json").read_text())[0]
    del record["instance_id"], record["resolved"]
    (run / "toy__calc-9.json").write_text(json.dumps(record))
    (tmp_path / "run" / "resolved_labels.json").write_text(json.dumps({"toy__calc-9": "resolved"}))
    (tmp_path / "run" / "metadata.json").write_text("{}")  # a sidecar, not a trajectory
    (traj,) = import_trajectories(str(tmp_path / "run"))
    assert (traj.instance_id, traj.resolved, len(traj.steps)) == ("toy__calc-9", True, 4)


def test_parquet_through_datasets(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    records = json.loads((FIXTURES / "swe_smith.json").read_text())
    datasets.Dataset.from_list(records).to_parquet(str(tmp_path / "t.parquet"))
    (traj,) = import_trajectories(str(tmp_path / "t.parquet"))
    (expected,) = import_trajectories(str(FIXTURES / "swe_smith.json"))
    assert traj.steps == expected.steps and traj.instance_id == expected.instance_id
    assert len(traj.steps) == 4 and traj.source == "swe-smith"


def _source_tool_calls(record: dict) -> int:
    """Tool calls in a raw record, counted independently of the importers."""
    if "trajectory" in record:  # nebius: one fenced command per ai text
        return sum(1 for m in record["trajectory"] if m["role"] == "ai" and "```" in (m["text"] or ""))
    messages = record["messages"]
    messages = json.loads(messages) if isinstance(messages, str) else messages
    if "response" in record:
        messages = [*messages, record["response"]["choices"][0]["message"]]
    calls = sum(len(m.get("tool_calls") or []) for m in messages)
    text = sum(str(m.get("content")).count("<function=") for m in messages if m["role"] == "assistant")
    return calls + text


@pytest.mark.skipif(not SAMPLES.is_dir(), reason=f"shared trajectory samples not found at {SAMPLES}")
@pytest.mark.parametrize(
    "relpath",
    [
        "samples/nebius_SWE-agent-trajectories/sample_raw.json",
        "samples/swe-smith/sample_raw.json",
        "samples/swe-gym_openhands_sampled_trajectories/sample_raw.json",
        "openhands-claude35-verified/completions",
    ],
)
def test_shared_samples_action_counts(relpath: str) -> None:
    path = SAMPLES / relpath
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    expected = []
    for file in files:
        data = json.loads(file.read_text())
        expected += [_source_tool_calls(r) for r in (data if isinstance(data, list) else [data])]
    trajs = import_trajectories(str(path))
    assert [len(t.steps) for t in trajs] == expected
    assert all(t.problem and t.steps[-1].action for t in trajs)
