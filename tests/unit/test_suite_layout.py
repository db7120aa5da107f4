"""The test folders have no packages: pytest imports each test file by its base name, so two files with one name in
different folders stop the whole run at collection ("import file mismatch")."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_test_file_names_are_unique_across_folders() -> None:
    names = Counter(p.name for p in TESTS.rglob("test_*.py"))
    assert len(names) > 50  # the suite is found
    assert [n for n, count in names.items() if count > 1] == []
