"""Renamed training samples, so that a small policy cannot score with names it recalls from the training libraries.

Two forms: renamed copies of the warm-up samples (:func:`renamed_copies`, test names only) and swapped library
names on SRL's training samples (:func:`swapped_libraries`, every name one train library's expert actions write).

The bundled train split has few distinct failing tests (one per task; every expert seed of a task names the same
one), so a small model can recall "the test of this problem" instead of reading it from the issue text. A renamed
copy replaces each test function the problem statement names (``test_get``) by another plausible test name, made
of words from the training texts' own test names (``test_merge_sorted``), everywhere in the sample at once: the
problem statement, the oracle windows, the earlier actions and their observations, and the expert's target action.
The copy is the same trajectory with a renamed test, so the expert's next action is still right for it, and the new
name can only be known by reading it from the prompt.

A swapped sample goes further: every name its library's expert actions write and no other train library's do
(paths, modules, symbols, tests: ``toolz``, ``itertoolz``, ``test_get``) becomes a name of another train library
(``parse``, ``_handle_field``, ``test_bugs``; ``swap_pool=train``) or of the standard library (:func:`pool_names`,
``swap_pool=stdlib``, the default), one to one, in the problem, the oracle windows, the history and the target. GRPO
on such prompts stops paying for the names a small model memorised on the train libraries, which are wrong on a
held-out library; what still pays there is what carries over: the kind of command, its flags, a name
read from the prompt.
"""

from __future__ import annotations

import random
import re
import sysconfig
from collections import defaultdict
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Literal

from swe_srl.train.tiny.slots import GENERIC

SwapPool = Literal["train", "stdlib"]
"""Where a swap draws its new names: ``train`` (another train library's) or ``stdlib`` (:func:`stdlib_names`)."""

TEST_NAME = re.compile(r"(?<![\w.])test_\w+")
"""A test function's name as pytest ids and issue texts write it (``test_get``; ``test_x[param]``: ``test_x``)."""

_PROBLEM = re.compile(r"<problem_statement>(.*?)</problem_statement>", re.S)


def _problem_tests(row: dict) -> list[str]:
    """The test names the row's problem statement mentions, in order of first mention."""
    for message in row["prompt"]:
        match = _PROBLEM.search(str(message["content"]))
        if match:
            return list(dict.fromkeys(TEST_NAME.findall(match.group(1))))
    return []


def name_words(rows: Sequence[dict]) -> list[str]:
    """The words (``merge``, ``sorted``) of every test name the rows' problem statements mention, sorted."""
    return sorted({w for row in rows for name in _problem_tests(row) for w in name[5:].split("_") if w})


def _new_name(rng: random.Random, words: Sequence[str], taken: set[str]) -> str:
    for _ in range(100):
        name = "test_" + "_".join(rng.sample(list(words), rng.randint(1, min(3, len(words)))))
        if name not in taken:
            return name
    raise ValueError("no unused test name left to draw")


def rename_tests(row: dict, rng: random.Random, words: Sequence[str]) -> dict | None:
    """A copy of ``row`` whose problem-statement test names are replaced everywhere but in the system prompt by new
    ones (None when the problem names no test)."""
    olds = _problem_tests(row)
    if not olds or not words:
        return None
    texts = [str(m["content"]) for m in row["prompt"]] + [str(row["expert_action"])]
    taken = set(olds) | {w for text in texts for w in re.findall(r"\w+", text)}
    mapping: dict[str, str] = {}
    for old in olds:
        mapping[old] = _new_name(rng, words, taken)
        taken.add(mapping[old])
    return _renamed(row, mapping, after_dot=False)


def _renamed(row: dict, mapping: dict[str, str], *, after_dot: bool) -> dict:
    """A copy of ``row`` with every whole word in ``mapping`` replaced everywhere but in the system prompt (also
    after a ``.`` when ``after_dot``: ``parse.py``); ``renamed`` holds ``mapping``."""
    left = r"(?<!\w)" if after_dot else r"(?<![\w.])"
    pattern = re.compile(left + "(" + "|".join(map(re.escape, mapping)) + r")(?!\w)")

    def swap(text: str) -> str:
        return pattern.sub(lambda m: mapping[m.group(1)], text)

    prompt = [
        m if m["role"] == "system" else {**m, "content": swap(str(m["content"]))} for m in row["prompt"]
    ]
    return {**row, "prompt": prompt, "expert_action": swap(str(row["expert_action"])), "renamed": mapping}


def renamed_copies(rows: Sequence[dict], copies: int, seed: int = 0) -> list[dict]:
    """``rows`` followed by ``copies`` renamed copies of each row whose problem names a test (words drawn from the
    rows' own test names; deterministic for ``seed``)."""
    if copies <= 0:
        return list(rows)
    rng, words = random.Random(seed), name_words(rows)
    extra = []
    for _ in range(copies):
        for row in rows:
            copy = rename_tests(row, rng, words)
            if copy is not None:
                extra.append(copy)
    return [*rows, *extra]


_NAME = re.compile(r"(?<![\w])[A-Za-z_][A-Za-z0-9_]{2,}(?![\w])")


def repository(row: dict) -> str:
    """The repository part of a row's instance id (``parse__parse-m009`` → ``parse__parse``; "" without one)."""
    return str(row.get("instance_id") or "").rsplit("-", 1)[0]


