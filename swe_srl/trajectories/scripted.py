"""The scripted expert: realistic trajectories on tasks with a known gold patch, run for real in a sandbox.

Each trajectory locates the code (grep/find/ls), inspects it (cat/sed -n/editor view), reproduces the failure
(pytest), applies the gold patch hunk by hunk (``sed -i`` or the editor, chosen by the seed), verifies and submits.
Observations are what the commands really printed, except what differs on every run (``steady``); only
trajectories whose final diff resolves the task are kept. The expert state after every step (cumulative diff and
cwd, as ``expert_state.replay_steps`` gives them) is recorded as the script runs and stored for ``expert_states``, so
the reward's inputs and the effect layer need no replay of a scripted trajectory.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import shlex
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rich.console import Console
from rich.progress import Progress

from swe_srl.benchmark.instances import Instance, load_instances
from swe_srl.benchmark.verdicts import verdict
from swe_srl.core.shells import PERSISTENT
from swe_srl.errors import SweSrlError, TaskError
from swe_srl.grading.runner import run_tests
from swe_srl.infra.image_build import file_lock
from swe_srl.infra.recipes import instance_image
from swe_srl.infra.sandbox.factory import open_sandbox
from swe_srl.infra.sandbox.placement import sandbox_address
from swe_srl.paths import cache_dir
from swe_srl.trajectories.expert_state import WORKDIR, ExpertState, cwd_of, save_state
from swe_srl.trajectories.schema import Step, Trajectory, write_jsonl
from swe_srl.trajectories.scripted_edits import Edit, apply_edits, edit_command, plan_edits

SUBMIT = "submit"
MAX_STEPS = 9
_DEF = re.compile(r"\b(?:def|class)\s+([A-Za-z_]\w*)")
_IDENT = re.compile(r"[A-Za-z_]\w{3,}")
_PYTEST_TIME = re.compile(
    r"^(=* ?\d+ [a-z]+(?:, \d+ [a-z]+)* in )\d+\.\d+s(?: \(\d+:\d\d:\d\d\))?( =*)?$", re.M
)
_ADDRESS = re.compile(r"(?<= at )0x[0-9a-f]{6,16}\b")


def steady(output: str) -> str:
    """``output`` with what differs on every run made steady: pytest's summary time (``1 passed in 0.05s``) reads
    ``in 0.01s`` and object addresses (``<... at 0x7f86d9cfc4a0>``) are numbered by first appearance
    (``0x7f0000000001``; same object, same number). Otherwise the samples, the tokenizer, the warm-up and every
    number a run reports would change from one generation of the trajectories to the next."""
    output = _PYTEST_TIME.sub(lambda m: f"{m[1]}0.01s{m[2] or ''}", output)
    numbers: dict[str, str] = {}
    return _ADDRESS.sub(lambda m: numbers.setdefault(m[0], f"0x7f{len(numbers) + 1:010x}"), output)


def _symbol(instance: Instance, edits: list[Edit]) -> tuple[str, bool]:
    """The name to search for, and whether it is a def/class (so ``grep "def name"`` finds it)."""
    for edit in edits:
        match = _DEF.search(edit.header) or _DEF.search(edit.old)
        if match:
            return match.group(1), True
    for test in instance.FAIL_TO_PASS:
        name = test.split("::")[-1].split("[")[0].removeprefix("test_")
        if name and name in instance.problem_statement:
            return name, False
    words = _IDENT.findall(edits[0].old or edits[0].new) if edits else []
    return (words[0] if words else Path(edits[0].path).stem), False


def _pytest_target(instance: Instance, exists: Callable[[str], bool]) -> str | None:
    """The failing test id when its file already exists at the base commit, else its file, else None."""
    for test in instance.FAIL_TO_PASS:
        path = test.split("::")[0]
        if path.endswith(".py") and exists(path):
            name = test.split("::")[-1].split("[")[0]
            return test if _defined(name, instance) else path
    return None


def _defined(name: str, instance: Instance) -> bool:
    """True when the test function is not one the test patch adds (so it exists before the patch)."""
    return f"+def {name}(" not in instance.test_patch and f"+    def {name}(" not in instance.test_patch


class _Script:
    """Builds one trajectory step by step, running each action in the sandbox and recording the state after it."""

    def __init__(self, sandbox, instance: Instance, rng: random.Random) -> None:
        self.sandbox, self.instance, self.rng = sandbox, instance, rng
        self.steps: list[Step] = []
        self.state = ExpertState(diffs=[], cwds=[])

    def do(self, thought: str, action: str) -> str:
        result = self.sandbox.run(action)
        observation = steady(result.output)
        self.steps.append(
            Step(thought=thought, action=action, observation=observation, exit_code=result.exit_code)
        )
        self.state.diffs.append(self.sandbox.diff())
        self.state.cwds.append(cwd_of(self.sandbox))
        return observation

    def submit(self, thought: str) -> None:
        """The final step: runs nothing, so the state after it is the one before it."""
        self.steps.append(Step(thought=thought, action=SUBMIT))
        self.state.diffs.append(self.state.diffs[-1] if self.state.diffs else "")
        self.state.cwds.append(self.state.cwds[-1] if self.state.cwds else WORKDIR)

    def read(self, path: str) -> str:
        return self.sandbox.read_file(f"/testbed/{path}").decode("utf-8")

    def exists(self, path: str) -> bool:
        try:
            self.sandbox.read_file(f"/testbed/{path}")
        except FileNotFoundError:
            return False
        return True

    def locate(self, symbol: str, is_def: bool, path: str, overview: bool) -> None:
        top = path.split("/")[0] if "/" in path else "."
        if overview:
            self.do("Let me get an overview of the repository layout first.", "ls")
        choices = [
            (
                f"The issue points at `{symbol}`; let me find where it is defined.",
                f'grep -rn "def {symbol}\\|class {symbol}" --include="*.py" .' if is_def else None,
            ),
            (
                f"Let me search the package for `{symbol}`.",
                f'grep -rn "{symbol}" {shlex.quote(top)} --include="*.py"',
            ),
            (
                f"The code for this probably lives in `{Path(path).name}`; let me find that file.",
                f'find . -name {shlex.quote(Path(path).name)} -not -path "./.git/*"',
            ),
        ]
        thought, action = self.rng.choice([c for c in choices if c[1]])
        self.do(thought, action)

    def inspect(self, edit: Edit, symbol: str, is_def: bool) -> None:
        n_lines = self.read(edit.path).count("\n")
        lo, hi = max(1, edit.line - self.rng.randint(4, 10)), edit.line + self.rng.randint(8, 16)
        name = Path(edit.path).name
        choices = [
            (
                f"Let me look at the code around line {edit.line} of {name}.",
                f"sed -n '{lo},{hi}p' {edit.path}",
            ),
            (
                f"Let me view the relevant part of {name}.",
                f"str_replace_editor view /testbed/{edit.path} --view_range {lo} {hi}",
            ),
        ]
        if n_lines <= 150:
            choices.append((f"{name} is short; let me read all of it.", f"cat -n {edit.path}"))
        if is_def:
            choices.append(
                (f"Let me read the body of `{symbol}`.", f'grep -n -A 15 "def {symbol}" {edit.path}')
            )
        self.do(*self.rng.choice(choices))

    def run_tests(self, target: str, when: str) -> None:
        thoughts = {
            "before": [
                f"Before changing anything, let me run `{target}` to see the failure.",
                "Let me reproduce the problem with the relevant test.",
            ],
            "after": [
                "Now let me rerun the test to confirm the fix.",
                f"Let me check that `{target}` passes now.",
            ],
        }
        flags = self.rng.choice(["-q", "-x -q", "-q --tb=short"])
        self.do(self.rng.choice(thoughts[when]), f"python -m pytest {flags} {shlex.quote(target)}")

    def fix(self, edits: list[Edit]) -> None:
        style = self.rng.choice(["sed", "editor"])
        expected = apply_edits(edits, self.read)
        for edit in edits:
            content = self.read(edit.path) if edit.kind == "replace" else ""
            command = edit_command(edit, style, content)
            verb = "sed" if command.startswith("sed ") else "the editor"
            where = f" in `{edit.header.split('(')[0].removeprefix('def ')}`" if edit.header else ""
            self.do(f"I'll make the change in {Path(edit.path).name}{where} with {verb}.", command)
        for path, text in expected.items():
            actual = self.read(path) if text is not None else None
            if actual != text:
                raise TaskError(
                    f"{self.instance.instance_id}: scripted edit of {path} did not give the gold text"
                )


def script_trajectory(sandbox, instance: Instance, *, seed: int = 0) -> Trajectory:
    """Run one scripted trajectory for ``instance`` in a started ``sandbox`` (at the base commit); the expert state
    after each of its steps is stored for :func:`~swe_srl.trajectories.expert_state.expert_states`."""
    rng = random.Random(f"{seed}:{instance.instance_id}")
    script = _Script(sandbox, instance, rng)
    edits = plan_edits(instance.patch, script.read)
    if not edits:
        raise TaskError(f"{instance.instance_id}: gold patch has no edits to script")
    symbol, is_def = _symbol(instance, edits)
    spare = MAX_STEPS - (len(edits) + 4)  # locate, inspect, fix..., verify, submit are always there
    overview, reproduce = rng.random() < 0.35, rng.random() < 0.8
    script.locate(symbol, is_def, edits[0].path, overview=overview and spare >= 2)
    script.inspect(edits[0], symbol, is_def)
    target = _pytest_target(instance, script.exists)
    if target and reproduce and spare >= 1:
        script.run_tests(target, "before")
    script.fix(edits)
    if target:
        script.run_tests(target, "after")
    else:
        script.do("Let me review the full change before submitting.", "git diff")
    script.submit("The fix is in place and verified; submitting.")
    traj = Trajectory(
        instance_id=instance.instance_id,
        problem=instance.problem_statement,
        steps=script.steps,
        patch=sandbox.diff(),
        source="scripted",
        metadata={"seed": seed},
        shell=sandbox.spec.shell,  # the sandbox ran the script as its spec says: persistent or per-action
    )
    save_state(traj, instance, script.state)
    return traj


def _resolved(sandbox, instance: Instance) -> bool:

    return verdict(instance, run_tests(sandbox, instance)) == "resolved"


def _one(instance: Instance, seed: int, repos_dir: Path | None, shell: str = PERSISTENT) -> Trajectory | str:
    """A resolved trajectory, or the reason there is none."""

    try:
        with open_sandbox(instance, profile="expert", repos_dir=repos_dir, shell=shell) as sandbox:
            traj = script_trajectory(sandbox, instance, seed=seed)
            traj.resolved = _resolved(sandbox, instance)
    except TaskError as exc:
        return f"skipped: {exc}"
    return traj if traj.resolved else "dropped: the scripted fix did not resolve it"


def scripted_trajectories(
    instances: Iterable[Instance],
    *,
    seed: int = 0,
    repos_dir: Path | None = None,
    progress: bool = True,
    workers: int = 2,
    shell: str = PERSISTENT,
) -> list[Trajectory]:
    """One scripted trajectory per instance, run for real in ``workers`` parallel sandboxes; only resolved ones
    are kept (the others are reported), in the order of ``instances``. ``shell``: how the sandboxes run the
    script's commands (``core/shells.py``), recorded in each trajectory."""

    instances = list(instances)
    console = Console(stderr=True)
    for instance in instances:  # build images first, one at a time (builds are the heavy, locked part)
        if sandbox_address() is None:  # remote sandboxes: each node builds what it runs
            instance_image(instance, repos_dir=repos_dir)
    with Progress(console=console, disable=not progress) as bar, ThreadPoolExecutor(max(1, workers)) as pool:
        task = bar.add_task("scripted expert", total=len(instances))
        futures = [pool.submit(_one, instance, seed, repos_dir, shell) for instance in instances]
        results = []
        for instance, future in zip(instances, futures, strict=True):
            results.append(future.result())
            bar.advance(task)
            if isinstance(results[-1], str):
                console.print(f"[yellow]{instance.instance_id}[/] {results[-1]}", highlight=False)
    return [r for r in results if isinstance(r, Trajectory)]


