"""A process that ran a Ray session (``--ray auto``) still prints its Python traceback when it crashes later: Ray's
driver would otherwise swap faulthandler's SIGSEGV handler for one that writes to Ray's session log."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from swe_srl.infra.executor.ray_backend import KEEP_FAULTHANDLER_ENV

pytestmark = pytest.mark.ray
SESSION_THEN_CRASH = """
import ctypes, faulthandler
faulthandler.enable()
from swe_srl.infra.executor.ray_backend import RayExecutor
executor = RayExecutor("auto", 1)
executor.close()
print("session closed", flush=True)
ctypes.string_at(0)
"""


@pytest.mark.parametrize(
    ("setting", "ray_imported_first", "traceback"),
    [
        (None, False, True),  # swe-srl's default
        (None, True, True),  # ray imported before swe-srl set the variable
        ("0", False, False),  # Ray's own handler, asked for
    ],
)
def test_a_crash_after_a_ray_session_prints_its_traceback(
    setting: str | None, ray_imported_first: bool, traceback: bool
) -> None:
    pytest.importorskip("ray")
    env = {k: v for k, v in os.environ.items() if k not in (KEEP_FAULTHANDLER_ENV, "RAY_ADDRESS")}
    if setting is not None:
        env[KEEP_FAULTHANDLER_ENV] = setting
    script = ("import ray\n" if ray_imported_first else "") + SESSION_THEN_CRASH
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env, check=False
    )
    assert proc.returncode == -signal.SIGSEGV and "session closed" in proc.stdout, proc.stderr[-2000:]
    printed = "Fatal Python error: Segmentation fault" in proc.stderr and "string_at" in proc.stderr
    assert printed == traceback, proc.stderr[-2000:]
