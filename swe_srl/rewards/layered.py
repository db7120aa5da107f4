"""Scoring one model output: format → similarity (``srl``) or syntax/semantic/effect (``layered``).

``layered`` = (w_syntax·syntax + w_semantic·semantic + w_effect·effect) / (sum of the weights of the layers
computed). With the defaults 0.3/0.5/0.2 and all three layers this is exactly 0.3·syntax + 0.5·semantic +
0.2·effect; when the effect layer does not run (effect off, or missing: an infrastructure failure, recorded as the
component ``effect_missing``) the weights are renormalized over syntax and semantic (0.375/0.625), so the expert's
own action still scores 1.0. Any format error scores −1.
``safe`` gates the total: an action with a destructive operation the expert's action does not do (``harm.py``:
``rm -rf``, ``git reset --hard``, truncating a file, discarding a read's output) scores 0 — below any harmless
action, a bash syntax error included — and its semantic layer is 0 too.
The ``srl`` mode is the paper's reward: the similarity alone (the effect layer is never run for it).
The ``mixed`` mode is their weighted mean: mix·similarity + (1 − mix)·layered (``RewardWeights.mix``, 0.5 by
default), every layered component kept — the paper's pressure towards the expert's exact text, with the layered
reward's zero for an invalid or destructive command.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from swe_srl.core.actions import parse_output
from swe_srl.errors import ActionFormatError, ConfigError, SandboxError
from swe_srl.rewards.context import RewardResult, StepContext
from swe_srl.rewards.harm import unexpected_harm
from swe_srl.rewards.semantic import semantic_similarity
from swe_srl.rewards.similarity import similarity
from swe_srl.rewards.syntax import syntax_layer

Mode = Literal["srl", "layered", "mixed"]
MODES: tuple[str, ...] = ("srl", "layered", "mixed")
LAYERED = ("format", "similarity", "syntax", "semantic", "safe")
MODE_COMPONENTS = {"srl": ("format", "similarity"), "layered": LAYERED, "mixed": LAYERED}


@dataclass(frozen=True)
class RewardWeights:
    """Weights of the layered reward (any non-negative values; they are renormalized over the computed layers) and
    ``mix``, the ``mixed`` mode's share of the paper similarity (between 0 and 1; not renormalized)."""

    syntax: float = 0.3
    semantic: float = 0.5
    effect: float = 0.2
    mix: float = 0.5

    @classmethod
    def parse(cls, weights: RewardWeights | Mapping[str, float] | None) -> RewardWeights:
        """Accept None (defaults), a RewardWeights, or a mapping with a subset of syntax/semantic/effect/mix."""
        if weights is None or isinstance(weights, RewardWeights):
            return weights or cls()
        unknown = set(weights) - {"syntax", "semantic", "effect", "mix"}
        if unknown:
            raise ConfigError(
                f"unknown reward weight(s) {sorted(unknown)}: use syntax, semantic, effect, mix"
            )
        result = cls(**{k: float(v) for k, v in weights.items()})
        if min(result.syntax, result.semantic, result.effect) < 0 or result.syntax + result.semantic <= 0:
            raise ConfigError(f"reward weights {weights!r}: need non-negative values, syntax + semantic > 0")
        if not 0.0 <= result.mix <= 1.0:
            raise ConfigError(
                f"reward weight mix={result.mix}: the paper similarity's share, between 0 and 1"
            )
        return result


def combine(components: Mapping[str, float], weights: RewardWeights) -> float:
    """Weighted mean of the computed layers (``effect`` counts only when present)."""
    layers = {"syntax": weights.syntax, "semantic": weights.semantic, "effect": weights.effect}
    used = {k: w for k, w in layers.items() if k in components}
    return sum(w * components[k] for k, w in used.items()) / sum(used.values())


EffectArg = Callable[[StepContext], float] | float | None
EFFECT_MISSING = "effect_missing"
"""The component recorded (1.0) instead of ``effect`` when the effect layer failed for infrastructure reasons
(``SandboxError``: a sandbox node lost, an engine down); the total is then renormalized over the other layers."""


def score_step(
    ctx: StepContext,
    *,
    mode: Mode = "layered",
    weights: RewardWeights | Mapping[str, float] | None = None,
    effect: EffectArg = None,
    fuzzy: bool = False,
) -> RewardResult:
    """Score a well-formed step. ``effect``: an ``EffectEvaluator`` called with ``ctx``, or a precomputed value."""
    if mode not in MODES:
        raise ConfigError(f"reward mode={mode!r}: choose one of {', '.join(MODES)}")
    components = {"format": 1.0, "similarity": similarity(ctx.expert_action, ctx.action)}
    if mode == "srl":
        return RewardResult(components["similarity"], components)
    components["syntax"] = syntax_layer(ctx)
    components["semantic"] = semantic_similarity(ctx.expert_action, ctx.action, fuzzy, ctx.created_files)
    components["safe"] = 0.0 if unexpected_harm(ctx.expert_action, ctx.action, ctx.created_files) else 1.0
    if effect is not None:
        try:
            value = effect(ctx) if callable(effect) else effect
        except SandboxError:  # infrastructure (a lost sandbox node): the layer is missing, never a 0 or a 1
            components[EFFECT_MISSING] = 1.0
        else:
            components["effect"] = min(1.0, max(0.0, float(value)))
    parsed = RewardWeights.parse(weights)
    layered = components["safe"] * combine(components, parsed)
    if mode == "mixed":
        return RewardResult(parsed.mix * components["similarity"] + (1 - parsed.mix) * layered, components)
    return RewardResult(layered, components)


def score_output(
    completion: str,
    expert_action: str,
    *,
    mode: Mode = "layered",
    weights: RewardWeights | Mapping[str, float] | None = None,
    effect: EffectArg = None,
    fuzzy: bool = False,
    instance_id: str | None = None,
    trajectory_hash: str | None = None,
    step: int | None = None,
    executables: frozenset[str] | None = None,
    created_files: frozenset[str] | None = None,
) -> RewardResult:
    """Reward of one model output against the expert action of the same step (−1 on a format error).

    ``executables`` / ``created_files``: the step's known commands and created files (``StepContext``)."""
    if mode not in MODES:
        raise ConfigError(f"reward mode={mode!r}: choose one of {', '.join(MODES)}")
    try:
        parsed = parse_output(completion)
    except ActionFormatError as exc:
        zeros = dict.fromkeys(MODE_COMPONENTS[mode], 0.0)
        return RewardResult(-1.0, zeros, str(exc))
    ctx = StepContext(
        expert_action,
        parsed.action,
        parsed.thought,
        instance_id,
        trajectory_hash,
        step,
        executables,
        created_files,
    )
    return score_step(ctx, mode=mode, weights=weights, effect=effect, fuzzy=fuzzy)
