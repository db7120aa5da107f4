"""The harness tools (``harness/``) that images carry in ``/usr/local/bin``, and the Python they run on.

They are stdlib-only Python >= 3.9 scripts (``#!/usr/bin/env python3``). Where that would find an older Python (a
``registry`` base with a 3.5-3.8 spec; an official image, whose activated ``testbed`` env comes first on PATH),
:func:`pin_tool_python` sets their ``#!`` line to a newer interpreter of the image at build time.
"""

from __future__ import annotations

from swe_srl import paths
from swe_srl.errors import ImageBuildError


def harness_files() -> dict[str, bytes]:
    """The ``harness/`` tools (name → bytes) that instance images get in ``/usr/local/bin``.

    Every plain file counts, executable bit or not: a wheel keeps no mode for ``swe_agent_tools.py`` (setuptools
    builds it as a module) and the image makes them executable anyway. Raises ``ImageBuildError`` when none is found,
    rather than building images without tools.
    """
    harness = paths.resource_dir("harness")
    files = {
        p.name: p.read_bytes()
        for p in (sorted(harness.iterdir()) if harness.is_dir() else [])
        if p.is_file() and not p.name.startswith(".")
    }
    if not files:
        raise ImageBuildError(
            f"no harness tools in {harness}: a swe-srl wheel carries them as swe_srl/_resources/harness, a checkout "
            "as harness/; reinstall swe-srl"
        )
    return files


TOOL_PYTHONS = ("/opt/venv/bin/python3", "/usr/bin/python3", "/usr/local/bin/python3")
_PY39 = "\"$c\" -c 'import sys; sys.exit(sys.version_info < (3, 9))' 2>/dev/null"


def pin_tool_python(
    names: list[str], pythons: tuple[str, ...] = TOOL_PYTHONS, *, always: bool = False
) -> str:
    """sh for a ``RUN``: the ``#!`` line of the harness tools ``names`` in ``/usr/local/bin`` set to the first of
    ``pythons`` that is >= 3.9 (the build fails without one), recorded in ``/etc/swe-srl-tool-python``. Unless
    ``always``, only when ``python3`` on the image's PATH (what ``#!/usr/bin/env python3`` finds) is older."""
    found = f'py=; for c in {" ".join(pythons)}; do if [ -x "$c" ] && {_PY39}; then py=$c; break; fi; done'
    fail = (
        f'echo "swe-srl: no Python >= 3.9 for the harness tools (looked at {" ".join(pythons)})" >&2; exit 1'
    )
    pin = " ".join(f'"/usr/local/bin/{name}"' for name in names)
    body = f'{found}; [ -n "$py" ] || {{ {fail}; }}; sed -i "1s|^#!.*python.*$|#!$py|" {pin}; echo "$py" > /etc/swe-srl-tool-python'
    return f"{{ {body}; }}" if always else f"{{ c=python3; {_PY39} || {{ {body}; }}; }}"
