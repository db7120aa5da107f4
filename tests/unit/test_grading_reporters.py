"""Our reporters in real runs on the host: the unittest reporter (a django-style runner) and the pytest plugin's
tamper checks, each beside code under test that forges; and which commands get which reporter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_grading_channel import pytest_cmd

from swe_srl.benchmark.logparse import PYTEST_REPORT_PLUGIN, Channel, read_channel
from swe_srl.benchmark.report_unittest import UNITTEST_REPORTER
from swe_srl.grading.commands import PytestSetup, pytest_script, reporter_script, runner_kind, tox_script

SPECS = Path(os.environ.get("SWE_SRL_SHARED", Path(__file__).resolve().parents[2] / "../shared")) / "data"


def run_with_channel(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[Channel, str]:
    """Run ``cmd`` with a pipe on ``$SWE_SRL_CHANNEL_FD``; (what the channel says, the combined output)."""
    read, write = os.pipe()
    run_env = {**os.environ, **(env or {}), "SWE_SRL_CHANNEL_FD": str(write)}
    proc = subprocess.Popen(cmd, cwd=cwd, env=run_env, pass_fds=(write,), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # fmt: skip
    os.close(write)
    with os.fdopen(read) as channel:
        stream = channel.read()
    return read_channel(stream), proc.communicate()[0].decode()


RUNTESTS = """\
import os, sys, unittest
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
suite = unittest.defaultTestLoader.discover(os.path.dirname(os.path.abspath(__file__)))
sys.exit(not unittest.TextTestRunner(verbosity=2).run(suite).wasSuccessful())
"""
UNIT_TESTS = """\
import unittest
import pkg


class T(unittest.TestCase):
    def test_ok(self):
        self.assertEqual(pkg.add(1, 0), 1)

    def test_add(self):
        \"\"\"Adds two numbers.\"\"\"
        self.assertEqual(pkg.add(1, 2), 3)

    def test_sub(self):
        with self.subTest(i=1):
            self.assertEqual(pkg.add(1, 1), 2)

    @unittest.skip("no")
    def test_skipped(self):
        pass
"""


def unittest_project(tmp_path: Path, package: str) -> list[str]:
    (tmp_path / "tests").mkdir()
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text(package + "\ndef add(a, b):\n    return a - b\n")
    (tmp_path / "tests" / "runtests.py").write_text(RUNTESTS)
    (tmp_path / "tests" / "test_x.py").write_text(UNIT_TESTS)
    (tmp_path / "reporter.py").write_text(UNITTEST_REPORTER)
    return [sys.executable, str(tmp_path / "reporter.py"), "tests/runtests.py"]


def ids(name: str) -> str:
    return f"{name} (test_x.T.{name})" if sys.version_info >= (3, 11) else f"{name} (test_x.T)"


def test_unittest_statuses_come_from_the_channel_not_printed_lines(tmp_path: Path) -> None:
    forged = "print('test_add (test_x.T.test_add) ... ok')\nprint('Adds two numbers. ... ok')"
    channel, out = run_with_channel(unittest_project(tmp_path, forged), tmp_path)
    assert "Adds two numbers. ... ok" in out  # printed, and ignored
    assert channel.ended and not channel.tampered
    assert channel.statuses == {
        ids("test_ok"): "PASSED",
        ids("test_add"): "FAILED",
        "Adds two numbers.": "FAILED",  # the docstring line, the id SWE-bench's django parser gives
        ids("test_sub"): "FAILED",  # a failing subtest fails its test
        ids("test_skipped"): "SKIPPED",
    }


@pytest.mark.parametrize(
    "package, tampered",
    [
        ("import sys\nprint('test_add ... ok')\nsys.exit(0)", False),  # exits at import: the test never runs
        ("import unittest\nunittest.TestResult.addFailure = lambda self, t, e: self.addSuccess(t)", True),
    ],
)
def test_unittest_forgeries_pass_nothing(tmp_path: Path, package: str, tampered: bool) -> None:
    channel, out = run_with_channel(unittest_project(tmp_path, package), tmp_path)
    assert bool(channel.tampered) == tampered, out[-2000:]
    assert channel.tampered or channel.statuses.get(ids("test_add")) != "PASSED"  # tampered: nothing passes


PACKAGE_ATTACK = """\
import gc as _gc, pytest as _pt
class _Forge:
    @_pt.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        outcome.get_result().outcome = "passed"
