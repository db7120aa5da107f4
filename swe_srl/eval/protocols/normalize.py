"""The key SWE-RL's reranking votes with (``--rerank swe-rl``, the default): a candidate's patch normalized as
``rerank.py: normalize_one_patch`` normalizes it (``utils/data.py: normalize_patch``), written here from reading it.

For each edited file, in the order the answer edits them: the old and the new text put through ``ast.unparse``
(kept as they are when they do not parse), then stripped of comments and docstrings by a token walk (kept unstripped,
both, when either result no longer parses); their ``git diff`` in a scratch repository at the file's path (``index``
line, hunk headers and all); when the change only adds functions, the diff's ``+``/``-`` lines alone. The key is the
files' diffs concatenated, stripped; empty for an empty patch, so that it never wins.
"""

from __future__ import annotations

import ast
import functools
import io
import os
import subprocess
import tempfile
import tokenize
from collections.abc import Mapping
from pathlib import Path

from swe_srl.errors import SweSrlError

_GIT_ENV = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C"}


def swerl_key(old: Mapping[str, str], new: Mapping[str, str]) -> str:
    """The normalized patch of the edits ``old`` → ``new`` (path → text, in the order edited), stripped."""
    diffs = []
    for path, text in new.items():
        before, after = _unparsed(old[path]), _unparsed(text)
        try:
            bare_before, bare_after = (
                strip_comments_and_docstrings(before),
                strip_comments_and_docstrings(after),
            )
            ast.parse(bare_before), ast.parse(bare_after)
        except (SyntaxError, ValueError, tokenize.TokenError, IndentationError, RecursionError, MemoryError):
            bare_before, bare_after = before, after
        diff = git_diff(path, bare_before, bare_after)
        if _adds_functions(bare_before, bare_after):
            diff = "\n".join(line for line in diff.splitlines() if line.startswith(("-", "+")))
        diffs.append(diff)
    return "".join(diffs).strip()


@functools.lru_cache(maxsize=32)  # the candidates of one instance share their base files
def _unparsed(text: str) -> str:
    try:
        return ast.unparse(ast.parse(text))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return text


@functools.lru_cache(maxsize=32)
def strip_comments_and_docstrings(source: str) -> str:
    """``source`` without comments and without the string tokens that stand as statements (one at column 0, or
    the first token after an indent or a logical line's end), blank lines dropped; other tokens keep their
    columns."""
    out: list[str] = []
    previous, last_line, last_col = tokenize.INDENT, -1, 0
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        (line, col), (end_line, end_col) = token.start, token.end
        if line > last_line:
            last_col = 0
        if col > last_col:
            out.append(" " * (col - last_col))
        if token.type == tokenize.STRING:
            if previous not in (tokenize.INDENT, tokenize.NEWLINE) and col > 0:
                out.append(token.string)
        elif token.type != tokenize.COMMENT:
            out.append(token.string)
        previous, last_line, last_col = token.type, end_line, end_col
    return "\n".join(line for line in "".join(out).splitlines() if line.strip())


def _functions(tree: ast.AST) -> dict[str, str]:
    """name → source of the functions outside classes (nested ones too, by their own name) and ``Class.name`` →
    source of each class's own methods."""
    found: dict[str, str] = {}

    def walk(node: ast.AST, in_class: bool) -> None:
        for child in ast.iter_child_nodes(node):
            is_function = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if is_function and not in_class:
                found[child.name] = ast.unparse(child)
            walk(child, in_class or isinstance(child, ast.ClassDef))

    def methods(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                for item in child.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        found[f"{child.name}.{item.name}"] = ast.unparse(item)
            methods(child)

    walk(tree, False)
    methods(tree)
    return found


def only_adds_functions(before: str, after: str) -> bool:
    """Whether ``after`` keeps every function of ``before`` unchanged and adds at least one (raises on code that
    does not parse, as the rule does)."""
    old, new = _functions(ast.parse(before)), _functions(ast.parse(after))
    if set(old) - set(new) or any(old[name] != new[name] for name in old):
        return False
    return bool(set(new) - set(old))


def _adds_functions(before: str, after: str) -> bool:
    try:
        return only_adds_functions(before, after)
    except (
        SyntaxError,
        ValueError,
        RecursionError,
        MemoryError,
    ):  # a base file that never parsed: SWE-RL stops
        return False


def git_diff(path: str, before: str, after: str) -> str:
    """``git diff`` of ``path`` from ``before`` to ``after`` as a fresh repository shows it (git's defaults: no
    user or system configuration)."""
    env = {**os.environ, **_GIT_ENV}
    with tempfile.TemporaryDirectory(prefix="swe-srl-normalize-") as scratch:
        file = Path(scratch) / path
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(before, encoding="utf-8")
        for args in (["init", "-q"], ["add", "--", path]):
            _git(scratch, args, env)
        file.write_text(after, encoding="utf-8")
        return _git(scratch, ["diff", "--no-color", "--no-ext-diff", "."], env)


def _git(cwd: str, args: list[str], env: dict[str, str]) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, check=False)
    if proc.returncode != 0:
        why = proc.stderr.decode(errors="replace").strip()
        raise SweSrlError(f"git {' '.join(args)} in a scratch repository failed: {why}")
    return proc.stdout.decode("utf-8", errors="replace")
