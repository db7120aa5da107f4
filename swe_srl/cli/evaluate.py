"""``swe-srl eval``: a policy on a dataset under a protocol (agent-loop episodes, or one generation of
SEARCH/REPLACE edits: oracle-edit, agentless) → predictions, report, summary."""

from __future__ import annotations

import os
from pathlib import Path

import typer
from rich.console import Console

from swe_srl.agent.policies import POLICY_SPECS
from swe_srl.benchmark.instances import load_instances, select_instances
from swe_srl.benchmark.verdicts import STRICT_ENV
from swe_srl.cli.infra import IMAGE_SOURCE_HELP
from swe_srl.errors import TaskError
from swe_srl.eval.protocols.oneshot import ONE_SHOT_MAX_NEW_TOKENS, PROTOCOLS
from swe_srl.eval.protocols.published import protocol_line, published_table
from swe_srl.eval.report import summary_tables
from swe_srl.eval.run import evaluate
from swe_srl.eval.settings import EvalSettings
from swe_srl.infra.sources import select_image_source
from swe_srl.train.tiny.slots import view_of


def eval_cmd(
    policy: str = typer.Option(..., help=f"{POLICY_SPECS} (a SWE-bench predictions file, graded directly)"),
    protocol: str = typer.Option("agent", help=f"{' | '.join(PROTOCOLS)}: agent episodes in SWEEnv; oracle-edit: one repair generation from the issue and the gold patch's whole files; agentless: file localization, then repair (docs/paper.md)"),
    candidates: int = typer.Option(1, min=1, help="oracle-edit/agentless: candidates per instance, deduplicated and reranked by majority"),
    exactly_once: bool = typer.Option(False, "--exactly-once", help="oracle-edit/agentless: skip an edit whose SEARCH matches more than one place"),
    dataset: str = typer.Option("bundled:test", help="bundled[:train|:dev|:test], a .jsonl/.parquet path or a HF id"),
    out: Path = typer.Option(..., "-o", "--out", help="output folder (resumable: finished instances are skipped)"),
    instances: str = typer.Option("", "--instances", help="only these instance ids (comma-separated)"),
    oracle_files: bool = typer.Option(False, "--oracle-files", help="prompt includes the files the gold patch edits"),
    oracle_window: int = typer.Option(None, "--oracle-window", min=0, help="oracle files as windows of N lines around the gold hunks (implies --oracle-files; default: whole files)"),
    workers: int = typer.Option(1, help="episodes in parallel (local pool or Ray tasks in flight)"),
    ray: str = typer.Option(None, help="run episodes on Ray: auto | ray://host:10001 | host:6379"),
    repos_dir: Path = typer.Option(None, help="folder of local clones (offline)"),
    max_steps: int = typer.Option(50, help="policy calls per episode"),
    base_url: str = typer.Option(None, help="OpenAI-compatible server, e.g. http://localhost:8000/v1"),
    model: str = typer.Option(None, help="model name on the server (--policy openai)"),
    max_new_tokens: int = typer.Option(None, help=f"tokens per model output (default: 1024 for agent, {ONE_SHOT_MAX_NEW_TOKENS} for oracle-edit/agentless)"),
    temperature: float = typer.Option(0.0, help="sampling temperature (0 = greedy)"),
    episode_timeout: float = typer.Option(1800, help="wall clock of one episode (s)"),
    timeout: float = typer.Option(1800, help="test command timeout when grading (s)"),
    direct_patch: bool = typer.Option(False, help="gold|empty: grade the patch without an episode"),
    image_source: str = typer.Option(None, "--image-source", help=IMAGE_SOURCE_HELP),
    strict_grading: bool = typer.Option(False, "--strict-grading", help="a patch the grading screen flags (library code reaching into the test runner: docs/grading.md) is unresolved"),
) -> None:  # fmt: skip
    """Run POLICY on every instance of DATASET under PROTOCOL and grade the patches SWE-bench style.

    Every input is checked before any work (one-line errors); Ctrl-C / SIGTERM stop at once, recording the
    instances in flight as interrupted: the same command resumes.
    """

    select_image_source(image_source)
    if strict_grading:  # for this process and the workers it spawns, as --image-source
        os.environ[STRICT_ENV] = "1"
    console = Console()
    if max_new_tokens is None:
        max_new_tokens = 1024 if protocol == "agent" else ONE_SHOT_MAX_NEW_TOKENS
    settings = EvalSettings(policy, base_url=base_url, model=model, max_steps=max_steps,
                            episode_timeout_s=episode_timeout, max_new_tokens=max_new_tokens,
                            temperature=temperature, oracle_files=oracle_files or oracle_window is not None,
                            oracle_window=oracle_window,
                            repos_dir=str(repos_dir) if repos_dir else None, grade_timeout_s=timeout,
                            direct=direct_patch, protocol=protocol, candidates=candidates,
                            exactly_once=exactly_once, view_for=view_of)  # fmt: skip
    ids = [i.strip() for i in instances.split(",") if i.strip()]
    every = load_instances(dataset)
    if not every:
        raise TaskError(f"dataset {dataset!r} has no instances")
    todo = select_instances(every, ids)
    setting = f"protocol: {settings.protocol}, oracle: {settings.oracle}"
    console.print(f"{policy} on {len(todo)} instance(s) of {dataset} → {out} ({setting})")
    try:
        report = evaluate(settings, todo, out, workers=workers, ray=ray, dataset=dataset,
                          known_ids=[i.instance_id for i in every],
                          progress=lambda r: console.print(_line(r), highlight=False))  # fmt: skip
    except (KeyboardInterrupt, SystemExit):
        console.print(
            f"[yellow]stopped[/]: instances in flight recorded as interrupted; rerun to resume ({out})"
        )
        raise
    for table in summary_tables(report, f"{policy} on {dataset} ({setting})"):
        console.print(table)
    if (paper := published_table(report)) is not None:
        console.print(paper)
        console.print(protocol_line(report["protocol_summary"]), highlight=False)
    for error in report["errors"]:
        console.print(f"[red]infra error[/] {error['instance_id']}: {error['error']}", highlight=False)
    if report["no_prediction_ids"]:
        console.print(f"no prediction for {len(report['no_prediction_ids'])} instance(s) (unresolved)")
    prov = report["provenance"]
    console.print(f"swe-srl {prov['swe_srl_version']} (git {(prov['git_sha'] or '-')[:12]}), images: "
                  f"{', '.join(prov['image_sources']) or '-'}, Python {', '.join(prov['pythons']) or '-'}"
                  f" (approximate Python: {len(prov.get('approximate_python_ids', []))})",
                  highlight=False)  # fmt: skip
    console.print(f"predictions: {out / 'predictions.jsonl'}  report: {out / 'report.json'}")


def _line(record: dict) -> str:
    return (f"{record['instance_id']}: {record['status']} ({record.get('exit_reason')}, "
            f"{record.get('steps', 0)} steps, {record.get('wall_s', 0):.0f}s)")  # fmt: skip
