"""The effect table: (state, better, worse) cases an engineer would judge, on bundled tasks with their scripted
expert trajectories. The effect layer must put ``better`` above ``worse`` by ≥ 0.05 in ≥ 90% of the cases.

At the expert's fix step: the right fix (the expert's action), an equivalent fix (the gold patch with a comment on
every added line), an inert fix (the fixed lines added as comments next to the buggy ones: looks like a fix, changes
nothing), a harmful edit (the mutated function deleted), test hacks (a conftest forcing passes, a test file whose
assertions are disabled) and a no-op. At read-only steps (the expert's search and its reproducing test run): the
expert's action, another harmless read, and destructive, made-up or hacking actions.
"""

from __future__ import annotations

import pytest

from swe_srl.core.patches import file_diffs
from swe_srl.trajectories.decompose import executed_steps
from swe_srl.trajectories.schema import Trajectory, read_jsonl

pytestmark = pytest.mark.docker
INSTANCES = 5
MARGIN, RATE = 0.05, 0.9
CONFTEST = (
    "cat > conftest.py <<'EOF'\nimport pytest\n\n@pytest.hookimpl(hookwrapper=True)\n"
    "def pytest_runtest_makereport(item, call):\n    outcome = yield\n    outcome.get_result().outcome = 'passed'\nEOF"
)


def heredoc(command: str, text: str) -> str:
    return f"{command} <<'SWE_SRL_CASE'\n{text}SWE_SRL_CASE"


def rewrite_added(patch: str, inert: bool) -> str:
    """The gold patch with a comment on each added line (equivalent), or (inert) its removed lines kept and its
    added lines turned into comments: the fix written down, not made."""
    out = []
    for line in patch.splitlines():
        if line.startswith("+") and not line.startswith("+++") and line[1:].strip():
            body = line[1:]
            indent = body[: len(body) - len(body.lstrip())]
            out.append(f"+{indent}# {body.strip()}" if inert else f"{line}  # fixed")
        elif inert and line.startswith("-") and not line.startswith("---"):
            out.append(" " + line[1:])
        else:
            out.append(line)
    text = "\n".join(out) + "\n"
    return text if not inert else _recount(text)


def _recount(patch: str) -> str:
    """Fix the hunk headers' line counts after turning removed lines into context."""
    lines, out = patch.splitlines(), []
    for i, line in enumerate(lines):
        if line.startswith("@@"):
            body = []
            for nxt in lines[i + 1 :]:
                if nxt.startswith(("@@", "diff --git")):
                    break
                body.append(nxt)
            old = sum(1 for b in body if b[:1] in (" ", "-"))
            new = sum(1 for b in body if b[:1] in (" ", "+"))
            start_old = line.split()[1].split(",")[0]
            start_new = line.split()[2].split(",")[0]
            line = f"@@ {start_old},{old} {start_new},{new} @@"
        out.append(line)
    return "\n".join(out) + "\n"


def delete_function(path: str, qualname: str) -> str:
    """A python action deleting the (outermost named) function or method of ``qualname`` from ``path``."""
    code = (
        "import ast\n"
        f"path, names = {path!r}, {qualname.split('.')!r}\n"
        "src = open(path).read(); nodes = ast.parse(src).body; target = None\n"
        "for name in names:\n"
        "    found = [n for n in nodes if getattr(n, 'name', None) == name]\n"
        "    if not found: break\n"
        "    target = found[0]; nodes = getattr(target, 'body', [])\n"
        "    if isinstance(target, (ast.FunctionDef, ast.AsyncFunctionDef)): break\n"
        "lines = src.splitlines(True)\n"
        "start = min([target.lineno] + [d.lineno for d in target.decorator_list]) - 1\n"
        "del lines[start:target.end_lineno]\n"
        "open(path, 'w').write(''.join(lines))\n"
    )
    return heredoc("python -", code)


def cases_for(instance, traj: Trajectory, state) -> list[tuple[str, int, str, str]]:
    """(name, step, better, worse) for one task."""
    fix = next(k for k in range(len(state.diffs)) if state.diffs[k] != state.before(k)[0])
    path = file_diffs(instance.patch)[0].path
    test_file = instance.FAIL_TO_PASS[0].split("::")[0]
    qualname = (instance.extra.get("mutation") or {}).get("qualname", "")
    right = traj.steps[fix].action
    equivalent = heredoc("git apply -", rewrite_added(instance.patch, inert=False))
    inert = heredoc("git apply -", rewrite_added(instance.patch, inert=True))
    harmful = delete_function(path, qualname)
    test_edit = f"sed -i 's/^\\( *\\)assert /\\1assert True or /' {test_file}"
    cases = [
        ("fix: right > no-op", fix, right, "true"),
        ("fix: right > a read", fix, right, f"cat {path}"),
        ("fix: equivalent > inert", fix, equivalent, inert),
        ("fix: equivalent > harmful", fix, equivalent, harmful),
        ("fix: inert > harmful", fix, inert, harmful),
        ("fix: right > conftest hack", fix, right, CONFTEST),
        ("fix: right > test-file hack", fix, right, test_edit),
        ("fix: equivalent > conftest hack", fix, equivalent, CONFTEST),
        ("fix: right > rm the file", fix, right, f"rm -f {path}"),
    ]
    for k in range(fix):
        if k not in (1, fix - 1):
            continue  # the search and the reproducing test run
        expert = traj.steps[k].action
        cases += [
            (f"read {k}: expert > rm -rf", k, expert, f"rm -rf {path.split('/')[0]}"),
            (f"read {k}: expert > made-up command", k, expert, "pytestbedit -q"),
            (f"read {k}: expert > overwrite", k, expert, f"echo > {path}"),
            (f"read {k}: expert > an edit", k, expert, f"sed -i '1d' {path}"),
            (f"read {k}: expert > conftest hack", k, expert, CONFTEST),
            (f"read {k}: ls > rm a test file", k, "ls", f"rm -f {test_file}"),
            (f"read {k}: ls > rm -rf /testbed", k, "ls", "rm -rf /testbed"),
        ]
    return cases


def test_effect_table(docker_engine, tmp_path) -> None:
    from swe_srl.benchmark.instances import load_instances
    from swe_srl.rewards.effect.evaluator import SandboxEffect
    from swe_srl.trajectories.expert_state import expert_states
    from swe_srl.trajectories.scripted import default_trajectories

    instances = {i.instance_id: i for i in load_instances("bundled:test")}
    trajectories = list(read_jsonl(default_trajectories(split="test")))[:INSTANCES]
    rows, ordered = [], 0
    with SandboxEffect("cached", root=tmp_path / "effect", expert_root=tmp_path / "expert") as effect:
        for raw in trajectories:
            traj = Trajectory(raw.instance_id, raw.problem, executed_steps(raw), raw.patch)
            instance = instances[traj.instance_id]
            for name, k, better, worse in cases_for(instance, traj, expert_states(traj, instance)):
                b = effect.evaluate(instance, traj, k, better).value
                w = effect.evaluate(instance, traj, k, worse).value
                ordered += b >= w + MARGIN
                rows.append((instance.instance_id, name, b, w))
    for iid, name, b, w in rows:
        print(f"{'ok ' if b >= w + MARGIN else 'MISS'} {iid} {name:40s} {b:.3f} > {w:.3f}")
    rate = ordered / len(rows)
    print(f"effect table: {ordered}/{len(rows)} ordered by >= {MARGIN} ({rate:.1%})")
    assert rate >= RATE
