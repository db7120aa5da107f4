"""Runs the viewer's tests look at, written by the project's own writers: an eval run (``RunDir.write`` and
``publish``, the records ``eval_instance`` makes: a resolved, an unresolved and an error instance), native
trajectories (``write_jsonl``), a samples file (``decompose`` with a history window), and replay rows
(``ReplayRow`` and ``self_reward`` as ``swe-srl replay --out`` writes them). The XSS payload sits in an observation,
a problem statement, an expert action and a patch."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import asdict
from pathlib import Path

from swe_srl.eval.protocols.oneshot import Generation
from swe_srl.eval.protocols.published import protocol_summary, published
from swe_srl.eval.replay import ReplayRow, replay_rows_text, self_reward
from swe_srl.eval.rundir import RunDir
from swe_srl.paths import atomic_write_text
from swe_srl.trajectories.decompose import decompose
from swe_srl.trajectories.schema import Step, Trajectory, write_jsonl

XSS = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2">'
IDS = ("demo__alpha-1", "demo__beta-2", "demo__gamma-3")
F2P = {"demo__alpha-1": ["tests/test_a.py::test_fix"], "demo__beta-2": ["tests/test_b.py::test_fix"],
       "demo__gamma-3": ["tests/test_c.py::test_fix"]}  # fmt: skip


def trajectory(iid: str, steps: int = 4) -> Trajectory:
    """An agent's episode on ``iid``: a long observation (folded), the XSS payload, a submitting last step."""
    body = [
        Step("look around", "ls src", "a.py\nb.py", 0),
        Step("read it", "cat src/a.py", "\n".join(f"line {n}: value = {n} * 2" for n in range(400)), 0),
        Step("an observation with HTML", "grep -rn onerror src", XSS, 1),
    ]
    while len(body) < steps - 1:
        body.append(Step(f"step {len(body)}", f"sed -n '{len(body)},+3p' src/a.py", f"out {len(body)}", 0))
    body.append(Step("done", "submit", "", None))
    patch = "diff --git a/src/a.py b/src/a.py\n--- a/src/a.py\n+++ b/src/a.py\n@@ -1,2 +1,2 @@\n-x = 1\n+x = 2 # <b>bold</b>\n ok\n"
    return Trajectory(iid, f"Fix {iid}. The page shows {XSS} verbatim.", body, patch, source="native")


def dataset(path: Path) -> Path:
    """A SWE-bench-schema JSONL of the three instances (their FAIL_TO_PASS/PASS_TO_PASS lists)."""
    rows = [{"instance_id": iid, "repo": f"demo/{iid.split('__')[1].split('-')[0]}", "base_commit": "0" * 40,
             "patch": "", "test_patch": "", "problem_statement": f"Problem of {iid}: {XSS}",
             "FAIL_TO_PASS": F2P[iid], "PASS_TO_PASS": ["tests/test_ok.py::test_ok"]} for iid in IDS]  # fmt: skip
    atomic_write_text(path, "".join(json.dumps(r) + "\n" for r in rows))
    return path


def eval_run(out: Path, data: Path, extra: int = 0, steps: int = 4) -> Path:
    """An eval run folder: resolved, unresolved and error records (and ``extra`` more unresolved ones)."""
    run, records = RunDir(out), []
    statuses = [("resolved", "submitted"), ("unresolved", "max_steps"), ("error", "infra_error")]
    ids = [*IDS, *(f"demo__bulk-{n}" for n in range(extra))]
    for k, iid in enumerate(ids):
        status, why = statuses[k] if k < 3 else ("unresolved", "submitted")
        traj = trajectory(iid, steps) if status != "error" else None
        tests = {t: ("PASSED" if status == "resolved" else "FAILED") for t in F2P.get(iid, [])}
        tests["tests/test_ok.py::test_ok"] = "PASSED"
        record = {"instance_id": iid, "repo": f"demo/{iid.split('__')[1].split('-')[0]}",
                  "model_patch": traj.patch if traj else "", "steps": len(traj.steps) if traj else 0,
                  "format_errors": 0, "exit_reason": why, "error": "docker: the daemon went away" if traj is None
                  else None, "status": status, "tests": {} if traj is None else tests, "log": "=== log ===\nok",
                  "trajectory": traj.to_dict() if traj else None, "wall_s": 1.5 + k,
                  "reason": "" if status != "unresolved" else "tests/test_b.py::test_fix did not pass"}  # fmt: skip
        records.append(run.write(record))
    run.publish(records, "scripted", {"dataset": str(data), "protocol": "agent"})
    return out


