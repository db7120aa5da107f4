"""mini-swe-agent trajectories (``.traj.json``: ``messages``, ``info``, ``trajectory_format``) → Trajectory.

Versions: 1.x (one ```bash fence per assistant message), 2.x text mode (one ```mswea_bash_command fence) and 2.x
tool calls (``bash`` tool calls, each its own step, observations as ``role: tool``). 2.x records what the
environment ran in each assistant message's ``extra.actions``; that list is used when present, else the tool
calls, else mini's own regex on the text (exactly one fence, else a format error: not an action).

* The submission is the step whose output's first line is the sentinel (``COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``,
  1.x also ``MINI_SWE_AGENT_FINAL_OUTPUT``), as mini decides it: that output is never recorded as an observation, the
  run ends there with exit status ``Submitted`` (2.x: a ``role: exit`` message; 1.x: a last user message holding the
  submission). So in a ``Submitted`` run the last action that ran, whatever its command (``cd /testbed && git diff
  > patch.txt && echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat patch.txt``), becomes ``submit``; of several
  unobserved actions in that message, the first that names the sentinel, and the ones after it never ran and are
  dropped. A step with a recorded observation is never the submission (2.x goes on when such a command exits
  non-zero). A record without an exit status falls back to the command form (``echo SENTINEL`` first, also after
  ``cd DIR &&``).
* Observations are what the agent saw with only the ``<returncode>N</returncode>`` line and the ``<output>`` wrapper
  taken off (N is the step's exit code); the long-output form (``<warning>``, ``<output_head>``,
  ``<elided_chars>``, ``<output_tail>``) and ``<exception>`` lines are kept verbatim.
* Every environment of mini runs each action as its own process (``docker exec -w CWD … bash -lc ACTION``), so a
  ``cd`` or ``export`` does not reach the next action: the trajectory's ``shell`` is ``per-action``.
* Format-error messages (``extra.interrupt_type``) are not observations; a message's text before the fence is the
  step's thought, and a turn without an action joins the next step's thought.
"""

from __future__ import annotations

import json
import re
from typing import Any

from swe_srl.core.shells import PER_ACTION
from swe_srl.errors import TrajectoryFormatError
from swe_srl.trajectories.formats import extract_problem, finish_trajectory, text_of, tool_calls
from swe_srl.trajectories.schema import Step, Trajectory

