"""Bash commands → normalized ``Unit``s the semantic layer compares: one per simple command (or per file edit).

Families: location (``search`` grep/rg/ag/git grep, ``find``, ``view`` cat/head/tail/sed -n/nl/editor view,
``list`` ls/tree/editor view of a directory), ``edit``, ``test``, ``python`` (inline code), ``nav`` (cd, echo…,
low weight), ``submit``, ``other``. Flags become a set (``flags.split_flags``); paths are normalized (``./a`` → ``a``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from swe_srl.rewards.bash.flags import split_flags
from swe_srl.rewards.bash.parse import ShellCommand, parse_shell
from swe_srl.rewards.commands import unwrap
from swe_srl.rewards.edits import (
    EDITOR,
    PYTHONS,
    Edit,
    command_edits,
    editor_call,
    normalize_path,
    python_code,
)
from swe_srl.rewards.edits import sed_call as _sed_call

SEARCH = {
    "grep": "grep",
    "egrep": "grep",
    "fgrep": "grep",
    "rg": "rg",
    "ag": "ag",
    "ack": "ag",
    "git-grep": "grep",
}
VIEW = frozenset({"cat", "head", "tail", "nl", "less", "more", "bat", "view"})
LIST = frozenset({"ls", "tree"})
NAV = frozenset({"cd", "pwd", "echo", "true", "clear", "export", "source", "set", "sleep", "which"})
TESTS = frozenset({"pytest", "py.test", "tox", "nosetests", "unittest", "runtests.py", "nox"})
LOCATION = frozenset({"search", "find", "view", "list"})
GIT_READS = frozenset(f"git {sub}" for sub in ("status", "diff", "log", "show", "blame", "branch"))
FILTERS = frozenset(
    {"head", "tail", "sort", "uniq", "wc", "cut", "tr", "nl", "cat", "less", "more", "column"}
)
_FIND_SELECT = (
    "-name",
    "-iname",
    "-path",
    "-ipath",
    "-regex",
    "-iregex",
    "-newer",
    "-size",
    "-exec",
    "-delete",
)
_FIND_NOVALUE = frozenset(
    {"-print", "-print0", "-delete", "-o", "-a", "-not", "-ls", "-empty", "-quit", "-and", "-or"}
)
_SED_PRINT = re.compile(r"^\s*(\d+)\s*(?:,\s*(\d+|\$)\s*)?p\s*;?\s*$")


@dataclass(frozen=True)
class Unit:
    """One normalized command (see the module docstring)."""

    family: str
    name: str
    flags: frozenset[str] = frozenset()
    args: tuple[str, ...] = ()
    pattern: str = ""  # search pattern, test -k expression
    paths: tuple[str, ...] = ()  # normalized paths; test targets
    span: tuple[int, int] | None = None  # viewed lines (start, end); end -1 = EOF; start < 0 = last lines
    edit: Edit | None = None
    code: str | None = None
    weight: float = 1.0


def _search(name: str, args: tuple[str, ...]) -> Unit:
    canon = SEARCH[name]
    flags, pos = split_flags(canon, args)
    pattern = next((f[3:] for f in flags if f.startswith("-e=")), None)
    if pattern is None:
        pattern, pos = (pos[0] if pos else ""), pos[1:]
    flags = frozenset(f for f in flags if not f.startswith("-e="))
    if canon != "grep" or name == "git-grep":
        flags |= {"-r", "-n"}
    paths = tuple(normalize_path(p) for p in pos) or ((".",) if "-r" in flags else ("-",))
    return Unit("search", canon, flags, tuple(pos), pattern=pattern, paths=paths)


def _find(args: tuple[str, ...]) -> Unit:
    i = 0
    while i < len(args) and not args[i].startswith(("-", "(", "!")):
        i += 1
    paths = tuple(normalize_path(a) for a in args[:i]) or (".",)
    preds: list[str] = []
    while i < len(args):
        arg = args[i]
        if arg in ("-exec", "-execdir", "-ok"):
            j = next((k for k in range(i + 1, len(args)) if args[k] in (";", "+")), len(args))
            preds.append(" ".join(args[i:j]))
            i = j
        elif arg.startswith("-") and arg not in _FIND_NOVALUE and i + 1 < len(args):
            preds.append(f"{arg}={args[i + 1]}")
            i += 1
        else:
            preds.append(arg)
        i += 1
    if not any(p.startswith(_FIND_SELECT) for p in preds):  # ``find DIR -maxdepth 1``: a listing
        return Unit("list", "ls", paths=paths)
    return Unit("find", "find", frozenset(preds), paths=paths)


def _view(name: str, args: tuple[str, ...]) -> Unit:
    if name == "sed":
        _, _, _, scripts, files = _sed_call(args)
        match = _SED_PRINT.match(scripts[0]) if scripts else None
        span = None
        if match:
            start = int(match.group(1))
            end = match.group(2)
            span = (start, start if end is None else (-1 if end == "$" else int(end)))
        return Unit("view", "cat", paths=tuple(files), span=span)
    flags, pos = split_flags(name, args)
    lines = next((f.partition("=")[2] for f in flags if f.startswith("-n=")), "10")
    count = int(lines.lstrip("+-")) if lines.lstrip("+-").isdigit() else 10
    span = {"head": (1, count), "tail": (-count, -1)}.get(name)
    if name == "tail" and lines.startswith("+"):
        span = (count, -1)
    return Unit("view", "cat", paths=tuple(normalize_path(p) for p in pos), span=span)


def _editor(cmd: ShellCommand) -> list[Unit]:
    command, path, options = editor_call(cmd.args)
    if command == "view":
        if path == "." or "." not in path.rsplit("/", 1)[-1]:
            return [Unit("list", "ls", paths=(path,))]
        bounds = options.get("view_range", "").split()
        span = None
        if len(bounds) == 2 and all(b.lstrip("-").isdigit() for b in bounds):
            span = (int(bounds[0]), int(bounds[1]))
        return [Unit("view", "cat", paths=(path,), span=span)]
    edits = command_edits(cmd)
    if edits:
        return [Unit("edit", e.kind, paths=(e.path,), edit=e) for e in edits]
    return [Unit("other", EDITOR, args=(command, path))]


def _test(name: str, args: tuple[str, ...]) -> Unit:
    flags, pos = split_flags("pytest" if name != "tox" else "tox", args)
    kexpr = next((f[3:] for f in flags if f.startswith("-k=")), "")
    flags = frozenset(f for f in flags if not f.startswith("-k="))
    targets = tuple(normalize_path(p) for p in pos)
    # ``f.py -k name`` ≈ ``f.py::name``
    if kexpr.isidentifier() and len(targets) == 1 and "::" not in targets[0]:
        targets, kexpr = (f"{targets[0]}::{kexpr}",), ""
    return Unit("test", "pytest", flags, paths=targets, pattern=kexpr)


def _python(cmd: ShellCommand) -> Unit:
    code = python_code(cmd)
    if code is not None:
        return Unit("python", "python", code=code)
    args = cmd.args
    if len(args) >= 2 and args[0] == "-m":
        module = args[1]
        if module in ("pytest", "unittest", "nose", "tox"):
            return _test(module, args[2:])
        return Unit("other", f"python -m {module}", *split_flags(module, args[2:]))
    flags, pos = split_flags("python", args)
    if pos and pos[0].endswith("runtests.py"):
        return _test("runtests.py", tuple(pos[1:]))
    return Unit("other", "python", flags, tuple(normalize_path(p) for p in pos))


def _harness(name: str, args: tuple[str, ...]) -> Unit:
    """SWE-agent's windowed tools (``open``, ``search_dir``, ``search_file``, ``find_file``) as location units."""
    if name == "open":
        line = int(args[1]) if len(args) > 1 and args[1].isdigit() else 50
        span = (max(1, line - 50), max(1, line - 50) + 99)
        return Unit("view", "cat", paths=tuple(normalize_path(a) for a in args[:1]), span=span)
    if name == "find_file":
        where = tuple(normalize_path(a) for a in args[1:2]) or (".",)
        return Unit("find", "find", frozenset(f"-name={a}" for a in args[:1]), paths=where)
    recursive = name == "search_dir"
    where = tuple(normalize_path(a) for a in args[1:2]) or ((".",) if recursive else ("",))
    flags = frozenset({"-r", "-n"} if recursive else {"-n"})
    return Unit("search", "grep", flags, args, pattern=args[0] if args else "", paths=where)


