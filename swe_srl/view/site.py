"""The viewer's pages as one site: the main PATH at the root, ``--trajectories`` under ``trajectories/``,
``--samples`` under ``samples/`` and ``--train`` under ``train/``; instance ids link across them. Every page is rendered by Jinja2 with autoescape on,
at a relative address (``instance/<id>.html``), so the server and the static export give the same files."""

from __future__ import annotations

import math
from importlib import resources
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

STATIC = ("viewer.css", "viewer.js")
LABELS = {"eval": "eval instance", "train": "held-out rows", "seeds": "held-out rows",
          "trajectories": "trajectory", "samples": "samples"}  # fmt: skip
EXTRA_PREFIX = {"trajectories": "trajectories/", "samples": "samples/", "train": "train/", "seeds": "train/"}


class Site:
    """``main`` (a source: EvalRun, TrainRun, SeedsRun, Trajectories, Samples) and the extra sources by kind."""

    def __init__(self, main: Any, extras: list[Any] = ()) -> None:
        self.sources: dict[str, Any] = {"": main}
        for source in extras:
            self.sources[EXTRA_PREFIX[source.kind]] = source
        self.env = Environment(
            loader=PackageLoader("swe_srl.view", "templates"),
            autoescape=select_autoescape(default=True, default_for_string=True),
            undefined=StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.filters.update(num=_num, pct=_pct, signed=_signed)
        self.main = main

    def _source(self, route: str) -> tuple[str, Any, str]:
        for prefix, source in sorted(self.sources.items(), key=lambda kv: -len(kv[0])):
            if prefix and route.startswith(prefix):
                return prefix, source, route[len(prefix) :]
        return "", self.main, route

    def routes(self) -> list[str]:
        """Every page of the site (what ``--export`` writes)."""
        return [prefix + page for prefix, source in self.sources.items() for page in source.pages()]

    def files(self) -> dict[str, Path]:
        """Files served as they are: the viewer's own static files and the runs' images (under PATH)."""
        static = resources.files("swe_srl.view") / "static"
        out = {f"static/{name}": Path(str(static / name)) for name in STATIC}
        for prefix, source in self.sources.items():
            out |= {prefix + route: path for route, path in getattr(source, "files", dict)().items()}
        return out

    def render(self, route: str, query: dict[str, str] | None = None) -> str | None:
        """The HTML of ``route`` (None when there is no such page)."""
        prefix, source, page = self._source(route)
        found = source.render(page, query or {})
        if found is None:
            return None
        template, context = found
        root = "../" * route.count("/")

        def url(target: str) -> str:
            return root + target

        def local(target: str) -> str:
            return url(prefix + target)

        def links(instance_id: str) -> list[tuple[str, str]]:
            return [(LABELS[s.kind], url(p + page_)) for p, s in self.sources.items()
                    if (page_ := s.instance_page(instance_id)) and (p + page_).split("#")[0] != route]  # fmt: skip

        nav = [(s.title, url(p + "index.html")) for p, s in self.sources.items()]
        return self.env.get_template(template).render(
            **context, root=root, url=url, local=local, links=links, nav=nav,
            title=source.title,
        )  # fmt: skip


def _num(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.2e}" if 0 < abs(value) < 0.5 * 10**-digits else f"{value:.{digits}f}"
    return str(value)


def _pct(value: Any) -> str:
    return "–" if value is None else f"{100 * float(value):.1f}%"


def _signed(value: Any) -> str:
    return "–" if value is None else f"{float(value):+.3f}"
