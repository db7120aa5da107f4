"""The effect layer, for real: run the policy's action in a sandbox restored to the expert state and compare.

Same tree as the expert after its step → 1.0. Otherwise the instance's target tests (FAIL_TO_PASS + PASS_TO_PASS)
are run and the score is the fraction whose outcome equals the outcome after the expert's action. Test outcomes
are cached on disk by (instance, tree hash), and action results by (instance, state, action), so a repeated state
never reruns tests. Modes: ``off`` (no sandbox), ``cached`` (default), ``full`` (recompute, refresh the cache).
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from swe_srl.actions import is_submit
from swe_srl.errors import ConfigError
from swe_srl.paths import atomic_write_text, cache_dir
from swe_srl.tasks import Instance
from swe_srl.trajectories.expert_state import ExpertState, expert_states, open_sandbox, restore, tree_hash
from swe_srl.trajectories.schema import Trajectory

MODES = ("off", "cached", "full")
_FILE_HEADER = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.MULTILINE)


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
    """Per-file sections of a ``git diff`` keyed by the new path."""
    matches = list(_FILE_HEADER.finditer(diff))
    ends = [m.start() for m in matches[1:]] + [len(diff)]
    return {m.group(2): diff[m.start() : end] for m, end in zip(matches, ends, strict=True)}


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
    """EffectEvaluator over Docker sandboxes. ``test_runs`` counts target-test runs this object started."""

    def __init__(
        self, mode: str = "cached", *, repos_dir: Path | None = None, root: Path | None = None
    ) -> None:
        if mode not in MODES:
            raise ConfigError(f"effect mode {mode!r}: choose one of {', '.join(MODES)}")
        self.mode = mode
        self.repos_dir = repos_dir
        self.root = root or cache_dir("effect")
        self.test_runs = 0
        self.sandbox_starts = 0

    # ----------------------------------------------------------------- disk cache
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

    # ----------------------------------------------------------------- evaluation
    def _tests(self, sandbox, instance: Instance, tree: str) -> dict[str, str]:
        cached = self._load("tests", instance.instance_id, tree)
        if cached is not None:
            return cached
        from swe_srl.grading import run_tests

        self.test_runs += 1
        outcomes = dict(run_tests(sandbox, instance))
        self._store(outcomes, "tests", instance.instance_id, tree)
        return outcomes

    def _expert_tests(self, instance: Instance, state: ExpertState, step: int) -> dict[str, str]:
        tree = tree_hash(state.diffs[step])
        cached = self._load("tests", instance.instance_id, tree)
        if cached is not None:
            return cached
        with open_sandbox(instance, repos_dir=self.repos_dir) as sandbox:
            self.sandbox_starts += 1
            restore(sandbox, state, step + 1)
            return self._tests(sandbox, instance, tree)

    def _run_action(
        self, instance: Instance, state: ExpertState, step: int, action: str
    ) -> tuple[dict, object]:
        """Run ``action`` from the state before ``step``; returns ({tree, python_ok, diff}, live sandbox)."""
        sandbox = open_sandbox(instance, repos_dir=self.repos_dir).start()
        self.sandbox_starts += 1
        try:
            restore(sandbox, state, step)
            before = state.before(step)[0]
            after = before
            if not is_submit(action):
                sandbox.run(action)
                after = sandbox.diff()
            python_ok = True
            for path in changed_python_files(before, after):
                try:
                    ast.parse(sandbox.read_file(f"/testbed/{path}"))
                except FileNotFoundError:
                    continue
                except (SyntaxError, ValueError):
                    python_ok = False
        except BaseException:
            sandbox.close()
            raise
        return {"tree": tree_hash(after), "python_ok": python_ok}, sandbox

    def evaluate(self, instance: Instance, traj: Trajectory, step: int, action: str) -> EffectResult:
        """The effect of ``action`` taken instead of expert step ``step`` of ``traj`` on ``instance``."""
        state = expert_states(traj, instance, repos_dir=self.repos_dir)
        if not 0 <= step < len(state.diffs):
            raise ConfigError(f"step {step} out of range for {traj.instance_id} ({len(state.diffs)} steps)")
        pre = state.before(step)
        action_key = (instance.instance_id, tree_hash(pre[0]), pre[1], action)
        expert_tree = tree_hash(state.diffs[step])
        hit = self._load("actions", *action_key)
        sandbox = None
        if hit is None:
            hit, sandbox = self._run_action(instance, state, step, action)
            self._store(hit, "actions", *action_key)
        try:
            if hit["tree"] == expert_tree:
                return EffectResult(1.0, True, hit["python_ok"], hit["tree"], {}, cached=sandbox is None)
            cached = self._load("tests", instance.instance_id, hit["tree"])
            if cached is None and sandbox is None:  # action cached but its tests were not: rerun it once
                hit, sandbox = self._run_action(instance, state, step, action)
            tests = cached if cached is not None else self._tests(sandbox, instance, hit["tree"])
        finally:
            if sandbox is not None:
                sandbox.close()
        expert = self._expert_tests(instance, state, step)
        value = agreement(tests, expert, target_tests(instance))
        return EffectResult(value, False, hit["python_ok"], hit["tree"], tests, cached=cached is not None)
