"""Several samples of one instance (``--candidates N`` > 1), drawn as SWE-RL draws them: each localization and repair
prompt randomized (``localize.py: localize_files``, ``repair.py: construct_topn_file_context`` with ``randomize``),
and the repairs spread over the distinct localizations (``repair.py: process_loc``)."""

from __future__ import annotations

import random


def sample_rng(instance_id: str, samples: int, what: str, k: int) -> random.Random | None:
    """The randomness of sample ``k`` of ``what`` (``localization`` | ``repair``), seeded by the instance and the
    sample so that a rerun asks the same (SWE-RL's is unseeded); None for a single sample, which is not
    randomized."""
    return random.Random(f"{instance_id}:{what}:{k}") if samples > 1 else None


def repair_plan(found: list[list[str]], n: int) -> list[int]:
    """Which localization each of the ``n`` repairs takes (indices into ``found``), as SWE-RL's ``repair.py:
    process_loc`` picks them: the non-empty file lists, each distinct list (order and repeats count) once, at most
    ``n``, cycled to ``n``; empty when every list is empty."""
    first: dict[tuple[str, ...], int] = {}
    for k, files in enumerate(found):
        if files:
            first.setdefault(tuple(files), k)
    picked = list(first.values())[:n]
    return [picked[k % len(picked)] for k in range(n)] if picked else []
