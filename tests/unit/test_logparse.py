"""Log parsers on captured logs (written for these tests) and the pytest report plugin's format."""

from __future__ import annotations

import importlib.util

import pytest

from swe_srl.benchmark.logparse import parse_pytest, parser_for

PYTEST_RA = """\
============================= test session starts ==============================
collected 5 items

tests/test_a.py .F.sx                                                     [100%]

=================================== FAILURES ===================================
___________________________________ test_two ___________________________________
    def test_two():
>       assert add(1, 1) == 3
E       assert 2 == 3
=========================== short test summary info ============================
PASSED tests/test_a.py::test_one
PASSED tests/test_a.py::test_param[a-1]
SKIPPED [1] tests/test_a.py:20: needs numpy
XFAIL tests/test_a.py::test_known - bug 12
FAILED tests/test_a.py::test_two - assert 2 == 3
ERROR tests/test_b.py::test_fixture - RuntimeError: boom
==================== 1 failed, 2 passed, 1 skipped, 1 xfailed ==================
"""

VERBOSE = """\
tests/test_a.py::test_one PASSED                                          [ 50%]
tests/test_a.py::test_two FAILED                                          [100%]
"""

DJANGO = """\
test_basic (queries.tests.QueryTests) ... ok
test_other (queries.tests.QueryTests) ... FAIL
test_skip (queries.tests.QueryTests) ... skipped 'no db'
"""


@pytest.mark.parametrize(
    ("log", "expected"),
    [
        # -rA short summary: PASSED/FAILED/XFAIL/ERROR, ids with params kept, "SKIPPED [1] file:line" has no id
        (
            PYTEST_RA,
            {
                "tests/test_a.py::test_one": "PASSED",
                "tests/test_a.py::test_param[a-1]": "PASSED",
                "tests/test_a.py::test_known": "XFAIL",
                "tests/test_a.py::test_two": "FAILED",
                "tests/test_b.py::test_fixture": "ERROR",
                "[1]": "SKIPPED",
            },
        ),  # fmt: skip
        # -v lines: status after the id
        (VERBOSE, {"tests/test_a.py::test_one": "PASSED", "tests/test_a.py::test_two": "FAILED"}),
        # colour codes are stripped
        ("\x1b[32mPASSED\x1b[0m t.py::x\n", {"t.py::x": "PASSED"}),
        # nothing that looks like a result
        ("collected 0 items\n", {}),
    ],
)
def test_parse_pytest(log: str, expected: dict[str, str]) -> None:
    assert parse_pytest(log) == expected


@pytest.mark.skipif(importlib.util.find_spec("swebench") is None, reason="swebench spec tables not installed")
def test_swebench_parser_for_django() -> None:
    statuses = parser_for("django/django")(DJANGO)
    assert statuses["test_basic (queries.tests.QueryTests)"] == "PASSED"
    assert statuses["test_other (queries.tests.QueryTests)"] == "FAILED"


def test_unknown_repo_uses_pytest_parser() -> None:
    assert parser_for("someone/else")("PASSED x.py::t\n") == {"x.py::t": "PASSED"}
