"""SWE-bench grading run: fresh container → neutralized model patch → test_patch → test command → parse → verdict.

The pure rules (statuses, test-file stripping, resolved or not) live in ``benchmark/verdicts.py``; the files a patch
may not use to steer the run in ``grading/neutralize.py``. What a ``grade`` guarantees (docs/grading.md):

* test files (test_patch's, test directories, ``test_*.py``, ``conftest.py``, ``pytest.ini``/``tox.ini``) and
  control files (``.pytest.ini``, ``pytest.toml``, ``sitecustomize``/``usercustomize``, ``*.pth``, egg-info entry
  points, new stdlib/pytest-named top-level modules) are dropped from the patch; the pytest sections of
  ``pyproject.toml``/``setup.cfg`` anywhere in the tree are put back to the base commit's, other edits stay;
* the test command carries our reporter (``grading/commands.py``: the pytest plugin for pytest and sphinx's tox, the
  unittest reporter for django's ``tests/runtests.py`` and ``python -m unittest``, the same hooking sympy's
  ``bin/test`` runner), loaded before any code under test; pytest runs with ``PYTEST_ADDOPTS``/``PYTEST_PLUGINS``
  unset, entry-point autoloading off and the pytest11 plugins installed *before* the patch loaded by ``-p``;
* statuses come only from the reporter's records, streamed as each test finishes over a channel (fd 3, or a FIFO
  under tox) to this process (``grading/channel.py``): a nonce the reporter draws is announced first, only
  records with it count, a test counts as its worst record, nothing after the session-end record counts, that
  record counts the reporter's own records, and no session end means no statuses. So printed pass lines, fake
  records, exit hooks, and rewriting or truncating files after the fact change nothing; the runner's output is
  parsed as a cross-check (``GradeResult.cross_check``) that fails closed: a target test the channel passes and
  the output fails or errors is unresolved, reason ``channel and runner output disagree``;
* a run in which the reporter saw the runner tampered with (hooks, runner functions, reports that contradict their
  exception, records it did not write) is unresolved, reason ``runner tampered``; so is one whose canary tests
  (``grading/canaries.py``, drawn per grade and appended to every test file the command runs) did not end as they
  must (``runner tampered: canary …``);
* the patch screen's flags (``grading/screen.py``) are recorded, and make a patch unresolved under strict grading.

Not guaranteed: code of the package under test runs *inside* the runner's process and can still, aimed at our
reporter in particular, rewrite it; pytest-dev/pytest's instances patch the runner itself (docs/grading.md).
"""

from __future__ import annotations

import os
import shlex
import time
from pathlib import Path

from swe_srl.benchmark.instances import Instance
from swe_srl.benchmark.logparse import parser_for, read_channel
from swe_srl.benchmark.specs import eval_prelude, spec_cpus, test_command
from swe_srl.benchmark.verdicts import (
    ENV_BUILD,
    FLAGGED,
    RUNNER_IS_CODE,
    STRICT_ENV,
    TAMPERED,
    GradeResult,
    ran_any,
    stray_statuses,
    strip_test_edits,
    verdict,
)
from swe_srl.core.patches import patch_paths
from swe_srl.errors import ImageBuildError, SandboxError, SweSrlError
from swe_srl.grading.canaries import strip
from swe_srl.grading.channel import (
    TestRun,
    channel_script,
    contradiction_reason,
    cross_check,
    read_log,
    statuses,
)
from swe_srl.grading.commands import PytestSetup, runner_kind
from swe_srl.grading.neutralize import drop_control_files, is_pytest_config, restore_pytest_sections
from swe_srl.grading.planting import Planted, plant
from swe_srl.grading.screen import screen_patch
from swe_srl.grading.timeouts import (
    no_tests_verdict,
    patch_role,
    remember_run,
    timeout_verdict,
    unresolved_reason,
)
from swe_srl.infra.engine import engine_cpus
from swe_srl.infra.recipes import image_provenance, instance_image
from swe_srl.infra.sandbox.base import Sandbox
from swe_srl.infra.sandbox.factory import GRADING_TIMEOUT_S, PROFILES, grading_limits, open_sandbox
from swe_srl.infra.sandbox.placement import sandbox_address
from swe_srl.infra.sandbox.remote import call_on_sandbox_node

