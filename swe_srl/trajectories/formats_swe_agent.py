"""SWE-agent ``.traj`` (``trajectory`` items, or only ``history``) and nebius SWE-agent records → Trajectory.

SWE-agent 0.x and nebius run the repository at ``/<repo_name>`` (``/plumbum``, ``/marshmallow-code__marshmallow``,
``/repo``...), our images at ``/testbed``. The repository root is the working directory the agent starts in: the
first item's ``state.working_dir``, else the first ``(Current directory: /X)`` of an observation. When it is one
top-level directory other than ``/testbed``, it is rewritten to ``/testbed`` wherever it starts a path in actions,
observations and thoughts (``/plumbum/plumbum/cli`` → ``/testbed/plumbum/cli``); nothing else is changed.
"""

from __future__ import annotations

import json
import re
from typing import Any

from swe_srl.errors import TrajectoryFormatError
from swe_srl.trajectories.formats import (
    FENCE,
    clean_observation,
    extract_problem,
    finish_trajectory,
    rewrite_paths,
    strip_thought,
    swe_agent_action,
    text_of,
)
from swe_srl.trajectories.schema import Step, Trajectory

_CURRENT_DIR = re.compile(r"\(Current directory: (/[^)\n]*)\)")
_TOP_DIR = re.compile(r"\A/[^/\s]+\Z")


def repo_root(record: dict[str, Any], observations: list[str]) -> str | None:
    """The directory SWE-agent/nebius ran the repository in, when it is not ``/testbed`` (see the module doc)."""
    root = None
    items = record.get("trajectory") if isinstance(record.get("trajectory"), list) else []
    state = items[0].get("state") if items and isinstance(items[0], dict) else None
    if isinstance(state, str):
        try:
            state = json.loads(state)
        except json.JSONDecodeError:
            state = None
    if isinstance(state, dict) and isinstance(state.get("working_dir"), str):
        root = state["working_dir"].strip()
    if root is None:
        found = (_CURRENT_DIR.search(text) for text in observations)
        root = next((m.group(1).strip() for m in found if m), None)
    if root is None or root == "/testbed" or not _TOP_DIR.match(root):
        return None
    return root


def rewrite_root(steps: list[Step], root: str | None) -> None:
    """Replace ``root`` by ``/testbed`` where it starts a path, in every step's action, observation and thought."""
    if root is not None:
        rewrite_paths(steps, re.compile(rf"(?<![\w./~-]){re.escape(root)}(?![\w.-])"))


def _step(thought: str, action: str, observation: str) -> Step:
    text, code = clean_observation(observation)
    return Step(
        thought=thought.strip(), action=swe_agent_action(action.strip()), observation=text, exit_code=code
    )


def _history_steps(history: list[Any], where: str) -> tuple[str, list[Step]]:
    """``history`` messages: assistant messages carry ``action`` (+ ``thought``), the next tool/user message is
    its observation; the first user message before any action holds the problem."""
    problem, steps, awaiting = "", [], False
    for index, message in enumerate(history):
        if not isinstance(message, dict):
            raise TrajectoryFormatError(
                f"{where}: history[{index}] is {type(message).__name__}, expected an object"
            )
        role, text = message.get("role"), text_of(message.get("content"))
        if role == "assistant" and isinstance(message.get("action"), str):
            steps.append(_step(str(message.get("thought") or text), message["action"], ""))
            awaiting = True
        elif role in ("user", "tool") and awaiting:
            steps[-1].observation, steps[-1].exit_code = clean_observation(text)
            awaiting = False
        elif role == "user" and not steps and not problem:
            problem = extract_problem(text)
    return problem, steps


def parse_swe_agent(record: dict[str, Any], where: str) -> Trajectory:
    """SWE-agent ``.traj``: ``trajectory[{action, observation, thought}]`` (else ``history`` alone), ``info``."""
    history = record.get("history") if isinstance(record.get("history"), list) else []
    problem, steps = _history_steps(history, where)
    if isinstance(record.get("trajectory"), list) and record["trajectory"]:
        steps = []
        for index, item in enumerate(record["trajectory"]):
            if not isinstance(item, dict) or "action" not in item:
                raise TrajectoryFormatError(f"{where}: trajectory[{index}] has no 'action'")
            observation = str(item.get("observation") or "")
            steps.append(_step(str(item.get("thought") or ""), str(item["action"]), observation))
    raw = [
        str(item.get("observation") or "")
        for item in record.get("trajectory") or []
        if isinstance(item, dict)
    ]
    raw += [
        text_of(m.get("content"))
        for m in history
        if isinstance(m, dict) and m.get("role") in ("user", "tool")
    ]
    rewrite_root(steps, repo_root(record, raw))
    return finish_trajectory(record, where, "swe-agent", problem, steps)


def parse_nebius(record: dict[str, Any], where: str) -> Trajectory:
    """nebius SWE-agent trajectories: ``trajectory[{role, text}]``; ai texts = discussion + one fenced command."""
    problem, steps, pending, raw = "", [], [], []
    awaiting = False
    for item in record["trajectory"]:
        role, text = item.get("role"), text_of(item.get("text"))
        if role == "user" and not problem:
            problem = extract_problem(text)
        elif role == "ai":
            fences = list(FENCE.finditer(text))
            if not fences:
                pending.append(text.strip())
                continue
            action = swe_agent_action(fences[-1].group(2).strip())
            thought = "\n\n".join([*pending, strip_thought(text, fences[-1])]).strip()
            steps.append(Step(thought=thought, action=action))
            pending, awaiting = [], True
        elif role == "user" and awaiting:
            raw.append(text)
            steps[-1].observation, steps[-1].exit_code = clean_observation(text)
            awaiting = False
    rewrite_root(steps, repo_root(record, raw))
    return finish_trajectory(record, where, "nebius", problem, steps)
