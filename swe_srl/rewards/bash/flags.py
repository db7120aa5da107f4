"""Command-line flags → a set: ``-rn`` → ``-r``, ``-n``; ``--x=v`` and ``-x v`` → ``-x=v`` for flags known to take a
value; aliases such as ``--recursive`` → ``-r``; flags that do not change what a command finds are dropped."""

from __future__ import annotations

VALUE_FLAGS = {
    "grep": {"-e", "-f", "-A", "-B", "-C", "-m", "--include", "--exclude", "--exclude-dir"},
    "rg": {"-e", "-g", "-t", "-T", "-A", "-B", "-C", "-m", "--glob", "--type", "--include"},
    "ag": {"-G", "-A", "-B", "-C", "-m", "--include"},
    "head": {"-n", "-c"},
    "tail": {"-n", "-c"},
    "pytest": {
        "-k",
        "-m",
        "-p",
        "--tb",
        "-c",
        "--rootdir",
        "-n",
        "--maxfail",
        "-W",
        "-o",
        "--deselect",
        "--ignore",
    },
    "tox": {"-e", "-c"},
}
_ALIASES = {
    "--recursive": "-r", "-R": "-r", "--line-number": "-n", "--ignore-case": "-i", "--files-with-matches": "-l",
    "--word-regexp": "-w", "--count": "-c", "--fixed-strings": "-F", "--lines": "-n", "--glob": "--include",
    "-g": "--include", "-G": "--include", "--regexp": "-e", "--extended-regexp": "-E",
}  # fmt: skip
_IGNORED_FLAGS = frozenset(
    {"-H", "--color", "--colour", "-v", "-q", "-s", "-vv", "--no-header", "-rA", "--tb"}
)


def split_flags(name: str, args: tuple[str, ...] | list[str]) -> tuple[frozenset[str], list[str]]:
    """argv → (flag set, positional args)."""
    takes_value = VALUE_FLAGS.get(name, set())
    flags: set[str] = set()
    positional: list[str] = []
    i, end = 0, False
    while i < len(args):
        arg = args[i]
        if end or arg == "-" or not arg.startswith("-") or arg[1:].isdigit():
            if arg[1:].isdigit() and arg.startswith("-") and name in ("head", "tail") and not end:
                flags.add(f"-n={arg[1:]}")
            else:
                positional.append(arg)
        elif arg == "--":
            end = True
        elif arg.startswith("--"):
            key, eq, value = arg.partition("=")
            key = _ALIASES.get(key, key)
            if not eq and key in takes_value and i + 1 < len(args):
                value, eq, i = args[i + 1], "=", i + 1
            flags.add(f"{key}={value}" if eq else key)
        elif _ALIASES.get(arg[:2], arg[:2]) in takes_value:
            key = _ALIASES.get(arg[:2], arg[:2])
            value = arg[2:]
            if not value and i + 1 < len(args):
                value, i = args[i + 1], i + 1
            flags.add(f"{key}={value}")
        elif arg[1:].isalnum() and name not in ("find", "python", "java"):
            i = _cluster(arg, args, i, takes_value, flags)
        else:
            flags.add(_ALIASES.get(arg, arg))
        i += 1
    return frozenset(f for f in flags if f.partition("=")[0] not in _IGNORED_FLAGS), positional


def _cluster(
    arg: str, args: tuple[str, ...] | list[str], i: int, takes_value: set[str], flags: set[str]
) -> int:
    """``-rnA3`` / ``-rnA 3`` → -r, -n, -A=3; returns the index of the last argument consumed."""
    for pos, ch in enumerate(arg[1:], start=1):
        key = _ALIASES.get(f"-{ch}", f"-{ch}")
        if key in takes_value:
            value = arg[pos + 1 :]
            if not value and i + 1 < len(args):
                value, i = args[i + 1], i + 1
            flags.add(f"{key}={value}")
            return i
        flags.add(key)
    return i
