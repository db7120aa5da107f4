"""Parsers for the public trajectory formats: one record (a dict) → one :class:`Trajectory`.

Every tool call of the source becomes exactly one :class:`Step`, so imported action counts equal source tool-call
counts. Editor tool calls become ``str_replace_editor <command> <path> --flag 'value'`` bash lines (shlex quoting)
that replay through ``harness/str_replace_editor``; ``finish``/``submit`` become ``submit``. The ``think`` tool is
not an action: its text joins the thought of the next step. SWE-agent's own commands (``open``, ``goto``, ``edit``…)
replay through the same-named tools in ``harness/``; its multi-line ``edit A:B\n…\nend_of_edit`` becomes the bash
heredoc ``edit A:B <<'end_of_edit'\n…\nend_of_edit``.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

from swe_srl.errors import TrajectoryFormatError
from swe_srl.trajectories.schema import Step, Trajectory

EDITOR_FLAGS = ("view_range", "file_text", "old_str", "new_str", "insert_line")
_PROBLEM_PATTERNS = (
    re.compile(r"<pr_description>\s*(.*?)\s*</pr_description>", re.DOTALL),
    re.compile(r"<issue_description>\s*(.*?)\s*</issue_description>", re.DOTALL),
    re.compile(r"<issue>\s*(.*?)\s*</issue>", re.DOTALL),
    re.compile(r"ISSUE:\n(.*?)\n+INSTRUCTIONS:", re.DOTALL),
)
_RUN_SUFFIX = re.compile(r"^(.+__.+-\d+)_\d+$")
_WORKSPACE = re.compile(r"/workspace/[\w.-]+__[\w.-]+__\d[\w.]*")
_FUNCTION = re.compile(r"<function=([\w.-]+)>(.*?)</function>", re.DOTALL)
_PARAMETER = re.compile(r"<parameter=([\w.-]+)>(.*?)</parameter>", re.DOTALL)
_FENCE = re.compile(r"```[ \t]*([\w-]*)[ \t]*\n(.*?)\n?```", re.DOTALL)
_OH_EXIT = re.compile(r"\[Command finished with exit code (-?\d+)\]")
_MINI_OUT = re.compile(r"<returncode>(-?\d+)</returncode>\s*(?:<output>\n?(.*?)\n?</output>)?", re.DOTALL)
_SWEAGENT_PROMPT = re.compile(r"\n*\(Open file: [^\n]*\)\n\(Current directory: [^\n]*\)\n?bash-\$\s*$")
_SWEAGENT_EDIT = re.compile(
    r"\Aedit[ \t]+(\d+):(\d+)[ \t]*\n(.*?)^end_of_edit[ \t]*\Z", re.DOTALL | re.MULTILINE
)
MINI_SUBMIT = ("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "echo MINI_SWE_AGENT_FINAL_OUTPUT")


def extract_problem(text: str) -> str:
    """The issue text inside a first user message (``<pr_description>``, ``ISSUE:``...), else the whole text."""
    for pattern in _PROBLEM_PATTERNS:
        match = pattern.search(text)
        if match:
            return match.group(1).strip()
    return text.strip()


def instance_id_of(raw: str) -> str:
    """Drop a run suffix (``owner__repo-123_4`` → ``owner__repo-123``) that SWE-Gym and nebius append."""
    match = _RUN_SUFFIX.match(raw)
    return match.group(1) if match else raw


def text_of(content: Any) -> str:
    """Message content as text: a string, or a list of ``{"type": "text", "text": ...}`` parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    return str(content)


def editor_command(args: dict[str, Any]) -> str:
    """An editor tool call as the bash line that runs ``harness/str_replace_editor`` with the same arguments."""
    parts = ["str_replace_editor", str(args.get("command", "")), str(args.get("path", ""))]
    for flag in EDITOR_FLAGS:
        value = args.get(flag)
        if value is None:
            continue
        if flag == "view_range":
            if isinstance(value, str):
                value = json.loads(value)
            parts += ["--view_range", *(str(int(v)) for v in value)]
        else:
            parts += [f"--{flag}", str(value)]
    return " ".join(shlex.quote(p) for p in parts)


