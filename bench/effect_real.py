"""The effect layer on real agent trajectories in their real images, offline, next to the bundled suite.

Imports a public run (default: the shared OpenHands CodeActAgent run on Verified; any format ``swe-srl trajectories
import`` reads), keeps the instances whose repository has a clone in ``--repos-dir`` (offline: images, expert states
and test runs all come from there), replays each trajectory once (the expert states: cumulative diffs and cwds) and
then, at every step k, scores through the effect layer (``cached`` mode, empty caches):

* the expert's own action, **run** in the sandbox put into its own state (``SandboxEffect.evaluate(rerun=True)``;
  without a run it is 1 by definition): it must score 1, its tree being the recorded next state;
* the previous step's action (k ≥ 1), taken again at step k;
* the empty action;
* with ``--perturb``, at the expert's edit steps: its edit plus a comment line in the file it edits (a new tree: the
  target tests run in the real image).

Per step the three scores; per side (the real run, then the same workload on ``--bundled`` scripted trajectories of
the bundled suite's test split, measured in the same process) the evaluations, the share of expert steps at 1,
sandbox starts, test runs, cache hits (evaluations answered from the disk cache) and seconds per evaluation.
Every step whose expert action scores below 1 is listed with its action and why (docs/rewards.md explains them).
Two checks of the replay's fidelity beside the score: the steps whose rerun exited with another code than the run
recorded (the score is lenient there: a read that exits 0 where the recorded one failed still scores 1), and whether
the replay's last state is the run's recorded submission (``index`` lines aside).

    python bench/effect_real.py --repos-dir /work/repos [--instances ID,ID] [--bundled 3] [--perturb] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from swe_srl.benchmark.instances import Instance, load_instances, select_instances
from swe_srl.benchmark.verdicts import is_test_file
from swe_srl.core.patches import file_diffs
from swe_srl.errors import TaskError
from swe_srl.infra.engine import image_exists
from swe_srl.infra.recipes import instance_image_names
from swe_srl.paths import atomic_write_text
from swe_srl.rewards.effect.evaluator import SandboxEffect
from swe_srl.trajectories.decompose import executed_steps
from swe_srl.trajectories.expert_state import WORKDIR, ExpertState, expert_states
from swe_srl.trajectories.importers import import_trajectories
from swe_srl.trajectories.schema import Trajectory, read_jsonl
from swe_srl.trajectories.scripted import default_trajectories

SHARED = "/work/shared/data/trajectories/openhands-claude35-verified/completions"
DATASET = "/work/shared/data/swebench-verified.jsonl"


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trajectories", nargs="?", default=SHARED, help="a public run: file, folder or HF id")
    ap.add_argument("--dataset", default=DATASET)
    ap.add_argument("--repos-dir", type=Path, required=True, help="clones or mirrors of the repositories")
    ap.add_argument("--instances", default="", help="only these ids (default: those whose image is built)")
    ap.add_argument(
        "--bundled", type=int, default=3, help="bundled test trajectories measured beside (0: none)"
    )
    ap.add_argument("--json", type=Path, help="write every step's scores here")
    ap.add_argument(
        "--perturb", action="store_true", help="also the expert's edit + a comment line (its tests run)"
    )
    return ap.parse_args()


def real_workload(args: argparse.Namespace) -> list[tuple[Instance, Trajectory]]:
    """(instance, trajectory) of the run's instances chosen by ``--instances``, else those whose image is built."""
    trajs = {t.instance_id: t for t in import_trajectories(args.trajectories)}
    ids = [i.strip() for i in args.instances.split(",") if i.strip()]
    chosen = select_instances(load_instances(args.dataset), ids or sorted(trajs))
    if not ids:
        chosen = [i for i in chosen if i.instance_id in trajs and built(i, args.repos_dir)]
    pairs = []
    for inst in chosen:
        raw = trajs[inst.instance_id]
        pairs.append((inst, Trajectory(raw.instance_id, raw.problem, executed_steps(raw), raw.patch)))
    return pairs