def _git(args: tuple[str, ...]) -> Unit:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in ("-C", "-c") else 1
    if i >= len(args):
        return Unit("other", "git", *split_flags("git", args))
    flags, pos = split_flags("git", args[i + 1 :])
    return Unit("git", f"git {args[i]}", flags, tuple(normalize_path(p) for p in pos))


def to_units(cmd: ShellCommand) -> list[Unit]:
    """Normalize one command (a ``sed -i`` over two files gives two edit units)."""
    cmd = unwrap(cmd)
    name, args = cmd.name, cmd.args
    if name == "git" and args and args[0] == "grep":
        name, args = "git-grep", args[1:]
    edits = command_edits(cmd) if name != EDITOR else []
    if edits:
        return [Unit("edit", e.kind, paths=(e.path,), edit=e) for e in edits]
    if name in SEARCH:
        return [_search(name, args)]
    if name == "find":
        return [_find(args)]
    if name in VIEW or (name == "sed" and _sed_call(args)[1]):
        return [_view(name, args)]
    if name in LIST:
        flags, pos = split_flags(name, args)
        return [Unit("list", "ls", flags, paths=tuple(normalize_path(p) for p in pos) or (".",))]
    if name == EDITOR:
        return _editor(cmd)
    if name in TESTS or name.endswith("runtests.py"):
        return [_test(name, args)]
    if name in PYTHONS:
        return [_python(cmd)]
    if name == "submit":
        return [Unit("submit", "submit")]
    if name in ("open", "search_dir", "search_file", "find_file"):
        return [_harness(name, args)]
    if name == "git":
        return [_git(args)]
    if name in NAV:
        return [Unit("nav", name, args=args, weight=0.2)]
    flags, pos = split_flags(name, args)
    return [Unit("other", name, flags, tuple(pos))]


