"""The reranking and localization benches of ``bench/agentless_agreement.py`` (``--bench rerank`` and
``--bench localization``), against SWE-RL's own functions loaded from a checkout outside this repository.

Reranking: per instance, a pool of repair answers built from the gold edits (the gold answer; with a comment, a
blank line or a docstring added; a wrong fix; a comment-only edit; a new helper function; an unreadable answer) and
lists of N of them. SWE-RL: each answer post-processed as ``repair.py: post_process_repair`` does, normalized by
``rerank.py: normalize_one_patch`` (``utils/data.py: normalize_patch``), then ``rerank.py: majority_voting`` picks
the patch. Ours: ``run_protocol`` (``--protocol oracle-edit --candidates N``) on the same answers, the whole path
a model's answers take (input budget included). A list agrees when ours chooses a candidate whose SWE-RL patch is
the one SWE-RL chose (both choosing none agrees).

Localization: per instance, answers naming the gold files the ways models write them (fenced, numbered, bulleted,
``./path``, a trailing space, duplicates, inside ``<think>``, ...). SWE-RL: ``localize.py: localize_files`` with a
client that returns the answer (its own prompt building, ``parse_thinking_output`` and ``correct_file_paths``), on
an Agentless structure made of the listing. Ours: ``parse_localization``. An answer agrees when the file lists
are equal, order and repeats included.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import random
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

from rich.progress import track

from swe_srl.agent.policies import ScriptedPolicy
from swe_srl.benchmark.instances import Instance
from swe_srl.core.search_replace import Edit
from swe_srl.eval.protocols.oneshot import run_protocol
from swe_srl.eval.protocols.prompts import parse_localization
from swe_srl.eval.protocols.sources import BaseTree
from swe_srl.eval.settings import EvalSettings


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _first_replace(edits: list[Edit], extra: Callable[[Edit], tuple[str, ...]]) -> list[Edit]:
    e = edits[0]
    return [Edit(e.path, e.search, extra(e)), *edits[1:]]


def _helper(e: Edit, contents: dict[str, str]) -> Edit:
    """An edit appending a new top-level function after the file's last three lines."""
    tail = tuple(contents[e.path].rstrip("\n").split("\n")[-3:])
    return Edit(e.path, tail, (*tail, "", "", "def _added_helper():", "    return None"))


def answer_pool(edits: list[Edit], contents: dict[str, str], solution: Callable[[list[Edit]], str]) -> dict:
    """name → a repair answer (the variants of the gold edits described in the module's docstring)."""
    head = edits[0].replace[0] if edits[0].replace else ""
    pad = _indent(head)
    helper = _helper(edits[-1], contents)
    only_comment = Edit(edits[0].path, edits[0].search, (pad + "# looked at this", *edits[0].search))
    return {
        "gold": solution(edits),
        "gold + comment": solution(_first_replace(edits, lambda e: (pad + "# fixed here", *e.replace))),
        "gold + blank line": solution(_first_replace(edits, lambda e: ("", *e.replace))),
        "gold + docstring": solution(_first_replace(edits, lambda e: (pad + '"""Fixed."""', *e.replace))),
        "gold + helper": solution([*edits, helper]),
        "wrong fix": solution(_first_replace(edits, lambda e: (pad + "_unused = 0", *e.replace))),
        "comment only": solution([only_comment]),
        "helper only": solution([helper]),
        "unreadable": "I cannot fix this.",
    }


def swerl_patch(answer: str, contents: dict[str, str], repair) -> tuple[str, str]:
    """(model_patch, normalized_patch) of ``answer`` as SWE-RL's post-processing and normalization write them."""
    from agentless_agreement import quiet

    with quiet():
        files, _ = repair._post_process_multifile_repair(
            repair.utils.api.parse_thinking_output(answer), contents
        )
        if not files:
            return "", ""
        shown = {f: contents[f] for f in files}
        diff, _, old, edited, new = repair.post_process_raw_output(answer, shown)
        patch = diff.lstrip()
        normal = repair.utils.data.normalize_patch("bench", patch, old, new, edited)
    return patch, normal.strip()


def swerl_choice(samples: list[tuple[str, str]], rerank) -> str:
    """The ``model_patch`` SWE-RL's ``majority_voting`` writes for one instance's samples (no test rankers)."""
    from agentless_agreement import quiet

    rerank.execution_results.clear()
    rerank.execution_results["bench"] = [
        {"normalized_patch": normal, "patch": patch, "regression_test_result": 0,
         "reproduction_test_result": frozenset()}
        for patch, normal in samples
    ]  # fmt: skip
    with tempfile.TemporaryDirectory() as scratch, quiet():
        out = Path(scratch) / "all_preds.jsonl"
        rerank.majority_voting(SimpleNamespace(output_file=str(out), num_samples=len(samples)))
        return json.loads(out.read_text().splitlines()[0])["model_patch"]


