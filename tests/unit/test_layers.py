"""The package's architecture, checked: folders are layers, imports go down, no cycles, imports at the top."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "swe_srl"
# Each folder imports only folders of a lower rank (or its own); see docs/architecture.md.
RANK = {"errors": 0, "paths": 0, "core": 1, "benchmark": 2, "infra": 3, "grading": 4, "synth": 5, "trajectories": 5,
        "rewards": 6, "env": 7, "agent": 8, "eval": 9, "train": 10, "cli": 11}  # fmt: skip
HEAVY = {"torch", "transformers", "trl", "peft", "accelerate", "datasets", "ray", "matplotlib", "tokenizers",
         "pyarrow", "vllm", "swebench", "tensorboard", "wandb", "pexpect"}  # fmt: skip
LAZY_GATEWAYS = {
    ("swe_srl.cli.train", "swe_srl.train.launch")
}  # the CLI reaches the training stack when it runs


def _modules() -> dict[str, ast.Module]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = ast.parse(path.read_text(encoding="utf-8"))
    return out


def _imports(tree: ast.Module, names: set[str]) -> list[tuple[ast.AST, str, bool]]:
    """(node, imported swe_srl module or top-level package, at module level) for every import."""
    top = {id(n) for n in tree.body}
    guarded = {id(s) for n in tree.body if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test)
               for s in ast.walk(n)}  # fmt: skip
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Import | ast.ImportFrom) or id(node) in guarded:
            continue
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in names else module for a in node.names]
        else:
            targets = [a.name for a in node.names]
        out += [(node, t, id(node) in top) for t in targets]
    return out


def test_no_cycles_layers_go_down_and_imports_sit_at_the_top() -> None:
    modules = _modules()
    names = set(modules)
    edges: dict[str, set[str]] = {m: set() for m in modules}
    problems = []
    for module, tree in modules.items():
        for node, target, at_top in _imports(tree, names):
            internal = target.startswith("swe_srl.")
            if not at_top:
                heavy = target.split(".")[0] in HEAVY or (module, target) in LAZY_GATEWAYS
                if (
                    internal
                    and not heavy
                    or not internal
                    and target.split(".")[0] not in HEAVY
                    and node.col_offset
                ):
                    problems.append(f"{module}: import inside a function: {ast.unparse(node)}")
                continue
            if not internal or target == module:
                continue
            edges[module].add(target)
            src, dst = module.split(".")[1], target.split(".")[1]
            if src != dst and RANK[dst] > RANK[src]:
                problems.append(f"{module} imports {target}: layer {dst} is above {src}")
    assert not problems, "\n".join(problems)
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in edges[node]:
            if state.get(nxt) == 1:
                raise AssertionError("import cycle: " + " -> ".join([*path[path.index(nxt) :], nxt]))
            if nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for start in modules:
        if start not in state:
            visit(start, [start])
    top_level = [m for m in modules if m.count(".") == 1 and not (PACKAGE / m.split(".")[1]).is_dir()]
    assert len(top_level) <= 10, top_level
