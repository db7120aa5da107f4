"""On-demand reading of a JSONL file: an index of each record's byte offset and a few small fields, built once.

A page reads only its own records (``LineIndex.read``); the index holds, per non-empty line, its offset and the
fields pages filter and join on (``kind``, ``instance_id``, ``split``, ``step``; a samples file's ``ref``, ``traj``,
``oracle``), never the records. It is built once per version of the file (in a background thread,
:meth:`LineIndex.start`), kept in memory while the viewer runs and cached under ``$SWE_SRL_HOME/view-index/``; the
first page of a file needs no index (:func:`head`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import threading
from collections.abc import Iterator
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any

from swe_srl.errors import ConfigError
from swe_srl.paths import atomic_write_text, cache_dir

FIELDS = ("kind", "instance_id", "split", "step", "ref", "traj", "oracle")
PARSE_LIMIT = 8192
"""Lines up to this many bytes are parsed whole; longer ones (trajectory records) only have their fields sought."""
_FIELD_RE = {
    name: re.compile(rb'"' + name.encode() + rb'"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+)') for name in FIELDS
}


@dataclass(frozen=True)
class Entry:
    """One record of the file: its 0-based record number, byte offset and indexed fields."""

    number: int
    offset: int
    kind: str | None
    instance_id: str | None
    split: str | None
    step: int | None
    ref: int | str | None
    traj: int | str | None
    oracle: str | None


def fields_of(line: bytes) -> tuple[Any, ...]:
    """The indexed fields of one JSONL line (None where absent); a long line is searched, not parsed."""
    if len(line) <= PARSE_LIMIT:
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if isinstance(record, dict):
            return tuple(_plain(record.get(name)) for name in FIELDS)
    values = []
    for name in FIELDS:
        match = _FIELD_RE[name].search(line, 0, 4096)
        values.append(_plain(json.loads(match.group(1))) if match else None)
    return tuple(values)


def _plain(value: Any) -> Any:
    return value if isinstance(value, str | int) and not isinstance(value, bool) else None


class LineIndex:
    """Byte offsets and the small fields of every record of ``path`` (a JSONL file), built once."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._entries: list[Entry] | None = None
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Build the index in a background thread (pages that need it wait for it)."""
        if self._thread is None and self._entries is None:
            self._thread = threading.Thread(target=self.entries, name="view-index", daemon=True)
            self._thread.start()

    def entries(self) -> list[Entry]:
        """Every record's entry, in file order: from the cache when this version of the file was indexed before,
        else built (and cached) on first call."""
        with self._lock:
            if self._entries is None:
                cached = self._cache_file()
                if cached is not None and cached.is_file():
                    self._entries = [Entry(*row) for row in json.loads(cached.read_bytes())]
                else:
                    self._entries = list(self._build())
                    with contextlib.suppress(OSError):  # a cache that cannot be written is rebuilt next time
                        if cached is not None:
                            atomic_write_text(cached, json.dumps([astuple(e) for e in self._entries]))
            return self._entries

    def _cache_file(self) -> Path | None:
        """The index's cache, keyed by the file's absolute path, size and modification time (None: no cache)."""
        stat = self.path.stat()
        key = f"{self.path.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}\0{','.join(FIELDS)}"
        try:
            return cache_dir("view-index") / f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.json"
        except OSError:
            return None

    def _build(self) -> Iterator[Entry]:
        with open(self.path, "rb") as handle:
            offset, number = 0, 0
            for line in handle:
                if line.strip():
                    yield Entry(number, offset, *fields_of(line))
                    number += 1
                offset += len(line)

    def read(self, entry: Entry) -> dict[str, Any]:
        """The record at ``entry`` (one seek, one line)."""
        with open(self.path, "rb") as handle:
            handle.seek(entry.offset)
            return loads(handle.readline(), f"{self.path}:record {entry.number + 1}")

    def select(self, **wanted: Any) -> list[Entry]:
        """Entries whose fields equal every given value (None or '' = any)."""
        wanted = {k: v for k, v in wanted.items() if v not in (None, "")}
        return [e for e in self.entries() if all(getattr(e, k) == v for k, v in wanted.items())]


def head(path: Path, count: int, keep=lambda record: True) -> tuple[list[dict[str, Any]], bool]:
    """The first ``count`` records of ``path`` that ``keep`` accepts, read from the start without an index, and
    whether more lines follow."""
    found: list[dict[str, Any]] = []
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            if len(found) == count:
                return found, True
            record = loads(line, f"{path}:{number}")
            if keep(record):
                found.append(record)
    return found, False


def loads(line: bytes | str, where: str) -> dict[str, Any]:
    """One JSON object, or a one-line error naming ``where``."""
    try:
        record = json.loads(line)
    except ValueError as exc:
        raise ConfigError(f"{where}: not a JSON line ({exc})") from None
    if not isinstance(record, dict):
        raise ConfigError(f"{where}: a JSON object was expected, got {type(record).__name__}")
    return record
