"""Where swe-srl keeps its caches and runs. ``SWE_SRL_HOME`` overrides the default ``~/.cache/swe-srl``."""

import contextlib
import fcntl
import hashlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

RESOURCES = ("tasks", "harness", "images")
"""Top-level source folders of the checkout that the wheel carries as ``swe_srl/_resources/<name>``."""


def home() -> Path:
    """The root cache directory (created on first use)."""
    root = Path(os.environ.get("SWE_SRL_HOME", Path.home() / ".cache" / "swe-srl")).expanduser()
    root.mkdir(parents=True, exist_ok=True)
    return root


def cache_dir(name: str) -> Path:
    """A named sub-directory of the cache (``tasks``, ``expert-state``, ``effect``, ``trajectories``...)."""
    path = home() / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def project_root() -> Path:
    """The source checkout (holds ``images/``, ``harness/``, ``tasks/``); meaningless for an installed wheel."""
    return Path(__file__).resolve().parent.parent


def resource_dir(name: str) -> Path:
    """One of :data:`RESOURCES`: inside the installed wheel (``swe_srl/_resources``) or the source checkout."""
    if name not in RESOURCES:
        raise ValueError(f"unknown resource {name!r}; choose from {', '.join(RESOURCES)}")
    packaged = Path(__file__).resolve().parent / "_resources" / name
    return packaged if packaged.is_dir() else project_root() / name


BUNDLED_BUILD = 2
"""Revision of how the bundled suite is built from its recipes, part of the cache key: bumped when the same recipes
would now build a different suite (2: validation reverts bytecode, so no task is dropped by a stale ``.pyc``)."""


def bundled_suite_file() -> Path:
    """Where ``swe-srl tasks build`` writes the bundled suite: keyed by the recipes' digest and ``BUNDLED_BUILD``, so
    edits rebuild."""
    recipes = resource_dir("tasks") / "bundled.json"
    data = recipes.read_bytes() if recipes.is_file() else b"missing"
    digest = hashlib.sha256(data + f"build {BUNDLED_BUILD}".encode()).hexdigest()[:12]
    return cache_dir("tasks") / f"bundled-{digest}" / "instances.jsonl"


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temp file + rename, so readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Binary twin of :func:`atomic_write_text`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


@contextlib.contextmanager
def held_slot(folder: Path, slots: int, stem: str, timeout_s: float | None = None) -> Iterator[int]:
    """Hold one of ``slots`` machine-wide slots: ``flock`` on ``folder/<stem>-<i>.lock``, so every thread and process
    here counts and a dead process's slot is free at once; yields its index. Waits for a free one (backing off to
    0.2 s); past ``timeout_s`` (None: never) raises ``TimeoutError``."""
    folder.mkdir(parents=True, exist_ok=True)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    pause = 0.01
    while True:
        for index in range(slots):
            handle = open(folder / f"{stem}-{index}.lock", "a")  # noqa: SIM115 - held across the yield
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
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError(f"no {stem} slot free in {timeout_s:.0f}s under {folder}")
        time.sleep(pause)
        pause = min(pause * 2, 0.2)
