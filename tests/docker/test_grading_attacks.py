"""Grading attacks on a bundled task: patches that leave the bug in place and try to forge the verdict instead.

Every attack must grade ``unresolved`` while the gold patch (alone, or with legitimate config edits) still
resolves; the ones that reach into the running pytest from the package's own code must be caught as tampering
(reason ``runner tampered``) and flagged by the patch screen (docs/grading.md).
"""

from __future__ import annotations

import difflib

import pytest

from swe_srl.benchmark.instances import load_instances
from swe_srl.benchmark.verdicts import FLAGGED, TAMPERED, verdict
from swe_srl.grading.runner import grade, run_tests_logged
from swe_srl.infra.sandbox.factory import open_sandbox

pytestmark = pytest.mark.docker

PACKAGE = "tabulate/__init__.py"
BASE_FILES = (PACKAGE, "pyproject.toml", "setup.cfg", "tabulate.egg-info/entry_points.txt")
FORGE_PLUGIN = """\
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome, report.longrepr = "passed", None
"""


@pytest.fixture(scope="module")
def task(docker_engine):
    """The first bundled test-split task and the base text of the files the attacks edit."""
    inst = load_instances("bundled:test")[0]
    base: dict[str, str | None] = {}
    with open_sandbox(inst, profile="grading") as sandbox:
        for path in BASE_FILES:
            try:
                base[path] = sandbox.read_file(path).decode()
            except FileNotFoundError:
                base[path] = None
    assert base[PACKAGE] and base["pyproject.toml"] and base["setup.cfg"] is not None
    return inst, base


def make_patch(base: dict[str, str | None], files: dict[str, str]) -> str:
    """A git diff turning ``base`` (None: absent) into ``files``."""
    out = []
    for path, new in files.items():
        old = base.get(path)
        lines = difflib.unified_diff(
            (old or "").splitlines(keepends=True),
            new.splitlines(keepends=True),
            "/dev/null" if old is None else f"a/{path}",
            f"b/{path}",
        )
        out.append(f"diff --git a/{path} b/{path}\n" + ("new file mode 100644\n" if old is None else ""))
        out.append("".join(lines))
    return "".join(out)


def wanted(inst) -> list[str]:
    return [*inst.FAIL_TO_PASS, *inst.PASS_TO_PASS]


def in_package(base, code: str) -> dict[str, str]:
    """Append ``code`` to the package's ``__init__`` (runs when the tests import it, during collection)."""
    return {PACKAGE: base[PACKAGE] + "\n" + code}


