"""Report-channel node ids get the ids SWE-bench's own log parser gives them (pylint's parse_log_pytest_options
rewrites parametrized ids), so FAIL_TO_PASS/PASS_TO_PASS written with those ids match."""

from __future__ import annotations

import importlib.util

import pytest

from swe_srl.benchmark.logparse import official_aliases

pytestmark = pytest.mark.skipif(importlib.util.find_spec("swebench") is None, reason="swebench not installed")

STDIN = "tests/test_self.py::TestRunTC::test_stdin"


def test_pylint_ids_take_the_official_alias_with_the_worse_status() -> None:
    results = {
        f"{STDIN}[/testbed/tests/mymodule.py-mymodule-/testbed/tests/mymodule.py]": "PASSED",
        f"{STDIN}[mymodule.py-mymodule-mymodule.py]": "PASSED",
        "tests/test_self.py::TestRunTC::test_version": "PASSED",
    }
    aliases = official_aliases("pylint-dev/pylint", results)
    assert aliases == {f"{STDIN}[/mymodule.py]": "PASSED"}  # the id pylint's Verified PASS_TO_PASS names
    results[f"{STDIN}[/other/x/mymodule.py-mymodule-/other/x/mymodule.py]"] = "FAILED"  # the same alias
    assert official_aliases("pylint-dev/pylint", results) == {f"{STDIN}[/mymodule.py]": "FAILED"}


def test_plain_pytest_repos_and_bundled_tasks_get_no_aliases() -> None:
    results = {f"{STDIN}[/testbed/a.py-a-/testbed/a.py]": "PASSED"}
    assert official_aliases("pytest-dev/pytest", results) == {}
    assert official_aliases("pytoolz/toolz", results) == {}
