"""score_output (format, srl, layered, effect), SRLReward (TRL adapter) and the `swe-srl reward` CLI."""

import json
import pickle
import subprocess
import sys

import pytest

from swe_srl.errors import ConfigError
from swe_srl.rewards import SRLReward, StepContext, score_output
from swe_srl.rewards.trl import PrefixedReward

GREP = "grep -rn 'def parse' src/pkg/"


def out(action: str, thought: str = "look for the parser") -> str:
    return f"<think>{thought}</think>\n{action}"


# (completion, expert, mode, expected total)
CASES = [
    (out(GREP), GREP, "layered", 1.0),  # identical action → 1 (effect off: weights renormalized)
    (out(GREP), GREP, "srl", 1.0),  # identical action → 1 in the paper's mode
    (out(f"```bash\n{GREP}\n```"), GREP, "layered", 1.0),  # fenced action is the same action
    (GREP, GREP, "layered", -1.0),  # missing think block
    ("<think>x", GREP, "layered", -1.0),  # unclosed think block
    (out("```bash\nls\n```\n```bash\nls\n```"), GREP, "layered", -1.0),  # two action blocks
    (out(""), GREP, "srl", -1.0),  # empty action
    (out('echo "unterminated'), 'echo "unterminated', "layered", 1.0),  # the expert's own action, even broken
    (out('echo "unterminated'), "echo unterminated", "layered", 0.25),  # syntax 0, semantic 0.4 → 0.625·0.4
    (out("rm -rf src"), GREP, "layered", 0.0),  # a destructive command the expert did not run scores 0
    (out("pytestbedit"), GREP, "layered", 0.0),  # bash: command not found (syntax 0), unrelated (semantic 0)
]


def test_mixed_is_the_mean_of_paper_and_layered() -> None:
    """mixed = (similarity + layered) / 2 with the layered components; an invalid or destructive command loses the
    layered half (that is the point: the paper reward alone ranks `pytestbedit` near `pytest`)."""
    for action, expert in [
        ("ls", "ls -la"),
        ("pytestbedit -q", "pytest -q"),
        ("rm -rf src", GREP),
        (GREP, GREP),
    ]:
        paper = score_output(out(action), expert, mode="srl").total
        layered = score_output(out(action), expert, mode="layered")
        mixed = score_output(out(action), expert, mode="mixed")
        assert mixed.total == pytest.approx((paper + layered.total) / 2)
        assert mixed.components == layered.components
    broken = score_output(out("pytestbedit -q"), "pytest -q", mode="mixed")
    assert (
        broken.components["syntax"] == 0.0
        and broken.total < score_output(out("pytest"), "pytest -q", mode="mixed").total
    )
    assert (
        score_output(out("ls"), GREP, mode="mixed").total > 0 > score_output("ls", GREP, mode="mixed").total
    )


def test_mixed_share_of_the_paper_reward() -> None:
    """weights={"mix": m}: mixed = m·similarity + (1 − m)·layered; 0 and 1 are the two rewards; outside [0, 1] is
    refused by name; SRLReward passes it through."""
    action, expert = "grep -n 'def parse' src/pkg/core.py", GREP
    paper = score_output(out(action), expert, mode="srl").total
    layered = score_output(out(action), expert, mode="layered").total
    assert paper != pytest.approx(layered)
    for m in (0.0, 0.75, 1.0):
        mixed = score_output(out(action), expert, mode="mixed", weights={"mix": m}).total
        assert mixed == pytest.approx(m * paper + (1 - m) * layered)
    assert SRLReward(mode="mixed", weights={"mix": 0.75})([""], [out(action)], [expert]) == [
        pytest.approx(0.75 * paper + 0.25 * layered)
    ]
    with pytest.raises(ConfigError, match="mix=1.5"):
        score_output(out(action), expert, mode="mixed", weights={"mix": 1.5})


@pytest.mark.parametrize(("completion", "expert", "mode", "expected"), CASES)
def test_score_output_cases(completion: str, expert: str, mode: str, expected: float) -> None:
    assert score_output(completion, expert, mode=mode).total == pytest.approx(expected)


