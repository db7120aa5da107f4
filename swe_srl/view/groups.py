"""GRPO groups of a training run: TRL's own completion logs (``--set trl.log_completions=true``), which TRL writes
as ``OUTPUT/completions/completions_<step>.parquet`` at each logged step: one row per completion with its prompt,
its reward per reward function, the extra columns the reward functions log (``SRLReward``: each layer of the reward
as ``<function>/<layer>``, the format error as ``<function>_format_error``) and its advantage."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from swe_srl.errors import ConfigError
from swe_srl.rewards.trl import completion_text

_FILE = re.compile(r"completions_(\d+)\.parquet$")
FIXED = ("step", "prompt", "completion", "advantage")


def completion_steps(run: Path) -> list[int]:
    """The logged steps whose completion log is in ``run/completions/``."""
    folder = Path(run) / "completions"
    if not folder.is_dir():
        return []
    return sorted(int(m.group(1)) for p in folder.iterdir() if (m := _FILE.search(p.name)))


def read_groups(run: Path, step: int) -> list[dict[str, Any]]:
    """Step ``step``'s groups: one per prompt, its completions ranked by reward (best first), each with its reward
    per function, its layers, its format error and its advantage."""
    path = Path(run) / "completions" / f"completions_{step:05d}.parquet"
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ConfigError(f"{path}: reading TRL's completion logs needs pyarrow (the train extra)") from None
    rows = pq.read_table(path).to_pylist()
    groups: dict[str, dict[str, Any]] = {}
    for row in rows:
        prompt = row.get("prompt")
        key = json.dumps(prompt, sort_keys=True, default=str)
        group = groups.setdefault(key, {"prompt": _messages(prompt), "completions": []})
        group["completions"].append(_completion(row))
    out = list(groups.values())
    for group in out:
        group["completions"].sort(key=lambda c: c["reward"], reverse=True)
        rewards = [c["reward"] for c in group["completions"]]
        group["spread"] = max(rewards) - min(rewards) if rewards else 0.0
        group["layer_names"] = sorted({name for c in group["completions"] for name in c["layers"]})
    return out


def _completion(row: dict[str, Any]) -> dict[str, Any]:
    """One completion: reward functions are the numeric columns without a ``/``; layers the ones with one."""
    funcs, layers, notes = {}, {}, {}
    for key, value in row.items():
        if key in FIXED:
            continue
        if isinstance(value, int | float) and not isinstance(value, bool):
            (layers if "/" in key else funcs)[key] = float(value)
        elif value not in (None, ""):
            notes[key] = str(value)
    total = sum(v for v in funcs.values() if v == v)  # NaN (not scored) left out
    return {"text": completion_text(row.get("completion") or ""), "reward": total, "rewards": funcs,
            "layers": {k.split("/", 1)[1]: v for k, v in layers.items()}, "notes": notes,
            "advantage": row.get("advantage")}  # fmt: skip


def _messages(prompt: Any) -> list[dict[str, str]]:
    if isinstance(prompt, list):
        return [{"role": str(m.get("role", "")), "content": _content(m.get("content"))}
                for m in prompt if isinstance(m, dict)]  # fmt: skip
    return [{"role": "prompt", "content": str(prompt)}]


def _content(content: Any) -> str:
    if isinstance(content, list):  # multimodal parts: [{"type": "text", "text": ...}]
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")
