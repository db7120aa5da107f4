"""Importers, one golden fixture per format quirk (tests/fixtures/trajectories, written by the project): exact step
counts, actions, observations, ids and metadata."""

from __future__ import annotations

from pathlib import Path

import pytest

from swe_srl.trajectories.formats import run_metadata, tool_action
from swe_srl.trajectories.formats_mini import mini_action, mini_observation
from swe_srl.trajectories.importers import import_trajectories, import_with_stats, parse_record

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "trajectories"
PROBLEM = "calc.add returns the difference of its arguments instead of the sum."
WARNING = (
    "<warning>\nThe output of your last command was too long.\nPlease try a different command that produces less "
    "output.\n</warning><output_head>\n/testbed/a.py\n/testbed/b.py\n</output_head>\n<elided_chars>\n12000 characters "
    "elided\n</elided_chars>\n<output_tail>\n/testbed/calc.py\n</output_tail>"
)
SED = "sed -i 's/a - b/a + b/' /testbed/calc.py"


def _steps(traj) -> list[tuple[str, str, int | None]]:
    return [(s.action, s.observation, s.exit_code) for s in traj.steps]


def test_mini_v2_text_mode_run_directory() -> None:
    """```mswea_bash_command fences; long output kept (warning, head, elided count, tail); an exception line kept;
    a format error is not an observation; ``cd … && echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`` → submit; the run
    directory's preds.json, exit_statuses_*.yaml, log and sb-cli report are not trajectories."""
    (traj,), stats = import_with_stats(str(FIXTURES / "mini_run"))
    assert _steps(traj) == [
        ("find /testbed -name '*.py'", WARNING, 0),
        (
            "cd /testbed && python -m pytest -q",
            "<exception>An error occurred while executing the command: timed out</exception>\npartial",
            -1,
        ),
        (SED, "", 0),
        ("submit", "", None),
    ]
    assert [s.thought for s in traj.steps] == [
        "Find the modules.",
        "Run the tests.",
        "Replace the minus.",
        "Submit.",
    ]
    assert (traj.instance_id, traj.source, traj.problem) == ("toy__calc-10", "mini-swe-agent", PROBLEM)
    assert (
        traj.metadata["model"] == "anthropic/claude-sonnet-4-5"
        and traj.metadata["exit_status"] == "Submitted"
    )
    assert traj.patch == "diff --git a/calc.py b/calc.py\n"
    assert [Path(p).name for p in stats.ignored] == [
        "exit_statuses_1764580000.0.yaml",
        "minisweagent.log",
        "preds.json",
        "swe-bench_verified__test__toy-run.json",
    ]
    assert stats.records == 1 and not stats.skipped


def test_mini_v2_tool_calls() -> None:
    """Each parallel tool call is a step, matched to its observation by id; a call the environment did not execute
    is dropped, as are the calls after the submission; the instance id comes from the file name."""
    (traj,) = import_trajectories(str(FIXTURES / "toy__calc-11.traj.json"))
    assert _steps(traj) == [
        ("ls /testbed", "calc.py", 0),
        ("cat /testbed/calc.py", "def add(a, b):\n    return a - b", 0),
        ("python -m pytest -q", "1 failed", 1),
        (SED, "", None),  # the submission in the same message ended the run before its output was recorded
        ("submit", "", None),
    ]
    assert [s.thought for s in traj.steps] == [
        "Look at the files.",
        "",
        "Test, then look at git.",
        "Fix and submit.",
        "",
    ]
    assert traj.instance_id == "toy__calc-11" and traj.metadata["model"] == "openai/gpt-5-mini"


SUBMIT = (
    "cd /testbed && git diff -- calc.py util.py > patch.txt && echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat "
    "patch.txt"
)


