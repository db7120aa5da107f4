"""End-to-end evaluation: every policy runs agent-loop episodes in ``SWEEnv``; the patches are graded SWE-bench style.

One instance = one executor :class:`~swe_srl.infra.executor.Task` running :func:`eval_instance` (module-level and
picklable, so the local process pool and Ray run the same code): episode → cleaned patch → ``grading.grade`` → a
record (trajectory and log included). The driver writes every result as it arrives, atomically, in this order::

    OUT/trajectories/<id>.jsonl   native trajectory (replayable: ``--policy replay:…``; decomposable)
    OUT/logs/<id>.log             grading log
    OUT/results/<id>.json         the record: its presence marks the instance as finished
    OUT/predictions.jsonl         SWE-bench predictions of all finished instances (rewritten)
    OUT/report.json               see :func:`swe_srl.eval.report.build_report` (rewritten)

Resume: a rerun skips instances whose ``results/<id>.json`` holds a non-error status; infra/policy errors are run
again. Worker layout: scripted and served policies run one episode per spawned process (``--workers N``) or per Ray
task; an in-process HF model runs in threads (``LocalExecutor(processes=False)``) sharing one loaded copy per
process, and on Ray each worker process keeps its copy for the tasks it runs (see :func:`policy_for`).

``direct=True`` (gold/empty only) grades the patch without an episode: ``swe-srl tasks validate`` uses it to check
the tasks and the harness independently of the agent stack, with one container per instance instead of two.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from swe_srl.agent.loop import AgentConfig, run_episode
from swe_srl.agent.policies import make_policy
from swe_srl.benchmark.instances import Instance
from swe_srl.env.swe_env import SWEEnv
from swe_srl.errors import ConfigError, PolicyError
from swe_srl.eval.report import build_report
from swe_srl.grading.runner import grade
from swe_srl.infra.executor import LocalExecutor, Task, TaskFailed, make_executor
from swe_srl.infra.sandbox.base import Limits
from swe_srl.paths import atomic_write_text
from swe_srl.trajectories.oracle import oracle_setting
from swe_srl.trajectories.schema import Trajectory, write_jsonl

ERROR = "error"
_POLICIES: dict[tuple, Any] = {}
_POLICIES_LOCK = threading.Lock()


@dataclass(frozen=True)
class EvalSettings:
    """What one evaluation run does to each instance (picklable: shipped with every task)."""

    policy: str
    """``gold | empty | replay:TRAJ.jsonl | hf:PATH_OR_ID | openai``."""
    base_url: str | None = None
    model: str | None = None
    max_steps: int = 50
    episode_timeout_s: float = 1800.0
    max_new_tokens: int = 1024
    temperature: float = 0.0
    oracle_files: bool = False
    oracle_window: int | None = None
    """With ``oracle_files``: None keeps whole files (SWE-bench's oracle setting); N: windows of N context lines."""
    repos_dir: str | None = None
    grade_timeout_s: float = 1800.0
    direct: bool = False
    """gold/empty: grade ``instance.patch`` / ``""`` directly, without an episode."""

    def __post_init__(self) -> None:
        if self.direct and self.policy not in ("gold", "empty"):
            raise ConfigError(f"direct patch grading is for --policy gold|empty, not {self.policy!r}")
        if self.max_steps < 1:
            raise ConfigError(f"max_steps={self.max_steps}: need at least one step")

    @property
    def oracle(self) -> str:
        """The oracle setting reports name: ``none | whole | window:N``."""
        return oracle_setting(self.oracle_files, self.oracle_window)

    @property
    def in_process_model(self) -> bool:
        """An HF model loaded in the worker: threads share it instead of one copy per process."""
        return self.policy.startswith("hf:")


def policy_for(settings: EvalSettings):
    """The policy of one episode. HF models are loaded once per process and shared (generation is stateless);
    other policies are cheap and keep per-episode state, so each episode gets a fresh one."""

    def build():
        return make_policy(settings.policy, base_url=settings.base_url, model=settings.model,
                           max_new_tokens=settings.max_new_tokens, temperature=settings.temperature)  # fmt: skip

    if not settings.in_process_model:
        return build()
    key = (settings.policy, settings.max_new_tokens, settings.temperature)
    with _POLICIES_LOCK:
        if key not in _POLICIES:
            _POLICIES[key] = build()
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
                 limits=Limits(episode_timeout_s=settings.episode_timeout_s))  # fmt: skip
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


