"""Test logs → ``{test_id: status}``; statuses are SWE-bench's (PASSED, FAILED, SKIPPED, ERROR, XFAIL).

The swebench package's per-repo parsers (django, sympy, matplotlib, seaborn...) are used when it is installed;
the pytest ``-rA`` parser below is ours and is the default for every other repo (bundled suites included).
For pytest runs, the records streamed by our plugin (:data:`PYTEST_REPORT_PLUGIN`, parsed by :func:`parse_report`)
replace stdout parsing: see ``grading/runner.py`` for what they guarantee and docs/grading.md for what they do not.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from swe_srl.benchmark.specs import import_swebench
from swe_srl.errors import TaskError

PASSED, FAILED, SKIPPED, ERROR, XFAIL = "PASSED", "FAILED", "SKIPPED", "ERROR", "XFAIL"
PASSING = frozenset({PASSED, XFAIL})
_STATUSES = (PASSED, FAILED, SKIPPED, ERROR, XFAIL, "XPASS")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")

Parser = Callable[[str], dict[str, str]]


def parse_pytest(log: str) -> dict[str, str]:
    """Parse the ``-rA`` short summary (``PASSED tests/x.py::test_a``) and verbose lines (``x.py::t PASSED``)."""
    results: dict[str, str] = {}
    for raw in log.splitlines():
        line = _ANSI.sub("", raw).strip()
        first, _, rest = line.partition(" ")
        if first in _STATUSES and rest.strip():
            # SWE-bench's convention: the id is the first token after the status (ids are cut at a space)
            results[rest.split()[0]] = PASSED if first == "XPASS" else first
            continue
        match = re.match(r"^(\S+::\S+(?:\[.*\])?)\s+(PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS)\b", line)
        if match:
            results[match.group(1)] = PASSED if match.group(2) == "XPASS" else match.group(2)
    return results


_RECORD_RANK = {PASSED: 0, XFAIL: 1, SKIPPED: 2, FAILED: 3, ERROR: 4}
_ANNOUNCE = re.compile(r"@swe-srl ([0-9a-f]{24}) start")


def parse_report(text: str) -> dict[str, str]:
    """Statuses from the output of :data:`PYTEST_REPORT_PLUGIN` (``{}`` unless the run reached session end).

    Only the first announcement counts (the plugin writes it at load, before any code under test runs); then only
    lines with its nonce, up to its ``end`` line. A test counts as the worst status any of its records reports, so
    a forged early ``PASSED`` does not outweigh the real ``FAILED``. Other lines (and malformed records) are ignored.
    """
    results: dict[str, str] = {}
    prefix = None
    for line in text.split("\n"):
        line = line.rstrip("\r")
        if prefix is None:
            match = _ANNOUNCE.fullmatch(line)
            prefix = f"@swe-srl {match.group(1)} " if match else None
            continue
        if not line.startswith(prefix):
            continue
        status, _, word = line[len(prefix) :].partition(" ")
        if status == "end" and not word:
            return results
        try:
            nodeid = word.encode("ascii").decode("unicode_escape")
        except UnicodeError:
            continue
        if status in _RECORD_RANK and _RECORD_RANK[status] > _RECORD_RANK.get(results.get(nodeid, ""), -1):
            results[nodeid] = status
    return {}


@functools.cache
def _swebench_parsers() -> dict[str, Callable[..., dict[str, str]]]:

    module = import_swebench("harness.log_parsers.python", stubs=("harness.test_spec.test_spec",))
    return dict(module.MAP_REPO_TO_PARSER_PY)


def parser_for(repo: str) -> Parser:
    """The log parser for ``repo``: swebench's when it has one and is installed, else :func:`parse_pytest`."""
    try:
        parsers = _swebench_parsers()
    except TaskError:
        parsers = {}
    if repo in parsers:
        parser = parsers[repo]
        return lambda log: {k: str(getattr(v, "value", v)) for k, v in parser(log, None).items()}
    return parse_pytest


