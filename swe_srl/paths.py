"""Where swe-srl keeps its caches and runs. ``SWE_SRL_HOME`` overrides the default ``~/.cache/swe-srl``."""

import os
from pathlib import Path


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
    """The source checkout (holds ``images/``, ``harness/``, ``tasks/``)."""
    return Path(__file__).resolve().parent.parent


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
