"""Fitting a sample's chat messages into a token budget (training prompts and the tiny model's warm-up)."""

from __future__ import annotations

CUT_MARK = "[... earlier context cut to fit the context window ...]\n"


def _template_costs(tokenizer, roles: set[str]) -> tuple[dict[str, int], int]:
    """Tokens the chat template adds around one (empty) message of each role, and for the generation prompt."""

    def count(messages, generation: bool = False) -> int:
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=generation)
        return len(tokenizer(str(text), add_special_tokens=False)["input_ids"])

    costs = {role: count([{"role": role, "content": ""}]) for role in roles}
    generation = count([{"role": "user", "content": ""}], True) - costs.get("user", 0)
    return costs, generation


def fit_prompt(
    messages: list[dict[str, str]], max_tokens: int, tokenizer, cache: dict | None = None
) -> list[dict[str, str]]:
    """Left-truncate a conversation to ``max_tokens`` (chat template included): the latest messages whole, the one
    before them cut to its tail (marked), older ones dropped — TRL's former left ``max_prompt_length``, per message.
    The latest message is always kept (cut to its tail when it alone is too long). ``cache`` memoizes
    tokenizations and template costs across calls (prompts of one trajectory share their long messages)."""
    cache = {} if cache is None else cache

    def ids(text: str) -> list[int]:
        if text not in cache:
            cache[text] = list(tokenizer(text, add_special_tokens=False)["input_ids"])
        return cache[text]

    roles = frozenset({m["role"] for m in messages} | {"user"})
    if roles not in cache:
        cache[roles] = _template_costs(tokenizer, set(roles))
    costs, generation = cache[roles]
    left = max_tokens - generation
    kept: list[dict[str, str]] = []
    for message in reversed(messages):
        tokens = ids(message["content"])
        if len(tokens) + costs[message["role"]] <= left:
            kept.append(message)
            left -= len(tokens) + costs[message["role"]]
            continue
        mark = ids(CUT_MARK) if kept else []  # the latest message is cut without the mark
        room = left - costs[message["role"]] - len(mark) - 2  # 2: re-tokenizing the cut may merge
        if room > 0:
            kept.append(
                {"role": message["role"], "content": CUT_MARK * bool(mark) + tokenizer.decode(tokens[-room:])}
            )
        break
    return list(reversed(kept))


def fit_rows(rows: list[dict], max_tokens: int, tokenizer) -> list[dict]:
    """Rows whose prompts are fitted with :func:`fit_prompt` (tokenizations shared across rows)."""
    cache: dict = {}
    return [{**row, "prompt": fit_prompt(row["prompt"], max_tokens, tokenizer, cache)} for row in rows]
