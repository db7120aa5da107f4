"""CLI: ``swe-srl decompose TRAJ... -o F`` and ``swe-srl trajectories import SRC -o F``."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from swe_srl.benchmark.instances import load_instances
from swe_srl.errors import ConfigError
from swe_srl.paths import atomic_write_text
from swe_srl.trajectories.decompose import decompose, load_tokenizer
from swe_srl.trajectories.importers import import_with_stats
from swe_srl.trajectories.oracle import oracle_contents
from swe_srl.trajectories.schema import write_jsonl
from swe_srl.trajectories.selection import select

trajectories_app = typer.Typer(help="Expert trajectories: import public formats.", no_args_is_help=True)


def _table(title: str, rows: list[tuple[str, int]]) -> None:

    table = Table(title=title)
    table.add_column("what")
    table.add_column("count", justify="right")
    for label, count in rows:
        table.add_row(label, str(count))
    Console().print(table)


@trajectories_app.command("import")
def import_cmd(
    source: str = typer.Argument(..., help="File, directory or HF dataset id (owner/name[:split])."),
    output: Path = typer.Option(..., "-o", "--output", help="Native trajectories JSONL to write."),
    fmt: str = typer.Option(
        "auto", "--format", help="auto, native, swe-agent, mini-swe-agent, swe-smith, openhands, nebius."
    ),
    skip_bad: bool = typer.Option(
        False, "--skip-bad", help="Skip and count bad records instead of stopping."
    ),
    resolved_only: bool = typer.Option(
        False, "--resolved-only", help="Keep only trajectories the source marks resolved."
    ),
    model: str | None = typer.Option(
        None, "--model", help="Keep only trajectories of this expert model (the record's model name)."
    ),
) -> None:
    """Convert public-format trajectories into the native JSONL form."""

    found, stats = import_with_stats(source, fmt=fmt, skip_bad=skip_bad)
    trajectories, unselected = select(found, resolved_only=resolved_only, model=model)
    write_jsonl(output, trajectories)
    steps = sum(len(t.steps) for t in trajectories)
    rows = [("records", stats.records), *sorted(stats.imported.items()), ("steps", steps)]
    rows += [("skipped (bad)", len(stats.skipped)), ("not trajectory files", len(stats.ignored))]
    rows += [(f"left out: {reason}", n) for reason, n in sorted(unselected.items())]
    _table("trajectories import", rows)
    typer.echo(f"wrote {len(trajectories)} trajectories to {output}")
    _name_inputs([stats])


def _name_inputs(all_stats: list, shown: int = 10) -> None:
    """One line per skipped input (where and why); the first ``shown`` files of a directory that are not trajectory
    files (sidecars, logs, configs), then how many more."""
    ignored = [path for stats in all_stats for path in stats.ignored]
    for error in (error for stats in all_stats for error in stats.skipped):
        typer.echo(f"skipped: {error}", err=True)
    for path in ignored[:shown]:
        typer.echo(f"not a trajectory file: {path}", err=True)
    if len(ignored) > shown:
        typer.echo(f"not a trajectory file: … and {len(ignored) - shown} more", err=True)


def decompose_cmd(
    trajectories: list[str] = typer.Argument(
        ..., help="Trajectory files/directories/HF ids (any known format)."
    ),
    output: Path = typer.Option(..., "-o", "--output", help="SRL step samples JSONL to write."),
    oracle_files: bool = typer.Option(
        False,
        "--oracle-files",
        help="Put the gold patch's files in every prompt (whole; with --max-tokens, windows where they do not fit).",
    ),
    oracle_window: int | None = typer.Option(
        None,
        "--oracle-window",
        min=0,
        help="Oracle files as windows of N context lines around the gold patch's hunks (implies --oracle-files).",
    ),
    tasks: str | None = typer.Option(
        None, "--tasks", help="Task set (split per instance; needed for --oracle-files)."
    ),
    repos_dir: Path | None = typer.Option(
        None, "--repos-dir", help="Local clones of real repositories, to read oracle files at base_commit."
    ),
    tokenizer: str | None = typer.Option(
        None, "--tokenizer", help="HF tokenizer name/path, or a tokenizer.json."
    ),
    max_tokens: int | None = typer.Option(
        None, "--max-tokens", help="Prompt token budget (oldest observations elided)."
    ),
    observation_chars: int = typer.Option(
        2000, "--observation-chars", help="Truncate each observation to N chars."
    ),
    skip_bad: bool = typer.Option(
        False,
        "--skip-bad",
        help="Skip (and name) unreadable files, bad lines and bad records instead of stopping.",
    ),
    merge_similar: float | None = typer.Option(
        None,
        "--merge-similar",
        min=0.0,
        max=1.0,
        help="Make no target of a step whose next action is this similar (ratio 0-1); histories keep it. Off.",
    ),
    history_thoughts: bool = typer.Option(
        False, "--history-thoughts", help="Show earlier expert thoughts as <think>…</think> in the history."
    ),
    history: int | None = typer.Option(
        None,
        "--history",
        min=0,
        help="Show only the last K earlier steps in each prompt (the SRL paper: 2); default: every earlier step.",
    ),
    holdout_trajectories: int = typer.Option(
        0,
        "--holdout-trajectories",
        min=0,
        help="Hold out N whole trajectories (a seeded draw) as the test split the held-out report scores.",
    ),
    holdout_seed: int = typer.Option(0, "--holdout-seed", help="Seed of the --holdout-trajectories draw."),
    expand: bool = typer.Option(
        False,
        "--expand",
        help="Write self-contained samples, each with its 'messages' (the prompt as the model sees it).",
    ),
) -> None:
    """Split expert trajectories into SRL step samples (prompt → expert action).

    The file holds a header (the prompt options), each trajectory and each instance's oracle files once, and one
    line per sample naming its target (``expert_action``); `swe-srl train` builds the prompts when it reads it.
    With --expand every line holds its sample's prompt instead (larger; for reading and for other tools)."""

    oracle_files = oracle_files or oracle_window is not None
    if oracle_files and tasks is None:
        raise ConfigError(
            "--oracle-files needs --tasks (the instances whose gold patches name the files); "
            "real repositories are read from --repos-dir clones or cloned from GitHub"
        )
    trajs, imports = [], []
    for source in trajectories:
        found, stats = import_with_stats(source, skip_bad=skip_bad)
        trajs += found
        imports.append(stats)
    skipped = sum(len(stats.skipped) for stats in imports)
    wanted = {t.instance_id for t in trajs}
    splits, contents, patches = _task_inputs(tasks, repos_dir, wanted, oracle_files)
    samples, stats = decompose(
        trajs,
        oracle_files=contents,
        oracle_patches=patches,
        oracle_window=oracle_window,
        splits=splits,
        tokenizer=load_tokenizer(tokenizer) if tokenizer else None,
        max_tokens=max_tokens,
        observation_chars=observation_chars,
        merge_similar=merge_similar,
        history_thoughts=history_thoughts,
        history=history,
        holdout_trajectories=holdout_trajectories,
        holdout_seed=holdout_seed,
    )
    atomic_write_text(output, samples.expanded_text() if expand else samples.text())
    _table("decompose", [("bad records skipped", skipped), *stats.rows()])
    if stats.dropped_by_instance:
        _instance_table(stats.instance_rows())
    typer.echo(f"wrote {len(samples)} samples to {output}; {stats.summary()}")
    _name_inputs(imports)


def _instance_table(rows: list[tuple[str, int, str]], shown: int = 30) -> None:
    """The instances that lost samples: how many each kept and lost, by reason (the most lost first)."""
    table = Table(title="dropped samples by instance")
    for column in ("instance", "samples kept", "dropped"):
        table.add_column(column, justify="left" if column != "samples kept" else "right")
    for instance_id, kept, reasons in rows[:shown]:
        table.add_row(instance_id, str(kept), reasons)
    if len(rows) > shown:
        table.add_row(f"… and {len(rows) - shown} more", "", "")
    Console().print(table)


def _task_inputs(
    tasks: str | None, repos_dir: Path | None, wanted: set[str], oracle_files: bool
) -> tuple[dict[str, str] | None, dict | None, dict[str, str] | None]:
    """(splits, oracle file contents, gold patches) of the task set's instances the trajectories cover."""
    if tasks is None:
        return None, None, None

    instances = load_instances(tasks)
    splits = {i.instance_id: i.split for i in instances}
    used = [i for i in instances if i.instance_id in wanted]
    if not oracle_files:
        return splits, None, None
    return splits, oracle_contents(used, repos_dir), {i.instance_id: i.patch for i in used}
