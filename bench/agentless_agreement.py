"""Do our one-generation protocols read a model's answer as SWE-RL's Agentless-mini does? On real files of SWE-bench
Verified instances, the gold patch is written as SEARCH/REPLACE answers bent the ways 7B models bend them (a first
line without its indentation, a bare or ```py fence, ``#### path``, a divider with a trailing space, an unclosed
``<think>``, edits drafted inside ``<think>``, ...). Each answer goes through SWE-RL's own post-processing functions
(``repair.py``: ``_post_process_multifile_repair`` on the ``<solution>`` part for the files, then
``post_process_raw_output`` on the whole output), loaded from a local checkout (``--swerl-dir``, never part of this
repository), and through ours: ``--edit-rules agentless`` (the default) and ``--edit-rules strict`` (the old
behaviour), in the same run. An answer agrees when the edited files are the same, blank lines aside (both empty
counts as agreeing). A reviewer's shapes follow (``bench/agentless_reviewer.py``: edits out of order, a SEARCH
that matches twice, tabs, an unlocalized file, an empty REPLACE or SEARCH, a diff fence, ...), and every answer also
goes through the eval path (``run_protocol``) under an input budget that leaves a file out of the prompt, whose
patch must be the patch of SWE-RL's files (``--no-eval`` skips it).

``--bench rerank`` and ``--bench localization`` (``bench/agentless_rerank_loc.py``) compare our reranking of N
candidate answers and our reading of localization answers with SWE-RL's ``rerank.py: majority_voting`` and
``localize.py: localize_files`` in the same way.

Usage (SWE-RL's modules import openai, tenacity and tiktoken: ``pip install --target DEPS openai tenacity tiktoken``)::

    git clone https://github.com/facebookresearch/swe-rl /tmp/swerl    # outside this repository
    python bench/agentless_agreement.py --swerl-dir /tmp/swerl --swerl-deps DEPS --repos-dir /work/.mirror \
        [--bench repair,rerank,localization] [--instances ID,...] [--limit N] [--fast] [--no-eval]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

from rich.console import Console
from rich.table import Table

from swe_srl.benchmark.instances import Instance, load_instances, select_instances
from swe_srl.core.agentless_edits import (
    empty_search_fits,
    file_commands,
    post_process,
    python_blocks,
    split_command,
)
from swe_srl.core.diff_edits import diff_to_edits
from swe_srl.core.search_replace import DIVIDER, REPLACE, SEARCH, Edit, apply_edits, parse_edits
from swe_srl.errors import SweSrlError
from swe_srl.eval.protocols.sources import BaseTree, oracle_files

DATASET = "/work/shared/data/swebench-verified.jsonl"
THINK = "<think>\nThe issue points at this code; I will change it.\n</think>\n"


def block(edit: Edit, *, fence: str = "python", header: str = "### {path}", divider: str = DIVIDER,
          unindent: bool = False, named: bool = True) -> str:  # fmt: skip
    search, replace = list(edit.search), list(edit.replace)
    if unindent and search and replace:
        search[0], replace[0] = search[0].lstrip(), replace[0].lstrip()
    head = header.format(path=edit.path) + "\n" if named else ""
    body = "".join(line + "\n" for line in search) + divider + "\n" + "".join(line + "\n" for line in replace)
    return f"```{fence}\n{head}{SEARCH}\n{body}{REPLACE}\n```"


def solution(edits: list[Edit], **options) -> str:
    return "<solution>\n" + "\n\n".join(block(e, **options) for e in edits) + "\n</solution>"


def one_fence(edits: list[Edit]) -> str:
    """All edits of a file in one fence, the path on its first edit only."""
    fences = []
    for path in dict.fromkeys(e.path for e in edits):
        bodies = [block(e, named=k == 0)[len("```python\n") : -len("\n```")]
                  for k, e in enumerate(x for x in edits if x.path == path)]  # fmt: skip
        fences.append("```python\n" + "\n".join(bodies) + "\n```")
    return "<solution>\n" + "\n".join(fences) + "\n</solution>"


def short_search(edit: Edit) -> Edit:
    """SEARCH cut to the changed lines (one line of context for a pure insertion): it may match twice."""
    s, r = list(edit.search), list(edit.replace)
    while len(s) > 1 and len(r) > 1 and s[0] == r[0]:
        s, r = s[1:], r[1:]
    while len(s) > 1 and len(r) > 1 and s[-1] == r[-1]:
        s, r = s[:-1], r[:-1]
    return Edit(edit.path, tuple(s), tuple(r)) if "".join(s).strip() else edit


def drafted(edits: list[Edit]) -> str:
    """A first draft of the first edit inside the thinking (a comment added), then the final answer."""
    first = edits[0]
    draft = Edit(first.path, first.search, (*first.replace, "# draft: check this"))
    return f"<think>\nA first try:\n{block(draft)}\nBetter without the comment.\n</think>\n{solution(edits)}"


VARIANTS: dict[str, Callable[[list[Edit]], str]] = {
    "as asked": lambda e: THINK + solution(e),
    "first line unindented": lambda e: THINK + solution(e, unindent=True),
    "bare ``` fence": lambda e: THINK + solution(e, fence=""),
    "```py fence": lambda e: THINK + solution(e, fence="py"),
    "#### path": lambda e: THINK + solution(e, header="#### {path}"),
    "###path (no space)": lambda e: THINK + solution(e, header="###{path}"),
    "# path: prose": lambda e: THINK + solution(e, header="# File: {path}"),
    "./path": lambda e: THINK + solution(e, header="### ./{path}"),
    "divider with trailing space": lambda e: THINK + solution(e, divider=DIVIDER + " "),
    "unclosed <think>, no <solution>": lambda e: "<think>\nLet me write the fix.\n\n" + solution(e)[11:-12],
    "no <solution> tags": lambda e: THINK + solution(e)[11:-12],
    "edits drafted in <think>": drafted,
    "identical draft in <think>": lambda e: f"<think>\n{solution(e)[11:-12]}\n</think>\n{solution(e)}",
    "one fence, path once": one_fence,
    "short SEARCH": lambda e: THINK + solution([short_search(x) for x in e]),
    "unclosed last fence": lambda e: THINK + solution(e)[: -len("\n```\n</solution>")] + "\n</solution>",
    "blank line ending REPLACE": lambda e: (
        THINK + solution([Edit(x.path, x.search, (*x.replace, "")) for x in e])
    ),
    "prose before the path": lambda e: THINK + solution(e, header="Edit this file:\n### {path}"),
    "SEARCH marker with a note": lambda e: THINK + solution(e).replace(SEARCH, SEARCH + " (old code)"),
    "CRLF line breaks": lambda e: (THINK + solution(e)).replace("\n", "\r\n"),
    "text after REPLACE": lambda e: (
        THINK + solution(e).replace(REPLACE + "\n", REPLACE + "\nThat fixes it.\n")
    ),
}


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Silence SWE-RL's prints and its git subprocesses (file descriptors 1 and 2)."""
    saved = [os.dup(1), os.dup(2)]
    with open(os.devnull, "w") as null:
        sys.stdout.flush()
        os.dup2(null.fileno(), 1), os.dup2(null.fileno(), 2)
        try:
            with contextlib.redirect_stdout(null):
                yield
        finally:
            os.dup2(saved[0], 1), os.dup2(saved[1], 2)
            os.close(saved[0]), os.close(saved[1])


