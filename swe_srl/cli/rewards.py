"""CLI: ``swe-srl reward --expert A --action B`` — every reward component of one action against the expert's."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from swe_srl.core.actions import THINK_CLOSE, THINK_OPEN, format_output
from swe_srl.rewards import StepContext, score_output, syntax_problems
from swe_srl.rewards.bash.units import action_type
from swe_srl.rewards.harm import unexpected_harm


def _text(value: str, option: str) -> str:
    """``@file`` reads the file; anything else is the text itself."""
    if not value.startswith("@"):
        return value
    path = Path(value[1:])
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise typer.BadParameter(f"cannot read {path}: {exc.strerror}", param_hint=option) from exc


def reward(
    expert: str = typer.Option(..., help="Expert action text, or @file."),
    action: str = typer.Option(
        ..., help="Policy action, or a full model output with <think>…</think>; or @file."
    ),
    mode: str = typer.Option(
        "layered", help="srl (paper similarity), layered (syntax/semantic) or mixed (their mean)."
    ),
    fuzzy: bool = typer.Option(
        False, "--fuzzy", help="Relax names and string constants in the semantic layer."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Score an action against the expert action and print the total and every component."""

    expert_text, output = _text(expert, "--expert"), _text(action, "--action")
    full = THINK_OPEN in output or THINK_CLOSE in output  # a whole model output, checked for format
    completion = output if full else format_output("", output)
    result = score_output(completion, expert_text, mode=mode, fuzzy=fuzzy)  # type: ignore[arg-type]
    policy_action = completion.split(THINK_CLOSE, 1)[-1].strip()
    passed = result.components.get("syntax") == 1.0  # nothing to list (the expert's own action always passes)
    problems = (
        []
        if result.format_error or passed
        else syntax_problems(policy_action, StepContext(expert_text, policy_action))
    )
    layered = mode != "srl" and not result.format_error
    harms = [f"{h.kind} {h.target}" for h in unexpected_harm(expert_text, policy_action)] if layered else []
    if as_json:
        record = {"total": result.total, "components": result.components, "format_error": result.format_error}
        extra = {"syntax_problems": problems, "destructive": harms, "action_type": action_type(expert_text)}
        typer.echo(json.dumps({**record, **extra}))
        return
    caption = f"{mode}{' fuzzy' if fuzzy else ''}, expert action type: {action_type(expert_text)}"
    table = Table(title="reward", caption=caption)
    table.add_column("component")
    table.add_column("value", justify="right")
    for name, value in result.components.items():
        table.add_row(name, f"{value:.4f}")
    table.add_row("[bold]total[/]", f"[bold]{result.total:.4f}[/]")
    console = Console()
    console.print(table)
    notes = [f"format error: {result.format_error}"] if result.format_error else []
    for note in notes + problems + [f"destructive (the expert does not do it): {h}" for h in harms]:
        console.print(f"[yellow]{note}[/]", highlight=False)
