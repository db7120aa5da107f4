"""Back-pressure: :func:`start_permit` caps concurrent container starts per Docker engine with ``flock`` on N permit
files in ``$SWE_SRL_HOME/locks/starts`` — node-wide, across the processes of both backends and free on a crash
(the kernel drops a dead process's locks). See docs/scale-out.md.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator

from swe_srl import paths
from swe_srl.errors import ConfigError, SandboxError

MAX_STARTS_ENV = "SWE_SRL_MAX_STARTS"
DEFAULT_MAX_STARTS = 4


@contextlib.contextmanager
def start_permit(timeout_s: float = 900.0) -> Iterator[int]:
    """Hold one of ``$SWE_SRL_MAX_STARTS`` (default 4) container-start permits of this node; yields its index."""
    raw = os.environ.get(MAX_STARTS_ENV, str(DEFAULT_MAX_STARTS))
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(
            f"{MAX_STARTS_ENV}={raw!r}: must be a positive integer (concurrent container starts)"
        )
    permits_dir = paths.cache_dir("locks") / "starts"
    permits_dir.mkdir(parents=True, exist_ok=True)
    deadline, pause = time.monotonic() + timeout_s, 0.01
    while True:
        for index in range(int(raw)):
            handle = open(permits_dir / f"permit-{index}.lock", "a")  # noqa: SIM115 - held across the yield
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                continue
            try:
                yield index
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
                handle.close()
            return
        if time.monotonic() > deadline:
            raise SandboxError(
                f"no container start permit free in {timeout_s:.0f}s ({raw} permits under {permits_dir}); "
                f"raise {MAX_STARTS_ENV} or check for a stuck Docker daemon"
            )
        time.sleep(pause)
        pause = min(pause * 2, 0.2)