def _piped(unit: Unit, prev: Unit, xargs: bool) -> Unit | None:
    """A command reading a pipe: a narrower view, one search (``find … | xargs grep``, ``cat f | grep``), or a
    light filter (``| head``, ``find … | grep name``)."""
    if unit.family == "view" and not unit.paths and prev.family == "view":
        return Unit("view", "cat", paths=prev.paths, span=unit.span or prev.span)
    searched = unit.family == "search" and unit.paths == ("-",)
    if searched and xargs and prev.family in ("find", "list"):  # the files found are searched
        names = frozenset(f"--include={f[6:]}" for f in prev.flags if f.startswith("-name="))
        flags = unit.flags | {"-r"} | names
        return Unit("search", unit.name, flags, unit.args, pattern=unit.pattern, paths=prev.paths)
    if searched and not xargs and prev.family == "view":  # the text read is searched
        return Unit("search", unit.name, unit.flags, unit.args, pattern=unit.pattern, paths=prev.paths)
    if unit.name in FILTERS or (unit.family in ("search", "view") and unit.paths in ((), ("-",))):
        return Unit("filter", unit.name, unit.flags, unit.args, pattern=unit.pattern, weight=0.2)
    return None


@lru_cache(maxsize=65536)
def action_units(action: str) -> tuple[Unit, ...]:
    """All units of an action, in order; commands reading a pipe are folded by :func:`_piped`."""
    units: list[Unit] = []
    for cmd in parse_shell(action).commands:
        for unit in to_units(cmd):
            folded = _piped(unit, units[-1], cmd.name == "xargs") if cmd.piped and units else None
            if folded is not None and folded.family != "filter":
                units[-1] = folded
            else:
                units.append(folded or unit)
    return tuple(units)


def action_type(action: str) -> str:
    """The action's type for the semantic rules: location, edit, test, python, submit or other."""
    families = [u.family for u in action_units(action) if u.family != "nav"]
    for kind in ("edit", "test", "submit", "python"):
        if kind in families:
            return kind
    if families and all(f in LOCATION for f in families):
        return "location"
    return "other" if families else "nav"
