"""The one prompt format shared by SRL training samples and the evaluation agent loop.

A conversation is: the system instructions, one user message with the problem (and, optionally, the oracle files:
path and content), then for every earlier step an assistant message holding the action in a ```bash fence and a
user message holding its observation. The policy answers with ``<think>…</think>`` + one action
(see :mod:`swe_srl.core.actions`). With a history window of K (:func:`window_messages`, the SRL paper's K = 2), only
the last K steps are shown and one line after the problem says how many earlier steps are not.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from swe_srl.core.actions import THINK_CLOSE, THINK_OPEN
from swe_srl.core.shells import PERSISTENT, check_shell

SYSTEM_PROMPT = """\
You are an autonomous software engineer fixing an issue in a Python repository checked out at /testbed.
You work in a bash shell, one command per turn; after each command you see its combined output.

Answer every turn in exactly this format:
<think>
your reasoning about what to do next and why
</think>
```bash
one bash command (it may span lines: heredocs, && chains)
```

Besides the usual tools (ls, find, grep, cat, sed, python, pytest, git), a file editor is available:
  str_replace_editor view PATH [--view_range START END]
  str_replace_editor create PATH --file_text TEXT
  str_replace_editor str_replace PATH --old_str OLD [--new_str NEW]
  str_replace_editor insert PATH --insert_line N --new_str TEXT
  str_replace_editor undo_edit PATH
PATH is absolute; quote multi-line arguments for bash. `old_str` must match the file exactly and be unique.

Locate the relevant code, reproduce the problem, make a minimal fix to the source (not the tests), verify it,
then run `submit` alone to end the episode. Interactive programs (vim, less, a bare python REPL) are unavailable."""

PER_ACTION_NOTE = (
    "Each command runs in a new bash process started in /testbed: a cd, export or shell variable does not carry"
    " over to the next command (prefix a command with `cd DIR &&` where it needs another directory)."
)
"""What the system prompt says of a ``per-action`` shell (``core/shells.py``), as mini-swe-agent's prompt does."""
OBSERVATION_ELIDED = "[observation elided]"
NO_OUTPUT = "(no output)"


def truncate_observation(text: str, max_chars: int) -> str:
    """Keep the head and tail of a long observation with a marker naming how much was cut."""
    if max_chars <= 0 or len(text) <= max_chars:
        return text
    head = max_chars // 2
    tail = max_chars - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut} characters truncated ...]\n{text[-tail:] if tail else ''}"


def format_problem(problem: str, oracle_files: Mapping[str, str] | None = None) -> str:
    """The first user message: the issue, then the oracle files (path and content) when given."""
    parts = [f"<problem_statement>\n{problem.strip()}\n</problem_statement>"]
    if oracle_files:
        parts.append("These files are relevant to the fix:")
        for path, content in oracle_files.items():
            parts.append(f'<file path="{path}">\n{content.rstrip()}\n</file>')
    return "\n\n".join(parts)


def format_action(action: str, thought: str = "") -> str:
    """An earlier action as the assistant said it: inside a ```bash fence, after ``<think>thought</think>`` when
    a thought is given (``history_thoughts``)."""
    fence = f"```bash\n{action.strip()}\n```"
    return f"{THINK_OPEN}\n{thought.strip()}\n{THINK_CLOSE}\n{fence}" if thought.strip() else fence


def format_observation(observation: str, max_chars: int) -> str:
    """An earlier observation as the user message that answered the action."""
    text = truncate_observation(observation.rstrip(), max_chars)
    return f"OBSERVATION:\n{text if text.strip() else NO_OUTPUT}"


def omitted_note(count: int) -> str:
    """The line after the problem naming how many earlier steps a windowed prompt does not show."""
    return f"\n\n[{count} earlier steps not shown]"


_NOTE = re.compile(r"\n\n\[(\d+) earlier steps not shown\]\Z")


def window_messages(messages: Sequence[Mapping[str, str]], window: int | None) -> list[dict[str, str]]:
    """``[system, problem, (action, observation)*]`` with only the last ``window`` step pairs (None: all of them);
    when steps are left out, :func:`omitted_note` ends the problem message."""
    omitted = (len(messages) - 2) // 2 - window if window is not None else 0
    if omitted <= 0:
        return [dict(m) for m in messages]
    problem = {"role": messages[1]["role"], "content": messages[1]["content"] + omitted_note(omitted)}
    return [dict(messages[0]), problem, *(dict(m) for m in messages[2 + 2 * omitted :])]