CHANNEL_LIMIT = 8_000_000
"""Grading's output cap: the channel carries one short line per test."""
PROBE = """\
import importlib.util
import json
source = open(importlib.util.find_spec("_pytest.config").origin).read()
plugins = []
try:
    from importlib.metadata import distributions
    plugins = [(e.name, e.value) for d in distributions() for e in d.entry_points if e.group == "pytest11"]
except Exception:
    import pkg_resources
    plugins = [(e.name, e.module_name) for e in pkg_resources.iter_entry_points("pytest11")]
print("@swe-srl-plugins " + json.dumps({"plugins": plugins, "by_name": "consider_entry_points" in source,
                                        "autoload_off": "PYTEST_DISABLE_PLUGIN_AUTOLOAD" in source}))
"""


def probe_pytest(sandbox: Sandbox, instance: Instance) -> PytestSetup | None:
    """The instance's :class:`PytestSetup` as the sandbox is now (None when its test command is not pytest)."""
    if runner_kind(test_command(instance)) != "pytest":
        return None
    script = " && ".join(["cd /testbed", *eval_prelude(instance)]) + f"; python -c {shlex.quote(PROBE)}"
    return PytestSetup.from_probe(sandbox.run(script, timeout=300).output)


def _apply(sandbox: Sandbox, patch: str) -> tuple[bool, str]:
    result = sandbox.apply_patch(patch)  # type: ignore[attr-defined]
    return result.exit_code == 0, result.output


def _apply_test_patch(sandbox: Sandbox, instance: Instance) -> None:
    if instance.test_patch.strip():
        check = sandbox.run(
            "git apply --check -R - <<'SWE_SRL_EOF'\n" + instance.test_patch + "\nSWE_SRL_EOF"
        )
        if check.exit_code != 0:
            ok, out = _apply(sandbox, instance.test_patch)
            if not ok:
                raise SweSrlError(f"{instance.instance_id}: the test_patch does not apply: {out}")


def run_tests_logged(
    sandbox: Sandbox,
    instance: Instance,
    timeout: float = 1800,
    setup: PytestSetup | None = None,
    aliases: bool = True,
    canaries: bool = False,
) -> TestRun:
    """Apply test_patch (unless applied), run the test command; statuses from our reporter's channel.

    ``setup``: how to start pytest (probed now when not given; ``grade`` probes before applying the patch).
    ``aliases``: also answer for the ids SWE-bench's lists use (cut at the first space, its parser's); off, a
    pytest run's statuses are keyed by node id only (task synthesis records those). A command no reporter of ours
    knows is parsed from its output. ``canaries``: plant canary tests in the test files first (``grade`` does;
    ``grading/canaries.py``), checked from the channel, never among the statuses returned.
    """
    _apply_test_patch(sandbox, instance)
    command = test_command(instance)
    prelude = " && ".join(["cd /testbed", *eval_prelude(instance)])
    kind = runner_kind(command)
    if kind is None:
        result = sandbox.run(f"{prelude}; {command}", timeout=timeout)
        return TestRun(parser_for(instance.repo)(result.output), result.output, result.timed_out)
    if kind == "pytest":
        setup = setup or probe_pytest(sandbox, instance)
    planted = plant(sandbox, instance, kind) if canaries else Planted()
    command = " ".join([command, *planted.selectors])
    script, log, remove = channel_script(
        sandbox, command, setup or PytestSetup(), runner_is_code=instance.repo in RUNNER_IS_CODE
    )
    result = sandbox.run(f"{prelude}; {script}", timeout=timeout)
    channel = read_channel(result.output)
    if channel.ended:  # a canary's status says the runner did not run the tests as written
        channel.tampered += planted.verdicts(channel.statuses)
    notes = [
        ln for ln in result.output.splitlines() if not ln.startswith("@swe-srl ")
    ]  # the prelude's output
    if result.truncated:
        notes.append("[swe-srl: the report channel overflowed its cap; records in the middle were lost]")
    if not channel.ended:
        notes.append("[swe-srl: no test records (the runner did not reach its session end)]")
    notes += [f"[swe-srl: runner tampered: {what}]" for what in channel.tampered]
    log_text = "\n".join(filter(None, ["\n".join(notes[:60]), read_log(sandbox, log, *remove)]))
    tests = strip(statuses(channel, instance, aliases and kind in ("pytest", "tox"), kind), planted.canaries)
    if kind in ("pytest", "tox") and not channel.tampered:
        tests.update(stray_statuses(instance, tests, log_text))
    disagreements, contradicted = cross_check(instance, tests, log_text)
    if disagreements:
        log_text += "\n[swe-srl: channel and stdout disagree: " + "; ".join(disagreements[:20]) + "]"
    tests.update(contradicted)  # fail closed: a pass the runner's own output contradicts does not count
    return TestRun(
        tests, log_text, result.timed_out, tuple(channel.tampered), disagreements, tuple(contradicted)
    )


