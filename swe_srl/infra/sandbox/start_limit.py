"""Back-pressure: :func:`start_permit` caps concurrent container starts per Docker engine with ``flock`` on N permit
files in ``$SWE_SRL_HOME/locks/starts`` — node-wide, across the processes of both backends and free on a crash
(the kernel drops a dead process's locks). See docs/scale-out.md.
"""

from __future__ import annotations

import contextlib
import os
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
    with contextlib.ExitStack() as stack:
        try:  # only the wait for a permit is turned into SandboxError, not what the holder does with it
            index = stack.enter_context(paths.held_slot(permits_dir, int(raw), "permit", timeout_s))
        except TimeoutError:
            raise SandboxError(
                f"no container start permit free in {timeout_s:.0f}s ({raw} permits under {permits_dir}); "
                f"raise {MAX_STARTS_ENV} or check for a stuck Docker daemon"
            ) from None
        yield index
