"""The model output format: ``<think>reasoning</think>`` then exactly one bash action (optionally fenced).

``parse_output`` is the only place these rules live; the env, the rewards and the trainer all call it. A
:class:`Completion` carries its parse, so a completion parsed where it enters (the agent loop, ``SWEEnv.step``) is not
parsed again by the env, the reward or the loop.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from swe_srl.errors import ActionFormatError

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
_FENCE = re.compile(r"```[ \t]*(?:bash|sh|shell|console)?[ \t]*\n(.*?)(?:\n)?```", re.DOTALL)
SUBMIT = "submit"


@dataclass(frozen=True)
class ParsedOutput:
    """A well-formed model output."""

    thought: str
    action: str


class Completion(str):
    """A model output with its parse attached (``parsed``, or ``error`` when it breaks the format).

    ``Completion(text)`` parses once; ``parse_output`` of a ``Completion`` returns (or raises) the stored result.
    """

    parsed: ParsedOutput | None
    error: ActionFormatError | None

    def __new__(cls, text: str) -> Completion:
        if isinstance(text, Completion):
            return text
        self = super().__new__(cls, text)
        try:
            self.parsed, self.error = _parse(str(text)), None
        except ActionFormatError as exc:
            self.parsed, self.error = None, exc
        return self


def parse_output(text: str) -> ParsedOutput:
    """Split model output into thought and action, or raise ``ActionFormatError`` naming the rule broken.

    Rules: ``missing_think`` (no ``<think>`` first), ``unclosed_think``, ``multiple_think``, ``empty_action``,
    ``multiple_actions`` (more than one fenced block), ``unclosed_fence``. A :class:`Completion` is not parsed again.
    """
    if isinstance(text, Completion):
        if text.error is not None:
            raise text.error.with_traceback(None)
        assert text.parsed is not None
        return text.parsed
    return _parse(text)


def _parse(text: str) -> ParsedOutput:
    body = text.lstrip()
    if not body.startswith(THINK_OPEN):
        raise ActionFormatError("missing_think", "output must start with <think>")
    close = body.find(THINK_CLOSE)
    if close < 0:
        raise ActionFormatError("unclosed_think", "no </think> after <think>")
    thought = body[len(THINK_OPEN) : close].strip()
    rest = body[close + len(THINK_CLOSE) :]
    if THINK_OPEN in rest or THINK_CLOSE in rest or THINK_OPEN in thought:
        raise ActionFormatError("multiple_think", "exactly one <think> block is allowed")
    fences = _FENCE.findall(rest)
    if len(fences) > 1:
        raise ActionFormatError(
            "multiple_actions", f"{len(fences)} fenced action blocks; exactly one is allowed"
        )
    if fences:
        outside = _FENCE.sub("", rest).strip()
        if outside:
            raise ActionFormatError("multiple_actions", "text outside the fenced action block")
        action = fences[0].strip()
    else:
        if "```" in rest:
            raise ActionFormatError("unclosed_fence", "a ``` fence is not closed")
        action = rest.strip()
    if not action:
        raise ActionFormatError("empty_action", "no action after </think>")
    return ParsedOutput(thought=thought, action=action)


def format_output(thought: str, action: str) -> str:
    """The canonical rendering of a (thought, action) pair, as the expert's targets are written."""
    return f"{THINK_OPEN}\n{thought.strip()}\n{THINK_CLOSE}\n{action.strip()}"


def is_submit(action: str) -> bool:
    """``submit`` ends the episode."""
    return action.strip() == SUBMIT
