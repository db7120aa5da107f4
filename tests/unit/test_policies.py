"""Policies: spec parsing, scripted policies, the one gold script (heredoc), batches, adapting functions, and the
OpenAI client against a local HTTP server."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from swe_srl.agent.policies import (
    GOLD_APPLY,
    HEREDOC_EOF,
    EmptyPolicy,
    FunctionPolicy,
    GoldPolicy,
    OpenAIPolicy,
    Policy,
    ReplayPolicy,
    ScriptedPolicy,
    as_policy,
    batch_generate,
    default_max_steps,
    gold_patch_outputs,
    gold_script,
    heredoc_stdin,
    make_policy,
)
from swe_srl.benchmark.instances import Instance
from swe_srl.core.actions import format_output, is_submit, parse_output
from swe_srl.errors import PolicyError
from swe_srl.trajectories.schema import Step, Trajectory, write_jsonl


def _instance(patch: str = "", instance_id: str = "demo__demo-1") -> Instance:
    return Instance(instance_id, "demo/demo", "0" * 40, patch, "", "The bug.")


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("gold", GoldPolicy),  # gold patch through the shell
        ("empty", EmptyPolicy),  # submit at once
    ],
)
def test_make_policy_builds_scripted_kinds(spec: str, expected: type) -> None:
    policy = make_policy(spec)
    assert isinstance(policy, expected)
    assert isinstance(policy, Policy)


@pytest.mark.parametrize(
    ("spec", "kwargs", "message"),
    [
        ("random", {}, "unknown policy 'random'"),  # not a kind
        ("gold:x", {}, "unknown policy"),  # gold takes no argument
        ("hf", {}, "unknown policy"),  # hf needs a model
        ("openai", {}, "--base-url"),  # openai needs the server
        ("openai", {"base_url": "http://x/v1"}, "--model"),  # ... and the model name
        ("replay:/nonexistent/t.jsonl", {}, "does not exist"),  # missing trajectory file
    ],
)
def test_make_policy_rejects_bad_specs(spec: str, kwargs: dict, message: str) -> None:
    with pytest.raises(PolicyError, match=message):
        make_policy(spec, **kwargs)


def test_scripted_policy_raises_when_out_of_script_and_reset_rewinds() -> None:
    policy = ScriptedPolicy(["a", "b"])
    assert [policy.generate([]), policy.generate([])] == ["a", "b"]
    with pytest.raises(PolicyError, match="ran out of script after 2 outputs"):
        policy.generate([])
    policy.reset(_instance())
    assert policy.generate([]) == "a"


def test_empty_policy_submits_in_the_training_format() -> None:
    policy = EmptyPolicy()
    policy.reset(_instance())
    assert is_submit(parse_output(policy.generate([])).action)


PATCHES = [
    # plain patch with a trailing-whitespace context line (git apply is strict about it)
    "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a = 1  \n+a = 2\n",
    # a patch containing the heredoc delimiter falls back to base64
    f"diff --git a/y.md b/y.md\n+{HEREDOC_EOF}\n",
    # a patch containing a ``` fence must not break the action format
    "diff --git a/z.md b/z.md\n+```python\n+$HOME `date` \\n\n",
    # no trailing newline
    "line without newline",
]


@pytest.mark.parametrize("patch", PATCHES)
def test_gold_script_feeds_the_patch_byte_exactly(patch: str, tmp_path: Path) -> None:
    first, last = gold_script(_instance(patch))
    action = parse_output(first).action  # the heredoc (or base64) survives the output format
    assert action.startswith(GOLD_APPLY) or action.endswith(f"| {GOLD_APPLY}")
    write = action.replace(GOLD_APPLY, f"cat > {tmp_path / 'p'}")  # the same stdin, into a file
    subprocess.run(["bash", "-c", write], check=True)
    expected = patch if patch.endswith("\n") else patch + "\n"
    assert (tmp_path / "p").read_text() == expected
    assert is_submit(parse_output(last).action)


def test_gold_script_applies_the_patch_in_a_git_repo(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "x.py").write_text("a = 1  \n")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    action = parse_output(gold_script(_instance(PATCHES[0]))[0]).action
    proc = subprocess.run(["bash", "-c", action], cwd=repo, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert (repo / "x.py").read_text() == "a = 2\n"


def test_demo_gold_outputs_share_the_gold_apply_and_end_with_submit() -> None:
    patch = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b"
    outputs = gold_patch_outputs(patch)
    actions = [parse_output(o).action for o in outputs]
    assert outputs[1:2] + outputs[-1:] == gold_script(_instance(patch))
    assert f"<<'{HEREDOC_EOF}'\n{patch}\n{HEREDOC_EOF}" in actions[1] and actions[-1] == "submit"
    assert "base64 -d" in parse_output(gold_patch_outputs(f"+{HEREDOC_EOF}\n")[1]).action


def test_heredoc_stdin_feeds_text_with_quotes_and_dollars(tmp_path: Path) -> None:
    text = "it's $HOME and `date`\n\\n\n"
    subprocess.run(["bash", "-c", heredoc_stdin(f"cat > {tmp_path / 'o'}", text)], check=True)
    assert (tmp_path / "o").read_text() == text


class _Batched(ScriptedPolicy):
    def generate_batch(self, batch: list) -> list[str]:
        self.batches = [*getattr(self, "batches", []), len(batch)]
        return [f"out{i}" for i in range(len(batch))]


def test_batch_generate_uses_the_batch_method_for_several_prompts() -> None:
    policy = _Batched(["single"])
    assert batch_generate(policy, [[], [], []]) == ["out0", "out1", "out2"] and policy.batches == [3]
    assert batch_generate(policy, [[]]) == ["single"]  # one prompt: plain generate
    assert batch_generate(ScriptedPolicy(["a", "b"]), [[], []]) == ["a", "b"]  # no batch method: one by one


def test_functions_of_the_messages_are_adapted_to_policies() -> None:
    def echo_last(messages: list[dict[str, str]]) -> str:
        return messages[-1]["content"]

    policy = as_policy(echo_last)
    assert isinstance(policy, FunctionPolicy) and isinstance(policy, Policy) and policy.name == "echo_last"
    policy.reset(_instance())
    assert policy.generate([{"role": "user", "content": "hi"}]) == "hi"
    gold = GoldPolicy()
    assert as_policy(gold) is gold


def test_gold_policy_follows_each_instance() -> None:
    policy = GoldPolicy()
    policy.reset(_instance("PATCH-ONE\n"))
    assert "PATCH-ONE" in policy.generate([])
    policy.reset(_instance("PATCH-TWO\n"))
    assert "PATCH-TWO" in policy.generate([])


def test_replay_policy_replays_then_submits(tmp_path: Path) -> None:
    traj = Trajectory("demo__demo-1", "p", [Step("look", "ls"), Step("", "cat x.py")])
    write_jsonl(tmp_path / "t.jsonl", [traj])
    policy = make_policy(f"replay:{tmp_path / 't.jsonl'}")
    policy.reset(_instance())
    actions = [parse_output(policy.generate([])).action for _ in range(3)]
    assert actions == ["ls", "cat x.py", "submit"]
    with pytest.raises(PolicyError, match="ran out of script"):
        policy.generate([])
    with pytest.raises(PolicyError, match="no trajectory for instance 'other__x-2'"):
        policy.reset(_instance(instance_id="other__x-2"))


def test_replay_policy_does_not_double_submit() -> None:
    policy = ReplayPolicy([Trajectory("demo__demo-1", "p", [Step("t", "submit")])], auto_submit=True)
    policy.reset(_instance())
    assert policy.outputs == [format_output("t", "submit")]


def test_a_replay_runs_whole_trajectories_by_default(tmp_path: Path) -> None:
    from swe_srl.eval.settings import EvalSettings

    long = Trajectory(
        "demo__demo-1", "p", [Step("", f"echo {k}") for k in range(54)]
    )  # + the appended submit
    short = Trajectory("demo__demo-2", "p", [Step("", "ls"), Step("", "submit")])  # ends with its own submit
    write_jsonl(tmp_path / "t.jsonl", [short, long])
    spec = f"replay:{tmp_path / 't.jsonl'}"
    assert (
        default_max_steps(spec) == 55 and EvalSettings(spec).max_steps == 55
    )  # was 50: cut before its submit
    assert EvalSettings(spec, max_steps=7).max_steps == 7  # a given limit wins
    assert default_max_steps("gold") == EvalSettings("gold").max_steps == 50
    assert (
        EvalSettings("replay:missing.jsonl").max_steps == 50
    )  # the missing file is the policy check's error


class _Server:
    """A tiny OpenAI-compatible server: answers from a queue of (status, body) and records requests."""

    def __init__(self, replies: list[tuple[int, dict | str]]) -> None:
        self.replies, self.requests = list(replies), []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server API)
                length = int(self.headers["Content-Length"])
                server.requests.append((self.path, json.loads(self.rfile.read(length))))
                status, body = server.replies.pop(0)
                data = (body if isinstance(body, str) else json.dumps(body)).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[_Server]:
    srv = _Server(request.param)
    thread = threading.Thread(target=srv.httpd.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.httpd.shutdown()
    srv.httpd.server_close()


def _completion(text: str) -> dict:
    return {"choices": [{"message": {"role": "assistant", "content": text}}]}


@pytest.mark.parametrize("server", [[(200, _completion("<think>x</think>\nls"))]], indirect=True)
def test_openai_policy_posts_chat_completions(server: _Server) -> None:
    policy = make_policy("openai", base_url=server.url + "/", model="tiny", max_new_tokens=64)
    messages = [{"role": "user", "content": "hi"}]
    assert policy.generate(messages) == "<think>x</think>\nls"
    path, body = server.requests[0]
    assert path == "/v1/chat/completions"
    assert body["model"] == "tiny" and body["messages"] == messages and body["max_tokens"] == 64


@pytest.mark.parametrize(
    "server", [[(503, "busy"), (429, "slow down"), (200, _completion("ok"))]], indirect=True
)
def test_openai_policy_retries_transient_errors(server: _Server) -> None:
    policy = OpenAIPolicy(server.url, "tiny", retries=2, backoff_s=0.01)
    assert policy.generate([]) == "ok"
    assert len(server.requests) == 3


@pytest.mark.parametrize("server", [[(404, '{"error": "model nope not found"}')]], indirect=True)
def test_openai_policy_fails_at_once_on_client_errors(server: _Server) -> None:
    policy = OpenAIPolicy(server.url, "nope", retries=3, backoff_s=0.01)
    with pytest.raises(PolicyError, match="HTTP 404.*model nope not found"):
        policy.generate([])
    assert len(server.requests) == 1


@pytest.mark.parametrize("server", [[(200, {"unexpected": True})]], indirect=True)
def test_openai_policy_rejects_malformed_responses(server: _Server) -> None:
    with pytest.raises(PolicyError, match="unexpected response"):
        OpenAIPolicy(server.url, "tiny", retries=0).generate([])


def test_openai_policy_names_an_unreachable_server() -> None:
    # Bind then close a socket: the port is free and refuses connections.
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    policy = OpenAIPolicy(f"http://127.0.0.1:{port}/v1", "tiny", retries=1, backoff_s=0.01)
    with pytest.raises(
        PolicyError, match=rf"127.0.0.1:{port}/v1 is unreachable after 2 attempts.*--base-url"
    ):
        policy.generate([])


def test_hf_policy_answers_in_the_training_format(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from swe_srl.core.prompts import build_messages
    from swe_srl.train.tiny.model import make_tiny_policy

    messages = build_messages("Fix the bug in x.py", [("ls", "x.py")])
    texts = [m["content"] for m in messages] + [format_output("look around", "grep -n bug x.py")]
    path = make_tiny_policy(texts, tmp_path / "tiny")
    policy = make_policy(f"hf:{path}", max_new_tokens=8)
    assert policy.name == f"hf:{path}"
    output = policy.generate(messages)
    # The tiny template opens <think> in the generation prompt; the policy puts it back in front.
    assert output.startswith("<think>")
    assert policy.count_tokens("grep -n bug x.py") > 0
    assert policy.context_tokens == 16384


def test_hf_policy_answers_a_batch_in_one_generate(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from swe_srl.core.prompts import build_messages
    from swe_srl.train.tiny.model import make_tiny_policy

    short = build_messages("Fix the bug in x.py", [])
    long = build_messages("Fix the bug in x.py", [("ls", "x.py"), ("cat x.py", "a = 1")])
    path = make_tiny_policy([m["content"] for m in long], tmp_path / "tiny")
    policy = make_policy(f"hf:{path}", max_new_tokens=6)
    outputs = policy.generate_batch([short, long, short])
    assert len(outputs) == 3 and all(o.startswith("<think>") for o in outputs)
    assert outputs[1] == policy.generate(long)  # the longest prompt is not padded: greedy gives the same turn


def test_hf_policy_names_a_missing_model(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    with pytest.raises(PolicyError, match="no-model' does not exist"):  # before transformers is asked
        make_policy(f"hf:{tmp_path / 'no-model'}")
    (tmp_path / "empty").mkdir()
    with pytest.raises(PolicyError, match="holds no saved model"):
        make_policy(f"hf:{tmp_path / 'empty'}")
