"""The one-generation protocols of ``swe-srl eval --protocol``, after SWE-RL's Agentless-mini.

``oracle-edit``: one repair generation from the issue and the whole files the gold patch edits. ``agentless``:
localization (the issue and the repository's Python listing → paths), then repair on the localized files. The
answer's SEARCH/REPLACE edits are applied to the base files (:mod:`swe_srl.core.search_replace`) and the result
is the patch graded like an agent's. Output that cannot be used gives an empty patch, with the reason in the
record (graded unresolved, never an error). ``--candidates N`` runs N candidates and keeps the majority patch.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from swe_srl.core.search_replace import apply_edits, make_patch, parse_edits
from swe_srl.errors import ConfigError
from swe_srl.eval.protocols.prompts import (
    Messages,
    localization_messages,
    parse_localization,
    repair_messages,
)
from swe_srl.eval.protocols.rerank import majority, normalized
from swe_srl.eval.protocols.sources import BaseTree

if TYPE_CHECKING:
    from swe_srl.benchmark.instances import Instance

PROTOCOLS = ("agent", "oracle-edit", "agentless")
ONE_SHOT_MAX_NEW_TOKENS = 8192
"""The default generation budget of ``oracle-edit`` / ``agentless`` (thinking plus edits of whole files)."""


def check_protocol(settings: Any) -> None:
    """Reject evaluation settings a protocol cannot run with (one line, before any work)."""
    protocol = settings.protocol
    if protocol not in PROTOCOLS:
        raise ConfigError(f"--protocol {protocol!r}: expected one of {', '.join(PROTOCOLS)}")
    if protocol == "agent":
        return
    kind = settings.policy.partition(":")[0]
    if settings.direct or kind not in ("gold", "empty", "hf", "openai"):
        raise ConfigError(f"--protocol {protocol} generates patches: --policy gold|empty|hf:PATH|openai "
                          f"without --direct-patch, not {settings.policy!r}")  # fmt: skip
    if settings.oracle_window is not None or (settings.oracle_files and protocol == "agentless"):
        raise ConfigError(f"--protocol {protocol} sets its own oracle (oracle-edit: the gold patch's whole "
                          "files; agentless: none): drop --oracle-files/--oracle-window")  # fmt: skip
    if settings.candidates < 1:
        raise ConfigError(f"--protocol {protocol} --candidates {settings.candidates}: need at least one")


@dataclass
class Generation:
    """One model call: its output, token counts (None when the policy has no tokenizer nor usage report)."""

    output: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    truncated: bool = False
    overflow: bool = False
    """The prompt alone fills the model's context: nothing was generated."""


@dataclass
class Candidate:
    """One localization + repair (or repair alone) and the patch it gives; ``reason`` says why it is empty."""

    files: list[str] = field(default_factory=list)
    patch: str = ""
    reason: str | None = None
    notes: list[str] = field(default_factory=list)
    generations: list[Generation] = field(default_factory=list)
    unreadable: bool = False
    key: str = ""


def run_protocol(instance: Instance, settings: Any, policy: Any) -> dict[str, Any]:
    """The episode fields of ``instance``'s record under ``settings.protocol`` (see :func:`swe_srl.eval.run`)."""
    started = time.monotonic()
    policy.reset(instance)
    tree = BaseTree(instance, settings.repos_dir)
    candidates = [_candidate(instance, settings, policy, tree) for _ in range(settings.candidates)]
    chosen, votes = majority([c.key if c.patch else "" for c in candidates])
    best = candidates[chosen if chosen is not None else 0]
    generations = [g for c in candidates for g in c.generations]
    return {
        "exit_reason": "patch" if chosen is not None else "no_patch",
        "error": None,
        "patch": best.patch if chosen is not None else "",
        "steps": len(generations),
        "format_errors": sum(c.unreadable for c in candidates),
        "duration_s": round(time.monotonic() - started, 3),
        "trajectory": None,
        "protocol": {
            "name": settings.protocol,
            "reason": None if chosen is not None else best.reason,
            "notes": best.notes,
            "chosen": chosen,
            "votes": votes,
            "prompt_tokens": _total(g.prompt_tokens for g in generations),
            "completion_tokens": _total(g.completion_tokens for g in generations),
            "truncated": sum(g.truncated for g in generations),
            "candidates": [_summary(c) for c in candidates],
        },
    }


def _candidate(instance: Instance, settings: Any, policy: Any, tree: BaseTree) -> Candidate:
    cand = Candidate()
    problem = instance.problem_statement
    if settings.protocol == "agentless":
        listing = tree.listing()
        located = _generate(policy, localization_messages(problem, listing))
        cand.generations.append(located)
        if located.overflow:
            return _empty(cand, "the localization prompt fills the model's context", located)
        cand.files, cand.notes = parse_localization(located.output, listing)
        if not cand.files:
            cand.unreadable = True
            return _empty(cand, "the localization named no Python file of the listing", located)
    else:
        cand.files = instance.oracle_files
    contents = tree.contents(cand.files)
    repaired = _generate(policy, repair_messages(problem, contents))
    cand.generations.append(repaired)
    if repaired.overflow:
        return _empty(cand, "the repair prompt fills the model's context", repaired)
    parsed = parse_edits(repaired.output)
    cand.notes += parsed.notes
    if parsed.problem:
        cand.unreadable = True
        return _empty(cand, f"unreadable answer: {parsed.problem}", repaired)
    applied = apply_edits(parsed.edits, contents, is_test=tree.is_test, creatable=tree.creatable,
                          exactly_once=settings.exactly_once)  # fmt: skip
    cand.notes += applied.notes
    if applied.problem or not applied.new:
        return _empty(cand, applied.problem or "no edit applied", repaired)
    cand.patch, cand.key = make_patch(applied.new, contents), normalized(applied.new)
    return cand


def _empty(cand: Candidate, reason: str, last: Generation) -> Candidate:
    if last.overflow:
        reason += f" ({last.prompt_tokens} tokens)"
    elif last.truncated:
        reason += " (the output was cut at the generation budget)"
    cand.reason = reason
    return cand


def _generate(policy: Any, messages: Messages) -> Generation:
    """One call of ``policy`` with token counts: the server's usage report, else the policy's tokenizer."""
    tokenizer = getattr(policy, "tokenizer", None)
    prompt_tokens = None
    if tokenizer is not None:
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        prompt_tokens = policy.count_tokens(text)
        context = getattr(policy, "context_tokens", None)
        if context and prompt_tokens >= context:
            return Generation("", prompt_tokens, 0, overflow=True)
    output = policy.generate(messages)
    usage = getattr(policy, "last_usage", None) or {}
    if usage:
        finished = getattr(policy, "last_finish_reason", None)
        return Generation(
            output, usage.get("prompt_tokens"), usage.get("completion_tokens"), finished == "length"
        )
    if tokenizer is None:
        return Generation(output)
    completion = policy.count_tokens(output)
    return Generation(output, prompt_tokens, completion, completion >= policy.max_new_tokens)


def _total(values) -> int | None:
    values = list(values)
    return None if any(v is None for v in values) else sum(values)


def _summary(cand: Candidate) -> dict[str, Any]:
    return {
        "files": cand.files,
        "patch_chars": len(cand.patch),
        "reason": cand.reason,
        "notes": cand.notes,
        "generations": [asdict(g) for g in cand.generations],
    }
