"""RLVR rollout benchmark: episodes per minute with ``--parallel`` episodes at once vs one at a time, in one run.

Both settings play the same episodes (the first ``--n`` train-split instances of the suite, cycled to
``--episodes``) with the same policy: the tiny default model (built here as ``swe-srl train`` builds it, or
``--init`` a checkpoint), sampled at temperature 1, ``--max-turns`` turns of ``--max-new-tokens`` tokens, through
:class:`swe_srl.train.rlvr.EnvEpisodeRunner` (one env per parallel episode, stepped in threads; one batched
``generate`` call per turn for all live episodes, as ``--stage rlvr`` trains).

    python bench/rlvr.py [--dataset bundled] [--episodes 8] [--parallel 4] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from swe_srl.benchmark.instances import load_instances


def policy(init: str | None, workdir: Path):
    """The checkpoint ``init``, else the tiny default ``swe-srl train`` builds (format warm-up on the bundled
    suite's expert steps; plain, not slotted: RLVR episodes show plain text), saved under ``workdir``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if init is None:
        from swe_srl.train.config import load_config, start_of
        from swe_srl.train.data import read_samples, split_rows
        from swe_srl.train.samples import default_sample_set

        config = load_config(None, ["tiny.slots=false"], output=str(workdir))  # episodes are plain text
        samples = default_sample_set(False, expert_seeds=config.expert_seeds)
        rows, _ = split_rows(read_samples(samples.path), config.test_fraction)
        init = start_of(config).model_path(config, rows)
    return AutoTokenizer.from_pretrained(init), AutoModelForCausalLM.from_pretrained(init).eval()


def measure(parallel: int, ids: list[str], instances: list, tok, model, args) -> dict:
    from swe_srl.agent.models import generate_ids
    from swe_srl.train.policy import think_prefix
    from swe_srl.train.rlvr import EnvEpisodeRunner

    sizes: list[int] = []
    spent = [0.0]

    def generate(batch):
        sizes.append(len(batch))
        start = time.perf_counter()
        turns = generate_ids(model, tok, batch, args.max_new_tokens, temperature=1.0)
        spent[0] += time.perf_counter() - start
        return turns

    runner = EnvEpisodeRunner(
        tok, instances, max_turns=args.max_turns, think_prefix=think_prefix(tok), parallel=parallel
    )
    try:
        start = time.perf_counter()
        rollouts = runner.run_batch([{"instance_id": i} for i in ids], generate)
        wall = time.perf_counter() - start
    finally:
        runner.close()
    return {
        "parallel": parallel,
        "episodes": len(rollouts),
        "wall_s": round(wall, 2),
        "episodes_per_min": round(len(rollouts) / wall * 60, 2),
        "generate_calls": len(sizes),
        "max_batch": max(sizes, default=0),
        "generate_s": round(spent[0], 2),
        "turns": sum(r.info.get("turns", 0) for r in rollouts),
        "infra_errors": sum(r.reward is None for r in rollouts),
    }


def combine(runs: list[dict]) -> dict:
    """The rounds of one setting as one: counts and seconds summed, episodes per minute over the total."""
    total = {
        k: sum(r[k] for r in runs) for k in runs[0] if k not in ("parallel", "max_batch", "episodes_per_min")
    }
    total = {k: round(v, 2) if isinstance(v, float) else v for k, v in total.items()}
    rounds = [r["episodes_per_min"] for r in runs]
    return {
        "parallel": runs[0]["parallel"],
        "max_batch": max(r["max_batch"] for r in runs),
        "episodes_per_min": round(total["episodes"] / total["wall_s"] * 60, 2),
        "rounds_episodes_per_min": rounds,
        **total,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="bundled")
    parser.add_argument("--n", type=int, default=4, help="distinct train instances")
    parser.add_argument("--episodes", type=int, default=8, help="episodes per setting")
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--max-turns", type=int, default=3)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument(
        "--repeats", type=int, default=2, help="rounds, the settings alternating (load drifts)"
    )
    parser.add_argument("--init", help="a checkpoint to play (default: the tiny model, built here)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    instances = [i for i in load_instances(args.dataset) if i.split == "train"][: args.n]
    ids = [instances[k % len(instances)].instance_id for k in range(args.episodes)]
    settings = (1, args.parallel)
    with tempfile.TemporaryDirectory(prefix="swe-srl-bench-rlvr-") as workdir:
        tok, model = policy(args.init, Path(workdir))
        runs = [measure(p, ids, instances, tok, model, args) for _ in range(args.repeats) for p in settings]
    rows = [combine([r for r in runs if r["parallel"] == p]) for p in settings]
    one, many = rows
    speedup = many["episodes_per_min"] / one["episodes_per_min"] if one["episodes_per_min"] else float("nan")
    print(
        f"{args.episodes} episodes x {args.repeats} rounds on {len(instances)} {args.dataset} instances, {args.max_turns} turns each"
    )
    print(f"  {'parallel':>8} {'episodes/min':>12} {'wall s':>8} {'generate calls':>14} {'generate s':>10}")
    for row in rows:
        print(
            f"  {row['parallel']:>8} {row['episodes_per_min']:>12.2f} {row['wall_s']:>8.1f}"
            f" {row['generate_calls']:>14} {row['generate_s']:>10.1f}"
        )
    print(f"speedup {speedup:.2f}x")
    if args.json:
        args.json.write_text(json.dumps({"results": rows, "speedup": round(speedup, 2)}, indent=2) + "\n")


if __name__ == "__main__":
    main()