def run_tests(sandbox: Sandbox, instance: Instance) -> dict[str, str]:
    """Apply test_patch if not applied, run the test command, parse → ``{test_id: PASSED|FAILED|ERROR|...}``."""
    return run_tests_logged(sandbox, instance).tests


def _read(sandbox: Sandbox, path: str) -> str | None:
    try:
        return sandbox.read_file(path).decode("utf-8", errors="surrogateescape")
    except (FileNotFoundError, IsADirectoryError):
        return None


def restore_configs(sandbox: Sandbox, base: dict[str, str | None]) -> list[str]:
    """Put the pytest sections of the config files in ``base`` (path → text before the patch) back; paths changed."""
    changed = []
    for path, before in base.items():
        after = _read(sandbox, path)
        wanted = restore_pytest_sections(path, before, after)
        if wanted == after:
            continue
        sandbox.run(f"rm -f /testbed/{shlex.quote(path)}")
        if wanted is not None:
            sandbox.write_file(path, wanted.encode("utf-8", errors="surrogateescape"))
        changed.append(path)
    return changed


def grade(
    instance: Instance,
    model_patch: str,
    *,
    repos_dir: Path | None = None,
    timeout: float = GRADING_TIMEOUT_S,
    strict: bool | None = None,
) -> GradeResult:
    """Grade ``model_patch`` in a fresh container from the instance image (see module doc for statuses).

    ``strict``: a patch the screen flags (``grading/screen.py``) is unresolved; None: ``$SWE_SRL_STRICT_GRADING``
    (set by ``swe-srl eval --strict-grading``). Flags are recorded in ``result.flags`` either way. With remote
    sandboxes (``$SWE_SRL_SANDBOXES``) the whole grade runs on a sandbox node, where the image is."""
    if (address := sandbox_address()) is not None:
        return _grade_remote(instance, model_patch, address, repos_dir, timeout, strict)
    result = GradeResult(instance.instance_id, "error")
    patch, result.reverted_test_files = strip_test_edits(instance, model_patch)
    patch, controls = drop_control_files(patch)
    result.reverted_test_files += controls
    result.flags = [f.to_dict() for f in screen_patch(instance, patch)]
    clock, timed_out = time.perf_counter(), False
    try:
        tag = instance_image(instance, repos_dir=repos_dir)
        result.image = image_provenance(instance, tag)
    except SweSrlError as exc:  # the image cannot be built or installed (or no engine answers)
        result.reason = ENV_BUILD if isinstance(exc, ImageBuildError) else "infrastructure"
        result.log = f"{result.reason}: {type(exc).__name__}: {exc}"
        return result
    try:
        limits = grading_limits(timeout, spec_cpus(instance), engine_cpus()) | {
            "output_limit_bytes": CHANNEL_LIMIT
        }
        result.image["cpus"] = limits.get("cpus", PROFILES["grading"].limits.cpus)
        result.image["network"] = limits["network"]
        with open_sandbox(tag, profile="grading", base_commit=instance.base_commit, limits=limits) as sandbox:
            result.timings["start"] = time.perf_counter() - clock
            setup = probe_pytest(sandbox, instance)  # before the patch: its entry points do not count
            base = {p: _read(sandbox, p) for p in sorted(patch_paths(patch)) if is_pytest_config(p)}
            if patch.strip():
                ok, out = _apply(sandbox, patch)
                if not ok:
                    result.status, result.log = "patch_failed", out
                    return result
            result.reverted_test_files += restore_configs(sandbox, base)
            result.timings["apply"] = time.perf_counter() - clock - result.timings["start"]
            clock = time.perf_counter()
            run = run_tests_logged(sandbox, instance, timeout, setup, canaries=True)
            result.tests, result.log, timed_out = run.tests, run.log, run.timed_out
            result.cross_check = list(run.disagreements)
            result.timings["tests"] = time.perf_counter() - clock
            result.status = "error" if timed_out else verdict(instance, result.tests)
            if result.status == "unresolved":
                result.reason = unresolved_reason(instance, result.tests)
            # the runner's output failed or errored a target the channel passed: fail closed
            if run.contradicted and not (run.tampered or timed_out):
                result.status, result.reason = "unresolved", contradiction_reason(run)
    except SweSrlError as exc:
        result.status, result.log = "error", f"{type(exc).__name__}: {exc}"
        return result
    if run.tampered:  # never resolved, whatever the statuses said
        result.status, result.reason = "unresolved", f"{TAMPERED}: {'; '.join(run.tampered)[:500]}"
        return _strict(result, strict)
    role = patch_role(instance, model_patch, patch)
    reference = lambda other: grade(instance, other, repos_dir=repos_dir, timeout=timeout)  # noqa: E731
    note = ""
    if timed_out:  # the patch's fault unless the empty patch times out too (timeouts.py)
        result.status, result.reason, note = timeout_verdict(instance, patch, timeout, lambda: reference(""))
    else:
        remember_run(instance, tag, role, result)
        if not ran_any(instance, result.tests):  # the patch's fault unless no reference patch runs any either
            result.status, result.reason, note = no_tests_verdict(instance, tag, role, reference)
    result.log += note
    return _strict(result, strict)


