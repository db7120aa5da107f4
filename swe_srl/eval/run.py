"""End-to-end evaluation: every policy runs agent-loop episodes in ``SWEEnv``; the patches are graded SWE-bench style.

One instance = one executor :class:`~swe_srl.infra.executor.Task` running :func:`eval_instance` (module-level and
picklable, so the local process pool and Ray run the same code): episode → cleaned patch → ``grading.grade`` → a
record (trajectory and log included). The driver writes every result as it arrives, atomically, in this order::

    OUT/trajectories/<id>.jsonl   native trajectory (replayable: ``--policy replay:…``; decomposable)
    OUT/logs/<id>.log             grading log (full; the record's ``log_path``)
    OUT/results/<id>.json         the record (``error``: the cause and the log's last lines; ``image``: provenance);
                                  its presence marks the instance as finished
    OUT/predictions.jsonl         SWE-bench predictions of all finished instances (rewritten)
    OUT/report.json               see :func:`swe_srl.eval.report.build_report` (rewritten)

Resume: a rerun skips instances whose ``results/<id>.json`` holds a verdict; infra/policy errors and instances that
were in flight when the run was stopped (Ctrl-C, SIGTERM: recorded as ``interrupted``) are run again. Stopping
ends the workers at once (their sandboxes are closed) instead of waiting for the episodes in flight. Worker layout: scripted and served policies run one episode per spawned process (``--workers N``) or per Ray
task; an in-process HF model runs in threads (``LocalExecutor(processes=False)``) sharing one loaded copy per
process, and on Ray each worker process keeps its copy for the tasks it runs (see :func:`policy_for`). A served
model's requests in flight are bounded on each machine (``--max-requests``, ``agent.served``).

``direct=True`` (gold/empty only) grades the patch without an episode: ``swe-srl tasks validate`` uses it to check
the tasks and the harness independently of the agent stack, with one container per instance instead of two.
``predictions:FILE`` grades the patches of a SWE-bench predictions file of any system the same way (the offline
``run_evaluation``); instances without a prediction are reported as ``no_prediction``, a changed prediction is graded
again on resume. Every input is checked before any work (policy spec, predictions, output folder).

``no_grade`` (one-generation protocols): the patches are written as predictions with status ``generated`` and the
protocol records, and nothing is graded, so no Docker engine is needed; ``predictions:OUT/predictions.jsonl`` under
the same protocol grades them later, the protocol records of ``OUT/results`` carried into the new report.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from swe_srl.agent.batching import BatchingPolicy
from swe_srl.agent.loop import AgentConfig, run_episode
from swe_srl.agent.policies import check_policy_spec, make_policy
from swe_srl.benchmark.instances import Instance
from swe_srl.env.swe_env import SWEEnv
from swe_srl.errors import PolicyError
from swe_srl.eval.predictions import Prediction, predictions_path, read_predictions
from swe_srl.eval.protocols.gold import EmptyEditPolicy, GoldEditPolicy
from swe_srl.eval.protocols.oneshot import run_protocol
from swe_srl.eval.protocols.published import protocol_summary, published
from swe_srl.eval.report import ERROR, GENERATED, INTERRUPTED, NO_PREDICTION
from swe_srl.eval.rundir import RunDir
from swe_srl.eval.settings import EvalSettings
from swe_srl.grading.runner import grade
from swe_srl.grading.timeouts import log_tail
from swe_srl.infra.executor import LocalExecutor, Task, TaskFailed, make_executor
from swe_srl.infra.sandbox.base import Limits
from swe_srl.infra.sandbox.enforcement import require_enforced, unlimited_note
from swe_srl.infra.sandbox.placement import sandbox_address

_POLICIES: dict[tuple, Any] = {}
_POLICIES_LOCK = threading.Lock()


def policy_for(settings: EvalSettings):
    """The policy of one episode. HF models are loaded once per process and shared (generation is stateless);
    other policies are cheap and keep per-episode state, so each episode gets a fresh one."""

    def build():
        return make_policy(settings.policy, base_url=settings.base_url, model=settings.model,
                           max_new_tokens=settings.max_new_tokens, temperature=settings.temperature,
                           view_for=settings.view_for,
                           max_concurrent_requests=settings.max_concurrent_requests)  # fmt: skip

    if not settings.in_process_model:
        return build()
    key = (settings.policy, settings.max_new_tokens, settings.temperature)
    with _POLICIES_LOCK:
        if key not in _POLICIES:
            _POLICIES[key] = BatchingPolicy(build())  # the threads' turns in one generate
        return _POLICIES[key]


def _episode(instance: Instance, settings: EvalSettings) -> dict[str, Any]:
    """Run the agent loop; returns the episode fields of the record (trajectory as a dict)."""

    try:
        policy = policy_for(settings)
    except PolicyError as exc:
        return {"exit_reason": "policy_error", "error": str(exc), "patch": "", "trajectory": None}
    config = AgentConfig(max_steps=settings.max_steps, episode_timeout_s=settings.episode_timeout_s)
    env = SWEEnv(instances=[instance], repos_dir=settings.repos_dir, oracle_files=settings.oracle_files,
                 oracle_window=settings.oracle_window,
                 limits=Limits(episode_timeout_s=settings.episode_timeout_s), shell=settings.shell)  # fmt: skip
    try:
        result = run_episode(env, policy, instance, config)
    finally:
        env.close()  # also on KeyboardInterrupt / SystemExit: no container is left behind
    return {
        "exit_reason": result.exit_reason,
        "error": result.error,
        "patch": result.patch,
        "patch_left_out": result.patch_notes,
        "steps": result.calls,
        "format_errors": result.format_errors,
        "duration_s": round(result.duration_s, 3),
        "trajectory": result.trajectory.to_dict(),
    }


def _one_shot(instance: Instance, settings: EvalSettings) -> dict[str, Any]:
    """One generation (or ``candidates``) under ``settings.protocol``; the episode fields of the record."""
    try:
        policy = {"gold": GoldEditPolicy(settings.repos_dir), "empty": EmptyEditPolicy()}.get(settings.policy)
        policy = policy or policy_for(settings)
        return run_protocol(instance, settings, policy)
    except PolicyError as exc:
        return {"exit_reason": "policy_error", "error": str(exc), "patch": "", "trajectory": None}


def eval_instance(instance: Instance, settings: EvalSettings, patch: str | None = None) -> dict[str, Any]:
    """One instance end to end → its record (never raises for a failing episode or grading: status ``error``).

    ``patch``: grade it directly, without an episode (a prediction); ``settings.direct``: the gold or empty patch.
    """

    started = time.monotonic()
    if patch is None and settings.direct:
        patch = instance.patch if settings.policy == "gold" else ""
    if patch is not None:
        episode = {"exit_reason": "direct", "error": None, "patch": patch, "trajectory": None}
    else:
        try:
            episode = (_episode if settings.protocol == "agent" else _one_shot)(instance, settings)
        except Exception as exc:  # an env that cannot even start is this instance's infra error
            episode = {"exit_reason": "infra_error", "error": f"{type(exc).__name__}: {exc}", "patch": ""}
    record = {"instance_id": instance.instance_id, "repo": instance.repo, "model_patch": episode["patch"]}
    record |= {"steps": 0, "format_errors": 0, "trajectory": None} | episode
    del record["patch"]
    if record["exit_reason"] in ("infra_error", "policy_error"):
        record |= {"status": ERROR, "tests": {}, "log": record["error"] or ""}
    elif settings.no_grade:
        record |= {"status": GENERATED, "tests": {}, "log": ""}
    else:
        try:
            graded = grade(instance, record["model_patch"], repos_dir=_path(settings.repos_dir),
                           timeout=settings.grade_timeout_s)  # fmt: skip
            record |= graded.to_dict() | {"log": graded.log}
            if graded.status == ERROR:
                cause = graded.reason or "infrastructure"
                record["error"] = f"grading failed ({cause}); the test log ends:\n{log_tail(graded.log)}"
        except Exception as exc:  # grading infrastructure, not the patch
            record |= {
                "status": ERROR,
                "tests": {},
                "log": "",
                "error": f"grading: {type(exc).__name__}: {exc}",
            }
    if record["trajectory"] is not None:
        record["trajectory"]["resolved"] = record["status"] == "resolved"
    record["wall_s"] = round(time.monotonic() - started, 3)
    if not settings.no_grade and sandbox_address() is None and (note := unlimited_note()):
        record["unlimited_sandboxes"] = note
    return record


def _path(value: str | Path | None) -> Path | None:
    return Path(value) if value else None


def make_eval_executor(settings: EvalSettings, workers: int, ray: str | None):
    """Ray when asked; locally, spawned processes, or threads for an in-process HF model (one copy in memory)."""

    if not ray and settings.in_process_model:
        return LocalExecutor(workers, processes=False)
    return make_executor(ray, workers)


def evaluate(
    settings: EvalSettings | str,
    instances: list[Instance],
    out: Path,
    *,
    workers: int = 1,
    ray: str | None = None,
    dataset: str = "",
    progress: Callable[[dict], None] | None = None,
    known_ids: list[str] | None = None,
) -> dict[str, Any]:
    """Evaluate ``settings.policy`` on ``instances`` into ``out`` (resumable); returns the report.

    ``known_ids``: every id of the dataset when ``instances`` is a selection (a prediction for another id is an
    error). Bad input raises before any work; Ctrl-C / SIGTERM record the instances in flight as ``interrupted``.
    """
    settings = EvalSettings(settings) if isinstance(settings, str) else settings
    check_policy_spec(settings.policy, base_url=settings.base_url, model=settings.model)
    run = RunDir(out)
    source = predictions_path(settings.policy)
    preds = read_predictions(source, known_ids or [i.instance_id for i in instances]) if source else None
    done = {k: r for k, r in run.finished().items() if settings.no_grade or r["status"] != GENERATED}
    protocols = _protocol_records(source) if source and settings.protocol != "agent" else {}
    if preds is not None:  # a prediction that changed since its grading is graded again
        done = {k: r for k, r in done.items() if k in preds and r["model_patch"] == preds[k].model_patch}
    name = _name(settings, preds)
    missing = {i.instance_id: _unfinished(i, NO_PREDICTION, "no patch for it in the predictions file")
               for i in instances if preds is not None and i.instance_id not in preds}  # fmt: skip
    todo = [i for i in instances if i.instance_id not in done and i.instance_id not in missing]
    shown = {k: v for k, v in asdict(settings).items() if k != "view_for"}
    meta = {"dataset": dataset, "protocol": settings.protocol, "oracle": settings.oracle, "settings": shown,
            "resumed": len(done)}  # fmt: skip
    if settings.protocol != "agent":
        meta["published"] = published(settings.protocol)
    records: dict[str, dict] = {
        i.instance_id: done[i.instance_id] for i in instances if i.instance_id in done
    }
    records |= missing

    def publish() -> dict[str, Any]:
        ordered = [records[i.instance_id] for i in instances if i.instance_id in records]
        if settings.protocol != "agent":
            meta["protocol_summary"] = protocol_summary(ordered)
        return run.publish(ordered, name, meta)

    def on_result(key: str, record: dict) -> None:
        if preds is not None and key in preds:
            record = {**record, "model_name_or_path": preds[key].model_name_or_path}
            if key in protocols:
                record["protocol"] = protocols[key]
        records[key] = run.write(record)
        publish()
        if progress:
            progress(records[key])

    if todo:
        # --no-grade starts no sandbox and needs no engine; remote sandbox nodes checked theirs (swe-srl worker)
        if not settings.no_grade and sandbox_address() is None:
            # before any work: refused where the engine would drop the sandboxes' limits
            require_enforced()
            if note := unlimited_note():
                meta["unlimited_sandboxes"] = note
        by_id = {i.instance_id: i for i in todo}
        tasks = [Task(i.instance_id, eval_instance, (i, settings, _patch(i, preds))) for i in todo]
        with make_eval_executor(settings, workers, ray) as executor:
            try:
                executor.map(tasks, on_result=on_result)
            except TaskFailed as exc:  # workers died too often: those instances are infra errors
                for key, error in exc.errors.items():
                    on_result(key, _unfinished(by_id[key], ERROR, f"{type(error).__name__}: {error}"))
            except (
                KeyboardInterrupt,
                SystemExit,
            ):  # stopped: the workers are gone; a resume runs these again
                meta["interrupted"] = True
                for key in sorted(executor.in_flight):
                    on_result(key, _unfinished(by_id[key], INTERRUPTED, "the run was stopped while it ran"))
                publish()
                raise
    return publish()


def _protocol_records(source: str) -> dict[str, dict]:
    """The protocol records of a ``--no-grade`` run whose ``predictions.jsonl`` is ``source`` (id → record)."""
    found = {}
    for path in sorted((Path(source).expanduser().parent / "results").glob("*.json")):
        try:
            record = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if isinstance(record, dict) and isinstance(record.get("protocol"), dict) and "instance_id" in record:
            found[record["instance_id"]] = record["protocol"]
    return found


def _patch(instance: Instance, preds: dict[str, Prediction] | None) -> str | None:
    return preds[instance.instance_id].model_patch if preds is not None else None


def _unfinished(instance: Instance, status: str, error: str) -> dict[str, Any]:
    """The record of an instance without a verdict (``status`` is also its exit reason; infra errors excepted)."""
    why = "infra_error" if status == ERROR else status
    return {"instance_id": instance.instance_id, "repo": instance.repo, "model_patch": "", "status": status,
            "exit_reason": why, "error": error, "steps": 0, "format_errors": 0, "tests": {}, "log": "",
            "trajectory": None}  # fmt: skip


def _name(settings: EvalSettings, preds: dict[str, Prediction] | None) -> str:
    """The report's policy name: the systems of a predictions file, else :func:`policy_name`."""
    if preds is None:
        return policy_name(settings)
    return ", ".join(sorted({p.model_name_or_path for p in preds.values()} - {""})) or settings.policy


def policy_name(settings: EvalSettings) -> str:
    """``model_name_or_path`` of the predictions: the served model's name, the HF path, else the spec."""
    if settings.policy.startswith("openai"):
        return settings.model or settings.policy.partition(":")[2] or "openai"
    return settings.policy.partition(":")[2] if settings.in_process_model else settings.policy