def built(instance: Instance, repos_dir: Path) -> bool:
    """Whether ``instance``'s image exists (False without a clone of its repository in ``repos_dir``)."""
    try:
        return any(map(image_exists, instance_image_names(instance, repos_dir=repos_dir)))
    except TaskError:
        return False


def bundled_workload(n: int) -> list[tuple[Instance, Trajectory]]:
    instances = {i.instance_id: i for i in load_instances("bundled:test")}
    raws = list(read_jsonl(default_trajectories(split="test")))[:n]
    return [
        (instances[r.instance_id], Trajectory(r.instance_id, r.problem, executed_steps(r), r.patch))
        for r in raws
    ]


def perturbed(instance: Instance, state: ExpertState, k: int, action: str) -> str | None:
    """At an edit step of the expert's: its action, then a comment line appended to the first non-test ``.py`` file
    it changed (a new tree: the target tests run); None elsewhere."""
    before = {f.target: f.text for f in file_diffs(state.before(k)[0])}
    changed = [f.target for f in file_diffs(state.diffs[k]) if f.target and before.get(f.target) != f.text]
    paths = [p for p in changed if p.endswith(".py") and not is_test_file(p, instance)]
    return f"{action}\necho '# effect bench' >> {WORKDIR}/{paths[0]}" if paths else None


def measure(
    pairs: list[tuple[Instance, Trajectory]], repos_dir: Path | None, console: Console, perturb: bool = False
) -> dict:
    """Every step × (expert rerun, previous action, empty action[, perturbed edit]) from empty caches."""
    rows, hits, evals, replay_s, submissions = [], 0, 0, 0.0, {}
    with tempfile.TemporaryDirectory() as tmp:
        effect = SandboxEffect(
            "cached", root=Path(tmp) / "r", expert_root=Path(tmp) / "e", repos_dir=repos_dir
        )
        started = time.perf_counter()
        try:
            for inst, traj in pairs:
                t0 = time.perf_counter()
                state = expert_states(traj, inst, repos_dir=repos_dir)  # replayed once, outside the timing
                replay_s += time.perf_counter() - t0
                submissions[inst.instance_id] = (
                    same_patch(state.diffs[-1], traj.patch) if traj.patch else None
                )
                for k, step in enumerate(traj.steps):
                    own = effect.evaluate(inst, traj, k, step.action, rerun=True)
                    prev = effect.evaluate(inst, traj, k, traj.steps[k - 1].action) if k else None
                    empty = effect.evaluate(inst, traj, k, "")
                    other = perturbed(inst, state, k, step.action) if perturb else None
                    edit = effect.evaluate(inst, traj, k, other) if other else None
                    done = [r for r in (own, prev, empty, edit) if r is not None]
                    evals, hits = evals + len(done), hits + sum(r.cached for r in done)
                    rows.append({"instance_id": inst.instance_id, "step": k, "action": step.action,
                                 "expert": own.value, "previous": prev.value if prev else None,
                                 "empty": empty.value, "perturbed": edit.value if edit else None,
                                 "recorded_exit": step.exit_code, "rerun_exit": own.exit_code})  # fmt: skip
                console.print(f"  {inst.instance_id}: {len(traj.steps)} steps", highlight=False)
        finally:
            effect.close()
        seconds = time.perf_counter() - started - replay_s
    return {"rows": rows, "evaluations": evals, "cache_hits": hits, "sandbox_starts": effect.sandbox_starts,
            "test_runs": effect.test_runs, "seconds": seconds, "replay_s": replay_s,
            "submissions": submissions}  # fmt: skip


def same_patch(replayed: str, recorded: str) -> bool:
    """Whether the replay's last diff is the run's recorded submission, ``index`` lines (blob hashes) aside."""

    def lines(patch: str) -> list[str]:
        return [line for line in patch.strip().splitlines() if not line.startswith("index ")]

    return lines(replayed) == lines(recorded)


