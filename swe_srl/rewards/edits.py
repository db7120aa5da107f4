"""What a bash action writes: file edits (sed -i, editor tools, heredoc/echo redirects, ``python -c`` writes) and
inline Python.

Shared by the syntax layer (does the written Python still parse?) and the semantic layer (is it the same edit?).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import lru_cache

from swe_srl.rewards.bash.parse import ShellCommand

PYTHONS = frozenset({"python", "python3", "python2", "pypy3"} | {f"python3.{m}" for m in range(6, 15)})
EDITOR = "str_replace_editor"
_MULTI_SLASH = re.compile(r"/{2,}")
_FILE_NAME = re.compile(r"^[\w./-]+\.\w+$")
_WRITERS = frozenset({"write_text", "write", "writelines"})


@dataclass(frozen=True)
class Edit:
    """One file edit. ``kind``: replace (sed s///, editor str_replace), write (create, ``> f``), insert/append."""

    kind: str
    path: str
    old: str | None  # text replaced (a sed pattern stays a pattern; see sed_literal)
    new: str
    regex: bool = False  # old is a sed regex, new a sed replacement
    extended: bool = False  # sed -E / -r


def normalize_path(path: str) -> str:
    """``./a`` → ``a``, ``/testbed/a`` → ``a``, ``a/`` → ``a``, ``a//b`` → ``a/b``; ``""``/``/testbed`` → ``.``."""
    p = _MULTI_SLASH.sub("/", path.strip().strip("'\""))
    for prefix in ("/testbed/", "./"):
        while p.startswith(prefix):
            p = p[len(prefix) :]
    if p in ("", "/testbed", "."):
        return "."
    return p.rstrip("/") or "/"


def editor_call(args: tuple[str, ...]) -> tuple[str, str, dict[str, str]]:
    """``str_replace_editor <command> <path> [--key value...]`` → (command, normalized path, options)."""
    command = args[0] if args else ""
    path = normalize_path(args[1]) if len(args) > 1 else "."
    options: dict[str, str] = {}
    i = 2
    while i < len(args):
        key, eq, value = args[i].partition("=")
        if not key.startswith("--"):
            i += 1
        elif eq:
            options[key[2:]] = value
            i += 1
        else:
            arity = 2 if key == "--view_range" else 1
            options[key[2:]] = " ".join(args[i + 1 : i + 1 + arity])
            i += 1 + arity
    return command, path, options


def sed_call(args: tuple[str, ...]) -> tuple[bool, bool, bool, list[str], list[str]]:
    """sed argv → (in_place, quiet -n, extended -E/-r, scripts, files)."""
    in_place = quiet = extended = False
    scripts: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-e", "--expression") and i + 1 < len(args):
            scripts.append(args[i + 1])
            i += 1
        elif arg.startswith("--in-place") or (arg.startswith("-i") and not arg.startswith("--")):
            in_place = True
        elif arg.startswith("-") and not arg.startswith("--") and len(arg) > 1:
            quiet |= "n" in arg
            extended |= "E" in arg or "r" in arg
            in_place |= "i" in arg
        elif arg in ("--quiet", "--silent"):
            quiet = True
        elif arg == "--regexp-extended":
            extended = True
        else:
            rest.append(arg)
        i += 1
    if not scripts and rest:
        scripts, rest = [rest[0]], rest[1:]
    return in_place, quiet, extended, scripts, [normalize_path(f) for f in rest]


def _read_delimited(script: str, i: int, delim: str) -> tuple[str, int]:
    out = []
    while i < len(script) and script[i] != delim:
        if script[i] == "\\" and i + 1 < len(script):
            out.append(script[i : i + 2] if script[i + 1] != delim else delim)
            i += 2
            continue
        out.append(script[i])
        i += 1
    return "".join(out), i + 1


def sed_ops(script: str) -> list[tuple[str, str | None, str]]:
    """The edit commands of a sed script: ("s", pattern, replacement) and ("a"|"i"|"c", None, text)."""
    ops: list[tuple[str, str | None, str]] = []
    i, n = 0, len(script)
    while i < n:
        c = script[i]
        if c in " \t\n;{}!,$0123456789":
            i += 1
        elif c in "/\\":  # an address /re/ (or \cREc)
            delim = script[i + 1] if c == "\\" and i + 1 < n else "/"
            _, i = _read_delimited(script, i + (2 if c == "\\" else 1), delim)
        elif c == "s" and i + 1 < n:
            delim = script[i + 1]
            pattern, i = _read_delimited(script, i + 2, delim)
            replacement, i = _read_delimited(script, i, delim)
            ops.append(("s", pattern, replacement))
            while i < n and script[i] not in ";\n}":
                i += 1
        elif c in "aic":
            end = script.find("\n", i)
            text = script[i + 1 : end if end >= 0 else n].lstrip()
            text = text[1:].lstrip("\n") if text.startswith("\\") else text
            ops.append((c, None, text.replace("\\n", "\n")))
            i = n if end < 0 else end + 1
        else:
            while i < n and script[i] not in ";\n":
                i += 1
    return ops


def _redirect_target(cmd: ShellCommand) -> tuple[str, str] | None:
    for op, target in cmd.redirects:
        if op in (">", "1>", ">>", "1>>", ">|", "&>") and not target.isdigit():
            return ("append" if op.endswith(">>") else "write"), normalize_path(target)
    return None


def command_edits(cmd: ShellCommand) -> list[Edit]:
    """The file edits one command makes (empty for read-only commands)."""
    if cmd.name == EDITOR:
        command, path, opt = editor_call(cmd.args)
        if command == "create":
            return [Edit("write", path, None, opt.get("file_text", ""))]
        if command == "str_replace":
            return [Edit("replace", path, opt.get("old_str", ""), opt.get("new_str", ""))]
        if command == "insert":
            return [Edit("insert", path, None, opt.get("new_str", ""))]
        return []
    if cmd.name == "sed":
        in_place, _, extended, scripts, files = sed_call(cmd.args)
        if not in_place:
            return []
        ops = [op for script in scripts for op in sed_ops(script)]
        return [
            Edit("replace" if kind == "s" else "insert", f, old, new, regex=kind == "s", extended=extended)
            for f in files
            for kind, old, new in ops
        ]
    if cmd.name == "edit" and cmd.heredoc is not None:  # SWE-agent: lines A:B of the open file (path unknown)
        return [Edit("replace", "", None, cmd.heredoc)]
    if cmd.name == "create" and cmd.args:  # SWE-agent: a new empty file
        return [Edit("write", normalize_path(cmd.args[0]), None, "")]
    if cmd.name in ("cat", "echo", "printf", "tee"):
        return _write_edits(cmd)
    return list(python_edits(python_code(cmd)))


def _str_args(call: ast.Call, n: int) -> list[str] | None:
    args = call.args[:n]
    ok = len(args) == n and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in args)
    return [a.value for a in args] if ok else None  # type: ignore[attr-defined]