def rerank_bench(corpus, repos_dir: Path, lists: int, solution) -> dict[str, Counter]:
    """Per list size: lists, SWE-RL chose a patch, ours (--rerank swe-rl) agrees, ours (--rerank ours) agrees."""
    repair = importlib.import_module("swerl.agentless_mini.repair")
    rerank = importlib.import_module("swerl.agentless_mini.rerank")
    rows: dict[str, Counter] = {}
    for instance, contents, edits in track(corpus, description="rerank"):
        pool = answer_pool(edits, contents, solution)
        theirs = {name: swerl_patch(answer, contents, repair) for name, answer in pool.items()}
        rng = random.Random(instance.instance_id)
        for _ in range(lists):
            names = [rng.choice(list(pool)) for _ in range(rng.choice([2, 3, 4, 5, 8]))]
            chosen = swerl_choice([theirs[n] for n in names], rerank)
            row = rows.setdefault(f"N = {len(names)}", Counter())
            row["lists"] += 1
            row["swe-rl patch"] += bool(chosen)
            for rule in ("swe-rl", "ours"):
                settings = EvalSettings("empty", protocol="oracle-edit", candidates=len(names), rerank=rule,
                                        repos_dir=str(repos_dir))  # fmt: skip
                episode = run_protocol(instance, settings, ScriptedPolicy([pool[n] for n in names]))
                index = episode["protocol"]["chosen"]
                mine = theirs[names[index]][0] if index is not None else ""
                row[rule] += mine == chosen
                if mine != chosen and rule == "swe-rl":
                    row["misses"] += 1
                    print(f"rerank disagrees: {instance.instance_id} {names}", flush=True)
    return rows


class _Client:
    """What ``localize_files`` calls (``utils/api.py: collect_responses_async``): one fixed answer."""

    def __init__(self, text: str) -> None:
        self.text = text

    async def safe_chat_completion(self, request: dict):
        message = SimpleNamespace(content=self.text)
        return SimpleNamespace(choices=[SimpleNamespace(message=message)])


def structure_of(listing: list[str]) -> dict:
    """An Agentless repository structure holding the listed files (no classes, functions or text)."""
    root: dict = {}
    for path in listing:
        *folders, name = path.split("/")
        node = root
        for folder in folders:
            node = node.setdefault(folder, {})
        node[name] = {"classes": [], "functions": [], "text": []}
    return root


def localization_answers(gold: list[str], listing: list[str], rng: random.Random) -> dict[str, str]:
    decoy = rng.choice(listing)
    others = rng.sample(listing, min(6, len(listing)))
    lines = "\n".join
    return {
        "plain lines": lines(gold),
        "``` fence": "```\n" + lines(gold) + "\n```",
        "```python fence": "```python\n" + lines(gold) + "\n```",
        "numbered": lines(f"{k + 1}. {g}" for k, g in enumerate(gold)),
        "bulleted": lines(f"- {g}" for g in gold),
        "backticked": lines(f"`{g}`" for g in gold),
        "./path": lines(f"./{g}" for g in gold),
        "trailing space": lines(f"{g} " for g in gold),
        "indented": lines(f"    {g}" for g in gold),
        "named twice": lines(gold + gold),
        "<think> then <solution>": f"<think>\n{decoy}\n</think>\n<solution>\n```\n{lines(gold)}\n```\n</solution>",
        "unclosed <think>": f"<think>\nmaybe\n{decoy}\n\n" + lines(gold),
        "CRLF": "\r\n".join(gold),
        "with a reason": lines(f"{g}  # the cause" for g in gold),
        "beyond five": lines(gold + others),
        "test and missing paths": lines([*gold, "tests/test_core.py", "src/nowhere.py"]),
        "prose first": "The files to change are:\n" + lines(gold) + "\nThat is all.",
        "comma separated": ", ".join(gold),
        "empty": "",
    }


def localization_bench(instances: list[Instance], repos_dir: Path) -> dict[str, Counter]:
    """Per answer kind: answers, SWE-RL found a file, ours agrees (files, order and repeats)."""
    from agentless_agreement import quiet

    from swe_srl.errors import SweSrlError
    from swe_srl.eval.protocols.sources import oracle_files

    localize = importlib.import_module("swerl.agentless_mini.localize")
    rows: dict[str, Counter] = {}
    for instance in instances:
        with contextlib.suppress(SweSrlError):
            listing = BaseTree(instance, repos_dir).listing()
            gold = [p for p in oracle_files(instance) if p in listing]
            if not gold:
                continue
            structure = structure_of(listing)
            for name, answer in localization_answers(
                gold, listing, random.Random(instance.instance_id)
            ).items():
                args = SimpleNamespace(num_samples=1, model="m", max_tokens=1, temperature=0.0)
                with quiet():
                    found, _ = asyncio.run(localize.localize_files(
                        _Client(answer), asyncio.Semaphore(1), instance.problem_statement, structure, args))  # fmt: skip
                theirs = found[0]
                ours, _ = parse_localization(answer, listing)
                row = rows.setdefault(name, Counter())
                row["answers"] += 1
                row["swe-rl files"] += bool(theirs)
                row["agree"] += ours == theirs
                if ours != theirs:
                    print(
                        f"localization disagrees: {name}: {instance.instance_id}: {ours} vs {theirs}",
                        flush=True,
                    )
    return rows
