"""Agentless-mini's remaining rules in the one-generation protocols: a localized file left out of the repair prompt
by its input budget may still be edited; the budget counted with a tokenizer saved to disk (``--tokenizer``, or a
served model's name that loads from disk) and the record says which counter; SWE-RL's reranking key (its
normalized patch) by default, ours behind ``--rerank ours``."""

from __future__ import annotations

from pathlib import Path

import pytest
from chat_stub import serving
from git_instance import BASE, git_instance

from swe_srl.agent.models import OpenAIPolicy
from swe_srl.agent.policies import ScriptedPolicy
from swe_srl.errors import ConfigError
from swe_srl.eval.protocols.budget import ESTIMATE, estimate, load_tokenizer
from swe_srl.eval.protocols.normalize import (
    git_diff,
    only_adds_functions,
    strip_comments_and_docstrings,
    swerl_key,
)
from swe_srl.eval.protocols.oneshot import run_protocol
from swe_srl.eval.protocols.prompts import is_localization
from swe_srl.eval.protocols.published import protocol_line, protocol_summary
from swe_srl.eval.protocols.samples import repair_plan
from swe_srl.eval.settings import EvalSettings

FENCE = "```python\n### pkg/core.py\n<<<<<<< SEARCH\n    return a - b\n=======\n{}\n>>>>>>> REPLACE\n```"
UTIL = "X = 1\n"
CORE = "### pkg/core.py\n" + BASE["pkg/core.py"]


def two_files(tmp_path: Path):
    return git_instance(tmp_path, {**BASE, "pkg/util.py": UTIL})


@pytest.mark.parametrize(("rules", "patched"), [("agentless", True), ("strict", False)])
def test_a_localized_file_left_out_by_the_budget_is_still_edited(
    tmp_path: Path, rules: str, patched: bool
) -> None:
    budget = estimate("### pkg/util.py\n" + UTIL)  # util.py fits, core.py no longer does
    prompts: list[str] = []
    policy = ScriptedPolicy(["pkg/util.py\npkg/core.py", FENCE.format("    return a + b")])
    policy.generate = lambda m: prompts.append(m[-1]["content"]) or ScriptedPolicy.generate(policy, m)
    settings = EvalSettings("empty", protocol="agentless", edit_rules=rules, repair_input_tokens=budget)
    episode = run_protocol(two_files(tmp_path), settings, policy)
    assert "pkg/util.py" in prompts[1] and "return a - b" not in prompts[1]  # core.py is not shown
    notes = episode["protocol"]["notes"]
    assert "left pkg/core.py out of the repair prompt: over its input budget" in notes
    assert ("+    return a + b" in episode["patch"]) == patched
    assert episode["protocol"]["input_budget"] == {"tokens": budget, "counted_with": ESTIMATE}


def test_when_no_file_fits_the_first_is_shown_whole(tmp_path: Path) -> None:
    prompts: list[str] = []
    policy = ScriptedPolicy(["pkg/core.py\npkg/util.py", FENCE.format("    return a + b")])
    policy.generate = lambda m: prompts.append(m[-1]["content"]) or ScriptedPolicy.generate(policy, m)
    settings = EvalSettings("empty", protocol="agentless", repair_input_tokens=1)
    episode = run_protocol(two_files(tmp_path), settings, policy)
    assert "return a - b" in prompts[1] and "X = 1" not in prompts[1]
    assert episode["protocol"]["notes"] == [
        "left pkg/util.py out of the repair prompt: over its input budget"
    ]
    assert "+    return a + b" in episode["patch"]


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from swe_srl.train.tiny.model import build_tokenizer

    directory = tmp_path_factory.mktemp("tokenizer")
    build_tokenizer([CORE, "def f(x):\n    return x\n"] * 20, 400).save_pretrained(directory)
    return directory


def test_the_budget_is_counted_with_the_tokenizer_given_or_the_served_models(
    tmp_path: Path, tokenizer_dir: Path
) -> None:
    tokens = len(load_tokenizer(str(tokenizer_dir)).encode(CORE))  # SWE-RL's count_hf_tokens
    assert tokens != estimate(
        CORE
    )  # the two counters disagree on the file: the budget below tells them apart
    budget = tokens
    instance = git_instance(tmp_path)

    def answer(request: dict) -> str:
        return (
            "pkg/core.py\npkg/core.py"
            if is_localization(request["messages"])
            else FENCE.format("    return b")
        )

    with serving(answer) as stub:
        by_name = EvalSettings(
            "openai", protocol="agentless", tokenizer=str(tokenizer_dir), repair_input_tokens=budget
        )
        served = EvalSettings("openai", protocol="agentless", repair_input_tokens=budget)
        for settings, policy in [
            (by_name, OpenAIPolicy(stub.url, "m")),  # --tokenizer
            (served, OpenAIPolicy(stub.url, str(tokenizer_dir))),  # the served model's name loads from disk
        ]:
            episode = run_protocol(instance, settings, policy)
            assert episode["protocol"]["input_budget"]["counted_with"] == f"tokenizer {tokenizer_dir}"
            # the file named twice: once within the budget, the second time left out
            assert (
                episode["protocol"]["notes"][-1]
                == "left pkg/core.py out of the repair prompt: over its input budget"
            )
            assert stub.requests[-1]["messages"][-1]["content"].count("return a - b") == 1
        summary = protocol_summary([{"instance_id": "a", "protocol": episode["protocol"]}])
        assert protocol_line(summary).endswith(f"; input budget counted with tokenizer {tokenizer_dir}")
        episode = run_protocol(instance, served, OpenAIPolicy(stub.url, "m"))  # nothing loads: the estimate
        assert episode["protocol"]["input_budget"]["counted_with"] == ESTIMATE
    with pytest.raises(ConfigError, match="--tokenizer '/nonexistent/tok': cannot load a tokenizer"):
        load_tokenizer("/nonexistent/tok")
    with pytest.raises(ConfigError, match="--tokenizer is for --protocol oracle-edit"):
        EvalSettings("empty", tokenizer=str(tokenizer_dir))
    with pytest.raises(ConfigError, match="--rerank 'vote': expected one of swe-rl, ours"):
        EvalSettings("empty", protocol="oracle-edit", rerank="vote")


