"""SWE-bench grading run: fresh container → model patch → test_patch → test command → parse → verdict.

The pure rules (statuses, test-file stripping, resolved or not) live in ``benchmark/verdicts.py``.
Anti reward-hacking: edits of test files (files in test_patch, test directories, ``test_*.py``, ``conftest.py``,
pytest config) are dropped from the model patch before it is applied; pytest results come from a plugin loaded
under a random name that writes a report file, so ``PASSED`` lines printed by the code under test do not count.
"""

from __future__ import annotations

import re
import shlex
import time
import uuid
from pathlib import Path

from swe_srl.benchmark.instances import Instance
from swe_srl.benchmark.logparse import PYTEST_REPORT_PLUGIN, parse_report, parser_for
from swe_srl.benchmark.specs import eval_prelude, test_command
from swe_srl.benchmark.verdicts import GradeResult, stray_statuses, strip_test_edits, verdict
from swe_srl.errors import SweSrlError
from swe_srl.grading.timeouts import timeout_verdict, unresolved_reason
from swe_srl.infra.sandbox.base import Sandbox
from swe_srl.infra.sandbox.factory import GRADING_GRACE_S, GRADING_TIMEOUT_S, open_sandbox

_PYTEST = re.compile(r"^((?:python3? -m )?pytest)\b")


def _apply(sandbox: Sandbox, patch: str) -> tuple[bool, str]:
    result = sandbox.apply_patch(patch)  # type: ignore[attr-defined]
    return result.exit_code == 0, result.output


def run_tests_logged(
    sandbox: Sandbox, instance: Instance, timeout: float = 1800
) -> tuple[dict[str, str], str, bool]:
    """Apply test_patch (unless applied), run the test command; returns (statuses, log, timed_out)."""
    if instance.test_patch.strip():
        check = sandbox.run(
            "git apply --check -R - <<'SWE_SRL_EOF'\n" + instance.test_patch + "\nSWE_SRL_EOF"
        )
        if check.exit_code != 0:
            ok, out = _apply(sandbox, instance.test_patch)
            if not ok:
                raise SweSrlError(f"{instance.instance_id}: the test_patch does not apply: {out[-500:]}")
    token = uuid.uuid4().hex[:12]
    plugin_dir, module, report = (
        f"/tmp/.swe_srl_{token}",
        f"swe_srl_report_{token}",
        f"/tmp/.swe_srl_{token}.jsonl",
    )
    command = test_command(instance)
    use_plugin = bool(_PYTEST.match(command))
    if use_plugin:
        sandbox.write_file(f"{plugin_dir}/{module}.py", PYTEST_REPORT_PLUGIN)
        command = _PYTEST.sub(rf"\1 -p {module}", command, count=1)
        command = f"PYTHONPATH={plugin_dir}${{PYTHONPATH:+:$PYTHONPATH}} SWE_SRL_REPORT={report} {command}"
    script = " && ".join(["cd /testbed", *eval_prelude(instance)]) + f"; {command}"
    result = sandbox.run(script, timeout=timeout)
    if not use_plugin:
        return parser_for(instance.repo)(result.output), result.output, result.timed_out
    try:
        tests = parse_report(sandbox.read_file(report).decode("utf-8", errors="replace"))
    except FileNotFoundError:
        tests = {}  # pytest never reached session end: nothing counts as passed
    sandbox.run(f"rm -rf {shlex.quote(plugin_dir)} {shlex.quote(report)}")
    for nodeid, status in list(tests.items()):  # SWE-bench ids are cut at the first space
        tests.setdefault(nodeid.split(" ")[0], status)
    tests.update(stray_statuses(instance, tests, result.output))
    return tests, result.output, result.timed_out


def run_tests(sandbox: Sandbox, instance: Instance) -> dict[str, str]:
    """Apply test_patch if not applied, run the test command, parse → ``{test_id: PASSED|FAILED|ERROR|...}``."""
    return run_tests_logged(sandbox, instance)[0]


def grade(
    instance: Instance, model_patch: str, *, repos_dir: Path | None = None, timeout: float = GRADING_TIMEOUT_S
) -> GradeResult:
    """Grade ``model_patch`` in a fresh container from the instance image (see module doc for statuses)."""
    result = GradeResult(instance.instance_id, "error")
    patch, result.reverted_test_files = strip_test_edits(instance, model_patch)
    clock, timed_out = time.perf_counter(), False
    try:
        limits = {"command_timeout_s": timeout, "episode_timeout_s": timeout + GRADING_GRACE_S}
        with open_sandbox(instance, profile="grading", repos_dir=repos_dir, limits=limits) as sandbox:
            result.timings["start"] = time.perf_counter() - clock
            if patch.strip():
                ok, out = _apply(sandbox, patch)
                if not ok:
                    result.status, result.log = "patch_failed", out
                    return result
            result.timings["apply"] = time.perf_counter() - clock - result.timings["start"]
            clock = time.perf_counter()
            result.tests, result.log, timed_out = run_tests_logged(sandbox, instance, timeout)
            result.timings["tests"] = time.perf_counter() - clock
            result.status = "error" if timed_out else verdict(instance, result.tests)
            if result.status == "unresolved":
                result.reason = unresolved_reason(instance, result.tests)
    except SweSrlError as exc:
        result.status, result.log = "error", f"{type(exc).__name__}: {exc}"
        return result
    if timed_out:  # the patch's fault unless the empty patch times out too (timeouts.py)
        empty = lambda: grade(instance, "", repos_dir=repos_dir, timeout=timeout)  # noqa: E731
        result.status, result.reason, note = timeout_verdict(instance, patch, timeout, empty)
        result.log += note
    return result