def _code_version() -> str:
    here = Path(__file__).parent
    text = "".join((here / name).read_text() for name in ("scripted.py", "scripted_edits.py"))
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def cache_path(instances: Sequence[Instance], *, split: str, seed: int = 0) -> Path:
    """Where :func:`default_trajectories` caches the scripted trajectories of ``split``'s ``instances`` and ``seed``."""
    suite = json.dumps([i.to_record() for i in instances], sort_keys=True, default=str)
    key = hashlib.sha256(f"{suite}|{seed}|{_code_version()}".encode()).hexdigest()[:16]
    return cache_dir("trajectories") / f"scripted-{split}-{key}.jsonl"


def default_trajectories(*, split: str = "train", seed: int = 0) -> Path:
    """Scripted trajectories for the bundled suite's ``split`` as native JSONL, generated once and cached. Concurrent
    callers share one generation (two would differ in their observations' timings, so in their samples)."""

    instances = load_instances(f"bundled:{split}")
    path = cache_path(instances, split=split, seed=seed)
    with file_lock(path.name):
        if not path.exists():
            trajectories = scripted_trajectories(instances, seed=seed)
            if not trajectories:
                raise SweSrlError(
                    f"the scripted expert resolved none of the {len(instances)} bundled {split} tasks"
                )
            write_jsonl(path, trajectories)
    return path
