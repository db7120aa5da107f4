"""The report channel of a test run: where our reporter goes, how its stream becomes statuses, and the stdout
cross-check (``grading/runner.py: run_tests_logged`` runs the command; docs/grading.md says what it guarantees)."""

from __future__ import annotations

import shlex
import uuid
from typing import NamedTuple

from swe_srl.benchmark.instances import Instance
from swe_srl.benchmark.logparse import (
    ERROR,
    FAILED,
    PASSING,
    PYTEST_REPORT_PLUGIN,
    Channel,
    keep_worse,
    official_aliases,
    parser_for,
)
from swe_srl.benchmark.report_unittest import UNITTEST_REPORTER
from swe_srl.benchmark.verdicts import DISAGREE, TEST_PATH
from swe_srl.grading.commands import PytestSetup, pytest_script, reporter_script, runner_kind, tox_script
from swe_srl.infra.sandbox.base import Sandbox

_TEST_PATH_LINE = f"_TEST_PATH = {TEST_PATH.pattern!r}\n"
_NO_REWRITE = '"""PYTEST_DONT_REWRITE"""\n'
"""The plugin's first line: pytest's assertion rewriter (which rewrites ``-p`` plugins) leaves it as it is (it has
no assert; rewriting its 900 lines cost about 30 ms a grade)."""
LOG_LIMIT = 64_000
"""Bytes of the test log kept (head and tail), as a sandbox command's output is capped."""


def read_log(sandbox: Sandbox, log: str, *remove: str) -> str:
    half, q = LOG_LIMIT // 2, shlex.quote(log)
    script = (
        f'n=$(wc -c < {q} 2>/dev/null || echo 0); if [ "$n" -le {LOG_LIMIT} ]; then cat {q} 2>/dev/null; '
        f"else head -c {half} {q}; printf '\\n[... swe-srl: %s bytes of the test log dropped ...]\\n' "
        f"$((n - {2 * half})); tail -c {half} {q}; fi; rm -rf {' '.join(map(shlex.quote, remove))} {q}"
    )
    return sandbox.run(script, timeout=300).output


class TestRun(NamedTuple):
    """What a test command gave: statuses, the log, whether it timed out, and what the channel says besides."""

    tests: dict[str, str]
    log: str
    timed_out: bool
    tampered: tuple[str, ...] = ()
    """What the reporter saw changed in the runner (then every status is ``ERROR``: nothing passes)."""
    disagreements: tuple[str, ...] = ()
    """FAIL_TO_PASS/PASS_TO_PASS ids the stdout parser passes and the channel does not, or the reverse."""
    contradicted: tuple[str, ...] = ()
    """Those of them the channel passed while the runner's output said failed or errored: their status is the
    output's (fail closed); ``grade``'s reason is :data:`~swe_srl.benchmark.verdicts.DISAGREE`."""


def channel_script(
    sandbox: Sandbox, command: str, setup: PytestSetup, runner_is_code: bool = False
) -> tuple[str, str, tuple[str, ...]]:
    """(the script to run, the log path, the paths to remove after) for a command our reporters know.
    ``runner_is_code``: the repository is the runner's (:data:`~swe_srl.benchmark.verdicts.RUNNER_IS_CODE`): the
    pytest plugin counts the files of the ``_pytest`` and ``pytest`` it runs under as the runner's."""
    kind = runner_kind(command)
    head = _NO_REWRITE + _TEST_PATH_LINE + ("_RUNNER_IS_CODE = True\n" if runner_is_code else "")
    token = uuid.uuid4().hex[:12]
    plugin_dir, module, log = (
        f"/tmp/.swe_srl_{token}",
        f"swe_srl_report_{token}",
        f"/tmp/.swe_srl_{token}.log",
    )
    # made in the session, as write_file would by a separate exec (slower); tox's FIFO is in it: ours alone
    sandbox.run(f"mkdir -p {plugin_dir}" + (f" && chmod 700 {plugin_dir}" if kind == "tox" else ""))
    if kind == "pytest":
        sandbox.write_file(f"{plugin_dir}/{module}.py", head + PYTEST_REPORT_PLUGIN)
        return pytest_script(command, module, plugin_dir, log, setup), log, (plugin_dir,)
    if kind == "tox":
        # tox passes pytest neither our descriptor nor our environment: the plugin sits in the cwd
        fifo = f"{plugin_dir}/channel"
        sandbox.write_file(f"{module}.py", head + f"_FIFO = {fifo!r}\n" + PYTEST_REPORT_PLUGIN)
        return tox_script(command, module, fifo, log), log, (plugin_dir, f"/testbed/{module}.py")
    reporter = f"{plugin_dir}/{module}.py"
    sandbox.write_file(reporter, UNITTEST_REPORTER)
    return reporter_script(command, kind, reporter, log), log, (plugin_dir,)  # type: ignore[arg-type]


