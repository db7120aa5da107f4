"""The TRL adapter: ``SRLReward`` is a reward function for ``trl.GRPOTrainer`` (``reward_funcs=[SRLReward()]``).

TRL 1.16 calls ``reward_func(prompts=…, completions=…, completion_ids=…, **columns)`` where ``columns`` are the
dataset columns (here ``expert_action``, ``instance_id``, ``step``, ``trajectory_hash``…) plus ``trainer_state``,
``log_extra(column, values)`` and ``log_metric(name, value)``; it names the function by its ``__name__``. We use
``log_metric`` for the mean of every reward component and ``log_extra`` for each completion's format error and layers.
Wrappers rewrite each completion before a reward function scores it (``MappedReward``): ``PrefixedReward`` (the
``<think>`` a chat template's generation prompt wrote) here, the tiny policy's slots in ``swe_srl.train.tiny.slots``.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from swe_srl.core.actions import THINK_OPEN
from swe_srl.errors import ConfigError
from swe_srl.rewards.effect.protocol import EFFECT_MODES, EffectEvaluator
from swe_srl.rewards.layered import MODES, RewardWeights, score_output

StepInputsFn = Callable[[Any, Any, Any], tuple[frozenset[str] | None, frozenset[str] | None]]
"""(instance_id, trajectory_hash, step) → the syntax layer's (executables, created_files) of that step."""


def completion_text(completion: Any) -> str:
    """A completion as text: strings pass through; conversational lists join their assistant contents."""
    if isinstance(completion, str):
        return completion
    parts: list[str] = []
    for message in completion:
        if message.get("role", "assistant") != "assistant":
            continue
        content = message.get("content", "")
        if isinstance(content, list):  # multimodal parts: [{"type": "text", "text": ...}]
            content = "".join(p.get("text", "") for p in content if isinstance(p, Mapping))
        parts.append(str(content or ""))
    return "".join(parts)


