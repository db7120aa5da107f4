"""Test commands rewritten to carry our reporter and its channel (pure text; ``grading/runner.py`` runs them).

Which reporter a command gets (:func:`runner_kind`), after any ``VAR=value`` prefix:

* ``pytest`` / ``python -m pytest``: our plugin first (``-p``), a clean pytest environment, the channel on fd 3;
* ``tox ... --`` (sphinx's ``tox --current-env``): tox starts pytest itself and passes it neither our descriptor nor
  our environment, so the plugin goes where pytest imports it from (``/testbed``, named in ``-p`` after ``--``)
  and the channel is a FIFO whose path is written into the plugin (opened, then unlinked, by the plugin);
* ``tests/runtests.py`` (django), ``python -m unittest``: the unittest reporter starts the script;
* ``bin/test`` (sympy): the same reporter, which hooks sympy's runner as it is imported; ``PYTHONHASHSEED`` is set
  (a random value, unless set), so ``bin/test`` runs the tests in its own process instead of a child with one.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from typing import Literal

RunnerKind = Literal["pytest", "tox", "unittest", "sympy"]
_PREFIX = r"^((?:[A-Za-z_][A-Za-z0-9_]*=(?:'[^']*'|\"[^\"]*\"|[^\s'\"]*)\s+)*)"
_KINDS: tuple[tuple[RunnerKind, re.Pattern[str]], ...] = (
    ("pytest", re.compile(_PREFIX + r"((?:python3? -m )?pytest)(?=\s|$)")),
    ("tox", re.compile(_PREFIX + r"(tox\s(?:.*\s)?--)(?=\s|$)")),
    ("unittest", re.compile(_PREFIX + r"((?:\./)?tests/runtests\.py|python3? -m unittest)(?=\s|$)")),
    ("sympy", re.compile(_PREFIX + r"((?:\./)?bin/test)(?=\s|$)")),
)
CHANNEL_FD = 3
"""The descriptor the test command gets the report channel on (the reporter dup()s and closes it at load)."""
_CLEAN = "unset PYTEST_ADDOPTS PYTEST_PLUGINS SWE_SRL_REPORT"


@dataclass(frozen=True)
class PytestSetup:
    """How pytest is started: entry-point autoloading off (when this pytest knows how) and the ``-p`` arguments
    that load, explicitly, the pytest11 plugins installed when it was probed (before the model patch)."""

    plugin_args: tuple[str, ...] = ()
    autoload_off: bool = False

    @classmethod
    def from_probe(cls, output: str) -> PytestSetup:
        """The setup from the output of ``runner.PROBE`` (autoloading left alone when it printed nothing)."""
        line = next((ln for ln in output.splitlines() if ln.startswith("@swe-srl-plugins ")), None)
        if line is None:
            return cls()
        found = json.loads(line.split(" ", 1)[1])
        names = [
            name if found["by_name"] else value.split(":")[0].strip() for name, value in found["plugins"]
        ]
        return cls(
            tuple(w for name in dict.fromkeys(names) for w in ("-p", name)), bool(found["autoload_off"])
        )


def runner_kind(command: str) -> RunnerKind | None:
    """Which of our reporters ``command`` gets (None: none; its statuses are parsed from its output)."""
    return next((kind for kind, pattern in _KINDS if pattern.match(command)), None)


def _split(command: str, kind: RunnerKind) -> tuple[str, str, str]:
    """(environment prefix, the runner's words, the rest) of ``command``."""
    match = dict(_KINDS)[kind].match(command)
    assert match is not None, command
    return match.group(1), match.group(2), command[match.end() :]


def pytest_script(command: str, module: str, plugin_dir: str, log: str, setup: PytestSetup) -> str:
    """``command`` with our plugin loaded first, a clean pytest environment, the log to ``log``, the channel on fd 3."""
    prefix, pytest, rest = _split(command, "pytest")
    args = " ".join(map(shlex.quote, ["-p", module, "-p", "no:cacheprovider", *setup.plugin_args]))
    env = [f"PYTHONPATH={plugin_dir}${{PYTHONPATH:+:$PYTHONPATH}}", f"SWE_SRL_CHANNEL_FD={CHANNEL_FD}"]
    if setup.autoload_off:
        env += ["PYTEST_DISABLE_PLUGIN_AUTOLOAD=1", "SWE_SRL_UNSET=PYTEST_DISABLE_PLUGIN_AUTOLOAD"]
    run = f"{prefix}{pytest} {args}{rest}"
    return f"( {_CLEAN}; export {' '.join(env)}; {run} ) {CHANNEL_FD}>&1 >{log} 2>&1"


def tox_script(command: str, module: str, fifo: str, log: str) -> str:
    """``command`` with our plugin named after ``--``, the log to ``log``, the channel read from ``fifo``.

    ``cat`` copies the FIFO to this session's output; opening the FIFO read-write after the run releases a ``cat``
    still waiting when pytest never opened it (no plugin, no records)."""
    prefix, tox, rest = _split(command, "tox")
    run = f"{prefix}{tox} -p {shlex.quote(module)} -p no:cacheprovider{rest}"
    q = shlex.quote(fifo)
    return (
        f"( {_CLEAN}; rm -f {q}; mkfifo -m 600 {q} && {{ cat {q} & reader=$!; ( {run} ) >{log} 2>&1; "
        f": 9<>{q} 2>/dev/null; wait $reader; }}; rm -f {q} )"
    )


def reporter_script(command: str, kind: RunnerKind, reporter: str, log: str) -> str:
    """``command`` started by the unittest/sympy reporter at path ``reporter``, the channel on fd 3."""
    prefix, words, rest = _split(command, kind)
    target = words.split(" ", 2)[1:] if words.startswith("python") else [words]
    run = f"{prefix}python {shlex.quote(reporter)} {' '.join(target)}{rest}"
    env = [f"SWE_SRL_CHANNEL_FD={CHANNEL_FD}"]
    if kind == "sympy":
        env.append("PYTHONHASHSEED=${PYTHONHASHSEED:-$(( RANDOM * 32768 + RANDOM ))}")
    return f"( {_CLEAN}; export {' '.join(env)}; {run} ) {CHANNEL_FD}>&1 >{log} 2>&1"
