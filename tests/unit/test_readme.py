"""The README stays a front page: the two commands, the three jobs, the results, and links that resolve."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MAX_WORDS = 900
MAX_LINES = 150


def test_readme_is_a_front_page():
    text = README.read_text()
    assert len(text.split()) <= MAX_WORDS, f"README.md has {len(text.split())} words (at most {MAX_WORDS})"
    assert len(text.splitlines()) <= MAX_LINES, (
        f"README.md has {len(text.splitlines())} lines (at most {MAX_LINES})"
    )
    for command in ("bash scripts/setup.sh", "bash scripts/test.sh"):
        assert command in text
    headings = re.findall(r"(?m)^## (.+)$", text)
    for heading in ("Install and test (Linux, root)", "Three jobs", "Results"):
        assert heading in headings


def test_readme_and_commands_links_resolve():
    for page in (README, ROOT / "docs" / "commands.md"):
        targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", page.read_text())
        local = [t for t in targets if not t.startswith(("http://", "https://"))]
        assert local, f"{page.name} links no page"
        missing = [t for t in local if not (page.parent / t).exists()]
        assert not missing, f"{page.name} links missing files: {missing}"
