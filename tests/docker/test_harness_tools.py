"""harness/ tools on PATH in a real sandbox: SWE-agent's open / search_file / edit on a bundled task image."""

from __future__ import annotations

import pytest

from swe_srl.trajectories.formats import swe_agent_action

pytestmark = pytest.mark.docker


def test_swe_agent_tools_in_sandbox(docker_engine) -> None:
    from swe_srl.benchmark.instances import load_instances
    from swe_srl.infra.sandbox.factory import open_sandbox

    instance = load_instances("bundled:train")[0]
    with open_sandbox(instance, profile="expert") as sandbox:
        which = sandbox.run("command -v open edit search_file swe_agent_tools.py str_replace_editor")
        assert which.exit_code == 0 and which.output.split() == [
            f"/usr/local/bin/{name}"
            for name in ("open", "edit", "search_file", "swe_agent_tools.py", "str_replace_editor")
        ]
        path = sandbox.run("git ls-files '*.py' | head -n 1").output.strip()
        assert path, "the bundled task has no Python file"
        opened = sandbox.run(f"open {path}")
        assert opened.exit_code == 0 and opened.output.startswith(f"[File: /testbed/{path} (")
        first = sandbox.read_file(f"/testbed/{path}").decode().split("\n")[0]
        assert f"\n1:{first}\n" in opened.output
        found = sandbox.run("search_file import")
        assert found.exit_code == 0 and f" in /testbed/{path}" in found.output.splitlines()[0]
        edited = sandbox.run(swe_agent_action("edit 1:0\n# added by the SWE-agent edit tool\nend_of_edit"))
        assert edited.exit_code == 0 and "\n1:# added by the SWE-agent edit tool\n" in edited.output
        assert "File updated." in edited.output
        assert "+# added by the SWE-agent edit tool" in sandbox.diff()
        refused = sandbox.run("edit 1:1")  # stdin is /dev/null in the sandbox: nothing is deleted
        assert refused.exit_code == 1 and "+# added by the SWE-agent edit tool" in sandbox.diff()