def _grade_remote(
    instance: Instance, patch: str, address: str, repos_dir: Path | None, timeout: float, strict: bool | None
) -> GradeResult:
    """:func:`grade` on a sandbox node (strict grading decided here); a lost node is an ``error`` (infrastructure)."""
    if strict is None:
        strict = os.environ.get(STRICT_ENV, "") not in ("", "0")
    try:
        return call_on_sandbox_node(grade, instance, patch, repos_dir=repos_dir, timeout=timeout, strict=strict,
                                    address=address, what=f"grading of {instance.instance_id}")  # fmt: skip
    except SandboxError as exc:
        result = GradeResult(instance.instance_id, "error", reason="infrastructure")
        result.log = f"infrastructure: {type(exc).__name__}: {exc}"
        return result


def _strict(result: GradeResult, strict: bool | None) -> GradeResult:
    """``result``, unresolved when strict grading is on and the patch screen flagged the patch."""
    if strict is None:
        strict = os.environ.get(STRICT_ENV, "") not in ("", "0")
    if strict and result.flags and result.status == "resolved":
        result.status = "unresolved"
        result.reason = f"{FLAGGED} ({len(result.flags)}): " + "; ".join(
            f"{f['path']}: {f['rule']}: {f['line'].strip()[:120]}" for f in result.flags[:3]
        )
    return result