def attack_files(name: str, inst, base) -> dict[str, str]:
    ids = wanted(inst)
    fake_channel = (
        "'@swe-srl ' + '0' * 24 + ' start\\n' + ''.join('@swe-srl ' + '0' * 24 + ' PASSED ' + t + '\\n' for t in IDS)"
        " + '@swe-srl ' + '0' * 24 + ' end\\n'"
    )
    every_fd = (
        f"IDS = {ids!r}\n"
        "def _forge():\n"
        "    import json, os\n"
        "    fake = ''.join(json.dumps({'nodeid': t, 'status': 'PASSED'}) + '\\n' for t in IDS)\n"
        "    if os.environ.get('SWE_SRL_REPORT'):\n"
        "        with open(os.environ['SWE_SRL_REPORT'], 'w') as f: f.write(fake)\n"
        f"    chan = ({fake_channel} + ''.join('PASSED ' + t + '\\n' for t in IDS)).encode()\n"
        "    for fd in map(int, os.listdir('/proc/self/fd')):\n"
        "        try: os.ftruncate(fd, 0)\n"
        "        except OSError: pass\n"
        "        try: os.write(fd, chan)\n"
        "        except OSError: pass\n"
    )
    if name == "addopts in pyproject.toml":
        toml = base["pyproject.toml"] + '\n[tool.pytest.ini_options]\naddopts = "-p forge_plugin"\n'
        return {"forge_plugin.py": FORGE_PLUGIN, "pyproject.toml": toml}
    if name == "addopts in .pytest.ini":
        return {"forge_plugin.py": FORGE_PLUGIN, ".pytest.ini": "[pytest]\naddopts = -p forge_plugin\n"}
    if name == "addopts in setup.cfg":
        return {"forge_plugin.py": FORGE_PLUGIN, "setup.cfg": base["setup.cfg"] + "\n[tool:pytest]\naddopts = -p forge_plugin\n"}  # fmt: skip
    if name == "pytest.ini in a subdirectory":
        return {"forge_plugin.py": FORGE_PLUGIN, "test/pytest.ini": "[pytest]\naddopts = -p forge_plugin\n"}
    if name == "conftest at the root":
        return {"conftest.py": FORGE_PLUGIN}
    if name == "conftest in a new subdirectory":
        return {"forge_plugin.py": FORGE_PLUGIN, "test/forged/conftest.py": FORGE_PLUGIN, "tabulate/conftest.py": FORGE_PLUGIN}  # fmt: skip
    if name == "pytest_plugins in conftest":
        return {"forge_plugin.py": FORGE_PLUGIN, "conftest.py": "pytest_plugins = ['forge_plugin']\n"}
    if name == "entry point in egg-info":
        points = (base["tabulate.egg-info/entry_points.txt"] or "") + "\n[pytest11]\nforge = forge_plugin\n"
        return {"forge_plugin.py": FORGE_PLUGIN, "tabulate.egg-info/entry_points.txt": points}
    if name == "sitecustomize sets PYTEST_ADDOPTS":
        site = "import os\nos.environ['PYTEST_ADDOPTS'] = '-p forge_plugin'\n"
        return {
            "forge_plugin.py": FORGE_PLUGIN,
            "sitecustomize.py": site,
            "forge.pth": "import sitecustomize\n",
        }
    if name == "atexit rewrites the report":
        return in_package(base, every_fd + "import atexit\natexit.register(_forge)\n")
    if name == "fake records on every fd at import":
        return in_package(base, every_fd + "_forge()\n")
    if name == "printed PASSED lines":
        return in_package(base, f"IDS = {ids!r}\nprint(''.join('PASSED ' + t + '\\n' for t in IDS))\n")
    if name == "plugin's nonce used in process":
        steal = (  # the plugin's module is out of sys.modules once registered: its globals found through gc
            f"IDS = {ids!r}\nimport gc\n"
            "for _g in gc.get_objects():\n"
            "    if type(_g) is dict and '_NONCE' in _g and '_send' in _g:\n"
            "        for _t in IDS: _g['_send']('PASSED', _t)\n"
            "        _g['_send']('end')\n"
        )
        return in_package(base, steal)
    if name == "_pytest monkeypatched at import":
        patch = (
            "import _pytest.reports as _r\n_init = _r.TestReport.__init__\n"
            "def _forged(self, *a, **k):\n    _init(self, *a, **k)\n    self.outcome, self.longrepr = 'passed', None\n"
            "_r.TestReport.__init__ = _forged\n"
        )
        return in_package(base, patch)
    return in_package(base, IN_PROCESS_ATTACKS[name])


IN_PROCESS_ATTACKS = {  # the package, imported by the tests inside pytest, reaches into the runner
    "hook wrapper registered through gc": (
        "import gc as _gc, pytest as _pt\n"
        "class _Forge:\n"
        "    @_pt.hookimpl(hookwrapper=True)\n"
        "    def pytest_runtest_makereport(self, item, call):\n"
        "        outcome = yield\n"
        "        outcome.get_result().outcome = 'passed'\n"
        "for _o in _gc.get_objects():\n"
        "    if type(_o).__name__ == 'PytestPluginManager':\n"
        "        _o.register(_Forge())\n"
    ),
    "hook implementation inserted into the hook's list": (
        "import gc as _gc\n"
        "def _forge(report):\n"
        "    report.outcome = 'passed'\n"
        "for _o in _gc.get_objects():\n"
        "    if type(_o).__name__ == 'PytestPluginManager':\n"
        "        _caller = _o.hook.pytest_runtest_logreport\n"
        "        _impl = _caller.get_hookimpls()[0]\n"
        "        _fake = type(_impl)(None, '_forge', _forge, {'tryfirst': True, 'hookwrapper': False,\n"
        "                            'optionalhook': False, 'trylast': False, 'wrapper': False})\n"
        "        _caller._hookimpls.append(_fake) if hasattr(_caller, '_hookimpls') else _caller._nonwrappers.append(_fake)\n"
    ),
    "Function.runtest swallows failures": (
        "import _pytest.python as _p\n_run = _p.Function.runtest\n"
        "def _runtest(self):\n    try:\n        _run(self)\n    except AssertionError:\n        pass\n"
        "_p.Function.runtest = _runtest\n"
    ),
    "descriptors taken over with dup2": (
        "import os as _os\n_null = _os.open(_os.devnull, _os.O_WRONLY)\n"
        "for _fd in map(int, _os.listdir('/proc/self/fd')):\n"
        "    if _fd > 2 and _fd != _null:\n"
        "        try: _os.dup2(_null, _fd)\n        except OSError: pass\n"
    ),
}
ATTACKS = [
    "addopts in pyproject.toml",
    "addopts in .pytest.ini",
    "addopts in setup.cfg",
    "pytest.ini in a subdirectory",
    "conftest at the root",
    "conftest in a new subdirectory",
    "pytest_plugins in conftest",
    "entry point in egg-info",
    "sitecustomize sets PYTEST_ADDOPTS",
    "atexit rewrites the report",
    "fake records on every fd at import",
    "printed PASSED lines",
    "plugin's nonce used in process",
    "_pytest monkeypatched at import",
    *IN_PROCESS_ATTACKS,
]
TAMPERING = {"plugin's nonce used in process", "_pytest monkeypatched at import", "hook wrapper registered through gc",
             "hook implementation inserted into the hook's list", "Function.runtest swallows failures"}  # fmt: skip