def load_swerl(swerl_dir: Path, deps: Path | None, playground: str):
    """SWE-RL's ``repair`` and ``utils.api`` modules from a checkout (its environment variables set as its
    thinking-model runs set them)."""
    os.environ.update(THINKING="yes", PROJECT_FILE_LOC=playground, TOKENIZER_MODEL="unused",
                      PLAYGROUND_DIR=playground, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@b",
                      GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@b")  # fmt: skip
    sys.path.insert(0, str(swerl_dir / "src"))
    if deps:
        sys.path.append(str(deps))
    try:
        return importlib.import_module("swerl.agentless_mini.repair"), importlib.import_module(
            "swerl.agentless_mini.utils.api"
        )
    except ImportError as exc:
        sys.exit(
            f"cannot import SWE-RL from {swerl_dir}: {exc} (pip install --target DEPS openai tenacity tiktoken)"
        )


def swerl_files(answer: str, contents: dict[str, str], repair, api, fast: bool = False) -> dict[str, str]:
    """The files SWE-RL's post-processing edits (empty when it writes no patch, or would run out of memory: an
    empty SEARCH puts the REPLACE between every two characters, past ``EMPTY_SEARCH_LIMIT`` not run)."""
    for path, commands in file_commands(python_blocks(answer)).items():
        pairs = [split_command(c) for c in commands]
        if any(p and not p[0] and not empty_search_fits(contents.get(path, ""), p[1]) for p in pairs):
            return {}  # SWE-RL would fill memory (or write a file that does not parse): no patch
    with quiet(), contextlib.suppress(MemoryError):
        files, _ = repair._post_process_multifile_repair(api.parse_thinking_output(answer), contents)
        if not files:
            return {}
        shown = {f: contents[f] for f in files}
        if fast:  # post_process_raw_output's decision from the same functions, without its git playground
            edited, new = repair._post_process_multifile_repair(answer, shown)
            old = [shown[f] for f in edited]
            data = repair.utils.data
            keep = data.check_syntax(new) and not data.check_code_differ_by_just_empty_lines(new, old)
            return {f: n for f, o, n in zip(edited, old, new, strict=True) if n != o} if keep else {}
        diff, _, old, edited, new = repair.post_process_raw_output(answer, shown)
        return {f: n for f, o, n in zip(edited, old, new, strict=True) if n != o} if diff.strip() else {}
    return {}


def ours(answer: str, contents: dict[str, str], tree: BaseTree, rules: str) -> dict[str, str]:
    if rules == "agentless":
        applied = post_process(answer, contents)
    else:
        parsed = parse_edits(answer)
        if parsed.problem:
            return {}
        applied = apply_edits(parsed.edits, contents, is_test=tree.is_test, creatable=tree.creatable,
                              exactly_once=True)  # fmt: skip
    return {} if applied.problem else applied.new


def squeeze(files: dict[str, str]) -> dict[str, str]:
    return {p: "\n".join(line for line in t.splitlines() if line.strip()) for p, t in files.items()}


def gold_edits(
    instances: list[Instance], repos_dir: Path
) -> Iterator[tuple[Instance, BaseTree, dict, list[Edit]]]:
    """Each instance with a clone: its tree, the oracle files' contents and the gold patch as edits of them."""
    for instance in instances:
        try:
            tree = BaseTree(instance, repos_dir)
        except SweSrlError:
            continue
        contents = tree.contents(oracle_files(instance))
        edits, _ = diff_to_edits(instance.patch, contents)
        edits = [e for e in edits if e.path in contents]
        if edits:
            yield instance, tree, contents, edits


def corpus(instances: list[Instance], repos_dir: Path) -> Iterator[tuple[Instance, BaseTree, dict, str, str]]:
    """Each instance's answers: the kinds above, then a reviewer's shapes (``bench/agentless_reviewer.py``)."""
    from agentless_reviewer import SHAPES, files_of

    for instance, tree, contents, edits in gold_edits(instances, repos_dir):
        for name, make in VARIANTS.items():
            yield instance, tree, contents, name, make(edits)
        files = files_of(tree, contents, instance.patch)
        for name, shape in SHAPES.items():
            yield instance, tree, contents, name, shape(edits, files)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--swerl-dir", type=Path, required=True, help="a checkout of facebookresearch/swe-rl")
    parser.add_argument(
        "--swerl-deps", type=Path, help="a folder with openai, tenacity, tiktoken (pip --target)"
    )
    parser.add_argument("--dataset", default=DATASET)
    parser.add_argument("--repos-dir", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--limit", type=int, default=0, help="instances at most (0: every one with a clone)")
    parser.add_argument("--instances", default="", help="only these instance ids (comma-separated)")
    parser.add_argument(
        "--fast", action="store_true", help="post_process_raw_output's checks without its git diff"
    )
    parser.add_argument("--no-eval", action="store_true",
                        help="repair: skip the eval path under a tight input budget (run_protocol per answer)")  # fmt: skip
    parser.add_argument("--bench", default="repair", help="repair, rerank, localization (comma-separated)")
    parser.add_argument("--lists", type=int, default=4, help="rerank: candidate lists per instance")
    args = parser.parse_args()
    console, started = Console(width=132), time.monotonic()
    with tempfile.TemporaryDirectory() as playground:
        repair, api = load_swerl(args.swerl_dir, args.swerl_deps, playground)
        instances = select_instances(
            load_instances(args.dataset), [i for i in args.instances.split(",") if i]
        )
        benches = set(args.bench.split(","))
        if "localization" in benches or "rerank" in benches:
            others(console, args, instances, benches)
        if "repair" not in benches:
            return
        seen: dict[str, Counter] = {}
        answers = list(corpus(instances, args.repos_dir))
        if args.limit:
            keep = list(dict.fromkeys(a[0].instance_id for a in answers))[: args.limit]
            answers = [a for a in answers if a[0].instance_id in keep]
        misses = repair_bench(console, args, answers, seen, repair, api)
    report(console, seen, misses, len({a[0].instance_id for a in answers}), time.monotonic() - started)


def repair_bench(
    console: Console, args: argparse.Namespace, answers: list, seen: dict, repair, api
) -> list[str]:
    """Each answer through SWE-RL's post-processing and ours (each rule set, and the eval path unless
    ``--no-eval``); counts in ``seen`` per kind; the disagreements, printed as they come."""
    from agentless_reviewer import same_through_eval

    misses: list[str] = []
    for k, (instance, tree, contents, name, answer) in enumerate(answers):
        edited = swerl_files(answer, contents, repair, api, args.fast)
        theirs = squeeze(edited)
        row = seen.setdefault(name, Counter())
        row["answers"] += 1
        row["swe-rl patch"] += bool(theirs)
        found = []
        if not args.no_eval:
            row["eval"] += (same := same_through_eval(instance, answer, contents, edited, args.repos_dir))
            found += [] if same else [f"{name} (eval path, tight budget): {instance.instance_id}"]
        for rules in ("agentless", "strict"):
            same = squeeze(ours(answer, contents, tree, rules)) == theirs
            row[rules] += same
            found += [] if same or rules == "strict" else [f"{name}: {instance.instance_id}"]
        for miss in found:
            console.print(f"disagrees: {miss}", highlight=False)
        misses += found
        if (k + 1) % 500 == 0:
            console.print(f"{k + 1} of {len(answers)} answers, {len(misses)} disagreeing", highlight=False)
    return misses


def others(console: Console, args: argparse.Namespace, instances: list[Instance], benches: set[str]) -> None:
    from agentless_rerank_loc import localization_bench, rerank_bench

    started = time.monotonic()
    if "localization" in benches:
        picked = [i for i, *_ in gold_edits(instances, args.repos_dir)][: args.limit or None]
        rows = localization_bench(picked, args.repos_dir)
        show(console, f"localization answers read as localize.py reads them ({len(picked)} instances)", rows,
             ["answers", "swe-rl files", "agree"])  # fmt: skip
    if "rerank" in benches:
        edits = [(i, c, e) for i, _, c, e in gold_edits(instances, args.repos_dir)][: args.limit or None]
        rows = rerank_bench(edits, args.repos_dir, args.lists, solution)
        show(console, f"the patch chosen among N candidates, as majority_voting ({len(edits)} instances)", rows,
             ["lists", "swe-rl patch", "swe-rl", "ours"])  # fmt: skip
    console.print(f"{time.monotonic() - started:.0f} s", highlight=False)


def show(console: Console, title: str, rows: dict[str, Counter], columns: list[str]) -> None:
    """One table: a row per kind, the first column a count and the others its share."""
    table = Table(title=title)
    table.add_column("kind")
    for column in columns:
        table.add_column(column, justify="right")
    total = Counter()
    for name, row in [*rows.items(), ("all", None)]:
        row = row if row is not None else total
        n = row[columns[0]] or 1
        table.add_row(name, str(row[columns[0]]), *(f"{row[c] / n:.1%}" for c in columns[1:]))
        if name != "all":
            total.update(row)
    console.print(table)


def report(
    console: Console, seen: dict[str, Counter], misses: list[str], instances: int, seconds: float
) -> None:
    table = Table(title=f"same edited files as SWE-RL's post-processing ({instances} Verified instances)")
    columns = ("answer", "n", "SWE-RL patch", "ours (agentless)", "eval path, tight budget", "old (strict)")
    for column in columns:
        table.add_column(column, justify="left" if column == "answer" else "right")
    total = Counter()
    for name, row in [*seen.items(), ("all", None)]:
        row = row if row is not None else total
        n = row["answers"]
        table.add_row(name, str(n), f"{row['swe-rl patch'] / n:.0%}", f"{row['agentless'] / n:.1%}",
                      f"{row['eval'] / n:.1%}" if "eval" in row else "-", f"{row['strict'] / n:.1%}",
                      style="bold" if name == "all" else None)  # fmt: skip
        if name != "all":
            total.update(row)
    console.print(table)
    for miss in misses[:50]:
        console.print(f"disagrees: {miss}", highlight=False)
    console.print(f"{n} answers, {seconds:.0f} s", highlight=False)


if __name__ == "__main__":
    main()
