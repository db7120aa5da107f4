"""The era index: a package index that shows only what PyPI held at a date (runs inside env/instance images).

``python era_index.py CONFIG.json PORT_FILE`` serves ``http://127.0.0.1:PORT/simple/<project>/`` (PEP 503 HTML, what
every pip reads) built from the upstream JSON simple API (PEP 691/700, whose files carry ``upload-time``), keeping:

* every version whose first file was uploaded at or before the **bound**: the config's ``floor`` (the environment's
  era, an ISO date) or, when later, the upload time of the newest exact pin of ``pins`` (``name==version``: the spec's
  own pins were chosen when the official images were built, and their dependencies must resolve next to them);
* the pinned versions themselves, whatever their date;
* for a project that publishes binary wheels where no kept version has one for this interpreter, the earliest later
  final release that has (the era's Python was older than the image's: an sdist-only era version would need
  compiling).

Files come from the upstream URLs (pip downloads them directly). The upstream is the config's ``upstream``, else the
``PIP_INDEX_URL`` the index was started with, else PyPI. No upload-time upstream → the file is kept. The
bound is logged and written next to the config (``era-bound``). Standard library only (+ pip's vendored
``packaging`` for wheel tags, when it imports): it runs under the image's Python, whatever that is.
"""

import html
import json
import os
import re
import ssl
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

try:  # pip's vendored packaging: which wheels this interpreter installs, and version order
    from pip._vendor.packaging.tags import sys_tags
    from pip._vendor.packaging.version import InvalidVersion, Version
except ImportError:  # pragma: no cover - every pip since 20 vendors both
    sys_tags = None
    Version = None
    InvalidVersion = ValueError

JSON_ACCEPT = "application/vnd.pypi.simple.v1+json"
SDIST_EXTS = (".tar.gz", ".tar.bz2", ".tar.xz", ".zip", ".tgz", ".tar")


def normalize(name):
    """PEP 503 project name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_pin(pin):
    """``(project, version)`` of an exact pin ``name==version`` (extras, markers dropped), else None."""
    match = re.match(
        r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*===?\s*([^\s;,]+)\s*(?:;.*)?$", pin
    )
    return (normalize(match.group(1)), match.group(2)) if match else None


def file_version(filename):
    """The version in a wheel or sdist file name (None when it cannot be read)."""
    if filename.endswith(".whl"):
        parts = filename[:-4].split("-")
        return parts[1] if len(parts) >= 5 else None
    for ext in SDIST_EXTS + (".egg", ".exe", ".rpm", ".msi"):
        if filename.endswith(ext):
            stem = filename[: -len(ext)]
            return stem.rsplit("-", 1)[1] if "-" in stem else None
    return None


def wheel_tags(filename):
    """The ``python-abi-platform`` tags of a wheel file name (empty set for an sdist)."""
    if not filename.endswith(".whl"):
        return set()
    parts = filename[:-4].split("-")
    if len(parts) < 5:
        return set()
    pys, abis, plats = (p.split(".") for p in parts[-3:])
    return {f"{py}-{abi}-{plat}" for py in pys for abi in abis for plat in plats}


def version_key(version):
    """Sort key for versions (PEP 440 where it parses, else the text)."""
    if Version is not None:
        try:
            return (1, Version(version), "")
        except InvalidVersion:
            pass
    return (0, None, version) if Version is not None else (0, version)


def is_prerelease(version):
    """Whether ``version`` is a PEP 440 pre- or dev release (False where it does not parse)."""
    if Version is None:
        return bool(re.search(r"(a|b|rc|dev)\d*$", version))
    try:
        return Version(version).is_prerelease
    except InvalidVersion:
        return False


class Upstream:
    """The upstream index's JSON pages, cached for the process."""

    def __init__(self, base):
        self.base = base.rstrip("/") + "/"
        cafile = os.environ.get("PIP_CERT") or os.environ.get("REQUESTS_CA_BUNDLE")
        self.context = ssl.create_default_context(
            cafile=cafile if cafile and os.path.isfile(cafile) else None
        )
        self.cache = {}
        self.lock = threading.Lock()

    def files(self, project):
        """The file dicts of ``project`` (``filename``, ``url``, ``upload-time``...); None when it does not exist."""
        with self.lock:
            if project in self.cache:
                return self.cache[project]
        url = urllib.parse.urljoin(self.base, project + "/")
        request = urllib.request.Request(url, headers={"Accept": JSON_ACCEPT})
        try:
            with urllib.request.urlopen(request, context=self.context, timeout=120) as response:
                page = json.loads(response.read().decode("utf-8"))
                final = response.geturl()
        except urllib.error.HTTPError as exc:
            if exc.code != 404:
                raise
            page, final = None, url
        files = None
        if page is not None:
            files = [dict(f, url=urllib.parse.urljoin(final, f["url"])) for f in page.get("files", [])]
        with self.lock:
            self.cache[project] = files
        return files


