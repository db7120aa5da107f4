"""No leaks without the janitor: SIGINT, SIGTERM or SIGKILL of `swe-srl eval`, of a Python program using the env,
of `swe-srl shell` and of `swe-srl train`, sent once their container runs; within 60 s no container with the run's
label (``$SWE_SRL_RUN_ID``) and no process the run started remains, and a stopped eval resumes to completion.

Real processes, real containers; the janitor never runs (the containers end with their owner: ``sandbox/tether.py``,
workers with their driver: ``executor/lifeline.py``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.docker]

CLI = [sys.executable, "-m", "swe_srl.cli"]
GONE_S = 60.0
ENV_PROGRAM = """
import sys, time
import gymnasium
import swe_srl.env  # registers SweSrl-v0
from swe_srl.benchmark.instances import load_instances

instance = load_instances("bundled:test")[0]
env = gymnasium.make("SweSrl-v0", instances=[instance])
env.reset(options={"instance_id": instance.instance_id})
print("ready", flush=True)
time.sleep(600)
"""


def _stat(pid: int) -> tuple[int, str, str] | None:
    """(ppid, state, start time) of a live process, None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), fields[0], fields[19]


def _comm(pid: int) -> str:
    """The command name of a process, "" once it has exited (a short-lived child can end between two reads)."""
    try:
        return Path(f"/proc/{pid}/comm").read_text()
    except OSError:
        return ""


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _descendants(root: int) -> dict[int, str]:
    """Every process below ``root`` now: pid → start time (so a reused pid is not mistaken for it)."""
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := _stat(int(entry))) is not None:
            table[int(entry)] = stat
    found, frontier = {}, [root]
    while frontier:
        parent = frontier.pop()
        for pid, (ppid, _, start) in table.items():
            if ppid == parent and pid not in found:
                found[pid] = start
                frontier.append(pid)
    return found


def _alive(pids: dict[int, str]) -> list[int]:
    return [pid for pid, start in pids.items() if (s := _stat(pid)) and s[2] == start and s[1] != "Z"]


def _containers(docker_engine, run_id: str) -> list:
    """Sparse: no inspect of each one, which would fail for a container that ends meanwhile."""
    label = {"label": f"swe-srl.run-id={run_id}"}
    return docker_engine.containers.list(all=True, sparse=True, filters=label)


def _running(docker_engine, run_id: str) -> bool:
    return any(c.attrs.get("State") == "running" for c in _containers(docker_engine, run_id))