def test_mini_submission_is_the_step_that_ended_a_submitted_run() -> None:
    """2.x: the action before the ``role: exit`` message of a ``Submitted`` run is the submission, whatever its
    command; a sentinel command whose output was recorded (it exited 1, so mini went on) stays a command."""
    (traj,) = import_trajectories(str(FIXTURES / "toy__calc-16.traj.json"))
    assert _steps(traj) == [
        (SED, "", 0),
        (
            "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && python -m pytest -q /testbed",
            "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n1 failed",
            1,
        ),
        ("submit", "", None),
    ]
    assert traj.steps[-1].thought == "Write the patch and submit it."
    assert traj.metadata["exit_status"] == "Submitted" and traj.patch == "diff --git a/calc.py b/calc.py\n"


def test_mini_v1_submission_message_is_not_an_observation() -> None:
    """1.x: the last user message holds the submission (no return code); its action becomes ``submit``."""
    (traj,) = import_trajectories(str(FIXTURES / "toy__calc-17.traj.json"))
    assert _steps(traj) == [("sed -i 's/a - b/a + b/' calc.py", "", 0), ("submit", "", None)]
    assert traj.instance_id == "toy__calc-17" and traj.patch == "diff --git a/calc.py b/calc.py\n"


@pytest.mark.parametrize(
    ("status", "last"),
    [("Submitted", "submit"), ("LimitsExceeded", SUBMIT), (None, SUBMIT)],
)
def test_mini_submission_needs_a_submitted_run(status: str | None, last: str) -> None:
    """Only a ``Submitted`` run has a submission; without an exit status the command form decides (this command
    does not start with ``echo``, so it stays a command)."""
    record = {
        "instance_id": "toy__calc-18",
        "info": {"exit_status": status} if status else {},
        "messages": [
            {"role": "user", "content": PROBLEM},
            {"role": "assistant", "content": f"```bash\n{SUBMIT}\n```"},
        ],
    }
    traj = parse_record(record, "record", "mini-swe-agent")
    assert [s.action for s in traj.steps] == [last]


@pytest.mark.parametrize(
    ("command", "action"),
    [
        ("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "submit"),
        ("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached", "submit"),
        ("cd /testbed && echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat patch.txt", "submit"),
        ("cd /testbed && cd src && echo 'COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT'", "submit"),
        ("echo MINI_SWE_AGENT_FINAL_OUTPUT; git diff", "submit"),  # mini-swe-agent 1.0
        ("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUTS", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUTS"),
        (
            "grep -r COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT .",
            "grep -r COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT .",
        ),
        (
            "ls && echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
            "ls && echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
        ),
    ],
)
def test_mini_submission_forms(command: str, action: str) -> None:
    assert mini_action(command) == action


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<returncode>0</returncode>\n<output>\nhello\n</output>", ("hello", 0)),
        ("<returncode>1</returncode>\n<output>\n</output>", ("", 1)),
        ("<returncode>0</returncode>\n" + WARNING, (WARNING, 0)),  # long output: everything the agent saw
        ("Please always provide EXACTLY ONE action", ("Please always provide EXACTLY ONE action", None)),
    ],
)
def test_mini_observation(text: str, expected: tuple[str, int | None]) -> None:
    assert mini_observation(text) == expected


def test_swe_agent_run_directory_metadata_and_sidecars() -> None:
    """SWE-agent 1.x: model from ``replay_config`` (a JSON string), ``info.exit_status``; the run's preds.json,
    configs, logs, .patch and .pred files are not trajectories."""
    (traj,), stats = import_with_stats(str(FIXTURES / "swe_agent_run"))
    assert [s.action for s in traj.steps] == [
        "str_replace_editor view /testbed/calc.py",
        "str_replace_editor str_replace /testbed/calc.py   --old_str '    return a - b' --new_str '    return a + b'",
        "submit",
    ]
    assert traj.steps[0].observation.endswith("     2\t    return a - b\n")
    assert (traj.instance_id, traj.problem, traj.metadata["model"]) == (
        "toy__calc-12",
        PROBLEM,
        "claude-sonnet-4-20250514",
    )
    assert traj.metadata["exit_status"] == "submitted" and stats.records == 1 and len(stats.ignored) == 8