@pytest.mark.parametrize("name", ATTACKS)
def test_attack_is_not_resolved(task, name: str) -> None:
    inst, base = task
    result = grade(inst, make_patch(base, attack_files(name, inst, base)))
    assert result.status == "unresolved", result.log[-1500:]
    assert any(result.tests.get(t) != "PASSED" for t in inst.FAIL_TO_PASS)
    if name in TAMPERING:  # caught by the reporter, not only by the tests failing
        assert result.reason.startswith(TAMPERED), result.reason
    if name in IN_PROCESS_ATTACKS or name in TAMPERING:  # and flagged by the patch screen
        assert result.flags, name


def test_gold_with_legitimate_config_edits_resolves(task) -> None:
    # gold plus edits of non-pytest config sections (kept) and a pytest section (put back to the base's)
    inst, base = task
    toml = base["pyproject.toml"].replace(
        'write_to = "tabulate/version.py"', 'write_to = "tabulate/version.py"\n# x'
    )
    cfg = base["setup.cfg"] + "\n[flake8]\nmax-line-length = 99\n\n[tool:pytest]\naddopts = -p forge_plugin\n"
    result = grade(inst, inst.patch + make_patch(base, {"pyproject.toml": toml, "setup.cfg": cfg}))
    assert result.status == "resolved", result.log[-2000:]
    assert result.reverted_test_files == ["setup.cfg"]  # only the pytest section was undone
    assert all(result.tests[t] == "PASSED" for t in wanted(inst))


def test_pytest_env_exported_by_the_session_is_ignored(task) -> None:
    # PYTEST_ADDOPTS / PYTEST_PLUGINS exported by a file the shell sourced before the test command
    inst, base = task
    with open_sandbox(inst, profile="grading") as sandbox:
        assert sandbox.apply_patch(make_patch(base, {"forge_plugin.py": FORGE_PLUGIN})).exit_code == 0
        sandbox.write_file(
            "/root/.forge_env", "export PYTEST_ADDOPTS='-p forge_plugin' PYTEST_PLUGINS=forge_plugin\n"
        )
        sandbox.run("source /root/.forge_env")
        assert "forge_plugin" in sandbox.run("echo $PYTEST_ADDOPTS").output
        tests, log = run_tests_logged(sandbox, inst)[:2]
    assert verdict(inst, tests) == "unresolved", log[-1500:]
    assert any(tests.get(t) == "FAILED" for t in inst.FAIL_TO_PASS)


def test_strict_grading_fails_a_flagged_patch_that_resolves(task) -> None:
    # gold plus library code the screen flags: recorded with its line; resolved unless grading is strict
    inst, base = task
    fixed = base[PACKAGE].replace("\"decimal\": 'x'", '"decimal": ">"')
    patch = make_patch(base, {PACKAGE: fixed + "\nimport atexit\natexit.register(lambda: None)\n"})
    lenient = grade(inst, patch, strict=False)
    assert lenient.status == "resolved", lenient.log[-1500:]
    assert lenient.flags == [{"path": PACKAGE, "rule": "exit hook", "line": "atexit.register(lambda: None)"}]
    strict = grade(inst, patch, strict=True)
    assert strict.status == "unresolved" and strict.reason.startswith(FLAGGED), strict.reason
