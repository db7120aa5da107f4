"""The effect layer, for real: run the policy's action in a sandbox restored to the expert state and compare.

Same tree as the expert after its step → 1.0. Otherwise the instance's target tests (FAIL_TO_PASS + PASS_TO_PASS)
are run and the score is the fraction whose outcome equals the outcome after the expert's action; an action that
leaves an edited ``.py`` file unparsable scores 0. Test outcomes are cached on disk by (instance, tree hash) and
action results by (instance, state, action), so a repeated state never reruns tests. Modes: ``off`` (no sandbox),
``cached`` (default), ``full`` (recompute everything, refresh the cache).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from swe_srl.benchmark.instances import Instance, load_instances
from swe_srl.core.actions import is_submit
from swe_srl.core.patches import file_diffs
from swe_srl.errors import ConfigError
from swe_srl.grading.runner import run_tests
from swe_srl.infra.sandbox.factory import open_sandbox
from swe_srl.paths import atomic_write_text, cache_dir
from swe_srl.rewards.context import StepContext
from swe_srl.rewards.effect import EFFECT_MODES
from swe_srl.rewards.syntax import check_python_files
from swe_srl.trajectories.decompose import executed_steps
from swe_srl.trajectories.expert_state import ExpertState, expert_states, restore, tree_hash
from swe_srl.trajectories.schema import Trajectory


@dataclass(frozen=True)
class EffectResult:
    """One effect evaluation: ``value`` in [0, 1]; ``python_ok`` is False when an edited .py file does not parse."""

    value: float
    identical: bool
    python_ok: bool
    tree: str
    tests: Mapping[str, str]
    cached: bool = False


def diff_sections(diff: str) -> dict[str, str]:
    """Per-file sections of a ``git diff`` keyed by the new path (the old one for a removed file)."""
    return {f.path: f.text for f in file_diffs(diff)}


def changed_python_files(before: str, after: str) -> list[str]:
    """The .py files whose diff section differs between two cumulative diffs (the files an action touched)."""
    old, new = diff_sections(before), diff_sections(after)
    return sorted(p for p in set(old) | set(new) if p.endswith(".py") and old.get(p) != new.get(p))


def target_tests(instance: Instance) -> list[str]:
    """The tests an effect is judged on."""
    return [*instance.FAIL_TO_PASS, *instance.PASS_TO_PASS]


def agreement(tests: Mapping[str, str], expert: Mapping[str, str], targets: list[str]) -> float:
    """Fraction of ``targets`` whose outcome equals the expert's (a missing test counts as ``MISSING``)."""
    if not targets:
        return 0.0
    same = sum(tests.get(t, "MISSING") == expert.get(t, "MISSING") for t in targets)
    return same / len(targets)


