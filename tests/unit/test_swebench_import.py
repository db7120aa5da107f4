"""``import_swebench`` from many threads at once (``tasks validate --workers N`` grades in threads): each import
swaps ``sys.modules`` stubs, so unserialized imports removed each other's stubs mid-import (then swebench's real
``__init__`` ran: ``No module named 'bs4'``, or a half-imported module)."""

from __future__ import annotations

import importlib.util
import threading

import pytest

from swe_srl.benchmark import specs


@pytest.mark.skipif(
    importlib.util.find_spec("swebench") is None, reason="the swebench package is not installed"
)
def test_concurrent_imports_of_the_spec_tables_all_succeed() -> None:
    errors: list[str] = []
    tables: list[int] = []

    def load() -> None:
        try:
            tables.append(len(specs.import_swebench("harness.constants.python").MAP_REPO_VERSION_TO_SPECS_PY))
        except Exception as exc:  # noqa: BLE001 - any failure is the finding
            errors.append(repr(exc))

    for _ in range(3):
        threads = [threading.Thread(target=load) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert errors == []
    assert len(tables) == 24 and len(set(tables)) == 1 and tables[0] > 10
