"""The ``openai`` policy through the ``openai`` package against a local OpenAI-compatible server (tests/chat_stub):
requests in flight bounded on the machine over every policy, thread and eval worker process (a killed holder frees
its slot), as SWE-RL bounds its one process; transient failures (timeouts, 5xx) retried, client errors not; a
prompt over the context and bad replies as before the package."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
from chat_stub import serving
from git_instance import git_instance

from swe_srl.agent.served import OpenAIPolicy, request_slot
from swe_srl.errors import ConfigError, ContextOverflow, PolicyError
from swe_srl.eval.run import evaluate, policy_for
from swe_srl.eval.settings import EvalSettings

HI = [{"role": "user", "content": "say hi"}]
FIX = "```python\n### pkg/core.py\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n```"


def _all_at_once(url: str, calls: int, max_concurrent: int) -> list[str]:
    """``calls`` threads, each with its own policy (as eval builds one per episode), asking at the same moment."""
    outputs: list[str] = []
    start = threading.Barrier(calls)

    def one() -> None:
        policy = OpenAIPolicy(url, "m", max_concurrent=max_concurrent)
        start.wait()
        outputs.append(policy.generate(HI))

    threads = [threading.Thread(target=one) for _ in range(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return outputs


@pytest.mark.parametrize("bound", [2, 6])
def test_requests_in_flight_are_bounded_over_the_policies_and_threads(bound: int) -> None:
    with serving(lambda request: "hi", hold=lambda request: 0.3) as stub:
        assert _all_at_once(stub.url, 6, bound) == ["hi"] * 6
    assert (
        len(stub.requests) == 6 and stub.max_in_flight == bound
    )  # 6: the server itself takes them all at once


ASK = "from swe_srl.agent.served import OpenAIPolicy\nprint(OpenAIPolicy({url!r}, 'm', max_concurrent=2).generate([]))"


def test_processes_share_the_bound() -> None:
    # eval's spawned workers, another run, a Ray node's workers: separate processes on one machine
    with serving(lambda request: "hi", hold=lambda request: 0.5) as stub:
        asking = [subprocess.Popen([sys.executable, "-c", ASK.format(url=stub.url)], stdout=subprocess.PIPE, text=True)
                  for _ in range(4)]  # fmt: skip
        assert [proc.communicate(timeout=60)[0].strip() for proc in asking] == ["hi"] * 4
    assert len(stub.requests) == 4 and stub.max_in_flight == 2


def test_eval_gives_its_bound_to_every_episode(tmp_path: Path) -> None:
    instance = git_instance(tmp_path / "repo")
    with serving(lambda request: FIX, usage=True) as stub:
        settings = EvalSettings("openai", base_url=stub.url, model="m", protocol="oracle-edit", no_grade=True,
                                max_concurrent_requests=3)  # fmt: skip
        assert policy_for(settings).max_concurrent == 3
        report = evaluate(settings, [instance, replace(instance, instance_id="o__r-2")], tmp_path / "out")
    assert report["statuses"] == {"generated": 2} and len(stub.requests) == 2


def test_a_killed_holder_frees_its_slot() -> None:
    url = "http://127.0.0.1:9/v1"  # nothing is asked: only the slot is held
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom swe_srl.agent.served import request_slot\n"
         f"with request_slot({url!r}, 1):\n    print('held', flush=True)\n    time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        taken = threading.Event()

        def take() -> None:
            with request_slot(url, 1):
                taken.set()

        waiter = threading.Thread(target=take, daemon=True)
        waiter.start()
        assert not taken.wait(0.5)  # the slot is held in another process
        started = time.monotonic()
        holder.kill()
        assert taken.wait(10) and time.monotonic() - started < 2
    finally:
        holder.kill()
        holder.wait(timeout=10)


def test_a_bound_under_one_is_refused() -> None:
    with pytest.raises(ConfigError, match="--max-requests 0: need at least 1"):
        EvalSettings("openai", base_url="http://localhost:8000/v1", model="m", max_concurrent_requests=0)
    with pytest.raises(PolicyError, match="max_concurrent=0"):
        OpenAIPolicy("http://localhost:8000/v1", "m", max_concurrent=0)


def test_a_timed_out_request_is_asked_again() -> None:
    with serving(
        lambda request: "late but here", hold=lambda request: 2.0 if len(stub.requests) == 1 else 0
    ) as stub:
        policy = OpenAIPolicy(stub.url, "m", timeout_s=0.5, retries=1, backoff_s=0.01)
        assert policy.generate(HI) == "late but here"
    assert len(stub.requests) == 2


def test_server_errors_are_retried_then_named_with_the_last_answer() -> None:
    with serving(lambda request: "x", raw=lambda request: (500, "engine dead")) as stub:
        policy = OpenAIPolicy(stub.url, "m", retries=2, backoff_s=0.01)
        with pytest.raises(PolicyError, match=r"unreachable after 3 attempts \(HTTP 500: engine dead\)"):
            policy.generate(HI)
    assert len(stub.requests) == 3


VLLM = ("This model's maximum context length is 120 tokens. However, you requested 4216 tokens "
        "(4096 in the messages, 120 in the completion). Please reduce the length of the messages or completion.")  # fmt: skip


@pytest.mark.parametrize(
    ("status", "message", "prompt", "context"),
    [(400, VLLM, 4096, 120), (413, "Request Entity Too Large", None, None)],
)
def test_a_prompt_over_the_context_is_an_overflow_at_once(
    status: int, message: str, prompt: int | None, context: int | None
) -> None:
    refuse = serving(lambda request: "x", refuse=lambda request: (status, message))
    with refuse as stub, pytest.raises(ContextOverflow) as caught:
        OpenAIPolicy(stub.url, "m", retries=3, backoff_s=0.01).generate(HI)
    assert (caught.value.prompt_tokens, caught.value.context_tokens) == (prompt, context)
    assert f"HTTP {status}" in str(caught.value) and len(stub.requests) == 1


def test_a_bad_request_fails_at_once_with_the_servers_message() -> None:
    refuse = serving(lambda request: "x", refuse=lambda request: (400, "temperature must be >= 0"))
    with refuse as stub, pytest.raises(PolicyError, match="HTTP 400.*must be >= 0.*--model 'm'") as caught:
        OpenAIPolicy(stub.url, "m", retries=3, backoff_s=0.01).generate(HI)
    assert not isinstance(caught.value, ContextOverflow) and len(stub.requests) == 1


@pytest.mark.parametrize(
    ("body", "match"),
    [("not json{", "answered with invalid JSON"), ('{"choices": []}', "unexpected response"),
     ('{"choices": [{"message": {"role": "assistant"}}]}', "unexpected response"),
     ('{"choices": [{"message": {"role": "assistant", "content": null}}]}', None)],
)  # fmt: skip
def test_bad_replies(body: str, match: str | None) -> None:
    with serving(lambda request: "x", raw=lambda request: (200, body)) as stub:
        policy = OpenAIPolicy(stub.url, "m", retries=2, backoff_s=0.01)
        if match is None:
            assert policy.generate(HI) == ""  # null content: an empty answer, as before
        else:
            with pytest.raises(PolicyError, match=match):
                policy.generate(HI)
    assert len(stub.requests) == 1


def test_usage_and_finish_reason_are_kept() -> None:
    with serving(lambda request: "two words", usage=True) as stub:
        policy = OpenAIPolicy(stub.url, "m", max_tokens=7, temperature=0.5)
        assert policy.generate(HI) == "two words"
    assert policy.last_usage == {"prompt_tokens": 2, "completion_tokens": 2}
    assert policy.last_finish_reason == "stop"
    assert stub.requests == [{"model": "m", "messages": HI, "max_tokens": 7, "temperature": 0.5}]
