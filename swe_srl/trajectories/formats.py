"""Parsers for the public trajectory formats: one record (a dict) → one :class:`Trajectory`; the shared helpers.

This module: OpenHands / SWE-Gym / SWE-smith chat messages. :mod:`formats_mini` (mini-swe-agent) and
:mod:`formats_swe_agent` (SWE-agent, nebius) use the helpers here. The import rules are listed in docs/training.md
("Importing trajectories").

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

from swe_srl.core.shells import PERSISTENT
from swe_srl.errors import TrajectoryFormatError
from swe_srl.trajectories.schema import Step, Trajectory

EDITOR_FLAGS = ("view_range", "file_text", "old_str", "new_str", "insert_line")
_PROBLEM_PATTERNS = (
    re.compile(r"\APlease solve this issue: (.*?)\n\nYou can execute bash commands", re.DOTALL),  # mini 2.x
    re.compile(r"<pr_description>\s*(.*?)\s*</pr_description>", re.DOTALL),
    re.compile(r"<issue_description>\s*(.*?)\s*</issue_description>", re.DOTALL),
    re.compile(r"<issue>\s*(.*?)\s*</issue>", re.DOTALL),
    re.compile(r"ISSUE:\n(.*?)\n+INSTRUCTIONS:", re.DOTALL),
)
_RUN_SUFFIX = re.compile(r"^(.+__.+-\d+)_\d+$")
_WORKSPACE = re.compile(r"/workspace/[\w.-]+__[\w.-]+__\d[\w.]*")
_FUNCTION = re.compile(r"<function=([\w.-]+)>(.*?)</function>", re.DOTALL)
_PARAMETER = re.compile(r"<parameter=([\w.-]+)>(.*?)</parameter>", re.DOTALL)
FENCE = re.compile(r"```[ \t]*([\w-]*)[ \t]*\n(.*?)\n?```", re.DOTALL)
_OH_EXIT = re.compile(r"\[Command finished with exit code (-?\d+)\]")
_SWEAGENT_PROMPT = re.compile(r"\n*\(Open file: [^\n]*\)\n\(Current directory: [^\n]*\)\n?bash-\$\s*$")
_SWEAGENT_EDIT = re.compile(
    r"\Aedit[ \t]+(\d+):(\d+)[ \t]*\n(.*?)^end_of_edit[ \t]*\Z", re.DOTALL | re.MULTILINE
)


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
    delimiter = heredoc_delimiter(body, "end_of_edit")
    return f"edit {match.group(1)}:{match.group(2)} <<'{delimiter}'\n{body}{delimiter}"


def heredoc_delimiter(body: str, base: str) -> str:
    """``base`` (then ``base1``, ``base2``...): the first that is no line of ``body``, so the heredoc ends where meant."""
    lines = set(body.split("\n"))
    return next(d for d in (f"{base}{n or ''}" for n in range(len(lines) + 1)) if d not in lines)


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
    if name == "execute_ipython_cell":  # one cell, one fresh python3: no kernel state, no %magics or !shell
        code = str(args.get("code", ""))
        delimiter = heredoc_delimiter(code, "SWE_SRL_PY")
        return f"python3 - <<'{delimiter}'\n{code}\n{delimiter}"
    return " ".join([name, *(f"--{k} {shlex.quote(str(v))}" for k, v in args.items())])


def clean_observation(text: str) -> tuple[str, int | None]:
    """Strip format wrappers from an observation; parse the exit code where the format records it."""
    text = text.removeprefix("OBSERVATION:\n")
    code = _OH_EXIT.search(text) if "[Command finished" in text else None
    text = _SWEAGENT_PROMPT.sub("", text) if "(Open file: " in text else text
    return text, int(code.group(1)) if code else None


def tool_calls(message: dict[str, Any], where: str) -> list[tuple[str, dict[str, Any], str | None]]:
    """(name, arguments, id) of each OpenAI-style tool call of an assistant message."""
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


def strip_thought(text: str, block: re.Match[str]) -> str:
    thought = (text[: block.start()] + text[block.end() :]).strip()
    return thought.removeprefix("THOUGHT:").removeprefix("DISCUSSION").strip()


def parse_messages(record: dict[str, Any], where: str, source: str) -> Trajectory:
    """OpenHands / SWE-Gym / SWE-smith: chat messages with actions in tool calls or ``<function=…>`` text."""
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
    awaiting: list[
        Step
    ] = []  # steps of the last assistant message whose observation is the next user message
    for message in messages:
        if not isinstance(message, dict):
            raise TrajectoryFormatError(f"{where}: a message is {type(message).__name__}, expected an object")
        role, text = message.get("role"), text_of(message.get("content"))
        if role == "user" and not problem:
            problem = extract_problem(text)
        elif role == "assistant":
            calls = tool_calls(message, where)
            thought = text.strip()
            if not calls and source == "swe-smith":
                thought, calls = _function_blocks(text)
            pending.append(thought)
            awaiting = []
            for name, args, call_id in calls:
                action = tool_action(name, args)
                if action is None:
                    pending.append(str(args.get("thought", "")))
                    continue
                steps.append(Step(thought="\n\n".join(p for p in pending if p), action=action))
                pending = []
                if call_id:
                    by_id[call_id] = steps[-1]
                else:
                    awaiting.append(steps[-1])
        elif role == "tool" and message.get("tool_call_id") in by_id:
            step = by_id.pop(message["tool_call_id"])
            step.observation, step.exit_code = clean_observation(text)
        elif role in ("user", "function") and awaiting:
            step = awaiting.pop(0)
            step.observation, step.exit_code = clean_observation(text)
    return finish_trajectory(record, where, source, problem, steps)


def rewrite_paths(steps: list[Step], pattern: re.Pattern[str]) -> None:
    """Replace ``pattern`` (a repository root of the source) by ``/testbed`` in every step's action, observation
    and thought."""
    for step in steps:
        step.action = pattern.sub("/testbed", step.action)
        step.observation = pattern.sub("/testbed", step.observation)
        step.thought = pattern.sub("/testbed", step.thought)


def _dig(value: Any, *keys: str) -> Any:
    """``value[k1][k2]...`` through dicts (and JSON-encoded dicts, as SWE-agent's ``replay_config``), else None."""
    for key in keys:
        if isinstance(value, str) and value.lstrip().startswith("{"):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                return None
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def record_instance_id(record: dict[str, Any]) -> str:
    """The record's ``instance_id``, else SWE-agent's ``replay_config.problem_statement.id``, else the file name
    (``_file_instance_id``: a one-record file's name less ``.traj``/``.traj.json``/``.json``/``.jsonl``)."""
    for value in (
        record.get("instance_id"),
        _dig(record, "replay_config", "problem_statement", "id"),
        record.get("_file_instance_id"),
    ):
        if isinstance(value, str) and value:
            return value
    return ""


def run_metadata(record: dict[str, Any]) -> dict[str, str]:
    """``model`` and ``exit_status`` where the format records them, plus SWE-Gym/SWE-smith's run and trajectory ids."""
    keep = ("run_id", "traj_id", "id")
    metadata = {k: record[k] for k in keep if isinstance(record.get(k), str)}
    models = (
        record.get("model"),
        record.get("model_name"),  # nebius
        _dig(record, "info", "config", "model", "model_name"),  # mini-swe-agent
        _dig(record, "replay_config", "agent", "model", "name"),  # SWE-agent 1.x
        _dig(record, "response", "model"),  # OpenHands completion logs
    )
    exit_statuses = (record.get("exit_status"), _dig(record, "info", "exit_status"))
    for key, values in (("model", models), ("exit_status", exit_statuses)):
        found = next((v for v in values if isinstance(v, str) and v), None)
        if found is not None:
            metadata[key] = found
    return metadata


def finish_trajectory(
    record: dict[str, Any], where: str, source: str, problem: str, steps: list[Step], shell: str = PERSISTENT
) -> Trajectory:
    """The Trajectory of a parsed record: id (:func:`record_instance_id`, run suffix dropped), patch, outcome,
    problem (``problem_statement`` when the record has one), :func:`run_metadata` and how its agent ran actions
    (``shell``: OpenHands, SWE-Gym, SWE-smith, SWE-agent and nebius keep one shell; mini-swe-agent does not)."""
    info = record.get("info") if isinstance(record.get("info"), dict) else {}
    raw_id = record_instance_id(record)
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
        rewrite_paths(steps, _WORKSPACE)
    metadata = run_metadata(record)
    metadata.update(source_instance_id=raw_id, where=where)
    return Trajectory(
        instance_id=instance_id_of(raw_id),
        problem=problem,
        steps=steps,
        patch=str(patch),
        resolved=resolved if isinstance(resolved, bool) else None,
        source=source,
        metadata=metadata,
        shell=shell,
    )