def test_swerl_normalization_drops_comments_docstrings_and_formatting() -> None:
    source = '"""Module."""\nimport os  # why\n\n\nclass A:\n    """Doc."""\n\n    def f(self):\n        return f("s")\n'
    assert (
        strip_comments_and_docstrings(source)
        == 'import os  \nclass A:\n    def f(self):\n        return f("s")'
    )
    assert only_adds_functions("def f():\n    pass\n", "def f():\n    pass\n\ndef g():\n    pass\n")
    assert not only_adds_functions("def f():\n    pass\n", "def f():\n    return 1\n\ndef g():\n    pass\n")
    diff = git_diff("pkg/m.py", "a = 1\n", "a = 2\n")
    assert diff.startswith("diff --git a/pkg/m.py b/pkg/m.py\nindex ") and "-a = 1\n+a = 2\n" in diff
    old = {"m.py": "def f(x):\n    return x - 1\n"}
    plain = swerl_key(old, {"m.py": "def f(x):\n    return x + 1\n"})
    assert plain == swerl_key(old, {"m.py": "def f(x):\n    '''Doc.'''\n    return (x + 1)  # fixed\n"})
    assert swerl_key(old, {"m.py": "def f(x):\n    # a note\n    return x - 1\n"}) == ""
    added = swerl_key(old, {"m.py": old["m.py"] + "\n\ndef g():\n    return 0\n"})
    assert "@@" not in added and "+def g():" in added  # only the +/- lines of a new function


def test_candidates_are_reranked_by_swerl_normalized_patches_by_default(tmp_path: Path) -> None:
    instance = git_instance(tmp_path)
    comment = "    # checked\n    return a - b"
    docstring = "    '''Adds.'''\n    return a + b"
    outputs = [FENCE.format(comment), FENCE.format(comment), FENCE.format("    return a + b"),
               FENCE.format(docstring), FENCE.format("    return b - a")]  # fmt: skip
    chosen = {}
    for rule in ("swe-rl", "ours"):
        settings = EvalSettings("empty", protocol="oracle-edit", candidates=len(outputs), rerank=rule)
        episode = run_protocol(instance, settings, ScriptedPolicy(outputs))
        chosen[rule] = (
            episode["protocol"]["chosen"],
            episode["protocol"]["votes"],
            episode["protocol"]["rerank"],
        )
    # SWE-RL: the comment-only patches normalize to nothing; the fix and its docstring variant are one patch
    assert chosen == {"swe-rl": (2, 2, "swe-rl"), "ours": (0, 2, "ours")}
    settings = EvalSettings("empty", protocol="oracle-edit", candidates=2)
    episode = run_protocol(instance, settings, ScriptedPolicy([FENCE.format(comment)] * 2))
    assert episode["patch"] == "" and "normalizes to nothing" in episode["protocol"]["reason"]


def test_repairs_take_the_distinct_localizations_cycled_as_swerl_process_loc() -> None:
    assert repair_plan([["a.py"], [], ["a.py"], ["b.py"]], 3) == [0, 3, 0]
    assert repair_plan([["a.py", "b.py"], ["b.py", "a.py"], ["a.py", "b.py", "a.py"]], 2) == [0, 1]
    assert repair_plan([[], []], 2) == []


def test_several_agentless_samples_localize_first_then_repair_each_distinct_localization(
    tmp_path: Path,
) -> None:
    prompts: list[str] = []
    fix = FENCE.format("    return a + b")
    outputs = ["pkg/util.py\npkg/core.py", "pkg/core.py", "no idea", fix, fix, fix]
    policy = ScriptedPolicy(outputs)
    policy.generate = lambda m: prompts.append(m[-1]["content"]) or ScriptedPolicy.generate(policy, m)
    settings = EvalSettings("empty", protocol="agentless", candidates=3)
    episode = run_protocol(two_files(tmp_path), settings, policy)
    record = episode["protocol"]
    assert [is_localization([{"content": p}]) for p in prompts] == [True] * 3 + [False] * 3
    assert record["localized"] == [0, 1, 0] and record["localizations"][2]["files"] == []
    both, core = ["pkg/util.py", "pkg/core.py"], ["pkg/core.py"]
    assert [c["files"] for c in record["candidates"]] == [both, core, both]
    assert (
        (record["chosen"], record["votes"]) == (0, 3)
        and episode["steps"] == 6
        and episode["format_errors"] == 1
    )
    # the samples' prompts are randomized (files asked for, indentation, order), the same on a rerun
    rerun: list[str] = []
    again = ScriptedPolicy(outputs)
    again.generate = lambda m: rerun.append(m[-1]["content"]) or ScriptedPolicy.generate(again, m)
    run_protocol(two_files(tmp_path / "again"), settings, again)
    assert rerun == prompts and len(set(prompts[:3])) > 1
