"""SWE-bench grading: fresh container → model patch → test_patch → test command → parse → resolved?

Statuses: ``resolved`` / ``unresolved`` (the patch is wrong), ``patch_failed`` (it does not apply), ``error``
(infrastructure: image build, daemon, harness timeout — never counted as a wrong patch).

Anti reward-hacking: edits of test files (files in test_patch, test directories, ``test_*.py``, ``conftest.py``,
pytest config) are dropped from the model patch before it is applied; pytest results come from a plugin loaded
under a random name that writes a report file, so ``PASSED`` lines printed by the code under test do not count.
"""

from __future__ import annotations

import re
import shlex
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from swe_srl.errors import SweSrlError
from swe_srl.logparse import PASSING, PYTEST_REPORT_PLUGIN, parse_report, parser_for
from swe_srl.sandbox.base import Limits, Sandbox, SandboxSpec
from swe_srl.specs import eval_prelude, test_command, test_files
from swe_srl.tasks import Instance

Status = Literal["resolved", "unresolved", "patch_failed", "error"]
_TEST_PATH = re.compile(
    r"(^|/)(tests?|testing)/|(^|/)test_[^/]*\.py$|_tests?\.py$|(^|/)conftest\.py$|(^|/)(pytest|tox)\.ini$"
)
_PYTEST = re.compile(r"^((?:python3? -m )?pytest)\b")


@dataclass
class GradeResult:
    """The verdict on one model patch, with per-test statuses and the test log."""

    instance_id: str
    status: Status
    tests: dict[str, str] = field(default_factory=dict)
    log: str = ""
    reverted_test_files: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds spent in ``start`` (image + container), ``apply`` and ``tests``."""

    @property
    def resolved(self) -> bool:
        return self.status == "resolved"

    def to_dict(self) -> dict:
        return {"instance_id": self.instance_id, "status": self.status, "tests": self.tests,
                "reverted_test_files": self.reverted_test_files, "timings": self.timings}  # fmt: skip


def instance_image(instance: Instance, *, repos_dir: Path | None = None) -> str:
    """Build (if needed) the env and instance images of ``instance``; returns the instance image tag."""
    from swe_srl.images import EnvRecipe, InstanceRecipe, ensure_env_image, ensure_instance_image
    from swe_srl.repos import repo_source, scm_version
    from swe_srl.specs import base_python, env_setup_script, install_script, instance_spec

    spec = instance_spec(instance)
    env_name = re.sub(r"[^a-z0-9_.-]", "-", f"{instance.repo.split('/')[-1]}-{instance.version}".lower())
    env = EnvRecipe(
        name=env_name, python=base_python(spec.get("python", "3.11")), setup_script=env_setup_script(spec)
    )
    env_tag = ensure_env_image(env)
    repo_dir = (
        Path(instance.extra["repo_dir"])
        if "repo_dir" in instance.extra
        else repo_source(instance.repo, repos_dir)
    )
    script = install_script(instance, spec)
    if "env" not in instance.extra and (version := scm_version(repo_dir, instance.base_commit)):
        # /testbed has no tags: without this setuptools_scm repos install as 0.1.dev1 (pytest's minversion fails)
        dist = re.sub(r"[^A-Z0-9]+", "_", instance.repo.split("/")[-1].upper())
        script = f"export SETUPTOOLS_SCM_PRETEND_VERSION_FOR_{dist}={version}\n{script}"
    recipe = InstanceRecipe(
        name=instance.instance_id.lower(),
        env_image=env_tag,
        repo_dir=repo_dir,
        base_commit=instance.base_commit,
        install_script=script,
    )
    return ensure_instance_image(recipe)


def is_test_file(path: str, instance: Instance) -> bool:
    """Whether a model patch may not touch ``path`` (a test file of the instance or any test-looking path)."""
    from unidiff import PatchSet

    protected = {p.path for p in PatchSet(instance.test_patch)} if instance.test_patch.strip() else set()
    return path in protected or bool(_TEST_PATH.search(path))


def strip_test_edits(instance: Instance, patch: str) -> tuple[str, list[str]]:
    """``patch`` without the file diffs that touch test files, and the paths dropped."""
    chunks = re.split(r"(?m)^(?=diff --git )", patch)
    kept, dropped = [], []
    for chunk in chunks:
        match = re.match(r"diff --git a/(\S+) b/(\S+)", chunk)
        if match and (is_test_file(match.group(1), instance) or is_test_file(match.group(2), instance)):
            dropped.append(match.group(2))
        else:
            kept.append(chunk)
    return "".join(kept), dropped


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


def stray_statuses(instance: Instance, tests: dict[str, str], log: str) -> dict[str, str]:
    """Statuses from the log for FAIL_TO_PASS/PASS_TO_PASS ids no test of this run can have.

    SWE-bench's stdout parser picked such ids up from nested pytest output (``[100%]``, pytester runs' own
    ``test_x.py::test_y`` printed in captured output; e.g. pytest-dev__pytest-7521), so only the log can vouch
    for them there too. Ids under the run's test files always come from the plugin report (anti-hacking).
    """
    files = set(test_files(instance))
    stray = [
        t
        for t in (*instance.FAIL_TO_PASS, *instance.PASS_TO_PASS)
        if t not in tests and t.split("::")[0] not in files
    ]
    if not stray:
        return {}
    parsed = parser_for(instance.repo)(log)
    return {t: parsed[t] for t in stray if t in parsed}


def run_tests(sandbox: Sandbox, instance: Instance) -> dict[str, str]:
    """Apply test_patch if not applied, run the test command, parse → ``{test_id: PASSED|FAILED|ERROR|...}``."""
    return run_tests_logged(sandbox, instance)[0]


def verdict(instance: Instance, tests: dict[str, str]) -> Status:
    """``resolved`` iff every FAIL_TO_PASS and PASS_TO_PASS test passed."""
    wanted = [*instance.FAIL_TO_PASS, *instance.PASS_TO_PASS]
    return "resolved" if wanted and all(tests.get(t) in PASSING for t in wanted) else "unresolved"


def grade(
    instance: Instance, model_patch: str, *, repos_dir: Path | None = None, timeout: float = 1800
) -> GradeResult:
    """Grade ``model_patch`` in a fresh container from the instance image (see module doc for statuses)."""
    from swe_srl.sandbox.docker import DockerSandbox

    result = GradeResult(instance.instance_id, "error")
    patch, result.reverted_test_files = strip_test_edits(instance, model_patch)
    clock = time.perf_counter()
    try:
        image = instance_image(instance, repos_dir=repos_dir)
        limits = Limits(memory="4g", command_timeout_s=timeout, episode_timeout_s=timeout + 300)
        with DockerSandbox(
            SandboxSpec(image=image, limits=limits, base_commit=instance.base_commit)
        ) as sandbox:
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
            if timed_out:
                result.log += f"\n[swe-srl: the test command timed out after {timeout:.0f}s]"
    except SweSrlError as exc:
        result.status, result.log = "error", f"{type(exc).__name__}: {exc}"
    return result
