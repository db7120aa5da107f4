"""What the agent sees: observations mapped into the env's text space (charset, length) and rendered prompts."""

from __future__ import annotations

from swe_srl.infra.sandbox.base import ExecResult, Limits

OBS_MAX_CHARS = 1_000_000
ACTION_MAX_CHARS = 100_000
REPLACEMENT_CHAR = "\ufffd"
# Printable text: newline, tab and every printable character of the Basic Multilingual Plane. Anything else in an
# observation (control bytes, astral-plane emoji) is replaced by U+FFFD so observations stay in the space.
CHARSET = frozenset(
    ["\n", "\t"]
    + [c for c in map(chr, range(0x20, 0x10000)) if c.isprintable() and not 0xD800 <= ord(c) < 0xE000]
)


def sanitize(text: str, limit: int = OBS_MAX_CHARS) -> str:
    """Map ``text`` into the observation space: normalized newlines, charset-only, at most ``limit`` characters."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not all(c in CHARSET for c in text):
        text = "".join(c if c in CHARSET else REPLACEMENT_CHAR for c in text)
    if len(text) > limit:
        marker = f"\n[... {len(text) - limit} characters dropped by swe-srl ...]\n"
        half = (limit - len(marker)) // 2
        text = text[:half] + marker + text[len(text) - half :]
    return text


def format_observation(result: ExecResult, limits: Limits) -> str:
    """What the agent sees after a command: its output, then one status line."""
    text = result.output.rstrip("\n")
    if result.oom_killed:
        text += f"\n[the command was killed: out of memory (limit {limits.memory})]"
    if result.timed_out and "timed out" not in text[-200:]:
        text += "\n[the command timed out and was killed]"
    if result.session_restarted:
        text += "\n[the shell session ended (killed or exited); a new one was started in the same directory]"
    if "File size limit exceeded" in text:
        text += f"\n[a file reached the sandbox's file-size limit (disk budget {limits.disk})]"
    return sanitize(f"{text}\n[exit code: {result.exit_code}]".lstrip("\n"))


def render_messages(messages: list[dict[str, str]]) -> str:
    """The chat prompt as one text (the reset observation); ``info["messages"]`` keeps the structured form."""
    return sanitize("\n\n".join(f"<|{m['role']}|>\n{m['content']}" for m in messages))