def trajectories_file(path: Path) -> Path:
    write_jsonl(path, [trajectory(iid) for iid in IDS])
    return path


def samples_file(path: Path, trajs: list[Trajectory], history: int = 2) -> Path:
    """``swe-srl decompose``'s samples file of ``trajs``, prompts showing the last ``history`` steps."""
    samples, _ = decompose(trajs, splits={t.instance_id: "test" for t in trajs}, history=history)
    atomic_write_text(path, samples.text())
    return path


def replay_file(path: Path, trajs: list[Trajectory]) -> Path:
    """Replay rows as ``swe-srl replay --out`` writes them (self-rewards of each expert step)."""
    rows = {}
    for traj in trajs:
        rows[traj.instance_id] = [ReplayRow(k, s.action, s.exit_code, s.exit_code, self_reward(s.thought, s.action),
                                            True, s.observation) for k, s in enumerate(traj.steps)]  # fmt: skip
    atomic_write_text(path, "".join(replay_rows_text(t, rows[t.instance_id]) for t in trajs))
    return path


def training_run(out: Path) -> Path:
    """A two-step tiny training run (``run_training``, the real reward) with TRL's completion logs on: 7 training
    instances and 1 held-out instance of 5 steps (tests/train's samples)."""
    from swe_srl.train.config import load_config
    from swe_srl.train.run import run_training

    spec = importlib.util.spec_from_file_location(
        "train_conftest", Path(__file__).parents[1] / "train" / "conftest.py"
    )
    helpers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helpers)
    samples = out.parent / "train-samples.jsonl"
    atomic_write_text(samples, "".join(json.dumps(r) + "\n" for r in helpers.make_samples()))
    overrides = [*helpers.TINY, "trl.max_steps=2", "trl.logging_steps=1", "eval.every=0", "eval.max_samples=5",
                 "trl.log_completions=true", "trl.num_completions_to_print=1"]  # fmt: skip
    run_training(load_config(None, overrides, samples=str(samples), output=str(out)), command="view test")
    return out


def oneshot_run(out: Path, data: Path) -> Path:
    """An ``--protocol oracle-edit`` eval run: one instance patched, one whose answer could not be read (an
    empty patch and its reason), the report with the paper's published rows and the protocol summary."""
    run, records = RunDir(out), []
    for iid, ok in ((IDS[0], True), (IDS[1], False)):
        generation = Generation(f"<solution>{XSS}</solution>" if ok else "no edits here", 812, 64 if ok else 4096,
                                truncated=not ok)  # fmt: skip
        reason = (
            None
            if ok
            else "unreadable answer: no <solution> block (the output was cut at the generation budget)"
        )
        candidate = {"files": ["src/a.py"], "patch_chars": 40 if ok else 0, "reason": reason,
                     "notes": ["edit 1: matched after stripping whitespace"], "generations": [asdict(generation)]}  # fmt: skip
        protocol = {"name": "oracle-edit", "reason": reason, "notes": candidate["notes"], "chosen": 0 if ok else None,
                    "votes": [1], "prompt_tokens": 812, "completion_tokens": generation.completion_tokens,
                    "truncated": int(not ok), "candidates": [candidate]}  # fmt: skip
        record = {"instance_id": iid, "repo": "demo/x", "model_patch": trajectory(iid).patch if ok else "",
                  "steps": 1, "format_errors": int(not ok), "exit_reason": "patch" if ok else "no_patch",
                  "error": None, "status": "unresolved", "tests": {}, "log": "", "trajectory": None,
                  "protocol": protocol, "wall_s": 3.0}  # fmt: skip
        records.append(run.write(record))
    meta = {"dataset": str(data), "protocol": "oracle-edit", "published": published("oracle-edit"),
            "protocol_summary": protocol_summary(records)}  # fmt: skip
    run.publish(records, "tiny", meta)
    return out