def disagreements_of(instance: Instance, tests: dict[str, str], log: str) -> tuple[str, ...]:
    """FAIL_TO_PASS/PASS_TO_PASS ids the stdout parser and the channel disagree on (pass vs not)."""
    return cross_check(instance, tests, log)[0]


def cross_check(
    instance: Instance, tests: dict[str, str], log: str
) -> tuple[tuple[str, ...], dict[str, str]]:
    """(the disagreements of :func:`disagreements_of`, the ids among them the channel passes while the runner's own
    output says they failed or errored → that status): the run fails closed on the latter (docs/grading.md)."""
    parsed = parser_for(instance.repo)(log)
    notes, contradicted = [], {}
    for t in dict.fromkeys((*instance.FAIL_TO_PASS, *instance.PASS_TO_PASS)):
        if t in parsed and (parsed[t] in PASSING) != (tests.get(t) in PASSING):
            notes.append(f"{t}: channel {tests.get(t, 'none')}, stdout {parsed[t]}")
            if tests.get(t) in PASSING and parsed[t] in (FAILED, ERROR):
                contradicted[t] = parsed[t]
    return tuple(notes), contradicted


def contradiction_reason(run: TestRun) -> str:
    """The reason of a run whose channel passed targets its runner's output failed: both statuses of each."""
    both = [n for n in run.disagreements if n.split(": channel ")[0] in run.contradicted]
    return f"{DISAGREE}: " + "; ".join(both)[:500]


def last_file_wins(tests: dict[str, str]) -> dict[str, str]:
    """sympy's runner, whose reporter records each test by its name and by ``FILE::NAME``: a name that several
    files define has the status of the last file that ran it, as SWE-bench's parser reads the log (the last line
    naming it wins); the per-file ids are not kept. The channel's order is the run's."""
    out = {key: status for key, status in tests.items() if "::" not in key}
    for key, status in tests.items():
        if "::" in key:
            out[key.rpartition("::")[2]] = status
    return out


def statuses(channel: Channel, instance: Instance, aliases: bool, kind: str | None = None) -> dict[str, str]:
    """The run's statuses: none without a session end, all ``ERROR`` when tampered; ``aliases``: pytest node ids
    also under the ids SWE-bench's lists use; ``kind`` ``sympy``: :func:`last_file_wins`."""
    tests = dict(channel.statuses) if channel.ended else {}  # no session end: nothing counts as passed
    if kind == "sympy":
        tests = last_file_wins(tests)
    if aliases:
        # SWE-bench ids are cut at the first space; node ids cut alike give the cut id the worse status
        cut: dict[str, str] = {}
        for nodeid, status in tests.items():
            if nodeid.split(" ")[0] != nodeid:
                keep_worse(cut, nodeid.split(" ")[0], status)
        for key, status in cut.items():
            tests.setdefault(key, status)
        for key, status in official_aliases(instance.repo, tests).items():  # the ids SWE-bench's parser gives
            tests.setdefault(key, status)
    if channel.tampered:
        tests = {t: "ERROR" for t in tests}
    return tests