def _default_sigint() -> None:
    """In the child: SIGINT as a terminal sends it. A suite started in the background (``cmd &`` without job
    control, as some CI runners do) inherits SIGINT ignored, and Python then installs no KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Run:
    """A subprocess labelled with a fresh run id; remembers every process it started."""

    def __init__(self, argv: list[str], out: Path, **popen) -> None:
        self.run_id = f"t-{uuid.uuid4().hex[:10]}"
        self.log = out.with_suffix(".log")
        env = {**os.environ, "SWE_SRL_RUN_ID": self.run_id}
        with self.log.open("w") as log:
            self.proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT,
                                         preexec_fn=_default_sigint, **popen)  # fmt: skip
        self.seen: dict[int, str] = {}

    def wait_for_container(self, docker_engine, timeout: float = 300) -> None:
        self.wait_for(lambda: _running(docker_engine, self.run_id), "a container of the run", timeout)

    def wait_for(self, ready, what: str, timeout: float = 300) -> None:
        """Until ``ready()``, remembering the processes the run starts meanwhile."""
        deadline = time.monotonic() + timeout
        while not ready():
            assert self.proc.poll() is None, f"ended before {what} ran:\n{self.log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"{what} did not start"
            self.seen |= _descendants(self.proc.pid)
            time.sleep(0.3)
        self.seen |= _descendants(self.proc.pid)

    def stop_and_check(self, docker_engine, sig: int) -> int:
        """Send ``sig``; assert that within 60 s no container of the run and none of its processes remain."""
        self.seen |= _descendants(self.proc.pid)
        self.proc.send_signal(sig)
        deadline = time.monotonic() + GONE_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None or sig == signal.SIGKILL:
                self.seen |= {p: s for p, s in _descendants(self.proc.pid).items() if p != self.proc.pid}
                if not _containers(docker_engine, self.run_id) and not _alive(self.seen):
                    break
            time.sleep(0.5)
        left = [c.id[:12] for c in _containers(docker_engine, self.run_id)]
        procs = _alive(self.seen)
        for container in _containers(docker_engine, self.run_id):  # do not leak into the other tests
            container.remove(force=True)
        for pid in procs:
            os.kill(pid, signal.SIGKILL)
        code = self.proc.wait(timeout=30)
        assert not left, f"containers left {GONE_S:g}s after {signal.Signals(sig).name}: {left}"
        assert not procs, f"processes left {GONE_S:g}s after {signal.Signals(sig).name}: {procs}"
        return code


@pytest.fixture(scope="module")
def two_test_ids(docker_engine) -> list[str]:
    from swe_srl.benchmark.instances import load_instances

    ids = sorted(i.instance_id for i in load_instances("bundled:test"))[:2]
    assert len(ids) == 2, "the bundled suite needs two test-split tasks"
    return ids


def _eval_argv(out: Path, ids: list[str]) -> list[str]:
    args = ["--policy", "gold", "--dataset", "bundled:test", "--instances", ",".join(ids), "--workers", "2"]
    return [*CLI, "eval", *args, "-o", str(out)]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_stopped_eval_leaves_nothing_and_resumes(docker_engine, two_test_ids, tmp_path: Path, sig) -> None:
    out = tmp_path / "run"
    run = Run(_eval_argv(out, two_test_ids), tmp_path / "first")
    run.wait_for_container(docker_engine)
    assert len([p for p in run.seen if "python" in _comm(p)]) >= 2  # pool workers
    code = run.stop_and_check(docker_engine, sig)
    if sig != signal.SIGKILL:
        expected = (1, 130) if sig == signal.SIGINT else (128 + sig,)  # Ctrl-C: click's "Aborted!" exits 1
        assert code in expected, run.log.read_text()[-2000:]
        records = [json.loads(p.read_text()) for p in (out / "results").glob("*.json")]
        assert "interrupted" in {r["status"] for r in records}, records  # in flight: recorded, not dropped
        report = json.loads((out / "report.json").read_text())
        assert report["interrupted"] is True and report["interrupted_ids"]
        assert "interrupted" in report["statuses"]
    resume = subprocess.run(_eval_argv(out, two_test_ids), capture_output=True, text=True, timeout=600)
    assert resume.returncode == 0, resume.stdout[-3000:] + resume.stderr[-3000:]
    report = json.loads((out / "report.json").read_text())
    assert report["statuses"] == {"resolved": 2} and report["interrupted_ids"] == []


def _slow_build_dataset(path: Path) -> Path:
    """A bundled test task whose env recipe sleeps 300 s (a fresh tag each time, so the build always runs)."""
    from swe_srl.benchmark.instances import load_instances

    record = load_instances("bundled:test")[0].to_record()
    step = f"echo slow-build-{uuid.uuid4().hex[:8]} && sleep 300"
    record["env"] = record["env"] | {"env_setup": [*record["env"].get("env_setup", []), step]}
    path.write_text(json.dumps(record) + "\n")
    return path


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_stopped_eval_during_an_image_build_leaves_nothing(docker_engine, tmp_path: Path, sig) -> None:
    """``sig`` while a step of the task's env image build runs: within 60 s the step is gone with the run's
    processes, and what the build made to run it too (Docker: the step container, which carries the run's labels;
    Podman: the RUN step's processes, in a session of their own, and buildah's working containers, marked with the
    run's labels); another run's container is left alone."""
    from swe_srl.infra import podman_build
    from swe_srl.infra.images import ensure_base_image

    dataset = _slow_build_dataset(tmp_path / "slow.jsonl")
    other = docker_engine.containers.run(
        ensure_base_image(),
        ["sleep", "600"],
        detach=True,
        labels={"swe-srl.owner": "swe-srl", "swe-srl.run-id": f"other-{uuid.uuid4().hex[:8]}",
                "swe-srl.pid": str(os.getpid()), "swe-srl.host": os.uname().nodename},
    )  # fmt: skip
    podman = podman_build.local_store() is not None

    def working() -> list[str]:
        return [
            w.id for w in podman_build.working_containers() if w.labels.get("swe-srl.run-id") == run.run_id
        ]

    def setup_step_runs() -> bool:
        return any("swe-srl-setup.sh" in _cmdline(p) for p in _descendants(run.proc.pid))

    try:
        args = ["--policy", "gold", "--dataset", str(dataset), "-o", str(tmp_path / "run")]
        run = Run([*CLI, "eval", *args], tmp_path / "build")
        if podman:
            run.wait_for(lambda: bool(working()) and setup_step_runs(), "the env build's setup step")
        else:
            run.wait_for_container(docker_engine)
            (step,) = _containers(docker_engine, run.run_id)
            assert "swe-srl-setup.sh" in str(step.attrs.get("Command")), (
                step.attrs
            )  # the build's, not an episode's
        code = run.stop_and_check(docker_engine, sig)
        if sig != signal.SIGKILL:
            assert code in ((1, 130) if sig == signal.SIGINT else (128 + sig,)), run.log.read_text()[-2000:]
        if podman:  # the guard removes them once the step's processes are gone (checked above)
            deadline = time.monotonic() + GONE_S
            while (left := working()) and time.monotonic() < deadline:
                time.sleep(0.5)
            podman_build.remove_working(left)
            assert not left, f"working containers left {GONE_S:g}s after {signal.Signals(sig).name}: {left}"
        other.reload()
        assert other.status == "running"
    finally:
        other.remove(force=True)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_python_program_using_the_env_leaves_nothing(
    docker_engine, two_test_ids, tmp_path: Path, sig
) -> None:
    run = Run([sys.executable, "-c", ENV_PROGRAM], tmp_path / "program")
    run.wait_for_container(docker_engine)
    run.stop_and_check(docker_engine, sig)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_stopped_shell_leaves_nothing(docker_engine, two_test_ids, tmp_path: Path, sig) -> None:
    pexpect = pytest.importorskip("pexpect")
    run_id = f"t-{uuid.uuid4().hex[:10]}"
    exe = shutil.which("swe-srl")
    argv = [exe, "shell", two_test_ids[0]] if exe else [*CLI, "shell", two_test_ids[0]]
    env = {**os.environ, "SWE_SRL_RUN_ID": run_id}
    child = pexpect.spawn(argv[0], argv[1:], env=env, encoding="utf-8", timeout=240, dimensions=(40, 200),
                          preexec_fn=_default_sigint)  # fmt: skip
    child.expect(r"in container ([0-9a-f]{12})")
    child.expect(re.escape(f"(swe-srl {two_test_ids[0]}) /testbed"))
    seen = _descendants(child.pid)
    assert _running(docker_engine, run_id) and seen  # the interactive `docker exec` runs below it
    os.kill(child.pid, sig)
    deadline = time.monotonic() + GONE_S
    while time.monotonic() < deadline and (_containers(docker_engine, run_id) or _alive(seen)):
        time.sleep(0.5)
    left, procs = [c.id[:12] for c in _containers(docker_engine, run_id)], _alive(seen)
    child.close(force=True)
    for container in _containers(docker_engine, run_id):
        container.remove(force=True)
    assert not left and not procs, (left, procs)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_stopped_train_leaves_nothing(docker_engine, tmp_path: Path, sig) -> None:
    """RLVR episodes of a tiny model on the bundled train tasks: ``sig`` once the first episode's container runs."""
    pytest.importorskip("trl")
    from swe_srl.core.prompts import build_messages
    from swe_srl.train.config import TinyOptions
    from swe_srl.train.tiny.model import make_tiny_policy

    texts = [m["content"] for m in build_messages("Fix the bug", [("ls", "x.py")])]
    init = make_tiny_policy(texts, tmp_path / "init", TinyOptions(slots=False))  # RLVR episodes: plain text
    sets = ["trl.max_steps=1", "rlvr.max_turns=2", "rlvr.max_new_tokens=8", "eval.max_samples=0"]
    args = ["--stage", "rlvr", "--init", str(init), "--tasks", "bundled:train", "-o", str(tmp_path / "out")]
    run = Run([*CLI, "train", *args, *(f"--set={s}" for s in sets)], tmp_path / "train")
    run.wait_for_container(docker_engine)
    run.stop_and_check(docker_engine, sig)


def test_stopped_validate_does_not_wait_for_the_grading_in_flight(docker_engine, tmp_path: Path) -> None:
    """Ctrl-C of `tasks validate` while a test that sleeps 150 s is graded: within 60 s the run is gone and its
    container too (a thread pool's shutdown waited for it); what had not finished is left to a rerun."""
    from swe_srl.benchmark.instances import load_instances

    path = "test/test_slow.py"
    lines = ["import time", "", "def test_slow():", "    time.sleep(150)"]
    body = "".join(f"+{line}\n" for line in lines)
    record = load_instances("bundled:test")[0].to_record() | {  # same id, so the same image
        "test_patch": f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
        f"@@ -0,0 +1,{len(lines)} @@\n{body}",
        "FAIL_TO_PASS": [f"{path}::test_slow"], "PASS_TO_PASS": [],
    }  # fmt: skip
    record["env"] = record["env"] | {"test_files": [path]}
    dataset = tmp_path / "slow.jsonl"
    dataset.write_text(json.dumps(record) + "\n")
    run = Run([*CLI, "tasks", "validate", str(dataset), "-o", str(tmp_path / "val")], tmp_path / "first")
    run.wait_for_container(docker_engine)
    time.sleep(3)  # the test is running
    code = run.stop_and_check(docker_engine, signal.SIGINT)
    assert code != 0, run.log.read_text()[-2000:]
    assert not (tmp_path / "val" / "validation.json").exists()  # nothing finished: nothing recorded
