"""Pure parts of the env: observation sanitizing, observation format, registration (gold outputs: test_policies)."""

import gymnasium
import pytest

from swe_srl.env.swe_env import SWEEnv
from swe_srl.env.text import CHARSET, OBS_MAX_CHARS, format_observation, sanitize
from swe_srl.errors import ConfigError
from swe_srl.infra.sandbox.base import ExecResult, Limits

SPACE = gymnasium.spaces.Text(OBS_MAX_CHARS, min_length=0, charset=CHARSET)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("plain ascii\n\tindented", "plain ascii\n\tindented"),  # printable text and tabs/newlines pass
        ("crlf\r\nline", "crlf\nline"),  # Windows newlines normalized
        ("progress 10%\rprogress 100%", "progress 10%\nprogress 100%"),  # bare CR becomes a newline
        ("bell\x07 nul\x00", "bell\ufffd nul\ufffd"),  # control bytes replaced
        ("emoji 🙂 astral", "emoji \ufffd astral"),  # outside the BMP replaced
        ("héllo Ωμέγα 中文 ─┐", "héllo Ωμέγα 中文 ─┐"),  # non-ASCII printable text kept
        ("", ""),  # empty stays empty
    ],
)
def test_sanitize_maps_text_into_the_space(raw: str, expected: str) -> None:
    assert sanitize(raw) == expected
    assert sanitize(raw) in SPACE


def test_sanitize_caps_length_keeping_head_and_tail() -> None:
    text = "H" * 600 + "T" * 600
    out = sanitize(text, limit=500)
    assert len(out) <= 500 and out.startswith("HHH") and out.endswith("TTT") and "dropped" in out


@pytest.mark.parametrize(
    ("result", "must_contain"),
    [
        (ExecResult("hello\n", 0), "hello\n[exit code: 0]"),  # output then exit code
        (ExecResult("", 3), "[exit code: 3]"),  # no output: status only
        (ExecResult("partial", 137, timed_out=True), "timed out"),  # timeout is said
        (ExecResult("", 137, oom_killed=True), "out of memory (limit 2g)"),  # OOM names the limit
        (ExecResult("", 0, session_restarted=True), "shell session ended"),  # restart is said
    ],
)
def test_format_observation(result: ExecResult, must_contain: str) -> None:
    assert must_contain in format_observation(result, Limits())


@pytest.mark.parametrize(
    "kwargs",
    [
        {"reward_mode": "similarity"},  # unknown reward mode
        {"effect_mode": "always"},  # unknown effect mode
        {"limits": {"episode_timeout_s": -1}},  # invalid limits as a dict
    ],
)
def test_bad_options_are_config_errors(kwargs: dict) -> None:
    with pytest.raises(ConfigError):
        SWEEnv(instances=[], **kwargs)


def test_registered_with_a_step_limit_and_step_needs_reset() -> None:
    spec = gymnasium.spec("SweSrl-v0")
    assert spec.max_episode_steps == 50
    env = SWEEnv(instances=[])
    with pytest.raises(gymnasium.error.ResetNeeded):
        env.step("<think>x</think>\nls")
    env.close()
    env.close()  # idempotent