@lru_cache(maxsize=16384)
def python_edits(code: str | None) -> tuple[Edit, ...]:
    """Edits inline Python makes to one file it names: ``.replace(OLD, NEW)`` on text it writes back, or a literal
    ``write_text``/``write``; empty when the code writes nothing or the file is not a literal."""
    if not code or "write" not in code:
        return ()
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ()
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)]
    names = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    path = next((normalize_path(s) for s in names if _FILE_NAME.match(s)), None)
    if path is None or not any(c.func.attr in _WRITERS for c in calls):  # type: ignore[attr-defined]
        return ()
    replaced = [(a[0], a[1]) for c in calls if c.func.attr == "replace" and (a := _str_args(c, 2))]  # type: ignore[attr-defined]
    if replaced:
        return tuple(Edit("replace", path, old, new) for old, new in replaced)
    written = [a[0] for c in calls if c.func.attr in _WRITERS and (a := _str_args(c, 1))]  # type: ignore[attr-defined]
    return (Edit("write", path, None, written[0]),) if written else ()


def _write_edits(cmd: ShellCommand) -> list[Edit]:
    if cmd.name == "tee":
        files = [normalize_path(a) for a in cmd.args if not a.startswith("-")]
        kind = "append" if any(a in ("-a", "--append") for a in cmd.args) else "write"
        return [Edit(kind, f, None, cmd.heredoc or "") for f in files]
    target = _redirect_target(cmd)
    if target is None:
        return []
    if cmd.name == "cat":
        if cmd.heredoc is None:
            return []
        text = cmd.heredoc
    else:
        words = [a for a in cmd.args if a not in ("-n", "-e", "-E")]
        text = " ".join(words) + ("" if "-n" in cmd.args else "\n")
        if cmd.name == "printf" or "-e" in cmd.args:
            text = text.replace("\\n", "\n").replace("\\t", "\t")
    return [Edit(target[0], target[1], None, text)]


def python_code(cmd: ShellCommand) -> str | None:
    """Inline Python a command runs: ``python -c CODE`` or ``python [-] <<EOF``; None otherwise."""
    if cmd.name not in PYTHONS:
        return None
    args = cmd.args
    for i, arg in enumerate(args):
        if arg == "-c" and i + 1 < len(args):
            return args[i + 1]
        if arg == "-m" or not arg.startswith("-"):
            return None
    return (
        cmd.heredoc
        if cmd.heredoc is not None and (not args or args[-1] == "-" or args[-1].startswith("-"))
        else None
    )


def is_python_path(path: str) -> bool:
    """Files whose content must stay valid Python."""
    return path.endswith((".py", ".pyi"))
