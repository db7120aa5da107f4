"""DockerSandbox on real containers: the persistent session, limits and every failure mode of issue 2."""

from __future__ import annotations

import time

import pytest

from swe_srl.errors import SandboxTimeout
from swe_srl.infra.sandbox.base import Limits, SandboxSpec
from swe_srl.infra.sandbox.docker import DockerSandbox

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def sandbox(tiny_image: str):
    """One sandbox shared by the non-destructive tests of this module."""
    with DockerSandbox(SandboxSpec(image=tiny_image, limits=Limits(command_timeout_s=10))) as box:
        yield box


def fresh(image: str, **limits) -> DockerSandbox:
    return DockerSandbox(SandboxSpec(image=image, limits=Limits(**limits))).start()


def test_session_state_persists(sandbox: DockerSandbox) -> None:
    sandbox.run("cd /tmp && export SWE_X=41 && greet() { echo hello-$1; }")
    result = sandbox.run("pwd; echo $((SWE_X + 1)); greet you")
    assert result.output.splitlines() == ["/tmp", "42", "hello-you"]
    assert sandbox.run("cd /testbed").exit_code == 0


def test_exit_code_output_and_stderr(sandbox: DockerSandbox) -> None:
    result = sandbox.run("echo out; echo err >&2; exit_code() { return 7; }; exit_code")
    assert (result.output, result.exit_code, result.timed_out) == ("out\nerr\n", 7, False)
    assert sandbox.run("printf 'no newline'").output == "no newline"
    assert sandbox.run("if then").exit_code == 2  # a syntax error is an observation, the session goes on


def test_workdir_python_and_harness_path(sandbox: DockerSandbox) -> None:
    result = sandbox.run(
        "pwd; which python; python -c 'import sys; print(sys.version_info[:2])'; echo $PIP_CERT"
    )
    assert result.output.splitlines() == [
        "/testbed",
        "/opt/venv/bin/python",
        "(3, 11)",
        "/etc/ssl/certs/ca-certificates.crt",
    ]


def test_no_future_commits_in_testbed(sandbox: DockerSandbox, tiny_repo) -> None:
    _, base, future = tiny_repo
    assert sandbox.run("git rev-parse HEAD").output.strip() == base
    assert sandbox.run(f"git cat-file -e {future}").exit_code != 0
    refs = sandbox.run("git for-each-ref --format='%(refname)'; git remote").output.split()
    assert refs == ["refs/heads/main"]
    assert "return a - b" in sandbox.run("cat calc.py").output


@pytest.mark.parametrize("program", ["python", "cat", "less", "vi calc.py", "read -r line; echo got=$line"])
def test_interactive_programs_do_not_hang(sandbox: DockerSandbox, program: str) -> None:
    result = sandbox.run(program, timeout=5)
    assert not result.timed_out and result.duration_s < 4, result


def test_timeout_kills_command_and_session_goes_on(sandbox: DockerSandbox) -> None:
    sandbox.run("export KEEP=yes")
    result = sandbox.run("sleep 60 & sleep 60; echo never", timeout=1)
    assert result.timed_out and result.exit_code == 124 and "never" not in result.output
    assert not result.session_restarted and result.duration_s < 5
    after = sandbox.run("echo $KEEP; pgrep -c -f 'sleep 60' || true").output.split()
    assert after[-2:] == ["yes", "0"], after  # the background sleep was killed too


def test_busy_builtin_loop_is_aborted_and_session_goes_on(sandbox: DockerSandbox) -> None:
    sandbox.run("cd /tmp")
    result = sandbox.run("while true; do :; done; echo never", timeout=1)
    assert result.timed_out and not result.session_restarted and "never" not in result.output
    assert sandbox.run("pwd").output == "/tmp\n"


def test_unabortable_command_restarts_session_in_same_cwd(sandbox: DockerSandbox) -> None:
    result = sandbox.run("trap '' USR1; while true; do :; done", timeout=1)
    assert result.timed_out and result.session_restarted
    assert sandbox.run("pwd").output == "/tmp\n"
    sandbox.run("cd /testbed")


@pytest.mark.parametrize("command", ["exit 3", "kill -9 $$"])
def test_exit_and_kill_restart_the_session(sandbox: DockerSandbox, command: str) -> None:
    result = sandbox.run(command)
    assert result.session_restarted and "new session" in result.output
    assert sandbox.run("echo alive").output == "alive\n"


def test_megabytes_of_output_are_capped(sandbox: DockerSandbox) -> None:
    result = sandbox.run("seq 1 3000000")  # ~20 MB
    limit = sandbox.spec.limits.output_limit_bytes
    assert result.truncated and "output truncated" in result.output
    assert result.output.startswith("1\n2\n") and result.output.endswith("2999999\n3000000\n")
    assert len(result.output.encode()) < limit + 200
    assert sandbox.run("echo small").output == "small\n"


def test_binary_and_invalid_utf8_output(sandbox: DockerSandbox) -> None:
    result = sandbox.run("printf 'ok \\xff\\xfe\\x00 end'; head -c 2000 /dev/urandom")
    assert result.output.startswith("ok \ufffd\ufffd\x00 end") and result.exit_code == 0


