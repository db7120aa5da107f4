"""``swe-srl eval``: grade a policy on a dataset → predictions.jsonl + report.json + a summary table."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    @app.command("eval")
    def eval_cmd(
        policy: str = typer.Option(..., help="gold | empty"),
        dataset: str = typer.Option(
            "bundled:test", help="bundled[:train|:test], a .jsonl/.parquet path or a HF id"
        ),
        out: Path = typer.Option(
            ..., "-o", "--out", help="output folder (resumable: done instances are skipped)"
        ),
        workers: int = typer.Option(1, help="instances graded in parallel"),
        instances: list[str] = typer.Option(None, "--instances", help="only these instance ids"),
        repos_dir: Path = typer.Option(None, help="folder of local clones (offline)"),
        timeout: float = typer.Option(1800, help="test command timeout per instance (s)"),
    ) -> None:
        """Run POLICY on every instance of DATASET and grade the patches SWE-bench style."""
        from rich.console import Console
        from rich.table import Table

        from swe_srl.evaluate import evaluate, make_solver
        from swe_srl.tasks import load_instances, select_instances

        console = Console()
        todo = select_instances(load_instances(dataset), instances)
        report = evaluate(make_solver(policy), todo, out, workers=workers, repos_dir=repos_dir, timeout=timeout,
                          progress=lambda r: console.print(f"{r['instance_id']}: {r['status']}"))  # fmt: skip
        table = Table(title=f"{policy} on {dataset}")
        for column in ("instances", "resolved", "rate", *sorted(report["statuses"])):
            table.add_column(column)
        table.add_row(str(report["total"]), str(report["resolved"]), f"{report['resolved_rate']:.1%}",
                      *(str(report["statuses"][k]) for k in sorted(report["statuses"])))  # fmt: skip
        console.print(table)
        console.print(f"predictions: {out / 'predictions.jsonl'}  report: {out / 'report.json'}")