def test_format_error_names_the_rule() -> None:
    result = score_output(out("```bash\nls\n```\n```bash\nls\n```"), "ls")
    assert result.format_error is not None and result.format_error.startswith("multiple_actions")
    assert result.components["format"] == 0.0


def test_effect_lost_to_infrastructure_is_missing_not_zero() -> None:
    from swe_srl.infra.sandbox.remote import SandboxLost

    def lost(ctx: StepContext) -> float:
        raise SandboxLost("sandbox on node-2: its Ray actor or node is gone")

    result = score_output(out(GREP), GREP, effect=lost)
    assert "effect" not in result.components and result.components["effect_missing"] == 1.0
    assert result.total == score_output(out(GREP), GREP).total == 1.0  # renormalized as with effect off
    with pytest.raises(ValueError):  # a bug in the evaluator is no infrastructure failure: it still raises
        score_output(out(GREP), GREP, effect=lambda ctx: float("x"))


def test_effect_layer_weights() -> None:
    seen: list[StepContext] = []

    def effect(ctx: StepContext) -> float:
        seen.append(ctx)
        return 0.5

    result = score_output(out(GREP), GREP, effect=effect, instance_id="a__b-1", trajectory_hash="h", step=3)
    assert result.components["effect"] == 0.5
    assert result.total == pytest.approx(
        0.3 + 0.5 + 0.2 * 0.5
    )  # exactly 0.3·syntax + 0.5·semantic + 0.2·effect
    assert (seen[0].instance_id, seen[0].trajectory_hash, seen[0].step, seen[0].action) == (
        "a__b-1",
        "h",
        3,
        GREP,
    )
    assert score_output(out(GREP), GREP, effect=0.0).total == pytest.approx(
        0.8
    )  # a precomputed value works too
    assert (
        "effect" not in score_output(out(GREP), GREP, mode="srl", effect=effect).components
    )  # srl never runs it


def test_step_context_commands_and_created_files() -> None:
    run = out("./reproduce.sh && rg foo src")
    assert score_output(run, GREP).components["syntax"] == 1.0  # default set, created files unknown
    assert score_output(run, GREP, created_files=frozenset({"reproduce.sh"})).components["syntax"] == 1.0
    assert score_output(run, GREP, created_files=frozenset()).components["syntax"] == 0.0
    no_rg = score_output(
        run, GREP, executables=frozenset({"grep"}), created_files=frozenset({"reproduce.sh"})
    )
    assert no_rg.components["syntax"] == 0.0
    deleted = score_output(out("rm reproduce.sh"), GREP, created_files=frozenset({"reproduce.sh"}))
    assert deleted.components["safe"] == 1.0  # deleting a file an earlier step created harms nothing


def test_weights_and_bad_options() -> None:
    result = score_output(out("rg 'def parse' src/pkg"), GREP, weights={"syntax": 1.0, "semantic": 1.0})
    assert result.components["syntax"] == 1.0 and result.components["semantic"] < 1.0
    assert result.total == pytest.approx((1.0 + result.components["semantic"]) / 2)
    with pytest.raises(ConfigError, match="sytax"):
        score_output(out("ls"), "ls", weights={"sytax": 1.0})
    with pytest.raises(ConfigError, match="outcome"):
        score_output(out("ls"), "ls", mode="outcome")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="effect evaluator"):
        SRLReward(effect_mode="cached")


@pytest.mark.parametrize(
    "action",
    [
        "x" * 1_000_000,  # huge (1 MB) action
        "grep -rn '" + "(" * 100_000 + "' .",  # deeply nested garbage inside quotes
        "python -c '" + "(" * 5000 + "'",  # inline Python too deep for the parser
        "grep -rn 'naïve café 日本語 🚀' src/ && echo '\udcff'",  # unicode and a lone surrogate
        "\n\n\t ",  # whitespace only (a format error)
    ],
    ids=["huge", "nested-quotes", "deep-python", "unicode", "blank"],
)
def test_extreme_actions_do_not_crash(action: str) -> None:
    result = score_output(out(action), GREP)
    assert -1.0 <= result.total <= 1.0
    assert score_output(out(GREP), action).total <= 1.0  # also as the expert side