def system_prompt(shell: str = PERSISTENT) -> str:
    """The system instructions for an episode whose commands run in ``shell`` (the persistent default: unchanged)."""
    if check_shell(shell) == PERSISTENT:
        return SYSTEM_PROMPT
    lines = SYSTEM_PROMPT.split("\n")
    return "\n".join([*lines[:2], PER_ACTION_NOTE, *lines[2:]])


def approx_tokens(text: str) -> int:
    """A tokenizer-free estimate (about 4 characters a token), used when no ``count_tokens`` is given."""
    return (len(text) + 3) // 4


def build_messages(
    problem: str,
    history: Sequence[tuple[str, str]],
    *,
    oracle_files: Mapping[str, str] | None = None,
    observation_chars: int = 2000,
    token_budget: int | None = None,
    count_tokens: Callable[[str], int] | TokenCounter | None = None,
    thoughts: Sequence[str] | None = None,
    window: int | None = None,
    shell: str = PERSISTENT,
) -> list[dict[str, str]]:
    """Chat messages for the next step, given the problem and the ``(action, observation)`` pairs so far.

    ``shell``: how the episode's commands run (``core/shells.py``); the system prompt says so for ``per-action``.

    ``thoughts`` (one per history pair) puts each earlier thought as ``<think>…</think>`` before its action; by
    default earlier turns hold actions only, as in the SRL paper's step-wise context. ``window`` keeps the last
    ``window`` pairs (:func:`window_messages`; None: every pair).

    With ``token_budget`` the conversation goes through :func:`fit_messages` (the one fitter of training,
    decomposition and evaluation), counting with ``count_tokens`` (a :class:`TokenCounter` or a plain counter).
    """
    messages = [
        {"role": "system", "content": system_prompt(shell)},
        {"role": "user", "content": format_problem(problem, oracle_files)},
    ]
    for index, (action, observation) in enumerate(history):
        thought = thoughts[index] if thoughts is not None else ""
        messages.append({"role": "assistant", "content": format_action(action, thought)})
        messages.append({"role": "user", "content": format_observation(observation, observation_chars)})
    messages = window_messages(messages, window)
    if token_budget is not None:
        counter = count_tokens if isinstance(count_tokens, TokenCounter) else TokenCounter(count=count_tokens)
        messages = fit_messages(messages, token_budget, counter)
    return messages


class TokenCounter:
    """Token counts for fitting: message contents (memoized per text) plus the chat template's overhead.

    ``tokenizer`` is a transformers tokenizer (``__call__``/``apply_chat_template``/``decode``) or a ``tokenizers``
    ``Tokenizer`` (``encode(...).ids``); without one, ``count`` (default :func:`approx_tokens`) counts and the
    template adds nothing. Prompts of one trajectory share their long messages, so one counter serves them all.
    """

    def __init__(self, tokenizer: Any = None, *, count: Callable[[str], int] | None = None) -> None:
        self.tokenizer = tokenizer
        self._count = count or (approx_tokens if tokenizer is None else None)
        self._ids: dict[str, list[int]] = {}
        self._counts: dict[str, int] = {}
        self._roles: dict[str, int] = {}
        self.generation = 0
        if tokenizer is not None and hasattr(tokenizer, "apply_chat_template"):
            self.generation = max(
                0, self._template([{"role": "user", "content": ""}], True) - self.role("user")
            )

    def ids(self, text: str) -> list[int]:
        """Token ids of ``text`` (a tokenizer is required)."""
        if text not in self._ids:
            if hasattr(self.tokenizer, "apply_chat_template"):
                ids = list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
            else:
                encoded = self.tokenizer.encode(text, add_special_tokens=False)
                ids = list(encoded.ids) if hasattr(encoded, "ids") else list(encoded)
            self._ids[text] = ids
        return self._ids[text]

    def __call__(self, text: str) -> int:
        if self._count is not None:
            if text not in self._counts:
                self._counts[text] = self._count(text)
            return self._counts[text]
        return len(self.ids(text))

    def _template(self, messages: list[dict[str, str]], generation: bool = False) -> int:
        text = self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=generation)
        return len(self.ids(str(text)))

    def role(self, role: str) -> int:
        """Tokens the chat template adds around one message of ``role``."""
        if role not in self._roles:
            templated = self.tokenizer is not None and hasattr(self.tokenizer, "apply_chat_template")
            self._roles[role] = self._template([{"role": role, "content": ""}]) if templated else 0
        return self._roles[role]

    def message(self, message: Mapping[str, str]) -> int:
        return self(message["content"]) + self.role(message["role"])

    def total(self, messages: Sequence[Mapping[str, str]]) -> int:
        """The whole prompt: every message with its template overhead, plus the generation prompt."""
        return sum(self.message(m) for m in messages) + self.generation

    def cut(self, text: str, tokens: int, *, keep: str) -> str:
        """The first (``keep="head"``) or last (``"tail"``) ``tokens`` tokens of ``text``."""
        if tokens <= 0:
            return ""
        if self._count is not None or not hasattr(self.tokenizer, "decode"):
            lo, hi = 0, len(text)  # counter only: the longest character slice that fits
            while lo < hi:
                mid = (lo + hi + 1) // 2
                piece = text[:mid] if keep == "head" else text[len(text) - mid :]
                lo, hi = (mid, hi) if self(piece) <= tokens else (lo, mid - 1)
            return text[:lo] if keep == "head" else text[len(text) - lo :]
        ids = self.ids(text)
        return self.tokenizer.decode(ids[:tokens] if keep == "head" else ids[-tokens:])


