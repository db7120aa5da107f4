"""Serving a :class:`~swe_srl.view.site.Site` (stdlib ``ThreadingHTTPServer``, GET and HEAD only: no endpoint
writes) and exporting it as static files that open from ``file://``."""

from __future__ import annotations

import mimetypes
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

from swe_srl.errors import ConfigError
from swe_srl.paths import atomic_write_bytes, atomic_write_text
from swe_srl.view.site import Site


def make_server(site: Site, host: str = "127.0.0.1", port: int = 8000) -> ThreadingHTTPServer:
    """A server for ``site`` bound to ``host:port`` (port 0: any free port); not started."""
    files = site.files()

    class Handler(BaseHTTPRequestHandler):
        server_version = "swe-srl-view"

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            self._answer(body=True)

        def do_HEAD(self) -> None:  # noqa: N802
            self._answer(body=False)

        def _answer(self, body: bool) -> None:
            parts = urlsplit(self.path)
            route = unquote(parts.path).lstrip("/") or "index.html"
            if route.endswith("/"):
                route += "index.html"
            if route in files:  # a fixed list: the viewer's static files and the runs' images under PATH
                data, kind = (
                    files[route].read_bytes(),
                    mimetypes.guess_type(route)[0] or "application/octet-stream",
                )
            else:
                html = site.render(route, dict(parse_qsl(parts.query))) if route.endswith(".html") else None
                if html is None:
                    self.send_error(404, "no such page")
                    return
                data, kind = html.encode("utf-8"), "text/html; charset=utf-8"
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Content-Security-Policy", "default-src 'self'; img-src 'self' data:")
            self.end_headers()
            if body:
                self.wfile.write(data)

        def log_message(self, format: str, *args) -> None:  # quiet: the terminal shows the URL only
            pass

    try:
        return ThreadingHTTPServer((host, port), Handler)
    except OSError as exc:
        raise ConfigError(
            f"--host {host} --port {port}: cannot listen there ({exc.strerror}); try another --port"
        ) from None


def serve(site: Site, host: str, port: int, say: Callable[[str], None] = print) -> None:
    """Serve until Ctrl-C, then close the socket and return."""
    server = make_server(site, host, port)
    say(f"serving {site.main.title} at http://{host}:{server.server_address[1]}/  (Ctrl-C stops)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        say("stopped")
    finally:
        server.server_close()


def export(site: Site, out: Path, progress: Callable[[int, int], None] | None = None) -> int:
    """Write every page and file of ``site`` under ``out`` (entered at ``out/index.html``); returns the pages."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--export {out}: a file; give a folder")
    routes = site.routes()
    for number, route in enumerate(routes, 1):
        html = site.render(route)
        if html is not None:
            atomic_write_text(out / route, html)
        if progress:
            progress(number, len(routes))
    for route, path in site.files().items():
        atomic_write_bytes(out / route, path.read_bytes())
    return len(routes)
