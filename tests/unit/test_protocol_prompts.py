"""The one-generation protocols' pure parts: prompts, localization answers, reranking, the published rows."""

from __future__ import annotations

import pytest
from git_instance import git_instance

from swe_srl.errors import ConfigError
from swe_srl.eval.protocols.prompts import (
    is_localization,
    localization_messages,
    parse_localization,
    repair_messages,
)
from swe_srl.eval.protocols.published import protocol_summary, published
from swe_srl.eval.protocols.rerank import majority, normalized
from swe_srl.eval.settings import EvalSettings

PROBLEM = "  `parse('{:d}', '1')` fails:\n\n```\nValueError\n```\ntrailing spaces   \n"
LISTING = ["pkg/__init__.py", "pkg/core.py", "pkg/util.py"]


def test_repair_prompt_shows_the_format_localization_prompt_does_not() -> None:
    repair = repair_messages(PROBLEM, {"pkg/core.py": "def f():\n    pass\n"})[-1]["content"]
    locate = localization_messages(PROBLEM, LISTING)[-1]["content"]
    for marker in ("<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE", "```python", "<solution>"):
        assert marker in repair and marker not in locate
    assert "SEARCH" not in locate and "REPLACE" not in locate
    assert "### pkg/core.py\n```\ndef f():\n    pass\n```" in repair
    assert "pkg\n    __init__.py\n    core.py\n    util.py" in locate  # Agentless's indented tree
    assert is_localization([{"role": "user", "content": locate}])
    assert not is_localization([{"role": "user", "content": repair}])


@pytest.mark.parametrize("kind", ["repair", "localization"])
def test_the_problem_statement_appears_as_the_dataset_gives_it(kind: str) -> None:
    messages = repair_messages(PROBLEM, {}) if kind == "repair" else localization_messages(PROBLEM, LISTING)
    assert f"<issue>\n{PROBLEM}\n</issue>" in messages[-1]["content"]


@pytest.mark.parametrize(
    ("answer", "files", "dropped"),
    [
        ("```\npkg/core.py\npkg/util.py\n```", ["pkg/core.py", "pkg/util.py"], []),
        (
            "<think>\npkg/util.py\n</think>\n<solution>\n```\npkg/core.py\n- pkg/util.py\n./pkg/util.py\n```",
            ["pkg/core.py"],
            ["- pkg/util.py", "./pkg/util.py"],
        ),
        ("```\nsrc/nowhere.py\npkg/core.PY\n  pkg/core.py\n```", [], ["src/nowhere.py", "pkg/core.PY"]),
        ("pkg/util.py\npkg/util.py", ["pkg/util.py", "pkg/util.py"], []),  # kept twice, as correct_file_paths
        ("<think>\nnever closed, the whole output is read\npkg/core.py", ["pkg/core.py"], []),
    ],
    ids=["fenced", "solution-only-exact-lines", "only-missing", "no-fence-duplicates", "unclosed-think"],
)
def test_localization_keeps_listed_paths_and_notes_the_rest(
    answer: str, files: list[str], dropped: list[str]
) -> None:
    found, notes = parse_localization(answer, LISTING)
    assert found == files
    assert all(any(repr(path) in note for note in notes) for path in dropped)


def test_localization_keeps_every_listed_file_beyond_the_number_asked() -> None:
    many = [f"pkg/m{k}.py" for k in range(9)]
    assert parse_localization("\n".join(reversed(many)), many)[0] == many[::-1]


def test_rerank_dedupes_after_normalization_and_takes_the_majority() -> None:
    a = normalized({"m.py": "def f(x):\n    return x + 1  # fixed\n"})
    a2 = normalized({"m.py": "def f(x):\n\n    return (x + 1)\n"})
    b = normalized({"m.py": "def f(x):\n    return x - 1\n"})
    assert a == a2 != b
    assert majority([b, a, "", a2]) == (1, 2)
    assert majority([b, a]) == (0, 1)  # a tie goes to the earliest
    assert majority(["", ""]) == (None, 0)


def test_published_rows_are_marked_and_only_for_the_paper_protocols() -> None:
    rows = published("oracle-edit")
    assert rows and rows["status"] == "published" and "not measured here" in rows["source"]
    assert {r["model"]: r["resolved_pct"] for r in rows["rows"]}["SRL"] == 14.8
    assert {r["model"]: r["resolved_pct"] for r in published("agentless")["rows"]}["SWE-Gym-7B"] == 4.2
    assert published("agent") is None


