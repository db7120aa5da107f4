"""The one-generation protocols never end in ``error`` for what lies in the model's output or its length: a server
that refuses a prompt over the context (through the real HTTP client), a REPLACE too deep for ``ast.unparse`` or
``ast.parse``; the repair prompt's input budget; ``--prompt-template`` byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest
from chat_stub import serving
from git_instance import BASE, git_instance

from swe_srl.agent.models import OpenAIPolicy
from swe_srl.agent.policies import ScriptedPolicy
from swe_srl.benchmark.instances import Instance
from swe_srl.errors import ConfigError
from swe_srl.eval.protocols.budget import estimate, within_budget
from swe_srl.eval.protocols.gold import GoldEditPolicy
from swe_srl.eval.protocols.oneshot import run_protocol
from swe_srl.eval.protocols.prompts import is_localization, load_template
from swe_srl.eval.settings import EvalSettings

FIX = "```python\n### pkg/core.py\n<<<<<<< SEARCH\n    return a - b\n=======\n    return {}\n>>>>>>> REPLACE\n```"
VLLM = ("This model's maximum context length is 120 tokens. However, you requested 4216 tokens "
        "({} in the messages, 4096 in the completion). Please reduce the length of the messages or completion.")  # fmt: skip


@pytest.fixture
def instance(tmp_path: Path) -> Instance:
    return git_instance(tmp_path)


def answer(request: dict) -> str:
    return "pkg/core.py" if is_localization(request["messages"]) else FIX.format("a + b")


@pytest.mark.parametrize(("status", "message"), [(400, VLLM), (413, "Request Entity Too Large")])
def test_a_server_refusing_a_long_prompt_gives_an_empty_patch(
    instance: Instance, status: int, message: str
) -> None:
    def refuse(request: dict) -> tuple[int, str] | None:
        words = sum(len(m["content"].split()) for m in request["messages"])
        return (status, message.format(words)) if words > 100 else None  # localization: 55, repair: 153

    with serving(answer, usage=True, refuse=refuse) as stub:
        policy = OpenAIPolicy(stub.url, "m", retries=0)
        for protocol in ("oracle-edit", "agentless"):
            episode = run_protocol(instance, EvalSettings("openai", protocol=protocol), policy)
            assert (
                episode["error"] is None and episode["patch"] == "" and episode["exit_reason"] == "no_patch"
            )
            reason = episode["protocol"]["reason"]
            assert "prompt is over the model's context" in reason, reason
            if status == 400:
                assert "prompt tokens" in reason and "context 120" in reason
    assert len(stub.requests) == 3  # oracle-edit's repair; agentless's localization (short), then its repair


def test_a_short_prompt_is_answered_through_the_same_server(instance: Instance) -> None:
    with serving(lambda request: FIX.format("a + b"), usage=True, refuse=lambda r: None) as stub:
        episode = run_protocol(
            instance, EvalSettings("openai", protocol="oracle-edit"), OpenAIPolicy(stub.url, "m")
        )
    assert "+    return a + b" in episode["patch"] and episode["protocol"]["prompt_tokens"] > 0


@pytest.mark.parametrize(("terms", "patched"), [(450, True), (5000, False)])
def test_a_deeply_nested_replace_is_never_an_error(instance: Instance, terms: int, patched: bool) -> None:
    deep = " + ".join(["a"] * terms)
    settings = EvalSettings("empty", protocol="oracle-edit", candidates=2)
    episode = run_protocol(instance, settings, ScriptedPolicy([FIX.format(deep)] * 2))
    assert episode["error"] is None and bool(episode["patch"]) == patched
    assert patched or "no longer parses" in episode["protocol"]["reason"]


def test_the_repair_prompt_leaves_out_files_over_its_budget_keeping_one() -> None:
    files = {"a.py": "x" * 400, "b.py": "y" * 40, "c.py": "z" * 400}
    assert within_budget(list(files), files, estimate, 60) == (["b.py"], ["a.py", "c.py"])
    assert within_budget(["a.py", "c.py"], files, estimate, 60) == (["a.py"], ["c.py"])
    # a path localized twice is counted and shown twice while it fits (SWE-RL's loop over found_files)
    assert within_budget(["b.py", "b.py", "b.py"], files, estimate, 30) == (["b.py", "b.py"], ["b.py"])


def test_a_prompt_template_is_sent_byte_for_byte(instance: Instance, tmp_path: Path) -> None:
    (tmp_path / "repair.txt").write_text("Fix {{this}}:\n{problem_statement}\n\n{content}\n\n")
    (tmp_path / "locate.txt").write_text("Issue: {problem_statement}\n{structure}\nAt most {n}.\n")
    templates = (
        load_template(f"repair={tmp_path / 'repair.txt'}"),
        load_template(f"localization={tmp_path / 'locate.txt'}"),
    )
    prompts: list[str] = []
    policy = ScriptedPolicy(["pkg/core.py", FIX.format("a + b")])
    policy.generate = lambda m: prompts.append(m[-1]["content"]) or ScriptedPolicy.generate(policy, m)
    episode = run_protocol(
        instance, EvalSettings("empty", protocol="agentless", prompt_templates=templates), policy
    )
    assert "+    return a + b" in episode["patch"]
    assert prompts == [
        "Issue: add() subtracts\npkg\n    __init__.py\n    core.py\nAt most 5."[:0] + prompts[0],
        prompts[1],
    ]
    assert prompts[0] == "Issue: add() subtracts\npkg\n    core.py\nAt most 5."
    assert prompts[1] == f"Fix {{this}}:\nadd() subtracts\n\n### pkg/core.py\n{BASE['pkg/core.py'].rstrip()}"
    settings = EvalSettings("gold", protocol="agentless", prompt_templates=templates)
    assert (
        "+    return a + b" in run_protocol(instance, settings, GoldEditPolicy())["patch"]
    )  # tells the prompts apart


@pytest.mark.parametrize(
    ("spec", "text", "match"),
    [
        ("fix={}", "x", "KIND one of repair, localization"),
        ("repair={}", "{problem_statement} {structure}", "unknown field"),
        ("localization={}", "{problem_statement} {", "not a format string"),
        ("repair=/nonexistent/t.txt", None, "cannot read"),
    ],
)
def test_a_bad_prompt_template_fails_in_one_line(
    tmp_path: Path, spec: str, text: str | None, match: str
) -> None:
    if text is not None:
        (tmp_path / "t.txt").write_text(text)
    with pytest.raises(ConfigError, match=match):
        load_template(spec.format(tmp_path / "t.txt"))


def test_the_listing_leaves_test_paths_out_except_in_pytest(instance: Instance) -> None:
    from dataclasses import replace

    from swe_srl.eval.protocols.sources import BaseTree

    assert BaseTree(instance).listing() == ["pkg/core.py"]
    pytest_own = replace(instance, instance_id="pytest-dev__pytest-1")
    assert BaseTree(pytest_own).listing() == ["pkg/core.py", "tests/test_core.py"]