def swe_agent_action(action: str) -> str:
    """SWE-agent's ``edit A:B\\n<lines>\\nend_of_edit`` as valid bash (a heredoc into ``harness/edit``); else as is."""
    match = _SWEAGENT_EDIT.match(action)
    if not match:
        return action
    body = match.group(3)
    if (
        not body
    ):  # bash feeds an empty heredoc from /dev/null, which harness/edit refuses (a bare ``edit A:B``)
        return f"edit {match.group(1)}:{match.group(2)} < <(:)"
    lines = set(body.split("\n"))
    delimiter = next(d for d in (f"end_of_edit{n or ''}" for n in range(len(lines) + 1)) if d not in lines)
    return f"edit {match.group(1)}:{match.group(2)} <<'{delimiter}'\n{body}{delimiter}"


def tool_action(name: str, args: dict[str, Any]) -> str | None:
    """The bash action of one tool call; None for ``think`` (not an action)."""
    if name in ("execute_bash", "bash", "shell"):
        return str(args.get("command") or "")
    if name in ("str_replace_editor", "str_replace_based_edit_tool", "edit_file"):
        return editor_command(args)
    if name in ("finish", "submit"):
        return "submit"
    if name == "think":
        return None
    if name == "execute_ipython_cell":
        return f"python3 - <<'SWE_SRL_PY'\n{args.get('code', '')}\nSWE_SRL_PY"
    return " ".join([name, *(f"--{k} {shlex.quote(str(v))}" for k, v in args.items())])


def clean_observation(text: str) -> tuple[str, int | None]:
    """Strip format wrappers from an observation; parse the exit code where the format records it."""
    text = text.removeprefix("OBSERVATION:\n")
    mini = _MINI_OUT.match(text.strip())
    if mini:
        return (mini.group(2) or "", int(mini.group(1)))
    code = _OH_EXIT.search(text)
    text = _SWEAGENT_PROMPT.sub("", text)
    return text, int(code.group(1)) if code else None


def _tool_calls(message: dict[str, Any], where: str) -> list[tuple[str, dict[str, Any], str | None]]:
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        raw = function.get("arguments") or {}
        try:
            args = json.loads(raw) if isinstance(raw, str) else dict(raw)
        except (json.JSONDecodeError, TypeError, ValueError) as exc:
            raise TrajectoryFormatError(
                f"{where}: tool call arguments are not a JSON object ({exc})"
            ) from None
        calls.append((str(function.get("name", "")), args, call.get("id")))
    return calls


def _function_blocks(text: str) -> tuple[str, list[tuple[str, dict[str, Any], None]]]:
    calls = []
    for match in _FUNCTION.finditer(text):
        params = {}
        for param in _PARAMETER.finditer(match.group(2)):
            value = param.group(2).removeprefix("\n").removesuffix("\n")
            params[param.group(1)] = int(value) if param.group(1) == "insert_line" else value
        calls.append((match.group(1), params, None))
    thought = text[: _FUNCTION.search(text).start()] if calls else text
    return thought.strip(), calls


def _bash_block(text: str) -> tuple[str, list[tuple[str, dict[str, Any], None]]]:
    blocks = [m for m in _FENCE.finditer(text) if m.group(1) in ("", "bash", "sh", "shell")]
    if len(blocks) != 1:
        return text.strip().removeprefix("THOUGHT:").strip(), []
    command = blocks[0].group(2)
    if command.strip().startswith(MINI_SUBMIT):
        return _strip_thought(text, blocks[0]), [("submit", {}, None)]
    return _strip_thought(text, blocks[0]), [("bash", {"command": command}, None)]


def _strip_thought(text: str, block: re.Match[str]) -> str:
    thought = (text[: block.start()] + text[block.end() :]).strip()
    return thought.removeprefix("THOUGHT:").removeprefix("DISCUSSION").strip()


