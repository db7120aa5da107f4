"""The report channel: what the host keeps of the plugin's stream (parse_report), and the plugin in a real pytest run
with its channel on a descriptor, beside code that prints fake records."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from swe_srl.benchmark.logparse import PYTEST_REPORT_PLUGIN, parse_report, read_channel
from swe_srl.grading.runner import PROBE, PytestSetup

N = "ab" * 12
F = "cd" * 12


def rec(status: str, nodeid: str, nonce: str = N) -> str:
    return f"@swe-srl {nonce} {status} {nodeid}\n"


START, END = f"@swe-srl {N} start\n", f"@swe-srl {N} end\n"


@pytest.mark.parametrize(
    "stream, expected",
    [
        (
            START + rec("PASSED", "t.py::a") + rec("FAILED", "t.py::b") + END,
            {"t.py::a": "PASSED", "t.py::b": "FAILED"},
        ),
        # nothing before the first announcement counts, nor a second announcement's records
        (rec("PASSED", "t.py::b") + START + f"@swe-srl {F} start\n" + rec("PASSED", "t.py::a", F) + END, {}),
        (f"@swe-srl {F} start\n" + rec("PASSED", "t.py::a", F) + START + END, {}),
        # nothing after the session end (exit hooks); no session end: no statuses at all
        (
            START + rec("FAILED", "t.py::a") + END + rec("PASSED", "t.py::a") + rec("PASSED", "t.py::z"),
            {"t.py::a": "FAILED"},
        ),  # fmt: skip
        (START + rec("PASSED", "t.py::a"), {}),
        # a test counts as the worst status of its records: a forged early PASSED loses to the real FAILED
        (
            START + rec("PASSED", "t.py::a") + rec("FAILED", "t.py::a") + rec("PASSED", "t.py::a") + END,
            {"t.py::a": "FAILED"},
        ),  # fmt: skip
        (START + rec("XFAIL", "t.py::a") + rec("PASSED", "t.py::a") + END, {"t.py::a": "XFAIL"}),
        # noise, unknown statuses and malformed ids are ignored, not errors (an error verdict would hide a bad patch)
        (
            START
            + "PASSED t.py::x\nrandom\n"
            + rec("WON", "t.py::b")
            + rec("PASSED", "bad\\u")
            + rec("PASSED", "t.py::c[\\xfc d]")
            + END,
            {"t.py::c[\xfc d]": "PASSED"},
        ),  # fmt: skip
    ],
)
def test_parse_report(stream: str, expected: dict[str, str]) -> None:
    assert parse_report(with_counts(stream)) == expected


def with_counts(stream: str) -> str:
    """``stream`` with each ``end`` of nonce N carrying the count of N's records before it, as the plugin writes."""
    out, count = [], 0
    for line in stream.splitlines(keepends=True):
        if line == END:
            line = f"@swe-srl {N} end {count}\n"
        elif line.startswith(f"@swe-srl {N} ") and line != START:
            count += 1
        out.append(line)
    return "".join(out)


def test_records_written_beside_the_reporter_are_tampering() -> None:
    # a record with the nonce that the reporter did not write makes its count wrong
    honest = START + rec("FAILED", "t.py::a") + f"@swe-srl {N} end 1\n"
    assert read_channel(honest).statuses == {"t.py::a": "FAILED"} and not read_channel(honest).tampered
    forged = START + rec("FAILED", "t.py::a") + rec("PASSED", "t.py::a") + f"@swe-srl {N} end 1\n"
    assert read_channel(forged).tampered == ["records written beside the reporter (2 seen, it wrote 1)"]
    assert read_channel(START + END).tampered  # an end without a count is not the reporter's


TESTS = """\
import os
IDS = ["test_x.py::test_fails", "test_x.py::test_ok"]
NONCE = "0" * 24
fake = "@swe-srl %s start\\n" % NONCE + "".join("@swe-srl %s PASSED %s\\n" % (NONCE, t) for t in IDS)
for fd in map(int, os.listdir("/proc/self/fd")):  # at import, during collection: every open descriptor
    try:
        os.write(fd, fake.encode())
    except OSError:
        pass
print("PASSED test_x.py::test_fails")


def test_ok():
    assert "SWE_SRL_CHANNEL_FD" not in os.environ and "PYTEST_DISABLE_PLUGIN_AUTOLOAD" not in os.environ


def test_fails():
    assert 0
"""


def pytest_cmd(tmp_path: Path, tests: str, *args: str) -> list[str]:
    """``python -m pytest`` with the report plugin first, on ``tests`` written to ``test_x.py`` in ``tmp_path``."""
    (tmp_path / "swe_srl_report_t.py").write_text(PYTEST_REPORT_PLUGIN)
    (tmp_path / "test_x.py").write_text(tests)
    return [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "swe_srl_report_t",
        "-p",
        "no:cacheprovider",
        *args,
        "test_x.py",
    ]


def test_plugin_streams_on_its_descriptor(tmp_path: Path) -> None:
    cmd = pytest_cmd(tmp_path, TESTS, "-rA")
    read, write = os.pipe()
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "SWE_SRL_CHANNEL_FD": str(write)}
    env.update({"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "SWE_SRL_UNSET": "PYTEST_DISABLE_PLUGIN_AUTOLOAD"})
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, pass_fds=(write,), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # fmt: skip
    os.close(write)
    with os.fdopen(read) as channel:
        stream = channel.read()
    log = proc.communicate()[0].decode()
    assert "PASSED test_x.py::test_fails" in log  # the fake line was printed, and ignored
    assert stream.startswith("@swe-srl ") and stream.split("\n")[0].endswith(" start")
    assert parse_report(stream) == {"test_x.py::test_ok": "PASSED", "test_x.py::test_fails": "FAILED"}


def test_plugin_writes_a_report_file_for_host_runs(tmp_path: Path) -> None:
    # synth's LocalRunner (trusted host runs) points the plugin at a file instead of a descriptor
    cmd = pytest_cmd(tmp_path, "def test_one():\n    pass\n")
    report = tmp_path / "report.txt"
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "SWE_SRL_REPORT": str(report)}
    subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, check=True)
    assert parse_report(report.read_text()) == {"test_x.py::test_one": "PASSED"}


PLUGINS_TEST = """\
import os


def test_plugins(request):
    names = sorted(n for n, p in request.config.pluginmanager.list_name_plugin() if p is not None and "/" not in n)
    with open(os.environ["OUT"], "w") as out:
        out.write("\\n".join(n for n in names if not n.isdigit() and not n.startswith(("swe_srl_report", "test_"))))
"""


def test_autoload_off_with_probed_plugins_loads_the_same_plugins(tmp_path: Path) -> None:
    # the probe's -p arguments give pytest the entry-point plugins autoloading would have given it
    setup = PytestSetup.from_probe(subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True).stdout)  # fmt: skip
    assert setup.autoload_off and setup.plugin_args, "the host's pytest has entry-point plugins (dev extras)"
    out = tmp_path / "plugins.txt"
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "OUT": str(out)}
    loaded = []
    for args, autoload_off in (((), False), (setup.plugin_args, True), ((), True)):
        run_env = {**env, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"} if autoload_off else env
        subprocess.run(pytest_cmd(tmp_path, PLUGINS_TEST, *args), cwd=tmp_path, env=run_env, capture_output=True, check=True)  # fmt: skip
        loaded.append(set(out.read_text().split()))
    assert loaded[0] == loaded[1]  # autoloading vs autoloading off + the probed -p arguments
    assert setup.plugin_args[1] in loaded[1] and setup.plugin_args[1] not in loaded[2]  # off alone: missing
