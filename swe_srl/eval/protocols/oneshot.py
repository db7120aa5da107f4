"""The one-generation protocols of ``swe-srl eval --protocol``, after SWE-RL's Agentless-mini.

``oracle-edit``: one repair generation from the issue and the whole files the gold patch edits. ``agentless``:
localization (the issue and the repository's Python listing → paths), then repair on the localized files. The
answer's SEARCH/REPLACE edits are applied to the base files (:mod:`swe_srl.core.search_replace`) and the result
is the patch graded like an agent's. Output that cannot be used gives an empty patch, with the reason in the
record (graded unresolved, never an error). ``--candidates N`` runs N candidates and keeps the majority patch
(:mod:`.rerank`). The repair prompt shows the localized files that fit the input budget (:mod:`.budget`); under
Agentless-mini's rules the answer may edit any localized file, shown or not, as SWE-RL's ``repair.py: process_loc``
post-processes it against all of them.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from swe_srl.core.agentless_edits import post_process
from swe_srl.core.search_replace import apply_edits, make_patch, parse_edits
from swe_srl.core.shells import PERSISTENT
from swe_srl.errors import ConfigError, ContextOverflow
from swe_srl.eval.protocols.budget import BudgetCounter, budget_counter, within_budget
from swe_srl.eval.protocols.prompts import (
    Messages,
    localization_messages,
    parse_localization,
    repair_messages,
)
from swe_srl.eval.protocols.rerank import RERANKS, majority, rerank_key
from swe_srl.eval.protocols.samples import repair_plan, sample_rng
from swe_srl.eval.protocols.sources import BaseTree, oracle_files

if TYPE_CHECKING:
    from swe_srl.benchmark.instances import Instance

PROTOCOLS = ("agent", "oracle-edit", "agentless")
EDIT_RULES = ("agentless", "strict")
ONE_SHOT_MAX_NEW_TOKENS = 4096
"""The default generation budget of ``oracle-edit`` / ``agentless`` (SWE-RL's ``InferenceArgs.max_tokens``)."""
REPAIR_INPUT_TOKENS = 60_000
"""Files that would take the repair prompt's file contents past this are left out, keeping at least one (SWE-RL's
``repair.py: Args.max_input_tokens``, ``construct_topn_file_context``)."""


def check_protocol(settings: Any) -> None:
    """Reject evaluation settings a protocol cannot run with (one line, before any work)."""
    protocol = settings.protocol
    if protocol not in PROTOCOLS:
        raise ConfigError(f"--protocol {protocol!r}: expected one of {', '.join(PROTOCOLS)}")
    if settings.edit_rules not in EDIT_RULES:
        raise ConfigError(f"--edit-rules {settings.edit_rules!r}: expected one of {', '.join(EDIT_RULES)}")
    if protocol == "agent":
        if settings.no_grade:
            raise ConfigError(
                "--no-grade is for --protocol oracle-edit|agentless: agent episodes need a sandbox"
            )
        if settings.prompt_templates:
            raise ConfigError("--prompt-template is for --protocol oracle-edit|agentless, not agent")
        if settings.tokenizer:
            raise ConfigError(
                "--tokenizer is for --protocol oracle-edit|agentless (their input budget), not agent"
            )
        return
    kind = settings.policy.partition(":")[0]
    if settings.direct or kind not in ("gold", "empty", "hf", "openai", "predictions"):
        raise ConfigError(f"--protocol {protocol} generates patches: --policy gold|empty|hf:PATH|openai "
                          f"without --direct-patch (or predictions:FILE to grade), not {settings.policy!r}")  # fmt: skip
    if kind == "predictions" and settings.no_grade:
        raise ConfigError("--no-grade with --policy predictions:FILE has nothing to do (it only grades)")
    if settings.oracle_window is not None or (settings.oracle_files and protocol == "agentless"):
        raise ConfigError(f"--protocol {protocol} sets its own oracle (oracle-edit: the gold patch's whole "
                          "files; agentless: none): drop --oracle-files/--oracle-window")  # fmt: skip
    if settings.shell != PERSISTENT:
        raise ConfigError(f"--shell {settings.shell} is for --protocol agent: --protocol {protocol} runs no "
                          "commands")  # fmt: skip
    if settings.candidates < 1:
        raise ConfigError(f"--protocol {protocol} --candidates {settings.candidates}: need at least one")
    if settings.rerank not in RERANKS:
        raise ConfigError(f"--rerank {settings.rerank!r}: expected one of {', '.join(RERANKS)}")


@dataclass
class Generation:
    """One model call: its output, token counts (None when the policy has no tokenizer nor usage report)."""

    output: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    truncated: bool = False
    overflow: bool = False
    """The prompt alone fills the model's context: nothing was generated."""
    context_tokens: int | None = None
    messages: list[dict[str, str]] | None = None
    """The prompt exactly as the policy was given it (chat messages), for the record and ``swe-srl view``."""


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
    counter = budget_counter(settings, policy)
    n = settings.candidates
    agentless = settings.protocol == "agentless"
    located = [_localize(instance, settings, policy, tree, k) for k in range(n)] if agentless else []
    plan = repair_plan([c.files for c in located], n) if located else [None] * n
    candidates = [_candidate(instance, settings, policy, tree, counter, located[j] if j is not None else None, k)
                  for k, j in enumerate(plan)] or located  # fmt: skip
    if len(candidates) == 1:  # one answer is the prediction as it is (SWE-RL's output_0_processed)
        chosen, votes = (0, 1) if candidates[0].patch else (None, 0)
    else:
        chosen, votes = majority([c.key if c.patch else "" for c in candidates])
    best = candidates[chosen if chosen is not None else 0]
    reason = None if chosen is not None else best.reason
    if chosen is None and any(c.patch for c in candidates):
        reason = "every patch normalizes to nothing (comments or docstrings only): the reranking chose none"
    generations = list({id(g): g for c in [*located, *candidates] for g in c.generations}.values())
    unreadable = len({id(c) for c in [*located, *candidates] if c.unreadable})
    return {
        "exit_reason": "patch" if chosen is not None else "no_patch",
        "error": None,
        "patch": best.patch if chosen is not None else "",
        "steps": len(generations),
        "format_errors": unreadable,
        "duration_s": round(time.monotonic() - started, 3),
        "trajectory": None,
        "protocol": {
            "name": settings.protocol,
            "reason": reason,
            "notes": best.notes,
            "chosen": chosen,
            "votes": votes,
            "rerank": settings.rerank if len(candidates) > 1 else None,
            "input_budget": {"tokens": settings.repair_input_tokens, "counted_with": counter.source},
            "prompt_tokens": _total(g.prompt_tokens for g in generations),
            "completion_tokens": _total(g.completion_tokens for g in generations),
            "truncated": sum(g.truncated for g in generations),
            "candidates": [_summary(c) for c in candidates],
            "localizations": [{"files": c.files, "reason": c.reason} for c in located] if n > 1 else None,
            "localized": plan if n > 1 and agentless else None,
        },
    }


def _localize(instance: Instance, settings: Any, policy: Any, tree: BaseTree, k: int) -> Candidate:
    """One localization sample: its files (none: ``reason`` says why)."""
    cand, listing = Candidate(), tree.listing()
    template = dict(settings.prompt_templates).get("localization")
    rng = sample_rng(instance.instance_id, settings.candidates, "localization", k)
    located = _generate(
        policy, localization_messages(instance.problem_statement, listing, template=template, rng=rng)
    )
    cand.generations.append(located)
    if located.overflow:
        return _empty(cand, "the localization prompt is over the model's context", located)
    cand.files, cand.notes = parse_localization(located.output, listing)
    if not cand.files:
        cand.unreadable = True
        return _empty(cand, "the localization named no Python file of the listing", located)
    return cand


def _candidate(
    instance: Instance,
    settings: Any,
    policy: Any,
    tree: BaseTree,
    counter: BudgetCounter,
    located: Candidate | None,
    k: int,
) -> Candidate:
    """One repair of the files ``located`` names (the oracle files without a localization)."""
    if located is not None:
        cand = Candidate(
            files=list(located.files), notes=list(located.notes), generations=list(located.generations)
        )
    else:
        cand = Candidate(
            files=oracle_files(instance) if settings.edit_rules == "agentless" else instance.oracle_files
        )
    problem, templates = instance.problem_statement, dict(settings.prompt_templates)
    contents = tree.contents(cand.files)
    paths = [p for p in cand.files if p in contents]
    shown, left_out = within_budget(paths, contents, counter.count, settings.repair_input_tokens)
    cand.notes += [f"left {path} out of the repair prompt: over its input budget" for path in left_out]
    files = [(path, contents[path]) for path in shown]
    if (rng := sample_rng(instance.instance_id, settings.candidates, "repair", k)) is not None:
        rng.shuffle(files)  # SWE-RL's construct_topn_file_context(randomize=True) with several samples
    repaired = _generate(policy, repair_messages(problem, files, template=templates.get("repair")))
    cand.generations.append(repaired)
    if repaired.overflow:
        return _empty(cand, "the repair prompt is over the model's context", repaired)
    if settings.edit_rules == "strict":  # ours: only the files shown may be edited
        contents = {path: contents[path] for path in shown}
    try:
        return _patched(cand, repaired, contents, settings, tree)
    except Exception as exc:  # one candidate's output never ends the instance in error
        cand.patch, cand.key = "", ""
        return _empty(cand, f"building the patch failed: {type(exc).__name__}: {str(exc)[:200]}", repaired)


def _patched(cand: Candidate, repaired: Generation, contents: dict[str, str], settings: Any, tree: BaseTree):
    """``cand`` with the patch of its repair answer under ``settings.edit_rules``, or its reason for none."""
    if settings.edit_rules == "agentless":
        applied = post_process(repaired.output, contents)
        cand.unreadable = applied.problem is not None and applied.problem.startswith("no ```python")
    else:
        parsed = parse_edits(repaired.output)
        cand.notes += parsed.notes
        if parsed.problem:
            cand.unreadable = True
            return _empty(cand, f"unreadable answer: {parsed.problem}", repaired)
        applied = apply_edits(parsed.edits, contents, is_test=tree.is_test, creatable=tree.creatable,
                              exactly_once=True)  # fmt: skip
    cand.notes += applied.notes
    if applied.problem or not applied.new:
        prefix = "unreadable answer: " if cand.unreadable else ""
        return _empty(cand, prefix + (applied.problem or "no edit applied"), repaired)
    cand.patch = make_patch(applied.new, contents)
    if settings.candidates > 1:
        cand.key = rerank_key(settings.rerank, {p: contents.get(p, "") for p in applied.new}, applied.new)
    return cand


def _empty(cand: Candidate, reason: str, last: Generation) -> Candidate:
    if last.overflow:
        counts = [f"{last.prompt_tokens} prompt tokens" if last.prompt_tokens is not None else "",
                  f"context {last.context_tokens}" if last.context_tokens is not None else ""]  # fmt: skip
        reason += f" ({', '.join(c for c in counts if c) or 'token counts not reported'})"
    elif last.truncated:
        reason += " (the output was cut at the generation budget)"
    cand.reason = reason
    return cand


def _generate(policy: Any, messages: Messages) -> Generation:
    """One call of ``policy`` with token counts: the server's usage report, else the policy's tokenizer. A
    prompt over the context (counted here, or reported by the server) gives an overflowed generation. The
    generation keeps its prompt."""
    generation = _call(policy, messages)
    generation.messages = [dict(m) for m in messages]
    return generation


def _call(policy: Any, messages: Messages) -> Generation:
    tokenizer = getattr(policy, "tokenizer", None)
    prompt_tokens = None
    if tokenizer is not None:
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        prompt_tokens = policy.count_tokens(text)
        context = getattr(policy, "context_tokens", None)
        if context and prompt_tokens >= context:
            return Generation("", prompt_tokens, 0, overflow=True, context_tokens=context)
    try:
        output = policy.generate(messages)
    except ContextOverflow as exc:
        return Generation("", exc.prompt_tokens or prompt_tokens, 0, overflow=True,
                          context_tokens=exc.context_tokens)  # fmt: skip
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