def parse_messages(record: dict[str, Any], where: str, source: str) -> Trajectory:
    """OpenHands / SWE-Gym / SWE-smith / mini-swe-agent: chat messages with actions in tool calls or text."""
    messages = record.get("messages")
    if isinstance(messages, str):
        messages = json.loads(messages)
    if not isinstance(messages, list):
        raise TrajectoryFormatError(f"{where}: 'messages' must be a list of chat messages")
    messages = list(messages)
    response = record.get("response")
    if isinstance(response, dict) and response.get("choices"):
        messages.append(response["choices"][0].get("message") or {})
    problem, steps, by_id, pending = "", [], {}, []
    for message in messages:
        if not isinstance(message, dict):
            raise TrajectoryFormatError(f"{where}: a message is {type(message).__name__}, expected an object")
        role, text = message.get("role"), text_of(message.get("content"))
        if role == "user" and not problem:
            problem = extract_problem(text)
        elif role == "assistant":
            calls = _tool_calls(message, where)
            thought = text.strip()
            if not calls and source == "swe-smith":
                thought, calls = _function_blocks(text)
            elif not calls and source == "mini-swe-agent":
                thought, calls = _bash_block(text)
            pending.append(thought)
            for name, args, call_id in calls:
                action = tool_action(name, args)
                if action is None:
                    pending.append(str(args.get("thought", "")))
                    continue
                steps.append(Step(thought="\n\n".join(p for p in pending if p), action=action))
                pending = []
                if call_id:
                    by_id[call_id] = steps[-1]
        elif role in ("tool", "user", "function") and steps:
            step = by_id.get(message.get("tool_call_id")) if role == "tool" else steps[-1]
            if step is not None and (role == "tool" or (not step.observation and source != "openhands")):
                step.observation, step.exit_code = clean_observation(text)
    return _finish(record, where, source, problem, steps)


def parse_swe_agent(record: dict[str, Any], where: str) -> Trajectory:
    """SWE-agent ``.traj``: ``trajectory[{action, observation, thought, response}]``, ``history``, ``info``."""
    steps = []
    for index, item in enumerate(record["trajectory"]):
        if not isinstance(item, dict) or "action" not in item:
            raise TrajectoryFormatError(f"{where}: trajectory[{index}] has no 'action'")
        observation, code = clean_observation(str(item.get("observation") or ""))
        action = swe_agent_action(str(item["action"]).strip())
        steps.append(
            Step(thought=str(item.get("thought") or "").strip(), action=action, observation=observation)
        )
        steps[-1].exit_code = code
    problem = ""
    for message in record.get("history") or []:
        if isinstance(message, dict) and message.get("role") == "user":
            problem = extract_problem(text_of(message.get("content")))
            break
    return _finish(record, where, "swe-agent", problem, steps)


def parse_nebius(record: dict[str, Any], where: str) -> Trajectory:
    """nebius SWE-agent trajectories: ``trajectory[{role, text}]``; ai texts = discussion + one fenced command."""
    problem, steps, pending = "", [], []
    for item in record["trajectory"]:
        role, text = item.get("role"), text_of(item.get("text"))
        if role == "user" and not problem:
            problem = extract_problem(text)
        elif role == "ai":
            fences = list(_FENCE.finditer(text))
            if not fences:
                pending.append(text.strip())
                continue
            action = swe_agent_action(fences[-1].group(2).strip())
            thought = "\n\n".join([*pending, _strip_thought(text, fences[-1])]).strip()
            steps.append(Step(thought=thought, action=action))
            pending = []
        elif role == "user" and steps and not steps[-1].observation:
            steps[-1].observation, steps[-1].exit_code = clean_observation(text)
    return _finish(record, where, "nebius", problem, steps)


def _finish(record: dict[str, Any], where: str, source: str, problem: str, steps: list[Step]) -> Trajectory:
    info = record.get("info") if isinstance(record.get("info"), dict) else {}
    raw_id = str(record.get("instance_id") or record.get("_file_instance_id") or "")
    if not raw_id:
        raise TrajectoryFormatError(f"{where}: no instance_id in the record (and none in the file name)")
    patch = (
        record.get("patch")
        or record.get("generated_patch")
        or info.get("submission")
        or (record.get("test_result") or {}).get("git_patch")
        or ""
    )
    resolved = record.get("resolved", record.get("target"))
    problem = str(record.get("problem_statement") or problem)
    if source == "openhands":
        for step in steps:
            step.action = _WORKSPACE.sub("/testbed", step.action)
            step.observation = _WORKSPACE.sub("/testbed", step.observation)
    keep = ("model", "model_name", "run_id", "traj_id", "id", "exit_status")
    metadata = {k: record[k] for k in keep if isinstance(record.get(k), str)}
    metadata.update(source_instance_id=raw_id, where=where)
    return Trajectory(
        instance_id=instance_id_of(raw_id),
        problem=problem,
        steps=steps,
        patch=str(patch),
        resolved=resolved if isinstance(resolved, bool) else None,
        source=source,
        metadata=metadata,
    )