def official_aliases(repo: str, results: dict[str, str]) -> dict[str, str]:
    """The ids SWE-bench's own parser for ``repo`` gives the report channel's exact node ids, where they differ
    (``{}`` for repos it parses as plain pytest). Its ``parse_log_pytest_options`` (pylint, ...) rewrites
    parametrized ids: ``test_stdin[/testbed/tests/mymodule.py-mymodule-/testbed/tests/mymodule.py]`` becomes
    ``test_stdin[/mymodule.py]``, the id FAIL_TO_PASS/PASS_TO_PASS name. Two node ids with one alias give it the
    worse status."""
    parser = parser_for(repo)
    if parser is parse_pytest:
        return {}
    aliases: dict[str, str] = {}
    for nodeid, status in results.items():
        for key in parser(f"{status} {nodeid}"):  # the official parser on this test's summary line
            if key != nodeid and _RECORD_RANK.get(status, 0) >= _RECORD_RANK.get(aliases.get(key, ""), -1):
                aliases[key] = status
    return aliases


# Loaded first with `pytest -p <random name>`. At import (before conftests, collection and pytest's fd capture) it
# takes the channel: the descriptor named by $SWE_SRL_CHANNEL_FD (dup()ed, the original closed, so subprocesses do
# not inherit it) or the file $SWE_SRL_REPORT (host runs, trusted). It announces a nonce of its own, then writes
# one "@swe-srl NONCE STATUS NODEID" line (unicode_escape'd: one line, ASCII) per finished test and "@swe-srl NONCE end" at session end.
# Imports nothing beyond os and pytest's hookspec (already loaded), so modules a patch adds cannot shadow them.
PYTEST_REPORT_PLUGIN = """\
import os as _os
import _pytest.hookspec as _hookspec

_NONCE = _os.urandom(12).hex()
_UNSET = _os.environ.pop("SWE_SRL_UNSET", "").split()


def _channel():
    path = _os.environ.pop("SWE_SRL_REPORT", "")
    number = _os.environ.pop("SWE_SRL_CHANNEL_FD", "")
    if path:
        return _os.open(path, _os.O_WRONLY | _os.O_CREAT | _os.O_TRUNC | _os.O_APPEND, 0o600)
    try:
        fd = _os.dup(int(number))
        _os.close(int(number))
        return fd
    except (ValueError, OSError):
        return -1  # no channel here (an xdist worker inherits the environment, not the descriptor)


_FD = _channel()
_results = {}
_pending = []


def _send(*words):
    if _FD >= 0:
        try:
            _os.write(_FD, ("@swe-srl " + _NONCE + " " + " ".join(words) + "\\n").encode())
        except OSError:
            pass


def _flush(nodeid):
    if nodeid in _results:
        _send(_results[nodeid], nodeid.encode("unicode_escape").decode("ascii"))


_send("start")


def pytest_configure(config):
    for name in _UNSET:
        _os.environ.pop(name, None)


def pytest_runtest_logreport(report):
    if report.when == "call" or report.outcome != "passed":
        if hasattr(report, "wasxfail"):
            status = "PASSED" if report.outcome == "passed" else "XFAIL"
        elif report.outcome == "passed":
            status = "PASSED"
        elif report.outcome == "skipped":
            status = "SKIPPED"
        else:
            status = "FAILED" if report.when == "call" else "ERROR"
        if _results.get(report.nodeid) not in ("FAILED", "ERROR"):
            _results[report.nodeid] = status
        if report.nodeid not in _pending:
            _pending.append(report.nodeid)


if hasattr(_hookspec, "pytest_runtest_logfinish"):

    def pytest_runtest_logfinish(nodeid):
        if nodeid in _pending:
            _pending.remove(nodeid)
            _flush(nodeid)


def pytest_sessionfinish(session):
    for nodeid in _pending:
        _flush(nodeid)
    del _pending[:]
    _send("end")
"""