def test_swe_agent_demo_id_and_repo_path() -> None:
    """The id is ``replay_config.problem_statement.id``, not the file name; the repository root ``/toy__calc``
    (the first ``state.working_dir``) becomes /testbed where it starts a path, not inside other names."""
    (traj,) = import_trajectories(str(FIXTURES / "demo__default__t-0.00.traj"))
    assert traj.instance_id == "toy__calc-13" and traj.metadata["source_instance_id"] == "toy__calc-13"
    assert _steps(traj) == [
        (
            "open /testbed/calc.py",
            "[File: /testbed/calc.py (2 lines total)]\n1:def add(a, b):\n2:    return a - b",
            None,
        ),
        (
            "edit 2:2 <<'end_of_edit'\n    return a + b\nend_of_edit",
            "[File: /testbed/calc.py (2 lines total)]\n1:def add(a, b):\n2:    return a + b\nFile updated.",
            None,
        ),
        ("ls /toy__calc_backup /testbed", "ls: cannot access '/toy__calc_backup'\ncalc.py", None),
        ("submit", "", None),
    ]
    assert traj.steps[0].thought == "Open /testbed/calc.py."


def test_swe_agent_history_only() -> None:
    (traj,) = import_trajectories(str(FIXTURES / "toy__calc-14.traj"))
    assert _steps(traj) == [
        ("find_file calc.py", 'Found 1 matches for "calc.py" in /testbed:\n/testbed/calc.py', None),
        ("edit 'return a - b' 'return a + b'", "Text replaced.", None),
        ("python -c 'import calc; print(calc.add(1, 2))'", "3", None),
        ("submit", "diff --git a/calc.py b/calc.py\n", None),
    ]
    assert (traj.instance_id, traj.source, traj.problem) == ("toy__calc-14", "swe-agent", PROBLEM)
    assert [s.thought for s in traj.steps] == ["Find it.", "Fix it.", "Check.", "Done."]


def test_nebius_repo_path_and_metadata() -> None:
    (traj,) = import_trajectories(str(FIXTURES / "nebius_repo_path.json"))
    assert _steps(traj) == [
        ("cat /testbed/calc.py", "def add(a, b):\n    return a - b", None),
        (
            'search_dir "add" /testbed',
            'Found 1 matches for "add" in /testbed:\n/testbed/calc.py (1 matches)',
            None,
        ),
        ("submit", "", None),
    ]
    assert (traj.instance_id, traj.resolved) == ("toy__calc-15", False)
    assert traj.metadata["model"] == "swe-agent-llama-70b" and traj.metadata["exit_status"] == "submitted"


def test_ipython_cell_rewrite_and_completion_log_model() -> None:
    """An OpenHands IPython cell runs as a python3 heredoc whose delimiter is no line of the code."""
    assert (
        tool_action("execute_ipython_cell", {"code": "print(1)"})
        == "python3 - <<'SWE_SRL_PY'\nprint(1)\nSWE_SRL_PY"
    )
    tricky = "x = '''\nSWE_SRL_PY\n'''"
    assert (
        tool_action("execute_ipython_cell", {"code": tricky})
        == f"python3 - <<'SWE_SRL_PY1'\n{tricky}\nSWE_SRL_PY1"
    )
    record = {
        "instance_id": "toy__calc-3",
        "messages": [{"role": "user", "content": PROBLEM}],
        "response": {
            "model": "litellm_proxy/claude-3-5-sonnet-20241022",
            "choices": [{"message": {"role": "assistant"}}],
        },
    }
    assert run_metadata(record) == {"model": "litellm_proxy/claude-3-5-sonnet-20241022"}
    (smith,) = import_trajectories(str(FIXTURES / "swe_smith.json"))
    assert smith.metadata["model"] == "synthetic" and smith.metadata["traj_id"].endswith(".r1")
