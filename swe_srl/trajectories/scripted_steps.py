"""The scripted expert's steps: what each one runs and says (locate, inspect, reproduce, fix, verify, submit), run
in the sandbox with the expert state recorded after it; :mod:`swe_srl.trajectories.scripted` puts them together into
trajectories."""

from __future__ import annotations

import random
import re
import shlex
from collections.abc import Callable
from pathlib import Path

from swe_srl.benchmark.instances import Instance
from swe_srl.core.shells import PER_ACTION
from swe_srl.errors import TaskError
from swe_srl.trajectories.expert_state import WORKDIR, ExpertState, cwd_of
from swe_srl.trajectories.schema import Step
from swe_srl.trajectories.scripted_edits import Edit, apply_edits, edit_command

SUBMIT = "submit"
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


def symbol_of(instance: Instance, edits: list[Edit]) -> tuple[str, bool]:
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


def pytest_target(instance: Instance, exists: Callable[[str], bool]) -> str | None:
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


class Script:
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
        name, path, cd = Path(edit.path).name, edit.path, ""
        if self.sandbox.spec.shell == PER_ACTION and "/" in path:
            # mini-swe-agent's idiom for a fresh process per action (`cd DIR && command`): the next action starts in
            # /testbed again, so the later relative paths (the fix, the tests) hold only when actions run per action
            folder, path = path.rsplit("/", 1)
            cd = f"cd {folder} && "
        choices = [
            (
                f"Let me look at the code around line {edit.line} of {name}.",
                f"{cd}sed -n '{lo},{hi}p' {path}",
            ),
            (
                f"Let me view the relevant part of {name}.",
                f"str_replace_editor view /testbed/{edit.path} --view_range {lo} {hi}",
            ),
        ]
        if n_lines <= 150:
            choices.append((f"{name} is short; let me read all of it.", f"{cd}cat -n {path}"))
        if is_def:
            choices.append(
                (f"Let me read the body of `{symbol}`.", f'{cd}grep -n -A 15 "def {symbol}" {path}')
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
