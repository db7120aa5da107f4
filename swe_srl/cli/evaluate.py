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
from swe_srl.core.shells import PERSISTENT
from swe_srl.errors import TaskError
from swe_srl.eval.protocols.budget import load_tokenizer
from swe_srl.eval.protocols.oneshot import EDIT_RULES, ONE_SHOT_MAX_NEW_TOKENS, PROTOCOLS
from swe_srl.eval.protocols.prompts import load_template
from swe_srl.eval.protocols.published import protocol_line, published_table
from swe_srl.eval.protocols.rerank import RERANKS
from swe_srl.eval.report import summary_tables
from swe_srl.eval.run import evaluate
from swe_srl.eval.settings import EvalSettings
from swe_srl.infra.sandbox.placement import SANDBOXES_HELP, select_sandboxes
from swe_srl.infra.sandbox.remote import ensure_reachable
from swe_srl.infra.sources import select_image_source
from swe_srl.train.tiny.slots import view_of

MODEL, DATA, PROTOCOL, GRADING, RUN = "Model", "Data", "Protocol", "Grading", "Run"
IMAGE_SOURCES = "auto | swebench | registry | debootstrap (or $SWE_SRL_IMAGE_SOURCE; docs/grading.md)"


def eval_cmd(
    policy: str = typer.Option(..., metavar="SPEC", rich_help_panel=MODEL, help=POLICY_SPECS),
    base_url: str = typer.Option(None, metavar="URL", rich_help_panel=MODEL, help="OpenAI-compatible server, e.g. http://localhost:8000/v1"),
    model: str = typer.Option(None, metavar="NAME", rich_help_panel=MODEL, help="model name on the server (--policy openai)"),
    max_concurrent_requests: int = typer.Option(64, "--max-requests", metavar="N", rich_help_panel=MODEL, help="openai: requests in flight at most, per machine"),
    max_new_tokens: int = typer.Option(None, metavar="N", rich_help_panel=MODEL, help=f"tokens per output (default: 1024 for agent, {ONE_SHOT_MAX_NEW_TOKENS} for oracle-edit/agentless)"),
    temperature: float = typer.Option(0.0, metavar="T", rich_help_panel=MODEL, help="sampling temperature (0 = greedy)"),
    dataset: str = typer.Option("bundled:test", metavar="DATA", rich_help_panel=DATA, help="bundled[:train|:dev|:test], .jsonl/.parquet or HF id"),
    instances: str = typer.Option("", "--instances", metavar="IDS", rich_help_panel=DATA, help="only these instance ids (comma-separated)"),
    repos_dir: Path = typer.Option(None, metavar="DIR", rich_help_panel=DATA, help="folder of local clones (offline)"),
    protocol: str = typer.Option("agent", metavar="NAME", rich_help_panel=PROTOCOL, help=f"{' | '.join(PROTOCOLS)} (docs/paper.md)"),
    edit_rules: str = typer.Option("agentless", metavar="RULES", rich_help_panel=PROTOCOL, help=f"{' | '.join(EDIT_RULES)}: as Agentless-mini reads answers, or ours"),
    prompt_template: list[str] = typer.Option([], metavar="KIND=FILE", rich_help_panel=PROTOCOL, help="repair|localization prompt with {fields} (docs/paper.md)"),
    candidates: int = typer.Option(1, min=1, metavar="N", rich_help_panel=PROTOCOL, help="candidates per instance, reranked by majority"),
    rerank: str = typer.Option("swe-rl", metavar="KEY", rich_help_panel=PROTOCOL, help=f"{' | '.join(RERANKS)}: majority of SWE-RL's normalized patches | of files' AST"),
    tokenizer: str = typer.Option(None, metavar="NAME_OR_PATH", rich_help_panel=PROTOCOL, help="counts the repair input budget (default: the model's, else 4 bytes a token)"),
    oracle_files: bool = typer.Option(False, "--oracle-files", rich_help_panel=PROTOCOL, help="agent: the prompt includes the files the gold patch edits"),
    oracle_window: int = typer.Option(None, "--oracle-window", min=0, metavar="N", rich_help_panel=PROTOCOL, help="agent: oracle files as windows of N lines around the gold hunks"),
    shell: str = typer.Option("persistent", metavar="MODE", rich_help_panel=PROTOCOL, help="agent: persistent | per-action (a bash per command, as mini-swe-agent)"),
    max_steps: int = typer.Option(None, metavar="N", rich_help_panel=PROTOCOL, help="agent: policy calls per episode (default 50; replay:T: its longest trajectory + submit)"),
    episode_timeout: float = typer.Option(1800, metavar="S", rich_help_panel=PROTOCOL, help="agent: wall clock of one episode (s)"),
    no_grade: bool = typer.Option(False, "--no-grade", rich_help_panel=GRADING, help="predictions only, no Docker (oracle-edit/agentless); grade with --policy predictions:FILE"),
    timeout: float = typer.Option(1800, metavar="S", rich_help_panel=GRADING, help="test command timeout when grading (s)"),
    direct_patch: bool = typer.Option(False, "--direct-patch", rich_help_panel=GRADING, help="gold|empty: grade the patch without an episode"),
    image_source: str = typer.Option(None, "--image-source", metavar="SRC", rich_help_panel=GRADING, help=IMAGE_SOURCES),
    strict_grading: bool = typer.Option(False, "--strict-grading", rich_help_panel=GRADING, help="a patch the grading screen flags is unresolved (docs/grading.md)"),
    out: Path = typer.Option(..., "-o", "--out", metavar="DIR", rich_help_panel=RUN, help="output folder (resumable)"),
    workers: int = typer.Option(1, metavar="N", rich_help_panel=RUN, help="instances in parallel"),
    ray: str = typer.Option(None, metavar="ADDR", rich_help_panel=RUN, help="run on Ray: auto | ray://host:10001 | host:6379"),
    sandboxes: str = typer.Option(None, metavar="WHERE", rich_help_panel=RUN, help=SANDBOXES_HELP),
) -> None:  # fmt: skip
    """Run POLICY on every instance of DATASET under PROTOCOL and grade the patches SWE-bench style.

    Every input is checked before any work. Ctrl-C / SIGTERM stop at once; the same command resumes.
    """

    select_image_source(image_source)
    select_sandboxes(sandboxes)
    ensure_reachable()
    if strict_grading:  # for this process and the workers it spawns, as --image-source
        os.environ[STRICT_ENV] = "1"
    console = Console()
    if max_new_tokens is None:
        max_new_tokens = 1024 if protocol == "agent" else ONE_SHOT_MAX_NEW_TOKENS
    settings = EvalSettings(policy, base_url=base_url, model=model, max_steps=max_steps,
                            max_concurrent_requests=max_concurrent_requests,
                            episode_timeout_s=episode_timeout, max_new_tokens=max_new_tokens,
                            temperature=temperature, oracle_files=oracle_files or oracle_window is not None,
                            oracle_window=oracle_window, shell=shell,
                            repos_dir=str(repos_dir) if repos_dir else None, grade_timeout_s=timeout,
                            direct=direct_patch, protocol=protocol, candidates=candidates,
                            edit_rules=edit_rules, no_grade=no_grade,
                            prompt_templates=tuple(load_template(spec) for spec in prompt_template),
                            tokenizer=tokenizer, rerank=rerank, view_for=view_of)  # fmt: skip
    if tokenizer:
        load_tokenizer(tokenizer)  # one clear line now for a name that does not load, not in every worker
    ids = [i.strip() for i in instances.split(",") if i.strip()]
    every = load_instances(dataset)
    if not every:
        raise TaskError(f"dataset {dataset!r} has no instances")
    todo = select_instances(every, ids)
    setting = f"protocol: {settings.protocol}, oracle: {settings.oracle}"
    if settings.protocol == "agent" and settings.shell != PERSISTENT:  # how the episodes ran their commands
        setting += f", shell: {settings.shell}"
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
    if no_grade:
        return _ungraded(report, out, console)
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


def _ungraded(report: dict, out: Path, console: Console) -> None:
    """What a ``--no-grade`` run leaves and how to grade it."""
    made = report["statuses"].get("generated", 0)
    console.print(protocol_line(report["protocol_summary"]), highlight=False)
    for error in report["errors"]:
        console.print(f"[red]infra error[/] {error['instance_id']}: {error['error']}", highlight=False)
    console.print(f"{made} prediction(s), not graded: {out / 'predictions.jsonl'} (protocol records: "
                  f"{out / 'results'}); grade them where Docker runs with the same options and "
                  f"--policy predictions:{out / 'predictions.jsonl'} -o OTHER_DIR", highlight=False,
                  soft_wrap=True)  # fmt: skip
