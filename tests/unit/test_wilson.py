"""The resolved rate's 95% Wilson interval and the report's provenance block (pure)."""

from __future__ import annotations

import math

import pytest

from swe_srl import __version__
from swe_srl.eval.report import build_report, wilson_interval


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [(5, 10, 0.2366, 0.7634), (0, 10, 0.0, 0.2775), (10, 10, 0.7225, 1.0), (81, 263, 0.2553, 0.3662)],
)
def test_wilson_matches_the_closed_form(k: int, n: int, low: float, high: float) -> None:
    got = wilson_interval(k, n)
    assert got == pytest.approx((low, high), abs=1e-4)
    p = k / n
    assert got[0] <= p <= got[1]


def test_wilson_of_nothing_is_uninformative_and_narrows_with_n() -> None:
    assert wilson_interval(0, 0) == (0.0, 1.0)
    widths = [math.fsum((-a, b)) for a, b in (wilson_interval(n // 2, n) for n in (10, 100, 1000))]
    assert widths == sorted(widths, reverse=True)


def test_report_has_the_interval_and_provenance() -> None:
    image = {"image": "swe-srl/instance:x-1", "image_id": "sha256:ab", "digests": [], "image_source": "registry",
             "python": "3.9"}  # fmt: skip
    records = [{"instance_id": "a", "repo": "r", "status": "resolved", "image": image},
               {"instance_id": "b", "repo": "r", "status": "error"}]  # fmt: skip
    report = build_report(records, policy="gold")
    assert report["resolved_rate_ci95"] == list(wilson_interval(1, 2))
    prov = report["provenance"]
    assert (
        prov["images"] == {"a": image}
        and prov["image_sources"] == ["registry"]
        and prov["pythons"] == ["3.9"]
    )
    assert prov["swe_srl_version"] == __version__
