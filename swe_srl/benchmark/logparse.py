"""Test logs → ``{test_id: status}``; statuses are SWE-bench's (PASSED, FAILED, SKIPPED, ERROR, XFAIL).

The swebench package's per-repo parsers (django, sympy, matplotlib, seaborn...) are used when it is installed;
the pytest ``-rA`` parser below is ours and is the default for every other repo (bundled suites included).
A structured report written by our pytest plugin (see :data:`PYTEST_REPORT_PLUGIN`) beats any stdout parsing:
code under test can print fake ``PASSED`` lines but cannot forge that report.
"""

from __future__ import annotations

import functools
import json
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


def parse_report(text: str) -> dict[str, str]:
    """Parse the JSON-lines report of :data:`PYTEST_REPORT_PLUGIN` (``{"nodeid", "status"}`` per test)."""
    results: dict[str, str] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            results[record["nodeid"]] = record["status"]
        except (json.JSONDecodeError, KeyError, TypeError):
            raise TaskError(f"pytest report line {lineno} is malformed: {line[:120]!r}") from None
    return results


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


# Loaded with `pytest -p swe_srl_report`; writes one JSON line per test to $SWE_SRL_REPORT at session end.
PYTEST_REPORT_PLUGIN = """\
import json, os
_results = {}
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
def pytest_sessionfinish(session):
    with open(os.environ["SWE_SRL_REPORT"], "w") as handle:
        for nodeid, status in _results.items():
            handle.write(json.dumps({"nodeid": nodeid, "status": status}) + "\\n")
"""