def fit_messages(
    messages: Sequence[Mapping[str, str]], budget: int, counter: TokenCounter
) -> list[dict[str, str]]:
    """The one prompt fitter: make ``[system, problem, (action, observation)*]`` fit ``budget`` tokens.

    In order, until the prompt fits (template overhead and generation prompt included):
    1. the oldest observations become ``[observation elided]`` (never the latest one);
    2. the oldest steps are dropped (never the latest one), and the problem message says how many (with a window's
       :func:`omitted_note`, that note counts them too: one line);
    3. the latest observation keeps its tail (down to an eighth of the budget);
    4. the problem message keeps its head (oracle files are cut before the statement);
    5. the latest observation is cut further.
    The system prompt, the problem's head and the latest action are never removed, so a tiny budget may still be
    exceeded: callers that must fit check :meth:`TokenCounter.total`.
    """
    out = [dict(m) for m in messages]
    if counter.total(out) <= budget:
        return out
    elided = f"OBSERVATION:\n{OBSERVATION_ELIDED}"
    last = len(out) - 1
    for index in range(3, last, 2):  # 1. observations sit at 3, 5, ...; the last message is kept
        if counter.total(out) <= budget:
            return out
        if counter(out[index]["content"]) > counter(elided):
            out[index] = {"role": out[index]["role"], "content": elided}
    problem = out[1]["content"] if len(out) > 1 else ""
    note = _NOTE.search(problem)
    shown = int(note.group(1)) if note else None  # steps a history window already left out
    problem = problem[: note.start()] if note else problem
    dropped = 0
    while len(out) > 4 and counter.total(out) > budget:  # 2. drop (action, observation) pairs, oldest first
        del out[2:4]
        dropped += 1
        line = (
            f"\n\n[{dropped} earlier steps omitted to fit the context]"
            if shown is None
            else omitted_note(shown + dropped)
        )
        out[1] = {"role": out[1]["role"], "content": problem + line}
    observation = out[-1]["content"] if len(out) > 2 and out[-1]["role"] == "user" else None
    if observation is not None:  # 3. the latest observation keeps its tail, at least an eighth of the budget
        floor = min(counter(observation), budget // 8)
        _cut(out, len(out) - 1, counter.total(out) - budget, counter, keep="tail", floor=floor)
    _cut(out, 1, counter.total(out) - budget, counter, keep="head")  # 4. the problem keeps its head
    if observation is not None:
        _cut(out, len(out) - 1, counter.total(out) - budget, counter, keep="tail")
    return out


CUT_MARK = "[... cut to fit the context ...]"


def _cut(
    out: list[dict[str, str]], index: int, over: int, counter: TokenCounter, *, keep: str, floor: int = 0
) -> None:
    """Shorten message ``index`` by ``over`` tokens (not below ``floor``), keeping its head or tail, marked."""
    if over <= 0 or index < 1:
        return
    content = out[index]["content"]
    header = "OBSERVATION:\n" if keep == "tail" and content.startswith("OBSERVATION:\n") else ""
    body = content[len(header) :]
    room = max(counter(body) - over - counter(CUT_MARK) - 2, floor)  # 2: re-tokenizing a cut may merge tokens
    if room >= counter(body):
        return
    kept = counter.cut(body, room, keep=keep)
    text = f"{header}{CUT_MARK}\n{kept}" if keep == "tail" else f"{kept}\n{CUT_MARK}"
    out[index] = {"role": out[index]["role"], "content": text}
