"""Destructive operations: what an action deletes, discards or overwrites (pure: read from the command text).

* ``delete`` — ``rm``/``rmdir``/``unlink``/``shred`` of repository paths (``| xargs rm``: target ``-``),
  ``find … -delete``/``-exec rm``, ``git rm``, ``git clean -f``, ``mv`` of a file the expert works on.
* ``discard`` — ``git reset --hard``, ``git checkout .``/``git checkout [--] PATH``, ``git restore PATH``
  (``git stash`` is not: the changes stay recoverable, and ``stash … stash pop`` is a common check).
* ``overwrite`` — a whole-file write (``>``, ``tee``, ``cp``, ``truncate``, ``: > f``) into a file that exists: one
  the same command reads (``head f > f``), one the expert's action reads or edits in place, or a Python source
  receiving a read command's output (``grep … > pkg/__init__.py``).
* ``discard-output`` — a read (search, view, listing, test run, inline Python, ``git status|diff|log|show``) whose
  stdout goes to ``/dev/null``.

Commands run through ``sh -c``/``bash -c``/``eval`` are read too. Paths outside the repository (``/tmp``) and
files earlier steps created (``created_files``) are not harmed.
:func:`unexpected_harm` keeps the operations the expert's action does not do itself (the same kind on the same
path, or on a folder containing it), so the expert's own ``rm reproduce.py`` costs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from swe_srl.rewards.bash.flags import split_flags
from swe_srl.rewards.bash.parse import ShellCommand, parse_shell
from swe_srl.rewards.bash.units import GIT_READS, LOCATION, action_units, to_units
from swe_srl.rewards.commands import unwrap
from swe_srl.rewards.edits import command_edits, is_python_path, normalize_path

_STDOUT = frozenset({">", "1>", ">|", "&>"})
_DELETE = frozenset({"rm", "rmdir", "unlink", "shred"})
_SHELLS = frozenset({"sh", "bash", "dash"})
_READ_FAMILIES = LOCATION | {"test", "python"}


@dataclass(frozen=True)
class Harm:
    """One destructive operation: ``kind`` (see the module docstring) and its normalized ``target``."""

    kind: str
    target: str


def _in_repo(path: str) -> bool:
    return path == "/" or not path.startswith(("/", "~"))


def _is_read(cmd: ShellCommand) -> bool:
    return any(u.family in _READ_FAMILIES or u.name in GIT_READS for u in to_units(cmd))


def _git_harms(args: tuple[str, ...]) -> list[Harm]:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in ("-C", "-c") else 1
    sub, rest = (args[i], args[i + 1 :]) if i < len(args) else ("", ())
    flags, pos = split_flags("git", rest)
    paths = [normalize_path(p) for p in (rest[rest.index("--") + 1 :] if "--" in rest else pos)]
    if sub == "reset" and flags & {"--hard", "--merge", "--keep"}:
        return [Harm("discard", ".")]
    if sub == "checkout" and not flags & {"-b", "-B"}:
        files = paths if "--" in rest else [p for p in paths if p == "." or "/" in p or "." in p or "*" in p]
        return [Harm("discard", p) for p in files]
    if sub == "restore" and not ("--staged" in flags and "--worktree" not in flags):
        return [Harm("discard", p) for p in paths]
    if sub == "clean" and any(f == "--force" or (f[:2] != "--" and "f" in f) for f in flags):
        return [Harm("delete", ".")]
    if sub == "rm" and "--cached" not in flags:
        return [Harm("delete", p) for p in paths]
    return []


def command_harms(cmd: ShellCommand, existing: frozenset[str] = frozenset()) -> list[Harm]:
    """The destructive operations of one command; ``existing``: repository files known to exist."""
    cmd = unwrap(cmd)
    name, args = cmd.name, cmd.args
    pos = [normalize_path(p) for p in split_flags(name, args)[1]]
    harms: list[Harm] = []
    if name in _DELETE:  # ``… | xargs rm``: the files read from the pipe ("-")
        harms += [Harm("delete", p) for p in pos] or ([Harm("delete", "-")] if cmd.piped else [])
    elif name in _SHELLS and "-c" in args[:-1]:
        harms += action_harms(args[args.index("-c") + 1], existing)
    elif name == "eval":
        harms += action_harms(" ".join(args), existing)
    elif name == "find" and ("-delete" in args or any(a in ("rm", "-exec rm") for a in args)):
        harms += [Harm("delete", p) for p in to_units(cmd)[0].paths]
    elif name == "git":
        harms += _git_harms(args)
    elif name == "truncate":
        harms += [Harm("overwrite", p) for p in pos]
    elif name in ("cp", "mv") and len(pos) >= 2:
        harms += [Harm("overwrite", pos[-1])] if pos[-1] in existing else []
        harms += [Harm("delete", p) for p in pos[:-1] if name == "mv" and p in existing]
    if cmd.redirects or name == "tee":
        harms += _write_harms(cmd, pos, existing)
    return [h for h in harms if h.kind == "discard-output" or _in_repo(h.target)]


def _write_harms(cmd: ShellCommand, pos: list[str], existing: frozenset[str]) -> list[Harm]:
    harms: list[Harm] = []
    writes = {e.path for e in command_edits(cmd) if e.kind == "write"}
    for op, target in cmd.redirects:
        path = normalize_path(target)
        if op not in _STDOUT:
            continue
        if target == "/dev/null":
            harms += [Harm("discard-output", cmd.name)] if _is_read(cmd) else []
        elif cmd.name in (":", "true") or path in pos or (is_python_path(path) and _is_read(cmd)):
            harms.append(Harm("overwrite", path))
        writes.add(path)
    return harms + [Harm("overwrite", p) for p in writes if p in existing]


def _existing(action: str) -> frozenset[str]:
    """Files an action reads or edits in place (so they exist)."""
    paths: set[str] = set()
    for unit in action_units(action):
        if unit.family == "view":
            paths.update(unit.paths)
        elif unit.edit is not None and unit.edit.kind != "write":
            paths.add(unit.edit.path)
    return frozenset(paths)


def action_harms(action: str, existing: frozenset[str] = frozenset()) -> list[Harm]:
    """Every destructive operation of an action."""
    return [h for cmd in parse_shell(action).commands for h in command_harms(cmd, existing)]


def _covers(done: Harm, harm: Harm) -> bool:
    if done.kind != harm.kind:
        return False
    return done.target in (harm.target, ".", "*") or harm.target.startswith(done.target + "/")


@lru_cache(maxsize=16384)
def unexpected_harm(
    expert_action: str, action: str, created_files: frozenset[str] | None = None
) -> tuple[Harm, ...]:
    """The destructive operations of ``action`` the expert's action does not do (files created earlier excepted)."""
    created = frozenset(normalize_path(p) for p in created_files or ())
    done = action_harms(expert_action, _existing(expert_action))
    harms = action_harms(action, _existing(expert_action) - created)
    return tuple(
        dict.fromkeys(h for h in harms if h.target not in created and not any(_covers(d, h) for d in done))
    )
