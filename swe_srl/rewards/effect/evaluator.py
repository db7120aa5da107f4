"""The effect layer, for real: run the policy's action in a sandbox put into the expert's state before step k and
score its change against the expert's change (the definition: ``score.py``; docs/rewards.md "Effect").

Sandboxes: one warm :class:`~swe_srl.rewards.effect.container.EffectBox` per instance (at most ``max_boxes``, least
recently used closed first), reset to the expert state between evaluations; ``warm=False`` starts a fresh container
per evaluation instead (the slow reference path: the bench checks both give the same values).
Disk cache: the expert's side — step facts by (instance, state diffs) and the test outcomes of its states — under
``expert_root`` (``cache_dir("expert-state")/effect``, with the expert states: :meth:`prepare` fills it), the
action's side — facts by (instance, state tree, cwd, action), test outcomes by (instance, tree) — under ``root``
(``cache_dir("effect")``). A repeated state never reruns tests.
Modes: ``off`` (no sandbox), ``cached`` (default), ``full`` (recompute everything, refresh the cache).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path

from swe_srl.benchmark.instances import Instance
from swe_srl.benchmark.verdicts import is_test_file
from swe_srl.core.shells import PERSISTENT
from swe_srl.errors import ConfigError
from swe_srl.grading.runner import run_tests
from swe_srl.paths import atomic_write_text, cache_dir
from swe_srl.rewards.context import StepContext
from swe_srl.rewards.effect.container import EffectBox, Tainted
from swe_srl.rewards.effect.protocol import EFFECT_MODES
from swe_srl.rewards.effect.score import (
    ActionFacts,
    Delta,
    EffectResult,
    ExpertFacts,
    effect_value,
    known_outcomes,
    needs_tests,
    outcome_agreement,
    target_tests,
)
from swe_srl.rewards.syntax_inputs import StepInputs
from swe_srl.trajectories.expert_state import ExpertState, created_files, expert_states, tree_hash
from swe_srl.trajectories.schema import Trajectory


class SandboxEffect:
    """The ``EffectEvaluator`` over Docker sandboxes (call it with a ``StepContext``, or use :meth:`evaluate`).

    Steps are located by :attr:`steps` (a :class:`~swe_srl.rewards.syntax_inputs.StepInputs`): trajectories by
    ``trajectory_hash`` (register them with :meth:`add_trajectory`), instances by id in ``instances`` or
    ``dataset``. ``test_runs`` / ``sandbox_starts`` count the work this object did; ``last`` is the last
    :class:`EffectResult`. :meth:`close` (or ``with``) removes the warm sandboxes.
    """

    def __init__(
        self,
        mode: str = "cached",
        *,
        trajectories: Iterable[Trajectory] = (),
        instances: Iterable[Instance] | None = None,
        dataset: str = "bundled",
        repos_dir: Path | None = None,
        root: Path | None = None,
        expert_root: Path | None = None,
        warm: bool = True,
        max_boxes: int = 4,
    ) -> None:
        if mode not in EFFECT_MODES:
            raise ConfigError(f"effect mode {mode!r}: choose one of {', '.join(EFFECT_MODES)}")
        self.mode, self.repos_dir = mode, repos_dir
        self.warm, self.max_boxes = warm, max(1, max_boxes)
        self.root = root or cache_dir("effect")
        self.expert_root = expert_root or cache_dir("expert-state") / "effect"
        self.steps = StepInputs(trajectories, instances, dataset=dataset, repos_dir=repos_dir)
        self._boxes: OrderedDict[str, EffectBox] = OrderedDict()
        self._trees: dict[str, tuple[str | None, str | None]] = {}
        """Per instance: the (base, gold) tree ids, met with the expert's steps."""
        self.test_runs = 0
        self.sandbox_starts = 0
        self.last: EffectResult | None = None

    def add_trajectory(self, traj: Trajectory) -> None:
        """Register ``traj`` under its content hash, with the steps decomposition keeps (so sample steps match)."""
        self.steps.add_trajectory(traj)

    def __call__(self, ctx: StepContext) -> float:
        """The effect of ``ctx.action`` taken instead of expert step ``ctx.step`` of ``ctx.trajectory_hash``."""
        if self.mode == "off":
            raise ConfigError("effect mode 'off' computes no effect: pass effect=None, or choose cached/full")
        instance, traj = self.steps.locate(ctx.instance_id, ctx.trajectory_hash, ctx.step)
        self.last = self.evaluate(instance, traj, ctx.step, ctx.action)  # type: ignore[arg-type]
        return self.last.value

    def step_inputs(
        self, instance_id: str | None, trajectory_hash: str | None, step: int | None
    ) -> tuple[frozenset[str] | None, frozenset[str] | None]:
        """(executables, created_files) of the syntax layer for a located step (:attr:`steps`)."""
        return self.steps(instance_id, trajectory_hash, step)

    # ----------------------------------------------------------------------------------------------- disk cache
    def _path(self, kind: str, *key: str) -> Path:
        digest = hashlib.sha256("\0".join(key).encode("utf-8", errors="surrogateescape")).hexdigest()[:24]
        return (self.expert_root if kind.startswith("expert") else self.root) / kind / f"{digest}.json"

    def _load(self, kind: str, *key: str) -> dict | None:
        path = self._path(kind, *key)
        if self.mode == "full" or not path.exists():
            return None
        return json.loads(path.read_text(encoding="utf-8"))

    def _store(self, data: dict, kind: str, *key: str) -> None:
        atomic_write_text(self._path(kind, *key), json.dumps(data))

    # ----------------------------------------------------------------------------------------------- sandboxes
    def _box(self, instance: Instance, fresh: dict) -> EffectBox:
        """The instance's box: the warm one, or (``warm=False``) this evaluation's own (kept in ``fresh``), running
        commands as the trajectory's agent did (``fresh["shell"]``: one warm box per instance and shell)."""
        shell = fresh.get("shell", PERSISTENT)
        iid = instance.instance_id if shell == PERSISTENT else f"{instance.instance_id}\0{shell}"
        if not self.warm:
            if "box" not in fresh:
                fresh["box"] = self._start(instance, shell)
            return fresh["box"]
        if iid in self._boxes:
            self._boxes.move_to_end(iid)
            return self._boxes[iid]
        while len(self._boxes) >= self.max_boxes:
            self._boxes.popitem(last=False)[1].close()
        self._boxes[iid] = self._start(instance, shell)
        return self._boxes[iid]

    def _start(self, instance: Instance, shell: str = PERSISTENT) -> EffectBox:
        self.sandbox_starts += 1
        return EffectBox(instance, repos_dir=self.repos_dir, shell=shell)

    def _reset(self, instance: Instance, fresh: dict, diff: str, cwd: str, scratch: str = "") -> EffectBox:
        """The instance's box, put into the expert state (base + ``diff``, ``cwd``, ``scratch`` files outside the
        repository); a tainted box is replaced."""
        box = self._box(instance, fresh)
        try:
            box.reset(diff, cwd, scratch)
        except Tainted:
            box.close()
            if self.warm:
                del self._boxes[next(k for k, v in self._boxes.items() if v is box)]
            else:
                del fresh["box"]
            box = self._box(instance, fresh)
            box.reset(diff, cwd, scratch)  # a fresh container that cannot be reset: an infrastructure failure
        return box

    def close(self) -> None:
        """Remove the warm sandboxes (a later evaluation starts new ones)."""
        while self._boxes:
            self._boxes.popitem()[1].close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    def __getstate__(self) -> dict:
        """Pickles without the warm sandboxes (a copy starts its own)."""
        return {**self.__dict__, "_boxes": OrderedDict()}

    def __enter__(self) -> SandboxEffect:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------------------------------------- evaluation
    def _expert(self, instance: Instance, traj: Trajectory, state: ExpertState, step: int, fresh: dict):
        pre_diff, cwd = state.before(step)
        key = (instance.instance_id, tree_hash(pre_diff), tree_hash(state.diffs[step]))
        data = self._load("expert-steps", *key)
        if data is None:
            box = self._reset(instance, fresh, pre_diff, cwd, state.scratch_before(step))
            pre = box.tree_of(pre_diff)
            post = box.tree_of(state.diffs[step])
            data = {"pre": pre, "post": post, "full": box.delta(pre, post).to_dict(), "base": box.tree_of("")}
            with contextlib.suppress(Tainted):  # a gold patch git cannot apply as is: its tree stays unknown
                data["gold"] = box.tree_of(instance.patch) if instance.patch.strip() else None
            self._store(data, "expert-steps", *key)
        self._trees[instance.instance_id] = (data.get("base"), data.get("gold"))
        full = Delta.from_dict(data["full"])
        delta = full.without(lambda p: is_test_file(p, instance))
        exit_code = traj.steps[step].exit_code
        return ExpertFacts(data["pre"], data["post"], full, delta, exit_code, created_files(state, step))

    def _act(self, instance: Instance, state: ExpertState, step: int, action: str, fresh: dict) -> dict:
        pre_diff, cwd = state.before(step)
        box = self._reset(instance, fresh, pre_diff, cwd, state.scratch_before(step))
        facts, tested = box.act(action, box.tree_of(pre_diff), lambda p: is_test_file(p, instance))
        return {**facts.to_dict(), "tested": tested}

    def _tests(
        self, instance: Instance, box: EffectBox, tree: str, kind: str = "test-outcomes"
    ) -> dict[str, str]:
        """Target-test outcomes of the box as it is (its worktree is ``tree``), cached by ``tree``."""
        self.test_runs += 1
        box.touched()
        outcomes = dict(run_tests(box.sandbox, instance))
        self._store(outcomes, kind, instance.instance_id, tree)
        return outcomes

    def _state_tests(self, instance: Instance, state_diff: str, tree: str, fresh: dict) -> dict[str, str]:
        """Outcomes of an expert state: a validated task's base and gold trees need no run (``known_outcomes``);
        others are run once and stored with the expert states, under ``expert_root``."""
        base, gold = self._trees.get(instance.instance_id, (None, None))
        if instance.extra.get("validated"):  # the task's own lists are its measured outcomes there
            known = known_outcomes(instance.FAIL_TO_PASS, instance.PASS_TO_PASS, tree, base, gold)
            if known is not None:
                return known
        cached = self._load("expert-outcomes", instance.instance_id, tree)
        if cached is not None:
            return cached
        box = self._reset(instance, fresh, state_diff, "/testbed")
        return self._tests(instance, box, tree, "expert-outcomes")

    def prepare(self, instance: Instance, traj: Trajectory) -> None:
        """Compute (or load) the expert's facts and, at its edit steps, the test outcomes before and after."""
        state = expert_states(traj, instance, repos_dir=self.repos_dir)
        fresh: dict = {"shell": traj.shell}
        try:
            for step in range(len(state.diffs)):
                expert = self._expert(instance, traj, state, step, fresh)
                if expert.changed:
                    self._state_tests(instance, state.before(step)[0], expert.pre, fresh)
                    self._state_tests(instance, state.diffs[step], expert.post, fresh)
        finally:
            if "box" in fresh:
                fresh["box"].close()

    def evaluate(
        self, instance: Instance, traj: Trajectory, step: int, action: str, *, rerun: bool = False
    ) -> EffectResult:
        """The effect of ``action`` taken instead of expert step ``step`` of ``traj`` on ``instance``. The expert's
        own action is 1 without a run (its tree is the recorded next state); ``rerun`` runs it anyway, as any
        other action (a check of the layer on real trajectories: ``bench/effect_real.py``)."""
        state = expert_states(traj, instance, repos_dir=self.repos_dir)
        if not 0 <= step < len(state.diffs):
            raise ConfigError(f"step {step} out of range for {traj.instance_id} ({len(state.diffs)} steps)")
        if action == traj.steps[step].action and not rerun:
            return EffectResult(1.0, True, True, None, {}, cached=True)
        fresh: dict = {"shell": traj.shell}
        try:
            return self._evaluate(instance, traj, state, step, action, fresh)
        finally:
            if "box" in fresh:
                fresh["box"].close()

    def _evaluate(self, instance, traj, state, step, action, fresh) -> EffectResult:
        expert = self._expert(instance, traj, state, step, fresh)
        key = (instance.instance_id, expert.pre, state.before(step)[1], action)
        if scratch := state.scratch_before(step):  # the files outside the repository the action may read
            key += (tree_hash(scratch),)
        if traj.shell != PERSISTENT:  # the action runs as a fresh process, as the trajectory's agent ran it
            key += (traj.shell,)
        record, ran = self._load("action-facts", *key), False
        if record is None:
            record, ran = self._act(instance, state, step, action, fresh), True
            self._store(record, "action-facts", *key)
        facts = ActionFacts.from_dict(record)
        outcomes: dict[str, str] = {}
        agreement = None
        if needs_tests(facts, expert):
            tested = record["tested"]
            cached = self._load("test-outcomes", instance.instance_id, tested)
            if cached is None:
                if not ran:  # the action was cached but its tests were not: run it once more
                    self._act(instance, state, step, action, fresh)
                box = self._box(instance, fresh)
                cached = self._tests(instance, box, tested)
            outcomes = cached
            pre = self._state_tests(instance, state.before(step)[0], expert.pre, fresh)
            post = self._state_tests(instance, state.diffs[step], expert.post, fresh)
            agreement = outcome_agreement(outcomes, pre, post, target_tests(instance))
        value = effect_value(facts, expert, lambda p: is_test_file(p, instance), agreement)
        identical = facts.tree == expert.post
        return EffectResult(
            value, identical, facts.python_ok, facts.tree, outcomes, cached=not ran, exit_code=facts.exit_code
        )