def test_srl_reward_matches_score_output_and_pickles() -> None:
    reward = SRLReward(mode="layered")
    assert reward.__name__ == "srl_layered" and SRLReward(mode="srl").__name__ == "srl_srl"
    clone = pickle.loads(pickle.dumps(reward))
    completions = [out(GREP), [{"role": "assistant", "content": out("rg 'def parse' src/pkg")}], "no think"]
    experts = [GREP] * 3
    logged: dict[str, float] = {}
    extra: dict[str, list] = {}
    totals = clone(
        prompts=["p"] * 3,
        completions=completions,
        expert_action=experts,
        completion_ids=[[1]] * 3,
        trainer_state=None,
        instance_id=["i"] * 3,
        log_metric=logged.__setitem__,
        log_extra=extra.__setitem__,
    )
    texts = [completions[0], completions[1][0]["content"], completions[2]]
    assert totals == [score_output(t, e).total for t, e in zip(texts, experts, strict=True)]
    assert totals[2] == -1.0 and len(clone.last_components) == 3
    assert not logged  # the components are logged once, by the trainer (reward_components/<layer>)
    assert extra["srl_layered_format_error"][2].startswith("missing_think")
    # each layer per completion, for TRL's completion table (swe-srl view's GRPO groups)
    assert extra["srl_layered/syntax"][:2] == [c["syntax"] for c in clone.last_components[:2]]
    assert {k for k in extra if "/" in k} == {f"srl_layered/{k}" for c in clone.last_components for k in c}


def test_cli_reward_json_and_table() -> None:
    cmd = [
        sys.executable,
        "-m",
        "swe_srl.cli",
        "reward",
        "--expert",
        GREP,
        "--action",
        "rg 'def parse' src/pkg",
    ]
    proc = subprocess.run([*cmd, "--json"], capture_output=True, text=True, timeout=60, check=True)
    record = json.loads(proc.stdout)
    assert record["components"]["syntax"] == 1.0 and 0.85 < record["components"]["semantic"] < 1.0
    assert record["action_type"] == "location" and record["format_error"] is None
    from typer.testing import CliRunner

    from swe_srl.cli.app import app

    runner = CliRunner()
    table = runner.invoke(app, cmd[3:])
    assert table.exit_code == 0 and "semantic" in table.output and "total" in table.output
    srl = runner.invoke(app, [*cmd[3:-2], "--action", "<think>x</think>\nls", "--mode", "srl", "--json"])
    assert json.loads(srl.output)["components"] == {"format": 1.0, "similarity": pytest.approx(0.0, abs=0.2)}
    no_think = runner.invoke(app, [*cmd[3:-2], "--action", "ls</think>", "--json"])
    assert json.loads(no_think.output)["total"] == -1.0
    missing = runner.invoke(app, [*cmd[3:-2], "--action", "@/nonexistent/file"])
    assert missing.exit_code == 2 and "nonexistent" in missing.output


def test_prefixed_reward_puts_the_templates_think_back_and_pickles() -> None:
    # a chat template whose generation prompt opens <think> leaves the completion without it
    inner = SRLReward(mode="srl")
    reward = pickle.loads(pickle.dumps(PrefixedReward(inner)))
    bare = out(GREP).removeprefix("<think>")
    chat = [{"role": "user", "content": "<think>"}, {"role": "assistant", "content": bare}]
    totals = reward(prompts=["p"] * 2, completions=[bare, chat], expert_action=[GREP] * 2)
    assert totals == [1.0, 1.0]  # without the prefix: a format error (−1)
    assert inner(prompts=["p"], completions=[bare], expert_action=[GREP]) == [-1.0]
    assert reward.__name__ == "srl_srl" and len(reward.last_components) == 2  # the wrapped function's
    assert chat[0]["content"] == "<think>"  # only assistant turns are rewritten, the input is untouched