def test_protocol_summary_counts_tokens_truncations_and_reasons() -> None:
    runs = [
        {"instance_id": "a", "protocol": {"prompt_tokens": 10, "completion_tokens": 5, "truncated": 0, "reason": None}},
        {"instance_id": "b", "protocol": {"prompt_tokens": 7, "completion_tokens": 9, "truncated": 1,
                                          "reason": "unreadable answer: no fence (the output was cut)"}},
    ]  # fmt: skip
    summary = protocol_summary(runs)
    assert (summary["prompt_tokens"], summary["completion_tokens"]) == (17, 14)
    assert summary["truncated_instances"] == ["b"] and summary["empty_patch_reasons"] == {
        "unreadable answer": 1
    }


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"policy": "replay:x.jsonl"}, "protocol"),
        ({"policy": "predictions:p.jsonl", "no_grade": True}, "nothing to do"),
        ({"policy": "gold", "direct": True}, "protocol"),
        ({"policy": "gold", "oracle_window": 5}, "protocol"),
        ({"policy": "gold", "protocol": "agentless", "oracle_files": True}, "protocol"),
        ({"policy": "gold", "candidates": 0}, "protocol"),
        ({"policy": "gold", "protocol": "oneshot"}, "protocol"),
        (
            {"policy": "gold", "edit_rules": "loose"},
            "--edit-rules 'loose': expected one of agentless, strict",
        ),
        ({"policy": "gold", "protocol": "agent", "no_grade": True}, "--no-grade is for --protocol"),
        ({"policy": "gold", "protocol": "agent", "prompt_templates": (("repair", "x"),)}, "not agent"),
        ({"policy": "gold", "shell": "per-action"}, "--shell per-action is for --protocol agent"),
    ],
)
def test_bad_protocol_settings_fail_before_any_work(options: dict, match: str) -> None:
    options = {"protocol": "oracle-edit"} | options
    with pytest.raises(ConfigError, match=match):
        EvalSettings(**options)


def test_the_report_names_the_oracle_setting_of_each_protocol() -> None:
    assert EvalSettings("gold", protocol="oracle-edit").oracle == "whole"
    assert EvalSettings("gold", protocol="agentless").oracle == "none"
    assert EvalSettings("gold", oracle_files=True).oracle == "whole"


def test_the_printed_report_puts_the_run_beside_the_published_rows() -> None:
    from rich.console import Console

    from swe_srl.eval.protocols.published import protocol_line, published_table

    report = {"policy": "srl-7b", "resolved_rate": 0.1, "resolved_rate_ci95": [0.05, 0.2],
              "published": published("agentless")}  # fmt: skip
    console = Console(width=200, record=True)
    console.print(published_table(report))
    text = console.export_text()
    assert "10.0%" in text and "5.0%–20.0%" in text and "measured (this run)" in text
    assert text.count("published") >= 3 and "8.6%" in text and "14.8%" not in text
    assert published_table({"published": None}) is None
    summary = {"prompt_tokens": 1200, "completion_tokens": 300, "truncated_instances": ["a"],
               "empty_patch_reasons": {"unreadable answer": 2}}  # fmt: skip
    line = protocol_line(summary)
    assert "1,200 prompt + 300 completion" in line and "budget: 1" in line and "unreadable answer ×2" in line


def test_candidates_are_reranked_by_majority_with_a_scripted_policy(tmp_path) -> None:
    from swe_srl.agent.policies import ScriptedPolicy
    from swe_srl.eval.protocols.oneshot import run_protocol

    instance = git_instance(tmp_path)
    fence = "```python\n### pkg/core.py\n<<<<<<< SEARCH\n    return a - b\n=======\n    return {}\n>>>>>>> REPLACE\n```"
    outputs = [fence.format("b - a"), fence.format("a + b"), "no edits", fence.format("(a + b)  # fixed")]
    settings = EvalSettings("empty", protocol="oracle-edit", candidates=4)
    episode = run_protocol(instance, settings, ScriptedPolicy(outputs))
    assert "+    return a + b" in episode["patch"] and episode["exit_reason"] == "patch"
    assert (episode["protocol"]["chosen"], episode["protocol"]["votes"]) == (1, 2)
    assert episode["steps"] == 4 and episode["format_errors"] == 1
    reasons = [c["reason"] for c in episode["protocol"]["candidates"]]
    assert reasons[2].startswith("unreadable answer") and reasons.count(None) == 3


def test_agentless_localizes_then_repairs_the_listed_files(tmp_path) -> None:
    from swe_srl.agent.policies import ScriptedPolicy
    from swe_srl.eval.protocols.gold import GoldEditPolicy
    from swe_srl.eval.protocols.oneshot import run_protocol

    instance = git_instance(tmp_path)
    settings = EvalSettings("gold", protocol="agentless")
    gold = run_protocol(instance, settings, GoldEditPolicy())
    assert (
        gold["protocol"]["candidates"][0]["files"] == ["pkg/core.py"] and "+    return a + b" in gold["patch"]
    )
    prompts: list[str] = []
    policy = ScriptedPolicy(["```\ntests/test_core.py\nnowhere.py\n```"])
    policy.generate = lambda messages: (
        prompts.append(messages[-1]["content"]) or ScriptedPolicy.generate(policy, messages)
    )
    empty = run_protocol(instance, settings, policy)
    assert empty["patch"] == "" and empty["protocol"]["reason"].startswith(
        "the localization named no Python file"
    )
    assert "test_core" not in prompts[0] and "pkg\n    core.py" in prompts[0]
    assert any("nowhere.py" in note for note in empty["protocol"]["notes"])
