"""The one prompt format shared by SRL training samples and the evaluation agent loop.

A conversation is: the system instructions, one user message with the problem (and, optionally, the oracle files:
path and content), then for every earlier step an assistant message holding the action in a ```bash fence and a
user message holding its observation. The policy answers with ``<think>…</think>`` + one action
(see :mod:`swe_srl.actions`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from swe_srl.actions import THINK_CLOSE, THINK_OPEN

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
    count_tokens: Callable[[str], int] | None = None,
    thoughts: Sequence[str] | None = None,
) -> list[dict[str, str]]:
    """Chat messages for the next step, given the problem and the ``(action, observation)`` pairs so far.

    ``thoughts`` (one per history pair) puts each earlier thought as ``<think>…</think>`` before its action; by
    default earlier turns hold actions only, as in the SRL paper's step-wise context.

    With ``token_budget``, the oldest observations are replaced by ``[observation elided]`` until the summed
    token count of the message contents fits (chat-template overhead is not counted). The system prompt, the
    problem, every action and the last observation are never elided, so the result may still exceed the
    budget; callers check with :func:`messages_tokens`.
    """
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": format_problem(problem, oracle_files)},
    ]
    for index, (action, observation) in enumerate(history):
        thought = thoughts[index] if thoughts is not None else ""
        messages.append({"role": "assistant", "content": format_action(action, thought)})
        messages.append({"role": "user", "content": format_observation(observation, observation_chars)})
    if token_budget is not None:
        elide_to_budget(messages, token_budget, count_tokens or approx_tokens)
    return messages


def messages_tokens(messages: Sequence[Mapping[str, str]], count_tokens: Callable[[str], int]) -> int:
    """Summed token count of the message contents."""
    return sum(count_tokens(m["content"]) for m in messages)


def elide_to_budget(messages: list[dict[str, str]], budget: int, count_tokens: Callable[[str], int]) -> None:
    """Replace the oldest observations (never the last one) by ``[observation elided]`` until the prompt fits."""
    counts = [count_tokens(m["content"]) for m in messages]
    total = sum(counts)
    if total <= budget:
        return
    elided = f"OBSERVATION:\n{OBSERVATION_ELIDED}"
    elided_cost = count_tokens(elided)
    # Observations sit at indices 3, 5, ...; the last one (the step just before the target) is kept.
    for index in range(3, len(messages) - 1, 2):
        if total <= budget:
            break
        if counts[index] > elided_cost:
            total += elided_cost - counts[index]
            messages[index] = {"role": "user", "content": elided}
            counts[index] = elided_cost
