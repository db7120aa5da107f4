"""The evaluation report (``report.json``) and its rich summary table, built from per-instance records."""

from __future__ import annotations

import math
import subprocess
from collections import Counter, defaultdict
from functools import cache
from pathlib import Path
from typing import Any

from rich.table import Table

from swe_srl import __version__

ERROR = "error"
INTERRUPTED = "interrupted"
"""In flight when the run was stopped (Ctrl-C, SIGTERM): a resume runs it again."""
NO_PREDICTION = "no_prediction"
"""``--policy predictions:FILE``: the file has no patch for this instance of the dataset."""
UNGRADED = (ERROR, INTERRUPTED, NO_PREDICTION)
"""Statuses without a verdict: not predictions, not in the graded rate; a resume runs them again."""
GENERATED = "generated"
"""``--no-grade``: the patch is a prediction, not graded (``--policy predictions:FILE`` grades it later)."""


def _rate(part: int | float, whole: int | float) -> float:
    return part / whole if whole else 0.0


def wilson_interval(successes: int, total: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a proportion (95% for ``z=1.96``); ``(0.0, 1.0)`` when ``total`` is 0."""
    if total <= 0:
        return 0.0, 1.0
    p, z2 = successes / total, z * z
    centre = (p + z2 / (2 * total)) / (1 + z2 / total)
    half = z * math.sqrt(p * (1 - p) / total + z2 / (4 * total * total)) / (1 + z2 / total)
    return max(0.0, centre - half), min(1.0, centre + half)


@cache
def git_sha() -> str | None:
    """The commit of the swe-srl checkout this code runs from (None for a wheel or without git)."""
    try:
        proc = subprocess.run(["git", "-C", str(Path(__file__).resolve().parent), "rev-parse", "HEAD"],
                              capture_output=True, text=True, timeout=10)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return (proc.stdout.strip() or None) if proc.returncode == 0 else None


def provenance(records: list[dict]) -> dict[str, Any]:
    """swe-srl version and git SHA, and per instance the image graded on (tag, id, digests, source, Python); the ids
    graded on another minor Python than their spec's (``approximate_python``)."""
    images = {r["instance_id"]: r["image"] for r in records if r.get("image")}
    return {
        "swe_srl_version": __version__,
        "git_sha": git_sha(),
        "image_sources": sorted({str(i.get("image_source")) for i in images.values()}),
        "pythons": sorted({str(i.get("python")) for i in images.values()}),
        "approximate_python_ids": sorted(iid for iid, i in images.items() if i.get("approximate_python")),
        "images": images,
    }


def _per_repo(records: list[dict]) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[dict]] = defaultdict(list)
    for record in records:
        groups[record.get("repo", "?")].append(record)
    table = {}
    for repo, group in sorted(groups.items()):
        resolved = sum(r["status"] == "resolved" for r in group)
        table[repo] = {
            "total": len(group),
            "resolved": resolved,
            "resolved_rate": _rate(resolved, len(group)),
        }
    return table


def build_report(records: list[dict], *, policy: str, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """Resolved % overall (over every instance, infra errors, interrupted instances and missing predictions counted
    as unresolved) and per repo, mean steps and format-error rate (over episodes), exit reasons, infra errors
    listed apart, the ids of interrupted instances and of missing predictions, and each instance's status; the
    resolved rate's 95% Wilson interval and the provenance (swe-srl version, git SHA, images per instance)."""
    statuses = Counter(r["status"] for r in records)
    episodes = [r for r in records if r.get("exit_reason") not in (None, "direct")]
    calls = sum(r.get("steps", 0) for r in episodes)
    format_errors = sum(r.get("format_errors", 0) for r in episodes)
    errors = [{"instance_id": r["instance_id"], "exit_reason": r.get("exit_reason"), "error": r.get("error")}
              for r in records if r["status"] == ERROR]  # fmt: skip
    graded = sum(r["status"] not in (*UNGRADED, GENERATED) for r in records)
    return {
        "policy": policy,
        **(meta or {}),
        "total": len(records),
        "resolved": statuses["resolved"],
        "resolved_rate": _rate(statuses["resolved"], len(records)),
        "resolved_rate_graded": _rate(statuses["resolved"], graded),
        "resolved_rate_ci95": list(wilson_interval(statuses["resolved"], len(records))),
        "provenance": provenance(records),
        "per_repo": _per_repo(records),
        "mean_steps": _rate(calls, len(episodes)),
        "format_errors": format_errors,
        "format_error_rate": _rate(format_errors, calls),
        "statuses": dict(statuses),
        "exit_reasons": dict(Counter(r.get("exit_reason") for r in records)),
        "errors": errors,
        "resolved_ids": _ids(records, "resolved"),
        "interrupted_ids": _ids(records, INTERRUPTED),
        "no_prediction_ids": _ids(records, NO_PREDICTION),
        "per_instance": {r["instance_id"]: r["status"] for r in records},
        "instances": {
            r["instance_id"]: {key: r.get(key) for key in ("status", "exit_reason", "steps", "format_errors")}
            for r in records
        },
    }


def _ids(records: list[dict], status: str) -> list[str]:
    return sorted(r["instance_id"] for r in records if r["status"] == status)


def summary_tables(report: dict[str, Any], title: str) -> list:
    """Two rich tables: the overall figures, then resolved % per repo."""

    overall = Table(title=title)
    for column in ("instances", "resolved", "rate", "95% CI", "mean steps", "format errors", "infra errors"):
        overall.add_column(column, justify="right")
    overall.add_row(
        str(report["total"]),
        str(report["resolved"]),
        f"{report['resolved_rate']:.1%}",
        "{:.1%}–{:.1%}".format(*report.get("resolved_rate_ci95", (0.0, 1.0))),
        f"{report['mean_steps']:.1f}",
        f"{report['format_error_rate']:.1%}",
        str(len(report["errors"])),
    )
    repos = Table(title="per repository")
    for column in ("repo", "instances", "resolved", "rate"):
        repos.add_column(column, justify="left" if column == "repo" else "right")
    for repo, row in report["per_repo"].items():
        repos.add_row(repo, str(row["total"]), str(row["resolved"]), f"{row['resolved_rate']:.1%}")
    return [overall, repos]
