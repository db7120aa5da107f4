"""A warm pool: sandboxes started ahead of time so ``reset`` → first action costs a pipe round trip, not a container start.

Starting a container + its shells takes 0.5–2 s; handing out one that is already running takes milliseconds. The pool
keeps up to ``size`` started sandboxes per distinct ``SandboxSpec``; ``acquire(spec)`` pops one (or starts one
synchronously when none is ready) and a background thread refills. Sandboxes are never reused: ``release()`` closes
it (the episode dirtied it). The episode's wall clock starts at ``acquire``. ``close()`` removes the idle ones; they
are also registered for the atexit cleanup like any sandbox.

    with WarmPool(size=2) as pool:
        box = pool.acquire(spec)      # warm after the first call for this spec
        ...
        pool.release(box)
"""

from __future__ import annotations

import queue
import threading
from collections import defaultdict
from collections.abc import Callable

from swe_srl.errors import SweSrlError
from swe_srl.infra.sandbox.base import SandboxSpec
from swe_srl.infra.sandbox.docker import DockerSandbox


class WarmPool:
    """Started ``DockerSandbox``es kept ready per spec, refilled by a background thread."""

    def __init__(
        self, size: int = 2, *, factory: Callable[[SandboxSpec], DockerSandbox] = DockerSandbox
    ) -> None:
        if size < 0:
            raise ValueError(f"WarmPool size={size}: must be >= 0")
        self.size = size
        self._factory = factory
        self._ready: dict[str, list[DockerSandbox]] = defaultdict(list)
        self._specs: dict[str, SandboxSpec] = {}
        self._lock = threading.Lock()
        self._todo: queue.Queue[str | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._closed = False
        self.errors: list[SweSrlError] = []
        """Errors the refill thread met (the next ``acquire`` starts synchronously and raises them for real)."""

    @staticmethod
    def _key(spec: SandboxSpec) -> str:
        return repr(spec)

    def prefill(self, spec: SandboxSpec) -> None:
        """Ask the background thread to get ``size`` sandboxes of ``spec`` ready."""
        key = self._key(spec)
        self._specs[key] = spec
        if self._thread is None:
            self._thread = threading.Thread(target=self._refill_loop, name="swe-srl-warm-pool", daemon=True)
            self._thread.start()
        self._todo.put(key)

    def ready_count(self, spec: SandboxSpec) -> int:
        with self._lock:
            return len(self._ready[self._key(spec)])

    def acquire(self, spec: SandboxSpec) -> DockerSandbox:
        """A started sandbox for ``spec`` (warm when one is ready); its episode clock starts now."""
        if self._closed:
            raise RuntimeError("WarmPool is closed")
        key = self._key(spec)
        with self._lock:
            box = self._ready[key].pop() if self._ready[key] else None
        if box is not None and box.alive():
            box.restart_clock()
        else:
            if box is not None:
                box.close()
            box = self._factory(spec).start()
        if self.size:
            self.prefill(spec)
        return box

    def release(self, box: DockerSandbox) -> None:
        """The episode is over: remove its container (sandboxes are never reused)."""
        box.close()

    def _refill_loop(self) -> None:
        while (key := self._todo.get()) is not None:
            while not self._closed:
                with self._lock:
                    if len(self._ready[key]) >= self.size:
                        break
                try:
                    box = self._factory(self._specs[key]).start()
                except SweSrlError as exc:
                    self.errors.append(exc)
                    break
                with self._lock:
                    if self._closed:
                        box.close()
                        return
                    self._ready[key].append(box)

    def close(self) -> None:
        """Stop refilling and remove every idle sandbox. Idempotent."""
        with self._lock:
            self._closed = True
            idle = [box for boxes in self._ready.values() for box in boxes]
            self._ready.clear()
        self._todo.put(None)
        if self._thread is not None:
            self._thread.join(timeout=60)
        for box in idle:
            box.close()

    def __enter__(self) -> WarmPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