def eval_instance(instance: Instance, settings: EvalSettings) -> dict[str, Any]:
    """One instance end to end → its record (never raises for a failing episode or grading: status ``error``)."""

    started = time.monotonic()
    if settings.direct:
        patch = instance.patch if settings.policy == "gold" else ""
        episode = {"exit_reason": "direct", "error": None, "patch": patch, "trajectory": None}
    else:
        try:
            episode = _episode(instance, settings)
        except Exception as exc:  # an env that cannot even start is this instance's infra error
            episode = {"exit_reason": "infra_error", "error": f"{type(exc).__name__}: {exc}", "patch": ""}
    record = {"instance_id": instance.instance_id, "repo": instance.repo, "model_patch": episode["patch"]}
    record |= {"steps": 0, "format_errors": 0, "trajectory": None} | episode
    del record["patch"]
    if record["exit_reason"] in ("infra_error", "policy_error"):
        record |= {"status": ERROR, "tests": {}, "log": record["error"] or ""}
    else:
        try:
            graded = grade(instance, record["model_patch"], repos_dir=_path(settings.repos_dir),
                           timeout=settings.grade_timeout_s)  # fmt: skip
            record |= graded.to_dict() | {"log": graded.log}
            if graded.status == ERROR:
                record["error"] = f"grading failed (infra): {graded.log[-500:]}"
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
    return record


def _path(value: str | Path | None) -> Path | None:
    return Path(value) if value else None


class RunDir:
    """The output folder of one evaluation: finished records, atomic per-instance writes, predictions, report."""

    def __init__(self, out: Path) -> None:
        self.out = Path(out)

    def finished(self) -> dict[str, dict]:
        """Records of finished instances (infra errors excluded: they are run again)."""
        done = {}
        for path in sorted((self.out / "results").glob("*.json")):
            record = json.loads(path.read_text())
            if record.get("status") != ERROR:
                done[record["instance_id"]] = record
        return done

    def write(self, record: dict[str, Any]) -> dict[str, Any]:
        """Trajectory, log, then the result (the finished marker); returns the record without log/trajectory."""

        iid, record = record["instance_id"], dict(record)
        trajectory, log = record.pop("trajectory", None), record.pop("log", "")
        if trajectory is not None:
            write_jsonl(self.out / "trajectories" / f"{iid}.jsonl", [Trajectory.from_dict(trajectory)])
        atomic_write_text(self.out / "logs" / f"{iid}.log", log)
        atomic_write_text(self.out / "results" / f"{iid}.json", json.dumps(record, indent=1))
        return record

    def publish(self, records: list[dict], name: str, meta: dict[str, Any]) -> dict[str, Any]:
        """Rewrite predictions.jsonl (finished instances) and report.json from ``records`` (dataset order)."""

        predictions = [{"instance_id": r["instance_id"], "model_name_or_path": name,
                        "model_patch": r["model_patch"]} for r in records if r["status"] != ERROR]  # fmt: skip
        atomic_write_text(self.out / "predictions.jsonl", "".join(json.dumps(p) + "\n" for p in predictions))
        report = build_report(records, policy=name, meta=meta)
        atomic_write_text(self.out / "report.json", json.dumps(report, indent=2))
        return report


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
) -> dict[str, Any]:
    """Evaluate ``settings.policy`` on ``instances`` into ``out`` (resumable); returns the report."""
    settings = EvalSettings(settings) if isinstance(settings, str) else settings
    run = RunDir(out)
    done = run.finished()
    todo = [i for i in instances if i.instance_id not in done]
    name = policy_name(settings)
    meta = {"dataset": dataset, "oracle": settings.oracle, "settings": asdict(settings), "resumed": len(done)}
    records: dict[str, dict] = {
        i.instance_id: done[i.instance_id] for i in instances if i.instance_id in done
    }

    def on_result(key: str, record: dict) -> None:
        records[key] = run.write(record)
        ordered = [records[i.instance_id] for i in instances if i.instance_id in records]
        run.publish(ordered, name, meta)
        if progress:
            progress(records[key])

    if todo:
        tasks = [Task(i.instance_id, eval_instance, (i, settings)) for i in todo]
        with make_eval_executor(settings, workers, ray) as executor:
            try:
                executor.map(tasks, on_result=on_result)
            except TaskFailed as exc:  # workers died too often: those instances are infra errors
                for key, error in exc.errors.items():
                    instance = next(i for i in todo if i.instance_id == key)
                    on_result(key, _lost(instance, error))
    ordered = [records[i.instance_id] for i in instances if i.instance_id in records]
    return run.publish(ordered, name, meta)


def _lost(instance: Instance, error: BaseException) -> dict[str, Any]:
    return {"instance_id": instance.instance_id, "repo": instance.repo, "model_patch": "", "status": ERROR,
            "exit_reason": "infra_error", "error": f"{type(error).__name__}: {error}", "steps": 0,
            "format_errors": 0, "tests": {}, "log": "", "trajectory": None}  # fmt: skip


def policy_name(settings: EvalSettings) -> str:
    """``model_name_or_path`` of the predictions: the served model's name, the HF path, else the spec."""
    if settings.policy.startswith("openai"):
        return settings.model or settings.policy.partition(":")[2] or "openai"
    return settings.policy.partition(":")[2] if settings.in_process_model else settings.policy
