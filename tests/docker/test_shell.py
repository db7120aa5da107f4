"""`swe-srl shell` through a real pseudo-terminal: type a command, read its output, exit, no container left."""

import re
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def instance_id(docker_engine) -> str:
    from swe_srl.benchmark.instances import load_instances

    return load_instances("bundled:train")[0].instance_id


def _container_exists(short_id: str) -> bool:
    out = subprocess.run(
        ["docker", "ps", "-aq", "--no-trunc"], capture_output=True, text=True, check=True
    ).stdout
    return any(line.startswith(short_id) for line in out.split())


def _spawn(*args: str):
    pexpect = pytest.importorskip("pexpect")
    exe = shutil.which("swe-srl") or sys.executable
    argv = list(args) if exe.endswith("swe-srl") else ["-m", "swe_srl.cli", *args]
    child = pexpect.spawn(exe, argv, encoding="utf-8", timeout=120, dimensions=(40, 200))
    child.expect(r"in container ([0-9a-f]{12})")
    return child, child.match.group(1)


def test_shell_runs_a_command_and_cleans_up(instance_id: str) -> None:
    child, container = _spawn("shell", instance_id)
    child.expect(re.escape(f"(swe-srl {instance_id}) /testbed"))
    child.sendline("echo answer=$((6 * 7)); git rev-parse --is-inside-work-tree")
    child.expect("answer=42")
    child.expect("true")
    child.sendline("exit 3")
    child.expect(pexpect_eof())
    child.close()
    assert child.exitstatus == 3
    assert not _container_exists(container)


def test_shell_at_expert_step_and_hangup(instance_id: str, tmp_path) -> None:
    from swe_srl.trajectories.schema import Step, Trajectory, write_jsonl

    traj = Trajectory(
        instance_id,
        "p",
        [Step("t", "mkdir -p scratch && cd scratch && echo hi > note.txt"), Step("t", "submit")],
    )
    path = tmp_path / "t.jsonl"
    write_jsonl(path, [traj])
    child, container = _spawn("shell", instance_id, "--trajectory", str(path), "--step", "1")
    child.expect(re.escape(f"(swe-srl {instance_id} step 1) /testbed/scratch"))
    child.sendline("cat note.txt")
    child.expect("hi")
    child.terminate(force=False)  # SIGHUP/SIGINT as a closed terminal sends them
    child.expect(pexpect_eof())
    assert not _container_exists(container)


def pexpect_eof():
    import pexpect

    return pexpect.EOF
