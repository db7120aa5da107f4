"""Test logs → ``{test_id: status}``; statuses are SWE-bench's (PASSED, FAILED, SKIPPED, ERROR, XFAIL).

The swebench package's per-repo parsers (django, sympy, matplotlib, seaborn...) are used when it is installed;
the pytest ``-rA`` parser below is ours and is the default for every other repo (bundled suites included).
For the runners grading knows (pytest, unittest/django, sympy's ``bin/test``), the records streamed by our reporters
(``report_pytest``, ``report_unittest``; read by :func:`read_channel`) replace stdout parsing, which stays only as a
cross-check: see ``grading/runner.py`` for what they guarantee and docs/grading.md for what they do not.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from swe_srl.benchmark.report_pytest import PYTEST_REPORT_PLUGIN as PYTEST_REPORT_PLUGIN
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


@dataclass
class Channel:
    """What a reporter's stream says: per-test statuses, whether the session reached its end, and tampering."""

    statuses: dict[str, str] = field(default_factory=dict)
    ended: bool = False
    tampered: list[str] = field(default_factory=list)


def read_channel(text: str) -> Channel:
    """The stream of a reporter (:data:`PYTEST_REPORT_PLUGIN`, ``report_unittest.UNITTEST_REPORTER``).

    Only the first announcement counts (the reporter writes it at load, before any code under test runs); then only
    lines with its nonce, up to its ``end`` line, which counts the records the reporter wrote (a different number:
    someone else wrote with its nonce, ``tampered``). A test counts as the worst status any of its records reports, so
    a forged early ``PASSED`` does not outweigh the real ``FAILED``. ``tampered`` records (the reporter saw the
    runner changed under it) are kept. Other lines (and malformed records) are ignored.
    """
    channel, prefix, seen = Channel(), None, 0
    for line in text.split("\n"):
        line = line.rstrip("\r")
        if prefix is None:
            match = _ANNOUNCE.fullmatch(line)
            prefix = f"@swe-srl {match.group(1)} " if match else None
            continue
        if not line.startswith(prefix):
            continue
        status, _, word = line[len(prefix) :].partition(" ")
        if status == "end":  # the reporter's count of its records: one more or less was not written by it
            channel.ended = True
            if word != str(seen):
                channel.tampered.append(
                    f"records written beside the reporter ({seen} seen, it wrote {word or '?'})"
                )
            return channel
        seen += 1
        try:
            nodeid = word.encode("ascii").decode("unicode_escape")
        except UnicodeError:
            continue
        if status == "tampered":
            channel.tampered.append(nodeid)
        elif status in _RECORD_RANK and _RECORD_RANK[status] > _RECORD_RANK.get(
            channel.statuses.get(nodeid, ""), -1
        ):
            channel.statuses[nodeid] = status
    return channel


def parse_report(text: str) -> dict[str, str]:
    """Statuses from a reporter's stream (:func:`read_channel`); ``{}`` unless the run reached session end."""
    channel = read_channel(text)
    return channel.statuses if channel.ended else {}


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
            if key != nodeid:
                keep_worse(aliases, key, status)
    return aliases


def keep_worse(aliases: dict[str, str], key: str, status: str) -> None:
    """``aliases[key]`` becomes ``status`` unless it already holds a worse one (several ids, one alias)."""
    if _RECORD_RANK.get(status, 0) >= _RECORD_RANK.get(aliases.get(key, ""), -1):
        aliases[key] = status