def fidelity(console: Console, name: str, side: dict) -> None:
    """The replay's fidelity: recorded exit codes the reruns reproduced (and the steps that did not, listed), and
    the submissions the replay's last state reproduced."""
    coded = [r for r in side["rows"] if r["recorded_exit"] is not None]
    other = [r for r in coded if r["rerun_exit"] != r["recorded_exit"]]
    subs = [v for v in side["submissions"].values() if v is not None]
    reproduced = f"{sum(subs)}/{len(subs)}" if subs else "none recorded in the run"
    console.print(
        f"{name}: recorded exit code reproduced at {len(coded) - len(other)}/{len(coded)} steps; "
        f"recorded submission reproduced by the replay: {reproduced}",
        highlight=False,
    )
    for r in other:
        action = " ".join(r["action"].split())[:90]
        console.print(f"  exit {r['rerun_exit']} (recorded {r['recorded_exit']}): {r['instance_id']} "
                      f"step {r['step']}: {action}", highlight=False)  # fmt: skip


def mean(values: list[float | None]) -> float:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else float("nan")


def summary_table(sides: dict[str, dict]) -> Table:
    table = Table(title="effect layer: the expert's own action rerun, the previous action, the empty action")
    heads = ("workload", "trajectories", "steps", "expert = 1", "expert mean", "previous mean", "empty mean",
             "perturbed edit", "evaluations", "sandbox starts", "test runs", "cache hits", "s / evaluation")  # fmt: skip
    for head in heads:
        table.add_column(head, justify="right")
    for name, side in sides.items():
        rows = side["rows"]
        ones = sum(r["expert"] == 1.0 for r in rows)
        table.add_row(
            name, str(len({r["instance_id"] for r in rows})), str(len(rows)),
            f"{ones}/{len(rows)} ({ones / max(1, len(rows)):.1%})", f"{mean([r['expert'] for r in rows]):.3f}",
            f"{mean([r['previous'] for r in rows]):.3f}", f"{mean([r['empty'] for r in rows]):.3f}",
            f"{mean([r['perturbed'] for r in rows]):.3f}",
            str(side["evaluations"]), str(side["sandbox_starts"]), str(side["test_runs"]),
            f"{side['cache_hits']} ({side['cache_hits'] / max(1, side['evaluations']):.0%})",
            f"{side['seconds'] / max(1, side['evaluations']):.2f}",
        )  # fmt: skip
    return table


def step_table(rows: list[dict]) -> Table:
    table = Table(title="per step (real run)")
    for head in ("instance", "#", "action", "expert", "previous", "empty", "perturbed"):
        table.add_column(head, justify="left" if head in ("instance", "action") else "right")
    for r in rows:
        mark = "" if r["expert"] == 1.0 else "[red]"
        action = " ".join(r["action"].split())[:70]
        prev = "-" if r["previous"] is None else f"{r['previous']:.2f}"
        edit = "-" if r.get("perturbed") is None else f"{r['perturbed']:.2f}"
        table.add_row(r["instance_id"].split("__")[-1], str(r["step"]), action,
                      f"{mark}{r['expert']:.2f}", prev, f"{r['empty']:.2f}", edit)  # fmt: skip
    return table


def main() -> None:
    args = parse_args()
    console = Console(width=160)
    sides = {}
    real = real_workload(args)
    if not real:
        raise SystemExit(
            f"error: no instance of {args.trajectories} has a built image (build them, or --instances)"
        )
    console.print(f"real run: {len(real)} trajectories ({', '.join(i.instance_id for i, _ in real)})")
    sides["real run"] = measure(real, args.repos_dir, console, args.perturb)
    if args.bundled:
        console.print(f"bundled suite: {args.bundled} test trajectories")
        sides["bundled suite"] = measure(bundled_workload(args.bundled), None, console, args.perturb)
    console.print(step_table(sides["real run"]["rows"]))
    console.print(summary_table(sides))
    for name, side in sides.items():
        fidelity(console, name, side)
        console.print(
            f"{name}: expert replays {side['replay_s']:.0f}s (once per trajectory, outside the timing)"
        )
    if args.json:
        atomic_write_text(args.json, json.dumps(sides, indent=1))


if __name__ == "__main__":
    main()
