"""``tasks validate --grading-network``: grading containers get a network only when asked (the official harness's
have one; requests' httpbin.org tests and sphinx's linkcheck need it), and the provenance says which."""

from __future__ import annotations

import copy

import pytest
from test_grading_references import new_file_diff

from swe_srl.benchmark.instances import load_instances
from swe_srl.grading.runner import grade
from swe_srl.infra.sandbox.base import GRADING_NETWORK_ENV

pytestmark = pytest.mark.docker

NET_TEST = "test/test_has_network.py"
ROUTE_TEST = [
    "def test_default_route():  # a network interface with a route out (network_mode none: loopback alone)",
    "    rows = open('/proc/net/route').read().splitlines()[1:]",
    "    assert any(row.split()[1] == '00000000' for row in rows), rows",
]


def _task():
    task = copy.deepcopy(load_instances("bundled:test")[0])  # same id, so the same image
    task.test_patch = new_file_diff(NET_TEST, ROUTE_TEST)
    task.FAIL_TO_PASS, task.PASS_TO_PASS = [f"{NET_TEST}::test_default_route"], []
    task.extra["env"] = task.extra["env"] | {"test_files": [NET_TEST]}
    return task


def test_grading_has_a_network_only_when_asked(docker_engine, monkeypatch) -> None:
    monkeypatch.delenv(GRADING_NETWORK_ENV, raising=False)
    offline = grade(_task(), "")
    assert offline.status == "unresolved" and offline.image["network"] is False, offline.log[-1500:]
    monkeypatch.setenv(GRADING_NETWORK_ENV, "1")
    online = grade(_task(), "")
    assert online.status == "resolved" and online.image["network"] is True, online.log[-1500:]
