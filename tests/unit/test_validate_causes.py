"""``tasks validate``: causes (tests that reach for the network are named as such) and the per-repository rates."""

from __future__ import annotations

from swe_srl.benchmark.instances import Instance
from swe_srl.benchmark.verdicts import GradeResult
from swe_srl.grading.validate import _cause, network_note, repo_rates

# the lines requests' tests log in a grading container (psf__requests-1724 and -2931, gold patch)
NO_DNS = (
    "E   requests.exceptions.ConnectionError: HTTPConnectionPool(host='httpbin.org', port=80): Max retries exceeded "
    "(Caused by <class 'socket.gaierror'>: [Errno -3] Temporary failure in name resolution)"
)
NO_ROUTE = (
    "E   MaxRetryError: HTTPConnectionPool(host='10.255.255.1', port=80): Max retries exceeded with url: / (Caused by "
    "NewConnectionError('<HTTPConnection>: Failed to establish a new connection: [Errno 101] Network is unreachable'))"
)


def test_network_errors_get_a_note_only_when_the_verdict_is_not_resolved() -> None:
    assert "Temporary failure in name resolution" in network_note(NO_DNS)
    assert "offline" in network_note(NO_ROUTE) and "official harness" in network_note(NO_ROUTE)
    assert network_note("E   AssertionError: assert 1 == 2\nFAILED test_x.py::test_y") == ""
    failed = GradeResult(
        "psf__requests-2931", "unresolved", log=NO_ROUTE, reason="2/84 PASS_TO_PASS not passing"
    )
    assert _cause(failed).startswith("2/84 PASS_TO_PASS not passing [offline: tests reach for the network")
    assert _cause(GradeResult("x", "resolved", log=NO_ROUTE)) == ""  # a tolerated linkcheck error: no note
    plain = GradeResult("x", "unresolved", log="a\nb\nE assert 0\nFAILED t.py::t")
    assert _cause(plain) == "a\nb\nE assert 0\nFAILED t.py::t"


def test_rates_per_repository() -> None:
    def inst(iid: str, repo: str) -> Instance:
        return Instance.from_record(
            {"instance_id": iid, "repo": repo, "base_commit": "0" * 40, "patch": "", "test_patch": "",
             "problem_statement": ""}
        )  # fmt: skip

    instances = [inst("a-1", "o/a"), inst("a-2", "o/a"), inst("a-3", "o/a"), inst("b-1", "o/b")]
    state = {
        "a-1": {
            "valid": True,
            "gold": "resolved",
            "empty": "unresolved",
            "provenance": {"approximate_python": True},
        },
        "a-2": {"valid": False, "gold": "error", "empty": "error", "provenance": {}},
        "a-3": {"valid": False, "gold": "resolved", "empty": "resolved"},
        "b-1": {"valid": False, "gold": "unresolved", "empty": "patch_failed"},
    }
    rates = repo_rates(instances, state)
    assert rates["o/a"] == {"instances": 3, "valid": 1, "gold_resolved": 2, "empty_resolved": 1, "errors": 1,
                            "approximate_python": 1}  # fmt: skip
    assert rates["o/b"] == {"instances": 1, "valid": 0, "gold_resolved": 0, "empty_resolved": 0, "errors": 0,
                            "approximate_python": 0}  # fmt: skip
