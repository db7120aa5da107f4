"""The command names an image can run: the executables on its ``PATH``, listed once per image tag and cached.

The syntax layer judges command words against them (``StepContext.executables``). An image's content never changes
under its tag (tags are content hashes of their recipes, ``images.py``), so the listing is made once — right after
the instance image is built, or on first use for an image built before — by a throwaway container that scans
every ``PATH`` directory for executable files, and stored as ``<cache>/images/<tag>.executables.json``.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache

import docker

from swe_srl import paths
from swe_srl.errors import ImageNotFound, SandboxError
from swe_srl.infra.engine import docker_client

LIST_SCRIPT = (
    'IFS=:; for d in $PATH; do [ -d "$d" ] || continue; for f in "$d"/*; do '
    '[ -f "$f" ] && [ -x "$f" ] && printf "%s\\n" "${f##*/}"; done; done'
)
"""Bash (builtins only): the basename of every executable regular file in the ``PATH`` directories."""
_NAME = re.compile(r"^[A-Za-z0-9_.+-]+$")
SESSION_INIT_LABEL = "swe-srl.session-init"
"""Image label: shell lines every session on the image runs first, at top level (official images: conda's activation
of ``testbed``, ``infra/official.py``); the listing below runs them too, so it sees the session's ``PATH``."""


def session_init(labels: dict[str, str] | None) -> str:
    """The session init of an image with these labels (``""``: none)."""
    return (labels or {}).get(SESSION_INIT_LABEL, "")


def _cache_path(tag: str):
    return paths.cache_dir("images") / (re.sub(r"[^A-Za-z0-9_.-]", "_", tag) + ".executables.json")


def list_executables(tag: str) -> frozenset[str]:
    """Scan ``tag``'s ``PATH`` in a throwaway container (no network) and store the names; returns them."""
    client = docker_client()
    try:
        init = session_init(client.images.get(tag).labels)
        script = f"{{ {init}; }} >/dev/null 2>&1; {LIST_SCRIPT}" if init else LIST_SCRIPT
        out = client.containers.run(
            tag, ["bash", "--noprofile", "--norc", "-c", script], remove=True, network_mode="none"
        )
    except docker.errors.ImageNotFound:
        raise ImageNotFound(
            f"image {tag!r} does not exist locally: build it before listing its executables"
        ) from None
    except docker.errors.DockerException as exc:
        raise SandboxError(f"could not list the executables of {tag!r}: {exc}") from None
    names = sorted({n for n in out.decode("utf-8", errors="replace").split() if _NAME.match(n)})
    paths.atomic_write_text(_cache_path(tag), json.dumps({"image": tag, "executables": names}))
    return frozenset(names)


@lru_cache(maxsize=256)
def image_executables(tag: str) -> frozenset[str]:
    """The executables on ``tag``'s ``PATH``: from the cache, else listed now (once per tag)."""
    path = _cache_path(tag)
    if path.exists():
        return frozenset(json.loads(path.read_text(encoding="utf-8"))["executables"])
    return list_executables(tag)
