"""End-to-end evaluation: a policy solves each instance → model patch → grading → predictions + report.

A :class:`Solver` turns an instance into a patch. ``gold`` and ``empty`` are the reference solvers; agent-loop
solvers (a model acting in the env) implement the same protocol. Runs are resumable: instances already in
``predictions.jsonl`` *and* ``results/`` are skipped.
"""

from __future__ import annotations

import json
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from swe_srl.errors import ConfigError
from swe_srl.paths import atomic_write_text
from swe_srl.tasks import Instance


@dataclass
class PolicyResult:
    """What a solver produced for one instance: the patch, an optional trajectory, an error if it crashed."""

    patch: str
    trajectory: Any | None = None
    error: str | None = None


@dataclass
class EvalContext:
    """What a solver may use: where repos live, the output folder, free-form options."""

    repos_dir: Path | None = None
    out_dir: Path | None = None
    options: dict[str, Any] = field(default_factory=dict)


class Solver(Protocol):
    """``solve(instance, ctx) -> PolicyResult``; ``name`` is the ``model_name_or_path`` of the predictions."""

    name: str

    def solve(self, instance: Instance, ctx: EvalContext) -> PolicyResult: ...


@dataclass
class GoldSolver:
    """Answers with the gold patch (grading sanity check: must resolve 100 %)."""

    name: str = "gold"

    def solve(self, instance: Instance, ctx: EvalContext) -> PolicyResult:
        return PolicyResult(instance.patch)


@dataclass
class EmptySolver:
    """Answers with no change (must resolve 0 %)."""

    name: str = "empty"

    def solve(self, instance: Instance, ctx: EvalContext) -> PolicyResult:
        return PolicyResult("")


SOLVERS = {"gold": GoldSolver, "empty": EmptySolver}


def make_solver(spec: str) -> Solver:
    """A solver by name (``gold`` | ``empty``); ``ConfigError`` naming the known ones otherwise."""
    if spec not in SOLVERS:
        raise ConfigError(f"unknown policy {spec!r}; choose one of {', '.join(SOLVERS)}")
    return SOLVERS[spec]()


def _done(out: Path) -> dict[str, dict]:
    results = {}
    for path in sorted((out / "results").glob("*.json")):
        record = json.loads(path.read_text())
        results[record["instance_id"]] = record
    return results


def _one(solver: Solver, instance: Instance, ctx: EvalContext, timeout: float) -> dict:
    from swe_srl.grading import grade

    try:
        produced = solver.solve(instance, ctx)
    except Exception as exc:  # a crashing policy is that instance's result, not the run's end
        produced = PolicyResult("", error=f"{type(exc).__name__}: {exc}")
    result = grade(instance, produced.patch, repos_dir=ctx.repos_dir, timeout=timeout)
    record = result.to_dict() | {"model_patch": produced.patch, "policy_error": produced.error}
    if produced.error:
        record["status"] = "error"
    assert ctx.out_dir is not None
    atomic_write_text(ctx.out_dir / "results" / f"{instance.instance_id}.json", json.dumps(record))
    atomic_write_text(ctx.out_dir / "logs" / f"{instance.instance_id}.log", result.log)
    return record


def evaluate(solver: Solver, instances: list[Instance], out: Path, *, workers: int = 1,
             repos_dir: Path | None = None, timeout: float = 1800, progress=None) -> dict:  # fmt: skip
    """Grade ``solver`` on ``instances`` into ``out`` (predictions.jsonl, report.json, results/, logs/)."""
    ctx = EvalContext(repos_dir=repos_dir, out_dir=out)
    done = _done(out)
    todo = [i for i in instances if i.instance_id not in done]
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = [pool.submit(_one, solver, i, ctx, timeout) for i in todo]
        for future in as_completed(futures):
            record = future.result()
            done[record["instance_id"]] = record
            if progress:
                progress(record)
    ordered = [done[i.instance_id] for i in instances if i.instance_id in done]
    predictions = [{"instance_id": r["instance_id"], "model_name_or_path": solver.name,
                    "model_patch": r["model_patch"]} for r in ordered]  # fmt: skip
    atomic_write_text(out / "predictions.jsonl", "".join(json.dumps(p) + "\n" for p in predictions))
    counts = Counter(r["status"] for r in ordered)
    report = {
        "policy": solver.name,
        "total": len(ordered),
        "resolved": counts["resolved"],
        "resolved_rate": counts["resolved"] / len(ordered) if ordered else 0.0,
        "statuses": dict(counts),
        "resolved_ids": sorted(r["instance_id"] for r in ordered if r["status"] == "resolved"),
        "per_instance": {r["instance_id"]: r["status"] for r in ordered},
    }
    atomic_write_text(out / "report.json", json.dumps(report, indent=2))
    return report