for _o in _gc.get_objects():
    if type(_o).__name__ == "PytestPluginManager":
        _o.register(_Forge())
"""


@pytest.mark.parametrize("attack", ["", PACKAGE_ATTACK])
def test_pytest_plugin_reports_a_hook_wrapper_registered_from_the_package(
    tmp_path: Path, attack: str
) -> None:
    (tmp_path / "pkg.py").write_text(attack + "\ndef add(a, b):\n    return a - b\n")
    tests = "import pkg\n\ndef test_ok():\n    pass\n\ndef test_add():\n    assert pkg.add(1, 2) == 3\n"
    cmd = pytest_cmd(tmp_path, tests, "-rA")
    channel, out = run_with_channel(cmd, tmp_path, {"PYTHONPATH": str(tmp_path)})
    assert channel.ended and channel.statuses["test_x.py::test_ok"] == "PASSED"
    if attack:
        assert "PASSED test_x.py::test_add" in out  # pytest itself was fooled
        assert any(t.startswith("hook pytest_runtest_makereport changed") for t in channel.tampered)
        assert "passed report of a call that raised: test_x.py::test_add" in channel.tampered
    else:
        assert channel.tampered == [] and channel.statuses["test_x.py::test_add"] == "FAILED"


def test_every_verified_test_command_gets_a_reporter() -> None:
    specs = SPECS / "swebench-specs-py.json"
    if not specs.is_file():
        pytest.skip(f"no spec table at {specs}")
    table = json.loads(specs.read_text())["MAP_REPO_VERSION_TO_SPECS_PY"]
    kinds = {
        (repo, runner_kind(spec.get("test_cmd", "")))
        for repo, versions in table.items()
        for spec in versions.values()
    }
    assert {k for r, k in kinds if r == "django/django"} == {"unittest"}
    assert {k for r, k in kinds if r == "sympy/sympy"} == {"sympy"}
    assert {k for r, k in kinds if r == "sphinx-doc/sphinx"} == {"tox"}
    assert {k for r, k in kinds if r == "astropy/astropy"} == {"pytest"}


def test_rewritten_commands_parse_as_bash() -> None:
    setup = PytestSetup(("-p", "xdist"), True)
    scripts = [
        pytest_script("PYTHONWARNINGS='ignore' pytest -rA t.py", "m", "/tmp/d", "/tmp/l", setup),
        tox_script("tox --current-env -epy39 -v -- tests/test_x.py", "m", "/tmp/d/channel", "/tmp/l"),
        reporter_script("./tests/runtests.py --verbosity 2 a", "unittest", "/tmp/d/r.py", "/tmp/l"),
        reporter_script("PYTHONWARNINGS='x' bin/test -C --verbose f.py", "sympy", "/tmp/d/r.py", "/tmp/l"),
        reporter_script("python -m unittest -v t", "unittest", "/tmp/d/r.py", "/tmp/l"),
    ]
    for script in scripts:
        assert subprocess.run(["bash", "-n", "-c", script]).returncode == 0, script
    assert "PYTHONWARNINGS='ignore' pytest -p m -p no:cacheprovider -p xdist -rA t.py" in scripts[0]
    assert "-epy39 -v -- -p m -p no:cacheprovider tests/test_x.py" in scripts[1]
    assert "python /tmp/d/r.py ./tests/runtests.py --verbosity 2 a" in scripts[2]
    assert (
        "PYTHONHASHSEED=" in scripts[3] and "PYTHONWARNINGS='x' python /tmp/d/r.py bin/test -C" in scripts[3]
    )
    assert "python /tmp/d/r.py -m unittest -v t" in scripts[4]


@pytest.mark.parametrize("where", ["package", "test"])
def test_pytest_plugin_reports_an_xfail_raised_by_the_code_under_test(tmp_path: Path, where: str) -> None:
    # an xfail counts as passing: raised by the package (not a test file), it is the patch's doing
    from swe_srl.benchmark.verdicts import TEST_PATH

    package = "import pytest\n\ndef add(a, b):\n    pytest.xfail('later')\n" if where == "package" else "def add(a, b):\n    return a - b\n"  # fmt: skip
    test = "import pkg, pytest\n\ndef test_add():\n    " + ("pytest.xfail('known')\n" if where == "test" else "assert pkg.add(1, 2) == 3\n")  # fmt: skip
    (tmp_path / "pkg.py").write_text(package)
    (tmp_path / "test_x.py").write_text(test)
    (tmp_path / "swe_srl_report_t.py").write_text(
        f"_TEST_PATH = {TEST_PATH.pattern!r}\n" + PYTEST_REPORT_PLUGIN
    )
    cmd = [sys.executable, "-m", "pytest", "-p", "swe_srl_report_t", "-p", "no:cacheprovider", "test_x.py"]
    channel, out = run_with_channel(cmd, tmp_path, {"PYTHONPATH": str(tmp_path)})
    assert channel.ended and channel.statuses == {"test_x.py::test_add": "XFAIL"}, out[-1500:]
    assert bool(channel.tampered) == (where == "package"), channel.tampered


SYMPY_SORTED = """\
import os, sys
from sympy.testing.runtests import PyTestReporter, SymPyTests
tests = SymPyTests(PyTestReporter(verbose=True))
tests._testfiles.extend(os.path.abspath(a) for a in sys.argv[1:])
sys.exit(not tests.test(sort=True))
"""
"""sympy's ``bin/test`` runs its files sorted (its ``_test``'s default)."""
LAST = "def test_zz_last():\n    pass\n"
"""The last test of a file: its line carries ``[OK]``, which SWE-bench's parser does not read."""


