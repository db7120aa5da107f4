"""Reward throughput: syntax+semantic pairs/s on one core vs plain SequenceMatcher (the paper's reward), same run.

~200 typical (expert, policy) action pairs are generated here: location (grep/rg/find/cat/sed -n/editor view),
edits (sed -i, editor str_replace/create, heredocs), test runs, inline Python, near-misses and unrelated pairs.
Each repetition gives every policy action a unique trailing comment, so policy-side parses are never cache hits
(as in GRPO, where completions are new), while the expert side is cached (it repeats across a group).

    python bench/rewards.py [--seconds 3] [--no-effect]

Then, unless --no-effect, the effect layer's evaluations/s cold vs cached (bench/effect.py; needs Docker and builds
the bundled suite's scripted trajectories on first use).
"""

from __future__ import annotations

import argparse
import random
import time
from difflib import SequenceMatcher

from swe_srl.rewards.semantic import semantic_similarity
from swe_srl.rewards.similarity import normalize_ws
from swe_srl.rewards.syntax import syntax_score

PKGS = ["astropy/io", "django/db/models", "sympy/core", "requests", "flask", "xarray/core", "sklearn/utils"]
MODS = ["base", "utils", "fields", "query", "sessions", "expr", "validation"]
FUNCS = ["parse", "resolve", "_check", "to_python", "merge", "simplify", "get_params"]


def _actions(rng: random.Random) -> list[str]:
    pkg, mod, fn = rng.choice(PKGS), rng.choice(MODS), rng.choice(FUNCS)
    path, n = f"{pkg}/{mod}.py", rng.randint(1, 400)
    return [
        f"grep -rn 'def {fn}' {pkg}/",
        f"rg -n '{fn}\\(' {pkg} --type py",
        f"find {pkg.split('/')[0]} -name '*{mod}*.py' -not -path '*/tests/*'",
        f"cat {path}",
        f"sed -n '{n},{n + 40}p' {path}",
        f"str_replace_editor view /testbed/{path} --view_range {n} {n + 30}",
        f"cd /testbed && nl -ba {path} | sed -n '{n},{n + 20}p'",
        f"sed -i 's/return {fn}(value)/return {fn}(value, strict=True)/' {path}",
        f"str_replace_editor str_replace /testbed/{path} --old_str '    if value is None:\n        return None'"
        f" --new_str '    if value is None or value == \"\":\n        return None'",
        f"cat > reproduce.py <<'EOF'\nfrom {pkg.replace('/', '.')}.{mod} import {fn}\nprint({fn}('x'))\nEOF",
        "python reproduce.py",
        f"python -c 'from {pkg.replace('/', '.')} import {mod}; print({mod}.{fn}(1))'",
        f"python -m pytest tests/test_{mod}.py::Test{fn.title().strip('_')}::test_{fn.strip('_')} -x -q",
        f"pytest tests/test_{mod}.py -k {fn.strip('_')} 2>&1 | tail -20",
        "git diff",
        "submit",
    ]


def _variant(action: str, rng: random.Random) -> str:
    """A plausible policy answer: the same, a near-miss, a sibling command, or something unrelated."""
    roll = rng.random()
    if roll < 0.25:
        return action
    if roll < 0.5:
        return (
            action.replace("-rn", "-nr").replace("cat ", "head -n 80 ").replace("strict=True", "strict=False")
        )
    if roll < 0.7:
        return (
            action.replace("grep -rn", "rg -n").replace("python -m pytest", "pytest").replace("/testbed/", "")
        )
    if roll < 0.85:
        return action.replace(".py", "s.py", 1)
    return rng.choice(["ls -la", "git status", "pip install -e .", "echo done", 'echo "broken'])


def make_pairs(n: int = 200, seed: int = 0) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    pairs: list[tuple[str, str]] = []
    while len(pairs) < n:
        for expert in _actions(rng):
            pairs.append((expert, _variant(expert, rng)))
    return pairs[:n]


def _rate(fn, pairs: list[tuple[str, str]], seconds: float) -> float:
    """Pairs per CPU-second of this process (per core, robust to other load on a shared machine)."""
    done, rep = 0, 0
    wall, cpu = time.perf_counter(), time.process_time()
    while time.perf_counter() - wall < seconds:
        rep += 1
        for expert, action in pairs:
            fn(expert, f"{action} # r{rep}")  # unique policy text: no cache hits on the policy side
        done += len(pairs)
    return done / max(time.process_time() - cpu, 1e-9)


def ours(expert: str, action: str) -> float:
    return 0.375 * syntax_score(action) + 0.625 * semantic_similarity(expert, action)


def paper(expert: str, action: str) -> float:
    return SequenceMatcher(None, normalize_ws(expert), normalize_ws(action)).ratio()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="Wall time per measurement.")
    parser.add_argument("--no-effect", action="store_true", help="Skip the effect layer (Docker) figures.")
    args = parser.parse_args()
    pairs = make_pairs()
    _rate(ours, pairs[:20], 0.2)  # warm up imports and the expert-side cache
    ours_rate, paper_rate = _rate(ours, pairs, args.seconds), _rate(paper, pairs, args.seconds)
    print(
        f"{len(pairs)} typical action pairs, pairs per CPU-second of one process, {args.seconds:g}s wall each"
    )
    print(f"  syntax+semantic (tree-sitter + AST): {ours_rate:10,.0f} pairs/s   target >= 5,000")
    print(f"  SequenceMatcher (paper baseline):    {paper_rate:10,.0f} pairs/s")
    print(f"  ratio ours/baseline: {ours_rate / paper_rate:.2f}")
    if not args.no_effect:
        import sys

        import effect  # bench/effect.py, next to this script

        sys.argv = sys.argv[:1]
        effect.main()


if __name__ == "__main__":
    main()
