"""The syntax layer ∈ {0, 1}: the action parses as bash, bash would find every command word, and the Python it
writes or runs inline still parses. The expert's own action always passes (its command words are known).

Command words are judged by ``commands.unknown_commands`` (builtins, functions the action defines, the image's
executables or the default set, harness tools, files earlier steps created, the expert's own words).

Checked Python, without executing anything:

* ``python -c CODE`` and ``python [-] <<EOF`` bodies: the whole code must pass ``ast.parse``.
* whole-file writes into ``*.py``/``*.pyi`` (``cat > f.py <<EOF``, ``echo … > f.py``, ``tee``, editor ``create``):
  the whole text must pass ``ast.parse``.
* partial edits of ``*.py`` (editor ``str_replace``/``insert``, ``sed -i`` ``s///``/``a``/``i``/``c``, ``>>``):
  we cannot see the file, so we use the **fragment rule**: the edit fails when the text it removes is a complete
  Python fragment and the text it puts in its place is not (an insertion counts as removing a complete fragment).
  A *fragment* is complete when, after dedenting, it parses alone, or with ``pass`` completing a trailing block
  header (``def f(x):``), or after a dummy ``if``/``try`` header when it starts with ``elif``/``else``/``except``/
  ``finally``, or under a dummy ``if 1:`` when its first line is indented deeper than the rest. So ``s/f(a)/f(a/``
  and ``s/def f(x):/def f(x)/`` fail, while ``s/foo(/bar(/`` (both sides partial) is undecidable and passes.
  A sed pattern is used only when it is a literal (no ``[``, ``*`` or group/class escapes; ``.`` read as itself,
  ``^``/``$`` anchors dropped); a replacement with back-references ``\\1`` is undecidable and passes.

When the effect layer runs, it checks the edited files themselves with :func:`check_python_files`.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Callable, Iterable
from functools import lru_cache

from swe_srl.rewards.bash.parse import parse_shell
from swe_srl.rewards.commands import unknown_commands
from swe_srl.rewards.context import StepContext
from swe_srl.rewards.edits import Edit, command_edits, is_python_path, python_code
from swe_srl.rewards.similarity import normalize_ws

_CONTINUATION = re.compile(r"^(elif|else|except|finally)\b")
_BACKREF = re.compile(r"\\[1-9]")


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


@lru_cache(maxsize=16384)
def fragment_parses(code: str) -> bool:
    """Whether ``code`` is a complete Python fragment (see the module docstring for the exact variants tried)."""
    text = textwrap.dedent(code.strip("\n"))
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return True
    candidates = [text]
    if lines[-1].rstrip().endswith(":"):
        indent = len(lines[-1]) - len(lines[-1].lstrip())
        candidates.append(text + "\n" + " " * (indent + 4) + "pass")
    head = lines[0].lstrip()
    if _CONTINUATION.match(head):
        opener = "try:\n pass\n" if head.startswith(("except", "finally")) else "if 1:\n pass\n"
        candidates += [opener + c for c in candidates]
    if lines[0][:1].isspace():  # first line deeper than a later one
        candidates += ["if 1:\n" + c for c in candidates]
    return any(_parses(c) for c in candidates)


def sed_literal(pattern: str, extended: bool = False) -> str | None:
    """The text a sed regex matches when it is a literal (``.`` read as itself), else None."""
    p = pattern[1:] if pattern.startswith("^") else pattern
    p = p[:-1] if p.endswith("$") and not p.endswith("\\$") else p
    out: list[str] = []
    i = 0
    while i < len(p):
        c = p[i]
        if c == "\\" and i + 1 < len(p):
            nxt = p[i + 1]
            if nxt in "nt":
                out.append("\n" if nxt == "n" else "\t")
            elif nxt.isalnum() or (not extended and nxt in "(){}+?|"):
                return None
            else:
                out.append(nxt)
            i += 2
            continue
        if c in "[*" or (extended and c in "()+?{}|"):
            return None
        out.append(c)
        i += 1
    return "".join(out)


def sed_replacement(replacement: str, matched: str) -> str | None:
    """The text a sed replacement inserts (``&`` → the match), or None when it uses back-references."""
    if _BACKREF.search(replacement):
        return None
    out: list[str] = []
    i = 0
    while i < len(replacement):
        c = replacement[i]
        if c == "\\" and i + 1 < len(replacement):
            nxt = replacement[i + 1]
            out.append({"n": "\n", "t": "\t"}.get(nxt, nxt))
            i += 2
            continue
        out.append(matched if c == "&" else c)
        i += 1
    return "".join(out)


def edit_problem(edit: Edit) -> str | None:
    """Why an edit of a Python file leaves invalid Python, or None (also when undecidable or not Python)."""
    if not is_python_path(edit.path):
        return None
    if edit.kind == "write":
        return None if _parses(edit.new) else f"{edit.path}: written content is not valid Python"
    old, new = edit.old, edit.new
    if edit.regex and old is not None:
        old = sed_literal(old, edit.extended)
        new = sed_replacement(new, old) if old is not None else None
        if old is None or new is None:
            return None
    if (old is None or fragment_parses(old)) and not fragment_parses(new):
        return f"{edit.path}: edit replaces valid Python with {new[:60]!r}, which does not parse"
    return None


def syntax_problems(action: str, ctx: StepContext | None = None) -> list[str]:
    """Every syntax problem of an action (empty list: valid); ``ctx``: the step's known commands and files."""
    parsed = parse_shell(action)
    problems = [f"bash: {parsed.error}"] if parsed.has_error else []
    problems.extend(f"{word}: command not found" for word in unknown_commands(action, ctx))
    for cmd in parsed.commands:
        code = python_code(cmd)
        if code is not None and not _parses(code):
            problems.append(f"{cmd.name}: inline Python does not parse")
        problems.extend(p for e in command_edits(cmd) if (p := edit_problem(e)) is not None)
    return problems


@lru_cache(maxsize=16384)
def syntax_score(action: str, ctx: StepContext | None = None) -> float:
    """1.0 when the action parses as bash, every command word is known and all Python it writes parses, else 0.0."""
    return 0.0 if syntax_problems(action, ctx) else 1.0


def syntax_layer(ctx: StepContext) -> float:
    """The syntax layer of one step: 1.0 for the expert's own action, else :func:`syntax_score` in its context."""
    if normalize_ws(ctx.action) == normalize_ws(ctx.expert_action):
        return 1.0
    return syntax_score(ctx.action, ctx)


def edited_python_paths(action: str) -> list[str]:
    """The ``*.py`` files an action edits (normalized, relative to the repo root), for the effect layer."""
    paths = [e.path for cmd in parse_shell(action).commands for e in command_edits(cmd)]
    return list(dict.fromkeys(p for p in paths if is_python_path(p)))


def check_python_files(sandbox_read: Callable[[str], bytes], paths: Iterable[str]) -> list[str]:
    """Parse each ``*.py`` path after execution; return ``"path:line: message"`` per broken file (deleted = fine)."""
    problems: list[str] = []
    for path in paths:
        if not is_python_path(path):
            continue
        try:
            source = sandbox_read(path)
        except FileNotFoundError:
            continue
        try:
            ast.parse(source, filename=path)
        except SyntaxError as exc:
            problems.append(f"{path}:{exc.lineno}: {exc.msg}")
        except (ValueError, RecursionError) as exc:
            problems.append(f"{path}: {exc}")
    return problems