def library_names(rows: Sequence[dict]) -> dict[str, set[str]]:
    """Per repository, the names (3+ characters, no Python keyword or builtin) its rows' expert actions write and no
    other repository's do: its paths, modules, symbols and tests. Empty with fewer than two repositories (nothing
    tells a library's names from the shell's)."""
    users: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        for name in _NAME.findall(str(row["expert_action"])):
            if name not in GENERIC:
                users[name].add(repository(row))
    if len({repository(row) for row in rows}) < 2:
        return {}
    own: dict[str, set[str]] = defaultdict(set)
    for name, repos in users.items():
        if len(repos) == 1:
            own[next(iter(repos))].add(name)
    return dict(own)


def _is_test(name: str) -> bool:
    return name.lower().startswith("test")


def _present(row: dict) -> set[str]:
    """The names the sample holds anywhere but in the system prompt (no new name may be one of them)."""
    texts = [str(m["content"]) for m in row["prompt"] if m["role"] != "system"] + [str(row["expert_action"])]
    return {w for text in texts for w in _NAME.findall(text)}


def _own_present(row: dict, own: dict[str, set[str]], present: set[str]) -> dict[bool, list[str]]:
    """is_test → the sample's own repository's names it holds, sorted: a test's name is swapped for a test's, any
    other for any other."""
    names = sorted(present & own.get(repository(row), set()))
    return {is_test: [n for n in names if _is_test(n) == is_test] for is_test in (True, False)}


def swap_library_names(row: dict, rng: random.Random, own: dict[str, set[str]]) -> dict:
    """A copy of ``row`` whose own repository's names are replaced everywhere but in the system prompt by names of
    the other repositories (one-to-one, a test's for a test's, none the sample already holds); ``renamed`` maps old to
    new."""
    repo, present = repository(row), _present(row)
    pool = sorted({n for other, names in own.items() if other != repo for n in names} - present)
    rng.shuffle(pool)
    mapping: dict[str, str] = {}
    for is_test, olds in _own_present(row, own, present).items():
        mapping.update(zip(olds, [n for n in pool if _is_test(n) == is_test], strict=False))
    return _renamed(row, mapping, after_dot=True) if mapping else dict(row)


def swapped_libraries(
    rows: Sequence[dict], fraction: float, seed: int = 0, pool: SwapPool = "train"
) -> list[dict]:
    """``rows`` with a share ``fraction`` of them (drawn with ``seed``) replaced by :func:`swap_library_names` copies
    (``pool="stdlib"``: :func:`pool_names` copies): on those, a name recalled from the training libraries is wrong
    and only one read from the prompt is right."""
    if fraction <= 0:
        return list(rows)
    rng, own = random.Random(seed), library_names(rows)
    swap = pool_names if pool == "stdlib" else swap_library_names
    return [swap(row, rng, own) if rng.random() < fraction else dict(row) for row in rows]


_DEF = re.compile(r"^\s*(?:async\s+)?def\s+([A-Za-z_][A-Za-z0-9_]{2,})", re.M)


@lru_cache(maxsize=1)
def stdlib_names() -> dict[bool, tuple[str, ...]]:
    """The running Python's standard library as a pool of plausible names, test names apart (``True``): the
    functions its modules define and the modules themselves (no Python keyword or builtin), sorted."""
    root = Path(sysconfig.get_paths()["stdlib"])
    pool: dict[bool, set[str]] = {True: set(), False: set()}
    for path in sorted(root.rglob("*.py")):
        if "site-packages" in path.parts:
            continue
        names = _DEF.findall(path.read_text(encoding="utf-8", errors="ignore"))
        for name in [*names, path.stem]:
            if len(name) >= 3 and name not in GENERIC and not name.startswith("__"):
                pool[_is_test(name)].add(name)
    return {is_test: tuple(sorted(names)) for is_test, names in pool.items()}


def pool_names(row: dict, rng: random.Random, own: dict[str, set[str]]) -> dict:
    """A copy of ``row`` whose own repository's names are replaced everywhere but in the system prompt by names
    drawn from :func:`stdlib_names` (one-to-one, a test's for a test's, none the sample already holds): an open set,
    so the new name can be neither recalled nor guessed from a short list, only read from the prompt. A pool with
    fewer usable names than the sample's own leaves the rest as they are."""
    present, pools, mapping = _present(row), stdlib_names(), {}
    for is_test, olds in _own_present(row, own, present).items():
        fresh: list[str] = []
        need = min(len(olds), len(set(pools[is_test]) - present))  # a pool too small maps as many as it can
        while len(fresh) < need:
            name = rng.choice(pools[is_test])
            if name not in present and name not in fresh:
                fresh.append(name)
        mapping.update(zip(olds, fresh, strict=False))
    return _renamed(row, mapping, after_dot=True) if mapping else dict(row)


def pooled_copies(rows: Sequence[dict], copies: int, seed: int = 0) -> list[dict]:
    """``rows`` followed by ``copies`` :func:`pool_names` copies of each (fresh names in every copy)."""
    if copies <= 0:
        return list(rows)
    rng, own = random.Random(seed), library_names(rows)
    return [*rows, *(pool_names(row, rng, own) for _ in range(copies) for row in rows)]
