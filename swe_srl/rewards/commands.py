"""Which command words bash would find, and the commands that run another command (``xargs grep``, ``timeout``).

A command word is *known* when it is a shell builtin or keyword, a function the action defines, an executable of
the instance image (``StepContext.executables``; without one, :data:`DEFAULT_EXECUTABLES`), a harness tool
(:data:`HARNESS_TOOLS`, which every instance image carries, plus ``submit``), or a word of the expert's own action.
A word that names a file (``./reproduce.sh``, ``/usr/bin/python3``): inside the repository it is known when
``created_files`` lists it or when ``created_files`` is None (the tree is unknown); outside the repository when
its basename is known. Words made of expansions (``$PY``) are not judged.
"""

from __future__ import annotations

import re

from swe_srl.rewards.bash.parse import ShellCommand, parse_shell
from swe_srl.rewards.context import StepContext
from swe_srl.rewards.edits import normalize_path


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


BUILTINS = _words(
    ". : [ [[ alias bg bind break builtin caller cd command compgen complete compopt continue declare dirs disown "
    "echo enable eval exec exit export false fc fg getopts hash help history jobs kill let local logout mapfile "
    "popd printf pushd pwd read readarray readonly return set shift shopt source suspend test time times trap "
    "true type typeset ulimit umask unalias unset wait"
)
HARNESS_TOOLS = _words(
    "str_replace_editor open goto scroll_up scroll_down create edit search_dir search_file find_file"
)
_COREUTILS = (
    "arch b2sum base32 base64 basename cat chgrp chmod chown chroot cksum comm cp csplit cut date dd df dir "
    "dircolors dirname du echo env expand expr factor false fmt fold groups head hostid id install join link ln "
    "logname ls md5sum mkdir mkfifo mknod mktemp mv nice nl nohup nproc numfmt od paste pathchk pinky pr printenv "
    "printf ptx pwd readlink realpath rm rmdir runcon seq sha1sum sha224sum sha256sum sha384sum sha512sum shred "
    "shuf sleep sort split stat stdbuf stty sum sync tac tail tee test timeout touch tr true truncate tsort tty "
    "uname unexpand uniq unlink users vdir wc who whoami yes"
)
_TOOLS = (
    "find xargs grep egrep fgrep sed awk gawk mawk git diff cmp diff3 patch tar gzip gunzip zcat bzip2 xz unzip "
    "zip file which whereis less more tree rg ag ack fd jq bc make cmake gcc cc g++ c++ ld perl sh bash dash "
    "curl wget ps pgrep pkill top free uptime hostname lsof strace column iconv clear locale "
    "python python3 pip pip3 pytest py.test tox nox nosetests coverage ipython pydoc pydoc3 2to3 virtualenv "
    "flake8 pylint pyflakes pycodestyle mypy black isort ruff pre-commit conda mamba uv"
)
DEFAULT_EXECUTABLES = _words(_COREUTILS + " " + _TOOLS)
"""Executables assumed without an instance image: coreutils, findutils, grep, sed, awk, git, python/pip/pytest and
common developer tools (interactive editors such as vim are left out: a policy shell cannot drive them)."""
_VERSIONED = re.compile(r"^(python|pip|pypy)[23](\.\d{1,2})?$")
_DYNAMIC = re.compile(r"[$`*?]")
# wrapper → its options that take a value (the wrapped command follows the options)
_WRAPPERS: dict[str, frozenset[str]] = {
    "xargs": frozenset({"-I", "-n", "-P", "-L", "-d", "-E", "-s", "-a"}),
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "nohup": frozenset(),
    "time": frozenset({"-f", "-o"}),
    "env": frozenset({"-u", "-C", "--unset", "--chdir"}),
    "stdbuf": frozenset(),
    "sudo": frozenset({"-u", "-g"}),
    "exec": frozenset({"-a"}),
}


def unwrap(cmd: ShellCommand) -> ShellCommand:
    """The command a wrapper runs (``xargs -0 grep -n foo`` → ``grep -n foo``), or ``cmd`` itself."""
    while cmd.name in _WRAPPERS:
        takes_value, args, i = _WRAPPERS[cmd.name], cmd.args, 0
        while i < len(args) and (args[i].startswith("-") or (cmd.name == "env" and "=" in args[i])):
            i += 2 if args[i] in takes_value else 1
        if cmd.name == "timeout" and i < len(args):
            i += 1  # the duration
        if i >= len(args):
            return cmd
        word = args[i]
        cmd = ShellCommand(
            word.rsplit("/", 1)[-1], args[i + 1 :], cmd.redirects, cmd.heredoc, word, cmd.piped
        )
    return cmd


def command_words(action: str) -> list[str]:
    """Every command word an action runs, wrapped ones included, as written."""
    words: list[str] = []
    for cmd in parse_shell(action).commands:
        words.append(cmd.word or cmd.name)
        inner = unwrap(cmd)
        if inner is not cmd:
            words.append(inner.word or inner.name)
    return words


def _is_known(word: str, known: frozenset[str], created: frozenset[str] | None) -> bool:
    if not word or _DYNAMIC.search(word) or word in known:
        return True
    if "/" not in word:
        return False
    path = normalize_path(word)
    if word.startswith("/") and path == word:  # outside /testbed
        return _is_known(word.rsplit("/", 1)[-1], known, created)
    return created is None or path in created


def unknown_commands(action: str, ctx: StepContext | None = None) -> list[str]:
    """The command words of ``action`` bash would not find; ``ctx`` gives the image's executables, the created
    files and the expert's action (see the module docstring for what is known)."""
    ctx = ctx or StepContext("", action)
    parse = parse_shell(action)
    words = command_words(action)
    executables = ctx.executables
    if executables is None:
        executables = DEFAULT_EXECUTABLES | {w for w in words if _VERSIONED.match(w)}
    known = BUILTINS | HARNESS_TOOLS | {"submit"} | frozenset(executables) | frozenset(parse.functions)
    known |= frozenset(command_words(ctx.expert_action))
    created = None if ctx.created_files is None else frozenset(normalize_path(p) for p in ctx.created_files)
    return list(dict.fromkeys(w for w in words if not _is_known(w, known, created)))