def test_read_write_binary_and_missing_file(sandbox: DockerSandbox) -> None:
    payload = bytes(range(256)) * 100
    sandbox.write_file("/tmp/deep/dir/blob.bin", payload, mode=0o600)
    assert sandbox.read_file("/tmp/deep/dir/blob.bin") == payload
    assert sandbox.run("stat -c %a /tmp/deep/dir/blob.bin").output == "600\n"
    assert sandbox.read_file("data.bin") == bytes(range(256))  # relative to the workdir
    with pytest.raises(FileNotFoundError):
        sandbox.read_file("/nope/missing.txt")


def test_diff_against_base_commit_includes_untracked(sandbox: DockerSandbox) -> None:
    index_before = sandbox.run("md5sum .git/index").output
    sandbox.write_file("calc.py", "def add(a, b):\n    return a + b\n")
    sandbox.write_file("new_file.txt", "hello\n")
    sandbox.write_file("data.bin", bytes(range(255, -1, -1)))
    patch = sandbox.diff()
    assert "+    return a + b" in patch and "new_file.txt" in patch and "GIT binary patch" in patch
    assert sandbox.run("md5sum .git/index").output == index_before  # the repo's index is untouched
    sandbox.run("git checkout -q -- . && git clean -fdq")
    assert sandbox.diff() == ""
    assert sandbox.apply_patch(patch).exit_code == 0
    assert sandbox.diff() == patch
    sandbox.run("git checkout -q -- . && git clean -fdq")


def test_fork_bomb_is_contained(tiny_image: str) -> None:
    with fresh(tiny_image, pids=64) as box:
        result = box.run(":(){ :|:& };:; sleep 30", timeout=3)
        assert result.timed_out
        after = box.run("echo usable")
        assert after.output == "usable\n", after


def test_allocation_over_memory_limit_is_oom(tiny_image: str) -> None:
    with fresh(tiny_image, memory="128m") as box:
        result = box.run("python -c 'x = bytearray(400 * 1024 * 1024)'")
        assert result.oom_killed and result.exit_code == 137
        fine = box.run("python -c 'x = bytearray(10 * 1024 * 1024); print(len(x))'")
        assert fine.output == "10485760\n" and not fine.oom_killed


def test_rm_rf_testbed_stays_usable(tiny_image: str) -> None:
    with fresh(tiny_image) as box:
        assert box.run("rm -rf /testbed").exit_code == 0
        assert box.run("echo still here").output == "still here\n"
        assert box.diff() == ""  # documented: nothing left to diff


def test_network_off_by_default(sandbox: DockerSandbox) -> None:
    result = sandbox.run("cat /sys/class/net/*/operstate 2>/dev/null | wc -l; ls /sys/class/net")
    assert result.output.split()[1:] == ["lo"]


def test_limits_are_applied(tiny_image: str, docker_engine) -> None:
    with fresh(tiny_image, memory="300m", cpus=0.5, pids=100) as box:
        host = docker_engine.api.inspect_container(box.container_id)["HostConfig"]
        assert (host["Memory"], host["MemorySwap"], host["NanoCpus"], host["PidsLimit"]) == (
            300 << 20,
            300 << 20,
            500_000_000,
            100,
        )
        assert (
            box.run(
                "cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max"
            ).output
            == f"{300 << 20}\n"
        )


def test_episode_wall_clock(tiny_image: str) -> None:
    with fresh(tiny_image, episode_timeout_s=1.5) as box:
        assert box.run("echo ok").exit_code == 0
        with pytest.raises(SandboxTimeout):
            box.run("sleep 5")
        with pytest.raises(SandboxTimeout):
            box.run("echo late")


def test_trivial_action_is_fast(sandbox: DockerSandbox) -> None:
    times = []
    for _ in range(50):
        start = time.perf_counter()
        sandbox.run("true")
        times.append(time.perf_counter() - start)
    assert sorted(times)[25] < 0.02  # docker exec is ~60 ms; a pipe round trip is ~1 ms


@pytest.mark.parametrize(("python", "expected"), [("3.9", "3.9"), ("3.11", "3.11")])
def test_base_images_per_python(docker_engine, python: str, expected: str) -> None:
    from swe_srl.infra.images import ensure_base_image

    with DockerSandbox(SandboxSpec(image=ensure_base_image(python), workdir="/")) as box:
        result = box.run(
            "python -c 'import sys; print(\"%d.%d\" % sys.version_info[:2])'; pip --version; git --version"
        )
        lines = result.output.splitlines()
        assert lines[0] == expected and "/opt/venv" in lines[1] and lines[2].startswith("git version")
        assert b"BEGIN CERTIFICATE" in box.read_file("/etc/ssl/certs/ca-certificates.crt")


def test_factory_profiles_reach_the_container(tiny_image: str, docker_engine) -> None:
    """A profile's environment is the shell's (and ``docker exec``'s), its name a label of the container."""
    from swe_srl.infra.sandbox.factory import open_sandbox

    with (
        open_sandbox(tiny_image, profile="expert") as expert,
        open_sandbox(tiny_image, profile="grading") as grading,
    ):
        assert (
            expert.run("echo $PYTHONDONTWRITEBYTECODE/$PYTEST_ADDOPTS").output.strip()
            == "1/-p no:cacheprovider"
        )
        assert grading.run("echo ${PYTHONDONTWRITEBYTECODE:-unset}").output.strip() == "unset"
        for box, name in ((expert, "expert"), (grading, "grading")):
            labels = docker_engine.containers.get(box.container_id).labels
            assert labels["swe-srl.profile"] == name and labels["swe-srl.owner"] == "swe-srl"
        memory = docker_engine.containers.get(grading.container_id).attrs["HostConfig"]["Memory"]
        assert memory == 4 << 30