class Era:
    """Which files of a project the index shows (see the module doc)."""

    def __init__(self, upstream, floor, pins):
        self.upstream = upstream
        self.pins = {}
        for pin in pins:
            parsed = parse_pin(pin)
            if parsed:
                self.pins.setdefault(parsed[0], set()).add(parsed[1])
        self.tags = {str(t) for t in sys_tags()} if sys_tags is not None else None
        self.bound = max([floor or ""] + [self._pin_time(p, v) for p, vs in self.pins.items() for v in vs])

    def _pin_time(self, project, version):
        times = [f.get("upload-time") or "" for f in self._versions(project).get(version, [])]
        return min(t for t in times if t) if any(times) else ""

    def _versions(self, project):
        versions = {}
        for entry in self.upstream.files(project) or []:
            version = file_version(entry["filename"])
            if version is not None:
                versions.setdefault(version, []).append(entry)
        return versions

    def kept(self, project):
        """The upstream files of ``project`` the era shows (None when the project does not exist)."""
        if self.upstream.files(project) is None:
            return None
        versions = self._versions(project)
        first = {
            v: min((f.get("upload-time") or "" for f in files), default="") for v, files in versions.items()
        }
        keep = {v for v, t in first.items() if not t or not self.bound or t[:19] <= self.bound[:19]}
        keep |= self.pins.get(project, set()) & set(versions)
        if (
            self.tags is not None
            and self._binary(versions)
            and not any(self._fits(versions[v]) for v in keep)
        ):
            later = sorted(
                (v for v in versions if v not in keep and self._fits(versions[v])), key=version_key
            )
            finals = [v for v in later if not is_prerelease(v)]  # pip takes no pre-release unless told to
            keep |= set((finals or later)[:1])
        return [f for v in sorted(keep, key=version_key) for f in versions[v]]

    def _fits(self, files):
        return any(wheel_tags(f["filename"]) & self.tags for f in files)

    @staticmethod
    def _binary(versions):
        return any(
            not tag.endswith("-none-any")
            for files in versions.values()
            for f in files
            for tag in wheel_tags(f["filename"])
        )


def page(project, files):
    """PEP 503 HTML for ``files`` (hash fragment, ``data-requires-python``, ``data-yanked``)."""
    links = []
    for entry in files:
        url = entry["url"].split("#")[0]
        sha = (entry.get("hashes") or {}).get("sha256")
        attrs = [f'href="{html.escape(url + (f"#sha256={sha}" if sha else ""))}"']
        if entry.get("requires-python"):
            attrs.append(f'data-requires-python="{html.escape(entry["requires-python"])}"')
        yanked = entry.get("yanked")
        if yanked:
            attrs.append(f'data-yanked="{html.escape(yanked if isinstance(yanked, str) else "")}"')
        links.append(f"<a {' '.join(attrs)}>{html.escape(entry['filename'])}</a><br/>")
    body = "\n".join(links)
    return f"<!DOCTYPE html><html><head><title>Links for {project}</title></head><body>\n{body}\n</body></html>\n"


def handler(era):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            parts = [p for p in urllib.parse.urlparse(self.path).path.split("/") if p]
            if len(parts) != 2 or parts[0] != "simple":
                self.send_error(404)
                return
            project = normalize(urllib.parse.unquote(parts[1]))
            try:
                files = era.kept(project)
            except Exception as exc:  # upstream down, bad JSON: pip sees a 502 and says so
                self.send_error(502, f"upstream: {type(exc).__name__}: {exc}")
                return
            if files is None:
                self.send_error(404)
                return
            data = page(project, files).encode("utf-8")
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, fmt, *args):
            pass

    return Handler


def main(argv):
    config_path, port_file = argv[1], argv[2]
    with open(config_path, encoding="utf-8") as handle:
        config = json.load(handle)
    upstream = Upstream(
        config.get("upstream") or os.environ.get("PIP_INDEX_URL") or "https://pypi.org/simple/"
    )
    era = Era(upstream, config.get("floor"), config.get("pins", []))
    try:  # provenance only: a read-only config folder does not stop the index
        with open(os.path.join(os.path.dirname(os.path.abspath(config_path)), "era-bound"), "w") as handle:
            handle.write(era.bound + "\n")
    except OSError:
        pass
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler(era))
    print(
        f"era index: bound {era.bound or 'none'} (floor {config.get('floor')}, pins {sorted(era.pins)})",
        flush=True,
    )
    with open(port_file + ".tmp", "w") as handle:
        handle.write(str(server.server_address[1]))
    os.replace(port_file + ".tmp", port_file)
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv)