class SandboxEffect:
    """The ``EffectEvaluator`` over Docker sandboxes (call it with a ``StepContext``, or use :meth:`evaluate`).

    Trajectories are found by ``trajectory_hash`` (register them with :meth:`add_trajectory`), instances by id in
    ``instances`` or ``dataset``. ``test_runs`` / ``sandbox_starts`` count the work this object did; ``last`` is
    the last :class:`EffectResult` (its ``python_ok`` is the post-execution syntax check).
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
    ) -> None:
        if mode not in EFFECT_MODES:
            raise ConfigError(f"effect mode {mode!r}: choose one of {', '.join(EFFECT_MODES)}")
        self.mode, self.dataset, self.repos_dir = mode, dataset, repos_dir
        self.root = root or cache_dir("effect")
        self._instances = {i.instance_id: i for i in instances} if instances is not None else None
        self._trajectories: dict[str, Trajectory] = {}
        for traj in trajectories:
            self.add_trajectory(traj)
        self.test_runs = 0
        self.sandbox_starts = 0
        self.last: EffectResult | None = None

    def add_trajectory(self, traj: Trajectory) -> None:
        """Register ``traj`` under its content hash, with the steps decomposition keeps (so sample steps match)."""
        steps = executed_steps(traj)
        self._trajectories[traj.content_hash()] = Trajectory(
            traj.instance_id, traj.problem, steps, traj.patch
        )

    def _instance(self, instance_id: str) -> Instance:
        if self._instances is None:
            self._instances = {i.instance_id: i for i in load_instances(self.dataset)}
        if instance_id not in self._instances:
            raise ConfigError(f"effect: instance {instance_id!r} is not in dataset {self.dataset!r}")
        return self._instances[instance_id]

    def __call__(self, ctx: StepContext) -> float:
        """The effect of ``ctx.action`` taken instead of expert step ``ctx.step`` of ``ctx.trajectory_hash``."""
        if self.mode == "off":
            raise ConfigError("effect mode 'off' computes no effect: pass effect=None, or choose cached/full")
        if ctx.instance_id is None or ctx.trajectory_hash is None or ctx.step is None:
            raise ConfigError(
                "the effect layer needs instance_id, trajectory_hash and step (decompose adds them)"
            )
        traj = self._trajectories.get(ctx.trajectory_hash)
        if traj is None:
            raise ConfigError(
                f"effect: unknown trajectory_hash {ctx.trajectory_hash!r}; add_trajectory() it first"
            )
        self.last = self.evaluate(self._instance(ctx.instance_id), traj, ctx.step, ctx.action)
        return self.last.value

    # ----------------------------------------------------------------------------------------------- disk cache
    def _path(self, kind: str, *key: str) -> Path:
        digest = hashlib.sha256("\0".join(key).encode("utf-8", errors="surrogateescape")).hexdigest()[:24]
        return self.root / kind / f"{digest}.json"

    def _load(self, kind: str, *key: str) -> dict | None:
        path = self._path(kind, *key)
        if self.mode == "full" or not path.exists():
            return None
        return json.loads(path.read_text(encoding="utf-8"))

    def _store(self, data: dict, kind: str, *key: str) -> None:
        atomic_write_text(self._path(kind, *key), json.dumps(data))

    # ----------------------------------------------------------------------------------------------- evaluation
    def _tests(self, sandbox, instance: Instance, tree: str) -> dict[str, str]:

        self.test_runs += 1
        outcomes = dict(run_tests(sandbox, instance))
        self._store(outcomes, "tests", instance.instance_id, tree)
        return outcomes

    def _expert_tests(self, instance: Instance, state: ExpertState, step: int) -> dict[str, str]:
        tree = tree_hash(state.diffs[step])
        cached = self._load("tests", instance.instance_id, tree)
        if cached is not None:
            return cached
        with open_sandbox(instance, profile="effect", repos_dir=self.repos_dir) as sandbox:
            self.sandbox_starts += 1
            restore(sandbox, state, step + 1)
            return self._tests(sandbox, instance, tree)

    def _run_action(self, instance: Instance, state: ExpertState, step: int, action: str):
        """Run ``action`` from the state before ``step``; returns ({tree, python_ok}, the live sandbox)."""
        sandbox = open_sandbox(instance, profile="effect", repos_dir=self.repos_dir).start()
        self.sandbox_starts += 1
        try:
            restore(sandbox, state, step)
            before = after = state.before(step)[0]
            if not is_submit(action):
                sandbox.run(action)
                after = sandbox.diff()
            read = lambda path: sandbox.read_file(f"/testbed/{path}")  # noqa: E731
            python_ok = not check_python_files(read, changed_python_files(before, after))
        except BaseException:
            sandbox.close()
            raise
        return {"tree": tree_hash(after), "python_ok": python_ok}, sandbox

    def evaluate(self, instance: Instance, traj: Trajectory, step: int, action: str) -> EffectResult:
        """The effect of ``action`` taken instead of expert step ``step`` of ``traj`` on ``instance``."""
        state = expert_states(traj, instance, repos_dir=self.repos_dir)
        if not 0 <= step < len(state.diffs):
            raise ConfigError(f"step {step} out of range for {traj.instance_id} ({len(state.diffs)} steps)")
        pre_diff, pre_cwd = state.before(step)
        action_key = (instance.instance_id, tree_hash(pre_diff), pre_cwd, action)
        hit = self._load("actions", *action_key)
        sandbox = None
        if hit is None:
            hit, sandbox = self._run_action(instance, state, step, action)
            self._store(hit, "actions", *action_key)
        try:
            if hit["tree"] == tree_hash(state.diffs[step]):
                return EffectResult(1.0, True, hit["python_ok"], hit["tree"], {}, cached=sandbox is None)
            tests = self._load("tests", instance.instance_id, hit["tree"])
            cached = tests is not None
            if tests is None:
                if sandbox is None:  # the action was cached but its tests were not: run it once more
                    hit, sandbox = self._run_action(instance, state, step, action)
                tests = self._tests(sandbox, instance, hit["tree"])
        finally:
            if sandbox is not None:
                sandbox.close()
        expert = self._expert_tests(instance, state, step)
        value = agreement(tests, expert, target_tests(instance)) if hit["python_ok"] else 0.0
        return EffectResult(value, False, hit["python_ok"], hit["tree"], tests, cached=cached)
