"""The TRL reward scores a batch's instances in parallel, each with its own effect evaluator (its own warm
container), kept while the batches name that instance."""

from __future__ import annotations

import threading
import time

from swe_srl.core.actions import format_output
from swe_srl.rewards.trl import SRLReward


class SlowEffect:
    """An effect evaluator that waits as a sandboxed test run does (I/O, not CPU) and records who asked."""

    def __init__(self, wait_s: float = 0.3) -> None:
        self.wait_s = wait_s
        self.calls: list[tuple[str, int, int]] = []  # (instance, evaluator object, thread)
        self.closed: list[int] = []
        self.busy: dict[
            int, int
        ] = {}  # evaluator object → calls in flight (more than 1 = a shared container)

    def __call__(self, ctx) -> float:
        me = id(self)
        self.busy[me] = self.busy.get(me, 0) + 1
        assert self.busy[me] == 1, "two threads used one evaluator (one container) at once"
        time.sleep(self.wait_s)
        self.calls.append((ctx.instance_id, me, threading.get_ident()))
        self.busy[me] -= 1
        return 0.5

    def close(self) -> None:
        self.closed.append(id(self))


def _batch(instances: list[str], per_instance: int) -> dict:
    ids = [iid for iid in instances for _ in range(per_instance)]
    return {
        "prompts": [""] * len(ids),
        "completions": [format_output("t", "grep -rn foo src")] * len(ids),
        "expert_action": ["grep -rn foo src"] * len(ids),
        "instance_id": ids,
        "trajectory_hash": [None] * len(ids),
        "step": [None] * len(ids),
    }


def test_a_batch_is_scored_in_parallel_across_instances():
    effect = SlowEffect()
    reward = SRLReward(effect_mode="cached", effect=effect)
    started = time.monotonic()
    totals = reward(**_batch(["a", "b", "c", "d"], per_instance=2))
    wall = time.monotonic() - started
    assert len(totals) == 8 and all(c["effect"] == 0.5 for c in reward.last_components)
    assert wall < 8 * effect.wait_s * 0.6, (
        wall
    )  # one after another would take 2.4 s; 4 instances at once: ~0.6 s
    by_instance: dict[str, set[int]] = {}
    for iid, evaluator, _ in effect.calls:
        by_instance.setdefault(iid, set()).add(evaluator)
    assert all(len(objs) == 1 for objs in by_instance.values())  # one evaluator (container) per instance
    assert len({obj for objs in by_instance.values() for obj in objs}) == 4
    assert len({thread for *_, thread in effect.calls}) > 1


def test_warm_evaluators_follow_the_steps_instances():
    effect = SlowEffect(wait_s=0.01)
    reward = SRLReward(effect_mode="cached", effect=effect)
    reward(**_batch(["a", "b"], per_instance=1))
    first = {iid: obj for iid, obj, _ in effect.calls}
    reward(**_batch(["b", "c"], per_instance=1))
    second = {iid: obj for iid, obj, _ in effect.calls[2:]}
    assert second["b"] == first["b"]  # kept warm: the next step names it again
    assert effect.closed == [first["a"]]  # the step no longer names it: its container closes
    assert len(reward._evaluators) == 2  # as many warm evaluators as the step's instances
