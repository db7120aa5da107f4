"""Pure parts of the infra: limits validation, command quoting, output capture, janitor policy, recipe tags."""

from __future__ import annotations

import re
import socket
import subprocess
import time

import pytest

from swe_srl.errors import ConfigError
from swe_srl.infra.images import recipe_hash, resolve_source, safe_tag
from swe_srl.infra.sandbox.base import TRUNCATION_MARKER, Limits
from swe_srl.infra.sandbox.janitor import orphan_reason
from swe_srl.infra.sandbox.shell import Capture, ansi_c_quote

BAD_LIMITS = [
    {"memory": "lots"},  # not a size
    {"memory": 0},  # zero bytes
    {"cpus": 0},  # no CPU
    {"cpus": True},  # a bool is not a number here
    {"pids": 2.5},  # pids must be an integer
    {"command_timeout_s": -1},  # negative timeout
    {"output_limit_bytes": 0},  # no output at all
]


@pytest.mark.parametrize("kwargs", BAD_LIMITS)
def test_bad_limits_name_the_field(kwargs: dict) -> None:
    ((name, value),) = kwargs.items()
    with pytest.raises(ConfigError, match=re.escape(f"Limits.{name}={value!r}")):
        Limits(**kwargs)


@pytest.mark.parametrize(
    ("memory", "expected"),
    [
        ("512m", 512 << 20),  # suffix m
        ("2g", 2 << 30),  # suffix g
        ("1.5G", int(1.5 * (1 << 30))),  # float + upper case
        (1000, 1000),  # plain bytes
    ],
)
def test_memory_sizes(memory: str | int, expected: int) -> None:
    assert Limits(memory=memory).memory_bytes == expected


QUOTE_CASES = [
    "echo hi",  # plain
    "echo 'single' \"double\" \\back $HOME `x`",  # every quoting character stays literal
    "cat <<'EOF'\nline $1\nEOF",  # heredoc across lines
    "printf 'tab\\there'\r\n\x01\x7f",  # control characters
    "echo héllo ✓",  # non-ASCII
]


@pytest.mark.parametrize("text", QUOTE_CASES)
def test_ansi_c_quote_round_trips_through_bash(text: str) -> None:
    quoted = ansi_c_quote(text)
    assert "\n" not in quoted
    out = subprocess.run(["bash", "-c", f"printf %s {quoted}"], capture_output=True, check=True).stdout
    assert out.decode() == text


def test_capture_keeps_head_and_tail_with_marker() -> None:
    capture = Capture(limit=100)
    for i in range(2000):
        capture.add(f"{i:05d}\n".encode())
    data, truncated = capture.result(len(capture.buf))
    assert truncated and data.startswith(b"00000\n") and data.endswith(b"01999\n")
    dropped = 2000 * 6 - 100
    assert TRUNCATION_MARKER.format(dropped=dropped).encode() in data
    assert len(capture.buf) <= 2 * (50 + 8192)  # memory stays bounded


def test_capture_small_output_untouched() -> None:
    capture = Capture(limit=100)
    capture.add(b"abc\n")
    assert capture.result(4) == (b"abc\n", False)


HOST = socket.gethostname()
NOW = str(int(time.time()))
REAP_CASES = [
    (
        {"swe-srl.pid": "1", "swe-srl.host": HOST, "swe-srl.created-at": NOW},
        None,
        False,
        None,
    ),  # live pid: keep
    (
        {"swe-srl.pid": "99999999", "swe-srl.host": HOST, "swe-srl.created-at": NOW},
        None,
        False,
        "gone",
    ),  # dead
    (
        {"swe-srl.pid": "99999999", "swe-srl.host": "elsewhere", "swe-srl.created-at": NOW},
        None,
        False,
        None,
    ),  # other host
    (
        {"swe-srl.pid": "1", "swe-srl.host": HOST, "swe-srl.created-at": "0"},
        24.0,
        False,
        "older than",
    ),  # too old
    ({"swe-srl.pid": "1", "swe-srl.host": HOST, "swe-srl.created-at": NOW}, None, True, "--all"),  # --all
]


@pytest.mark.parametrize(("labels", "older", "everything", "expected"), REAP_CASES)
def test_orphan_reason(labels: dict, older: float | None, everything: bool, expected: str | None) -> None:
    reason = orphan_reason(labels, older_than_h=older, everything=everything)
    assert reason is None if expected is None else expected in reason


def test_recipe_tags() -> None:
    assert recipe_hash("a", "bc") != recipe_hash("ab", "c")  # parts are length-prefixed
    assert recipe_hash("x") == recipe_hash("x") and len(recipe_hash("x")) == 12
    assert safe_tag("django/django 3.0") == "django-django-3.0"
    with pytest.raises(ConfigError, match="'podman'"):
        resolve_source("podman")
