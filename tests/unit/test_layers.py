"""The package's architecture, checked: folders are layers, imports go down, no cycles, imports at the top.

Every import counts as an edge between files: at the top, under ``if TYPE_CHECKING:``, inside a function, and an
import of a package (``from swe_srl.rewards import x`` is an edge to ``swe_srl/rewards/__init__.py``, and to
``swe_srl/rewards/x.py`` when ``x`` is a module)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "swe_srl"
# Each folder imports only folders of a lower rank (or its own); see docs/architecture.md.
RANK = {"errors": 0, "paths": 0, "core": 1, "benchmark": 2, "infra": 3, "grading": 4, "synth": 5, "trajectories": 5,
        "rewards": 6, "env": 7, "agent": 8, "eval": 9, "train": 10, "view": 10, "cli": 11}  # fmt: skip
HEAVY = {"torch", "transformers", "trl", "peft", "accelerate", "datasets", "ray", "matplotlib", "tokenizers",
         "pyarrow", "vllm", "swebench", "tensorboard", "wandb", "pexpect", "openai"}  # fmt: skip
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


def _type_checking(tree: ast.Module) -> set[int]:
    """Ids of the nodes under a module-level ``if TYPE_CHECKING:``."""
    return {id(s) for n in tree.body if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test)
            for s in ast.walk(n)}  # fmt: skip


def _imports(tree: ast.Module, names: set[str]) -> list[tuple[ast.AST, list[str], bool]]:
    """(node, the modules it imports, at module level) for every import; module level includes TYPE_CHECKING."""
    top = {id(n) for n in tree.body} | _type_checking(tree)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            subs = [f"{module}.{a.name}" for a in node.names if f"{module}.{a.name}" in names]
            targets = [module, *subs]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            continue
        out.append((node, targets, id(node) in top))
    return out


def _placement(module: str, node: ast.AST, target: str) -> str | None:
    """The problem with an import inside a function: only heavy packages and the lazy gateways sit there."""
    heavy = target.split(".")[0] in HEAVY or (module, target) in LAZY_GATEWAYS
    internal = target.startswith("swe_srl.")
    if (internal and not heavy) or (not internal and not heavy and node.col_offset):
        return f"{module}: import inside a function: {ast.unparse(node)}"
    return None


def _edges(modules: dict[str, ast.Module]) -> tuple[dict[str, set[str]], list[str]]:
    """Every import edge between the package's files, and the problems: layers going up, misplaced imports."""
    names = set(modules)
    edges: dict[str, set[str]] = {m: set() for m in modules}
    problems = []
    for module, tree in modules.items():
        for node, targets, at_top in _imports(tree, names):
            for target in targets:
                problem = None if at_top else _placement(module, node, target)
                if problem:
                    problems.append(problem)
                if not target.startswith("swe_srl.") or target == module or target not in names:
                    continue
                edges[module].add(target)
                src, dst = module.split(".")[1], target.split(".")[1]
                if src != dst and RANK[dst] > RANK[src]:
                    problems.append(f"{module} imports {target}: layer {dst} is above {src}")
    return edges, list(dict.fromkeys(problems))


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (as a path back to its start) per strongly connected group of files, found depth-first."""
    found, state = [], {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                found.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for start in sorted(edges):
        if start not in state:
            visit(start, [start])
    return found


def test_layers_go_down_and_imports_sit_at_the_top() -> None:
    _, problems = _edges(_modules())
    assert not problems, "\n".join(problems)


def test_no_import_cycles_counting_every_import() -> None:
    edges, _ = _edges(_modules())
    cycles = _cycles(edges)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_cycle_check_sees_type_checking_function_and_package_imports() -> None:
    """A package re-exporting a module that imports the package back (under TYPE_CHECKING, and in a function) is a
    cycle; so is one through a function-level import."""
    pkg = ast.parse("from swe_srl.demo.x import X\n")
    x = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from swe_srl.demo import Y\n")
    y = ast.parse("def f():\n    from swe_srl.demo.x import X\n")
    edges, _ = _edges({"swe_srl.demo": pkg, "swe_srl.demo.x": x, "swe_srl.demo.y": y})
    assert edges == {"swe_srl.demo": {"swe_srl.demo.x"}, "swe_srl.demo.x": {"swe_srl.demo"},
                     "swe_srl.demo.y": {"swe_srl.demo.x"}}  # fmt: skip
    assert _cycles(edges) == [["swe_srl.demo", "swe_srl.demo.x", "swe_srl.demo"]]


def test_top_level_stays_small() -> None:
    modules = _modules()
    top_level = [m for m in modules if m.count(".") == 1 and not (PACKAGE / m.split(".")[1]).is_dir()]
    assert len(top_level) <= 10, top_level