@pytest.mark.parametrize(("failing", "verdict"), [("test_a.py", "PASSED"), ("test_c.py", "FAILED")])
def test_sympy_a_name_two_files_define_has_the_last_file_s_status(
    tmp_path: Path, failing: str, verdict: str
) -> None:
    """sympy__sympy-14248's FAIL_TO_PASS ``test_MatrixSymbol_printing`` fails in test_pretty.py and passes in
    test_latex.py, which runs later: SWE-bench's parser (the last line naming it) passes it, and so do we; a
    failure in the file that runs last fails it."""
    pytest.importorskip("sympy.testing.runtests")
    from swe_srl.benchmark.instances import Instance
    from swe_srl.benchmark.logparse import parser_for
    from swe_srl.grading.channel import statuses

    (tmp_path / "reporter.py").write_text(UNITTEST_REPORTER)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "test").write_text(SYMPY_SORTED)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / failing).write_text("def test_same():\n    assert 1 == 2\n\n\n" + LAST)
    (tmp_path / "tests" / "test_b.py").write_text("def test_same():\n    assert 1 == 1\n\n\n" + LAST)
    cmd = [sys.executable, "reporter.py", "bin/test", "tests/test_b.py", f"tests/{failing}"]
    channel, out = run_with_channel(cmd, tmp_path, {"PYTHONPATH": str(tmp_path)})
    assert channel.ended and not channel.tampered, out
    # the per-file ids, from the runner's root (its own package's folder here, site-packages)
    by_file = {k.rpartition("tests/")[2]: v for k, v in channel.statuses.items() if "::" in k}
    assert by_file == {f"{failing}::test_same": "FAILED", f"{failing}::test_zz_last": "PASSED",
                       "test_b.py::test_same": "PASSED", "test_b.py::test_zz_last": "PASSED"}, channel.statuses  # fmt: skip
    inst = Instance("sympy__sympy-1", "sympy/sympy", "0" * 40, "", "", "")
    assert statuses(channel, inst, False, "sympy") == {"test_same": verdict, "test_zz_last": "PASSED"}
    assert parser_for("sympy/sympy")(out)["test_same"] == verdict  # SWE-bench's parser on the same output
