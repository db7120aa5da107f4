"""``tasks validate`` causes: tests that reach for the network (offline grading) are named as such."""

from __future__ import annotations

from swe_srl.benchmark.verdicts import GradeResult
from swe_srl.grading.validate import _cause, network_note

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
    failed = GradeResult("psf__requests-2931", "unresolved", log=NO_ROUTE, reason="2/84 PASS_TO_PASS not passing")
    assert _cause(failed).startswith("2/84 PASS_TO_PASS not passing [offline: tests reach for the network")
    assert _cause(GradeResult("x", "resolved", log=NO_ROUTE)) == ""  # a tolerated linkcheck error: no note
    plain = GradeResult("x", "unresolved", log="a\nb\nE assert 0\nFAILED t.py::t")
    assert _cause(plain) == "a\nb\nE assert 0\nFAILED t.py::t"