class SRLReward:
    """Picklable TRL reward function over :func:`score_output` — the same code the environment scores with.

    ``effect_mode`` other than ``off`` needs an ``effect`` evaluator (an ``EffectEvaluator``). ``inputs`` gives
    located steps (``instance_id``, ``trajectory_hash``, ``step`` columns) the syntax layer's ``executables`` (the
    instance image's) and ``created_files`` (from the expert state), as the env gives its steps, so the trainer and
    the env score one action alike: a :class:`~swe_srl.rewards.syntax_inputs.StepInputs` (without Docker it falls
    back to the default executable set and says so), else the effect evaluator's ``step_inputs`` when it has one
    (``SandboxEffect``). With neither, every step is judged against ``commands.DEFAULT_EXECUTABLES`` with its
    created files unknown. ``last_components`` holds the components of every completion of the last call.
    With an effect evaluator a batch is scored in parallel across its instances (``max_workers`` threads at
    most): each instance gets its own copy of the evaluator, kept warm while the batches name that instance.
    """

    def __init__(
        self,
        mode: str = "layered",
        weights: RewardWeights | Mapping[str, float] | None = None,
        effect_mode: str = "off",
        fuzzy: bool = False,
        effect: EffectEvaluator | None = None,
        inputs: StepInputsFn | None = None,
        max_workers: int = 32,
    ) -> None:
        if mode not in MODES:
            raise ConfigError(f"reward mode={mode!r}: choose one of {', '.join(MODES)}")
        if effect_mode not in EFFECT_MODES:
            raise ConfigError(f"effect_mode={effect_mode!r}: choose one of {', '.join(EFFECT_MODES)}")
        if effect_mode != "off" and effect is None:
            raise ConfigError(
                f"effect_mode={effect_mode!r} needs an effect evaluator: SRLReward(effect=...) "
                "(or effect_mode='off' for pure offline SRL)"
            )
        self.mode = mode
        self.weights = RewardWeights.parse(weights)
        self.effect_mode = effect_mode
        self.fuzzy = fuzzy
        self.effect = effect if effect_mode != "off" else None
        self.inputs = inputs if inputs is not None else getattr(self.effect, "step_inputs", None)
        self.__name__ = f"srl_{mode}"
        self.last_components: list[dict[str, float]] = []
        self.last_format_errors: list[str | None] = []
        self._inputs: dict[tuple, dict[str, frozenset[str] | None]] = {}
        self._evaluators: dict[Any, Any] = {}  # instance id → its effect evaluator copy (parallel scoring)
        self.max_workers = max_workers

    def __call__(
        self, prompts: Sequence[Any], completions: Sequence[Any], expert_action: Sequence[str], **columns: Any
    ) -> list[float]:
        if len(completions) != len(expert_action):
            raise ConfigError(f"{len(completions)} completions but {len(expert_action)} expert_action values")
        wheres = [tuple(_at(columns.get(c), i) for c in ("instance_id", "trajectory_hash", "step")) for i in
                  range(len(completions))]  # fmt: skip

        def score(i: int) -> Any:
            where = wheres[i]
            return score_output(
                completion_text(completions[i]),
                expert_action[i],
                mode=self.mode,  # type: ignore[arg-type]
                weights=self.weights,
                effect=self._effect_for(where[0]),
                fuzzy=self.fuzzy,
                instance_id=where[0],
                trajectory_hash=where[1],
                step=where[2],
                **self._syntax_inputs(where),
            )

        results = self._score_by_instance(score, [w[0] for w in wheres])
        self.last_components = [dict(r.components) for r in results]
        self.last_format_errors = [r.format_error for r in results]
        self._log(columns)
        return [r.total for r in results]

    def _score_by_instance(self, score: Callable[[int], Any], instance_ids: list[Any]) -> list[Any]:
        """``score(i)`` for every completion; with an effect evaluator, the instances in parallel (one thread and one
        evaluator copy, so one warm container, per instance; an instance's completions one after another)."""
        groups: dict[Any, list[int]] = {}
        for i, iid in enumerate(instance_ids):
            groups.setdefault(iid, []).append(i)
        if self.effect is None or len(groups) < 2:
            return [score(i) for i in range(len(instance_ids))]
        self._keep_evaluators(set(groups))
        results: list[Any] = [None] * len(instance_ids)
        with ThreadPoolExecutor(max_workers=min(len(groups), self.max_workers)) as pool:
            scored_groups = list(pool.map(lambda g: [score(i) for i in g], groups.values()))
            for group, scored in zip(groups.values(), scored_groups, strict=True):
                for i, result in zip(group, scored, strict=True):
                    results[i] = result
        return results

    def _effect_for(self, instance_id: Any) -> EffectEvaluator | None:
        """The effect evaluator of ``instance_id``'s completions: its own copy (its own warm container) when the
        batch is scored in parallel, else the shared one."""
        if self.effect is None or instance_id not in self._evaluators:
            return self.effect
        return self._evaluators[instance_id]

    def _keep_evaluators(self, instance_ids: set[Any]) -> None:
        """One evaluator copy per instance of this batch (kept warm for the next); the others' containers close, so
        the warm containers are the step's instances."""
        for iid in list(self._evaluators):
            if iid not in instance_ids:
                closing = getattr(self._evaluators.pop(iid), "close", None)
                if callable(closing):
                    closing()
        for iid in instance_ids:
            if iid not in self._evaluators:
                self._evaluators[iid] = copy.copy(self.effect)

    def _syntax_inputs(self, where: tuple) -> dict[str, frozenset[str] | None]:
        """The syntax layer's ``executables`` / ``created_files`` of a located step, from :attr:`inputs`; none
        without them, in ``srl`` mode (no syntax layer), or when the step is not located."""
        if self.inputs is None or self.mode == "srl" or None in where:
            return {}
        if where not in self._inputs:
            executables, created = self.inputs(*where)
            self._inputs[where] = {"executables": executables, "created_files": created}
        return self._inputs[where]

    def _log(self, columns: Mapping[str, Any]) -> None:
        """Per completion, into TRL's completion table (``trl.log_completions=true``; ``swe-srl view`` shows it):
        the format error and each layer of the reward (``<name>/<layer>``, NaN where a completion has no such
        layer). Their means are logged once, by the trainer (``reward_components/<layer>``)."""
        log_extra = columns.get("log_extra")
        if callable(log_extra):
            log_extra(f"{self.__name__}_format_error", [e or "" for e in self.last_format_errors])
            for layer in sorted({k for c in self.last_components for k in c}):
                log_extra(f"{self.__name__}/{layer}", [c.get(layer, math.nan) for c in self.last_components])

    @property
    def syntax_fallback(self) -> str | None:
        """Why the syntax layer's inputs fell back to the defaults (no Docker engine, no trajectories), or None."""
        return getattr(self.inputs, "fallback", None)

    def __repr__(self) -> str:
        return f"SRLReward(mode={self.mode!r}, effect_mode={self.effect_mode!r}, fuzzy={self.fuzzy})"


def _at(values: Any, i: int) -> Any:
    return (
        values[i]
        if isinstance(values, Sequence) and not isinstance(values, str) and i < len(values)
        else None
    )


class MappedReward:
    """A reward function whose completions are rewritten (each assistant turn's text, by :meth:`rewrite`) before
    the wrapped one scores them. Picklable (TRL may pickle reward functions); every other attribute
    (``last_components``, ``last_format_errors``, …) is the wrapped function's."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.__name__ = getattr(inner, "__name__", type(inner).__name__)

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not yet set (unpickling)
            raise AttributeError(name)
        return getattr(self.inner, name)

    def rewrite(self, text: str, k: int, columns: Mapping[str, Any]) -> str:
        """Completion ``k``'s text as the wrapped function should see it (``columns``: the batch's columns)."""
        raise NotImplementedError

    def __call__(self, prompts: list, completions: list, **columns: Any) -> list[float | None]:
        rewritten = [
            _rewritten(c, lambda text, k=k: self.rewrite(text, k, columns)) for k, c in enumerate(completions)
        ]
        return self.inner(prompts, rewritten, **columns)


def _rewritten(completion: Any, rewrite) -> Any:
    if isinstance(completion, list):  # conversational: each assistant turn's content
        return [{**m, "content": rewrite(str(m["content"]))} if m.get("role") == "assistant" else m
                for m in completion]  # fmt: skip
    return rewrite(str(completion))


class PrefixedReward(MappedReward):
    """For chat templates whose generation prompt already opens ``<think>``: that prefix goes back in front of each
    completion, so format rules see the whole model turn."""

    def __init__(self, inner: Any, prefix: str = THINK_OPEN) -> None:
        super().__init__(inner)
        self.prefix = prefix

    def rewrite(self, text: str, k: int, columns: Mapping[str, Any]) -> str:
        return self.prefix + text