MINI_FENCE = re.compile(r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n```", re.DOTALL)
"""mini's action regex: 1.x ``bash``, 2.x text mode ``mswea_bash_command``."""
MINI_SUBMIT = re.compile(
    r"\A(?:cd\s+\S+\s*&&\s*)*echo\s+(['\"]?)(?:COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT|MINI_SWE_AGENT_FINAL_OUTPUT)\1"
    r"(?=\s|;|&|\||\Z)"
)
SENTINELS = ("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "MINI_SWE_AGENT_FINAL_OUTPUT")
NOT_EXECUTED = "action was not executed"
"""2.x's ``exception_info`` of a tool call that never ran (its message's earlier call ended the run)."""
_RETURNCODE = re.compile(
    r"\s*(<exception>.*?</exception>\s*)?<returncode>(-?\d+)</returncode>[ \t]*\n?", re.DOTALL
)
_OUTPUT = re.compile(r"<output>\n?(.*?)\n?</output>\s*\Z", re.DOTALL)


def mini_action(command: str) -> str:
    """The command as our action: the submission command → ``submit``, anything else unchanged."""
    return "submit" if MINI_SUBMIT.match(command.strip()) else command


def mini_observation(text: str) -> tuple[str, int | None]:
    """An observation message → (what the agent saw, less the return-code line and ``<output>`` tags; exit code)."""
    head = _RETURNCODE.match(text)
    if not head:
        return text, None
    rest = text[head.end() :]
    output = _OUTPUT.match(rest)
    body = output.group(1) if output else rest.rstrip()
    exception = (head.group(1) or "").strip()
    return (f"{exception}\n{body}" if exception else body), int(head.group(2))


def _commands(message: dict[str, Any], where: str) -> tuple[str, list[tuple[str, str | None]]]:
    """(thought, [(command, tool_call_id)]) of one assistant message."""
    text = text_of(message.get("content"))
    extra = message.get("extra") if isinstance(message.get("extra"), dict) else {}
    if isinstance(extra.get("actions"), list):
        actions = [
            (str(a.get("command", "")), a.get("tool_call_id"))
            for a in extra["actions"]
            if isinstance(a, dict)
        ]
    elif message.get("tool_calls"):
        calls = tool_calls(message, where)
        actions = [(str(args.get("command", "")), call_id) for _, args, call_id in calls]
    else:
        found = [m.strip() for m in MINI_FENCE.findall(text)]
        actions = [(found[0], None)] if len(found) == 1 else []
    if actions and not message.get("tool_calls"):
        text = MINI_FENCE.sub("", text, count=1)
    return text.strip().removeprefix("THOUGHT:").strip(), actions


def _exit_status(record: dict[str, Any], messages: list[Any]) -> str | None:
    """How the run ended: the ``role: exit`` message's status (2.x), else the record's, else None."""
    last = messages[-1] if messages and isinstance(messages[-1], dict) else {}
    extra = last.get("extra") if isinstance(last.get("extra"), dict) else {}
    info = record.get("info") if isinstance(record.get("info"), dict) else {}
    status = extra.get("exit_status") if last.get("role") == "exit" else None
    status = status or info.get("exit_status") or record.get("exit_status")
    return str(status) if status else None


def _run_messages(messages: list[Any], submitted: bool) -> list[Any]:
    """The messages less the run's ending: 2.x's ``role: exit`` message, or 1.x's last user message holding the
    submission (no ``<returncode>`` line) right after the submitting assistant message."""
    last = messages[-1] if messages and isinstance(messages[-1], dict) else {}
    before = messages[-2] if len(messages) > 1 and isinstance(messages[-2], dict) else {}
    if last.get("role") == "exit":
        return messages[:-1]
    ending_1x = last.get("role") == "user" and before.get("role") == "assistant"
    if submitted and ending_1x and not _RETURNCODE.match(text_of(last.get("content"))):
        return messages[:-1]
    return messages


def _mark_submission(steps: list[Step], unobserved: list[Step], status: str | None) -> list[Step]:
    """The steps with the submission (see the module docstring) made ``submit`` and the actions after it dropped."""
    if status is not None and status.lower() != "submitted":
        return steps
    if status is None:
        chosen = next((s for s in unobserved if mini_action(s.action) == "submit"), None)
    else:
        named = [s for s in unobserved if any(word in s.action for word in SENTINELS)]
        chosen = (named or unobserved[-1:] or [None])[0]
    if chosen is None:
        return steps
    chosen.action = "submit"
    dropped = unobserved[unobserved.index(chosen) + 1 :]
    return [s for s in steps if not any(s is d for d in dropped)]


def parse_mini(record: dict[str, Any], where: str) -> Trajectory:
    """One mini-swe-agent record (any version above) → Trajectory."""
    messages = record.get("messages")
    if isinstance(messages, str):
        messages = json.loads(messages)
    if not isinstance(messages, list):
        raise TrajectoryFormatError(f"{where}: 'messages' must be a list of chat messages")
    status = _exit_status(record, messages)
    problem, steps, unobserved = _parse_messages(
        _run_messages(messages, (status or "").lower() == "submitted"), where
    )
    steps = _mark_submission(steps, unobserved, status)
    return finish_trajectory(record, where, "mini-swe-agent", problem, steps, shell=PER_ACTION)


def _parse_messages(messages: list[Any], where: str) -> tuple[str, list[Step], list[Step]]:
    """(problem, steps, the last assistant message's steps whose output was never recorded)."""
    problem, steps, pending = "", [], []
    by_id: dict[str, Step] = {}
    awaiting: list[Step] = []
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            raise TrajectoryFormatError(
                f"{where}: messages[{index}] is {type(message).__name__}, expected an object"
            )
        role, extra = (
            message.get("role"),
            message.get("extra") if isinstance(message.get("extra"), dict) else {},
        )
        if role == "user" and not problem and not steps:
            problem = extract_problem(text_of(message.get("content")))
        elif role == "assistant":
            thought, commands = _commands(message, where)
            pending.append(thought)
            awaiting = []
            for command, call_id in commands:
                steps.append(Step(thought="\n\n".join(p for p in pending if p), action=command))
                pending = []
                awaiting.append(steps[-1])
                if call_id:
                    by_id[str(call_id)] = steps[-1]
        elif role in ("user", "tool") and not extra.get("interrupt_type"):
            step = by_id.pop(str(message.get("tool_call_id")), None) if role == "tool" else None
            step = step or (awaiting[0] if awaiting else None)
            if step is None:
                continue
            awaiting = [s for s in awaiting if s is not step]
            if extra.get("exception_info") == NOT_EXECUTED:
                steps = [s for s in steps if s is not step]
                continue
            step.observation, step.exit_code = mini_observation(text_of(message.get("content")))
    return problem, steps, awaiting
