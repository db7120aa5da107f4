"""A samples file as pages: each sample exactly as the model sees it (its prompt built with the header's history
window and the fitter's record, by :func:`swe_srl.trajectories.sample_file.expand`) and its target, 50 a page.

The first page is read from the start of the file; every other page, a filter (``?instance=&split=&step=``, served
only) and the per-instance pages (``instance/<id>.html``) read their records through the file's index.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from swe_srl.trajectories.sample_file import expand, history_window
from swe_srl.view.index import Entry, LineIndex, loads
from swe_srl.view.text import slug

PAGE = 50


class Samples:
    """The pages of a samples file (``swe-srl decompose -o``, format 2, or self-contained samples, format 1)."""

    kind = "samples"

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.index = LineIndex(self.path)
        self.header, self.first, self.more = self._head()
        self.first_ids = {r.get("instance_id") for r in self.first}
        self._ids: set[str] | None = None
        self.window = history_window(str(self.path), self.header) if self.header else None
        self.title = f"samples {self.path.name}"
        self.index.start()

    def _head(self) -> tuple[dict[str, Any], list[dict[str, Any]], bool]:
        """The header and the first page's sample rows (prompts built), reading from the start of the file."""
        header, shared, samples, more = {}, [], [], False
        with open(self.path, "rb") as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                if len(samples) == PAGE:
                    more = True
                    break
                record = loads(line, f"{self.path}:{number}")
                if record.get("kind") == "header":
                    header = record
                elif record.get("kind") in ("trajectory", "oracle"):
                    shared.append((f"{self.path}:{number}", record))
                else:
                    samples.append((number - 1, record))
        return header, self._rows(header, shared, samples), more

    def _rows(self, header: dict, shared: list, samples: list[tuple[int, dict]]) -> list[dict[str, Any]]:
        """Sample rows with ``prompt`` (format 1 holds it; format 2 builds it from ``shared``) and ``number``."""
        if not samples:
            return []
        if header.get("format") != "2":
            return [_plain(n, r) for n, r in samples]
        pairs = [("header", header), *shared, *((f"{self.path}:{n + 1}", r) for n, r in samples)]
        rows = expand(pairs)
        return [row | {"number": n} for row, (n, _) in zip(rows, samples, strict=True)]

    def _load(self, entries: list[Entry]) -> list[dict[str, Any]]:
        """The rows of ``entries`` (sample records), with the shared records their prompts need."""
        samples = [(e.number, self.index.read(e)) for e in entries]
        if self.header.get("format") != "2":
            return self._rows(self.header, [], samples)
        all_entries = self.index.entries()
        trajs = {e.ref: e for e in all_entries if e.kind == "trajectory"}
        oracles = {(e.instance_id, e.oracle): e for e in all_entries if e.kind == "oracle"}
        needed: dict[int, Entry] = {}
        for _, sample in samples:
            if sample.get("traj") in trajs:
                needed[trajs[sample["traj"]].number] = trajs[sample["traj"]]
            self._oracle_chain(oracles, (sample.get("instance_id"), sample.get("oracle")), needed)
        shared = [(f"{self.path}:record {n + 1}", self.index.read(needed[n])) for n in sorted(needed)]
        return self._rows(self.header, shared, samples)

    def _oracle_chain(self, oracles: dict, key: tuple, needed: dict[int, Entry]) -> None:
        """The oracle record of ``key`` and, recursively, the records its deltas copy from."""
        entry = oracles.get(key)
        if entry is None or entry.number in needed:
            return
        needed[entry.number] = entry
        for value in (self.index.read(entry).get("files") or {}).values():
            if isinstance(value, dict):
                self._oracle_chain(oracles, (value.get("from"), key[1]), needed)

    # -- pages ----------------------------------------------------------------------------------------------------
    def sample_entries(self, **wanted: Any) -> list[Entry]:
        return [e for e in self.index.select(**wanted) if e.kind in (None, "sample")]

    def pages(self) -> list[str]:
        pages = -(-len(self.sample_entries()) // PAGE)
        ids = sorted(self.ids())
        return ["index.html", *(f"page/{n}.html" for n in range(2, pages + 1)),
                *(f"instance/{slug(i)}.html" for i in ids)]  # fmt: skip

    def ids(self) -> set[str]:
        if self._ids is None:  # the index does not change once built
            self._ids = {e.instance_id for e in self.sample_entries() if e.instance_id}
        return self._ids

    def instance_page(self, instance_id: str) -> str | None:
        """The page of ``instance_id``'s samples; the first page's ids need no index (its links come at once)."""
        known = instance_id in self.first_ids or instance_id in self.ids()
        return f"instance/{slug(instance_id)}.html" if known else None

    def render(self, page: str, query: dict[str, str]) -> tuple[str, dict[str, Any]] | None:
        filters = {k: query.get(k, "") for k in ("instance", "split", "step")}
        given = {k: v for k, v in filters.items() if v}
        base = {"header": self.header, "window": self.window, "filters": filters, "instance": None,
                "qs": "?" + urlencode(given) if given else ""}  # fmt: skip
        if page.startswith("instance/"):
            name = page.removeprefix("instance/").removesuffix(".html")
            iid = next((i for i in self.ids() if slug(i) == name), None)
            if iid is None:
                return None
            found = self._page(self.sample_entries(instance_id=iid), 1, 10**9)
            return "samples.html", base | found | {"instance": iid}
        number = 1 if page == "index.html" else _page_number(page)
        if number is None:
            return None
        if number == 1 and not any(filters.values()):
            return "samples.html", base | {"rows": self.first, "page": 1, "pages": None, "more": self.more}
        step = int(filters["step"]) if filters["step"].lstrip("-").isdigit() else None
        entries = self.sample_entries(instance_id=filters["instance"], split=filters["split"], step=step)
        return "samples.html", base | self._page(entries, number, PAGE)

    def _page(self, entries: list[Entry], number: int, size: int) -> dict[str, Any]:
        pages = max(1, -(-len(entries) // size))
        chosen = entries[(number - 1) * size : number * size]
        return {"rows": self._load(chosen), "page": number, "pages": pages, "more": number < pages,
                "matched": len(entries)}  # fmt: skip


def _page_number(page: str) -> int | None:
    name = page.removeprefix("page/").removesuffix(".html")
    return int(name) if page.startswith("page/") and name.isdigit() and int(name) >= 1 else None


def _plain(number: int, record: dict[str, Any]) -> dict[str, Any]:
    """A self-contained sample (format 1): its ``prompt`` (or ``messages``) as written."""
    prompt = record.get("prompt") or record.get("messages") or []
    if isinstance(prompt, str):
        prompt = [{"role": "prompt", "content": prompt}]
    return record | {"prompt": prompt, "number": number}
