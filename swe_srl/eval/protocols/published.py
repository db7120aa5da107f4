"""The figures a protocol's report sits beside: the SRL paper's Table 5 (SWE-bench Verified, greedy decoding), and
the run's own protocol summary (tokens, truncations, why patches were empty). Published figures are never
presented as measured here."""

from __future__ import annotations

from collections import Counter
from typing import Any

from rich.table import Table

SOURCE = "SRL paper, Table 5 (SWE-bench Verified, greedy decoding; published, not measured here)"
COLUMN = {"oracle-edit": "oracle-file editing", "agentless": "end-to-end (Agentless-mini)"}
TABLE5 = {
    "Qwen2.5-Coder-7B-Instruct": {"oracle-edit": 5.8, "agentless": 3.2},
    "SWE-Gym-7B": {"oracle-edit": 8.4, "agentless": 4.2},
    "SRL": {"oracle-edit": 14.8, "agentless": 8.6},
}
"""Resolve rates in percent, as the paper prints them."""


def published(protocol: str) -> dict[str, Any] | None:
    """The paper's rows for ``protocol`` (None for the agent protocol, which the paper does not report)."""
    if protocol not in COLUMN:
        return None
    rows = [{"model": model, "resolved_pct": cells[protocol]} for model, cells in TABLE5.items()]
    return {"source": SOURCE, "setting": COLUMN[protocol], "status": "published", "rows": rows}


def protocol_summary(records: list[dict]) -> dict[str, Any]:
    """Tokens per instance and in all, instances with a truncated generation, reasons of empty patches, what
    counted the repair input budget (instances per counter)."""
    runs = {r["instance_id"]: r["protocol"] for r in records if r.get("protocol")}
    tokens = {iid: [p["prompt_tokens"], p["completion_tokens"]] for iid, p in runs.items()}
    counted = [t for t in tokens.values() if None not in t]
    return {
        "prompt_tokens": sum(t[0] for t in counted) if counted else None,
        "completion_tokens": sum(t[1] for t in counted) if counted else None,
        "tokens_per_instance": tokens,
        "truncated_instances": sorted(iid for iid, p in runs.items() if p["truncated"]),
        "empty_patch_reasons": dict(Counter(_kind(p["reason"]) for p in runs.values() if p["reason"])),
        "input_budget_counted_with": dict(
            Counter(p["input_budget"]["counted_with"] for p in runs.values() if p.get("input_budget"))
        ),
    }


def _kind(reason: str) -> str:
    return reason.split(":")[0].split(" (")[0]


def published_table(report: dict[str, Any]) -> Table | None:
    """The run's rate with its 95% interval beside the paper's rows for the same protocol."""
    paper = report.get("published")
    if not paper:
        return None
    table = Table(title=f"{paper['setting']}: this run beside the {paper['source']}")
    for column in ("model", "resolved %", "95% CI", "source"):
        table.add_column(column, justify="left" if column in ("model", "source") else "right")
    low, high = report.get("resolved_rate_ci95", (0.0, 1.0))
    table.add_row(
        report["policy"], f"{report['resolved_rate']:.1%}", f"{low:.1%}–{high:.1%}", "measured (this run)"
    )
    for row in paper["rows"]:
        table.add_row(row["model"], f"{row['resolved_pct']:.1f}%", "-", "published")
    return table


def protocol_line(summary: dict[str, Any]) -> str:
    """One line of the protocol summary: tokens, generations cut at the budget, why patches were empty."""
    tokens = (
        "not reported"
        if summary["prompt_tokens"] is None
        else (f"{summary['prompt_tokens']:,} prompt + {summary['completion_tokens']:,} completion")
    )
    reasons = ", ".join(f"{k} ×{n}" for k, n in summary["empty_patch_reasons"].items()) or "none"
    cut = len(summary["truncated_instances"])
    line = f"tokens: {tokens}; instances with a generation cut at the budget: {cut}; empty patches: {reasons}"
    counters = summary.get("input_budget_counted_with") or {}
    return line + "".join(f"; input budget counted with {c.split(' (')[0]}" for c in counters)
