"""A model behind an OpenAI-compatible server (vLLM, SGLang, ...), called through the ``openai`` package as SWE-RL's
``utils/api.py`` calls it; a policy (see ``policies.Policy``) like ``models.HFPolicy``."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from swe_srl import paths
from swe_srl.errors import ContextOverflow, PolicyError

if TYPE_CHECKING:
    import openai

    from swe_srl.benchmark.instances import Instance

Messages = list[dict[str, str]]

RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}
MAX_CONCURRENT_REQUESTS = 64
"""Requests in flight to one server from this machine: SWE-RL's ``--max_concurrent_requests`` and its default."""
_TOO_LONG = re.compile(
    r"context length|context window|too long|too many tokens|exceeds? the|max_model_len", re.I
)


def context_overflow(status: int, detail: str) -> ContextOverflow | None:
    """The server's answer as a context overflow: HTTP 413, or 400 (or any status) whose message says the prompt
    is too long; with the token counts vLLM-style messages give (``maximum context length is N tokens``,
    ``M in the messages``)."""
    if (
        status != 413
        and not (status == 400 and _TOO_LONG.search(detail))
        and "maximum context length" not in detail
    ):
        return None
    context = re.search(r"maximum context length is (\d+)", detail)
    prompt = re.search(
        r"(\d+) (?:tokens )?in the messages|prompt \(?(?:contains|has|is)? ?(\d+) tokens", detail
    )
    prompt_tokens = next((int(g) for g in prompt.groups() if g), None) if prompt else None
    return ContextOverflow(f"the server reports the prompt over the model's context (HTTP {status}: {detail[:200]})",
                           prompt_tokens, int(context.group(1)) if context else None)  # fmt: skip


_CLIENTS: dict[tuple[str, str, float], openai.OpenAI] = {}  # client()
_CLIENTS_LOCK = threading.Lock()


def client(base_url: str, api_key: str, timeout_s: float) -> openai.OpenAI:
    """The process's one ``openai.OpenAI`` client of a server (one connection pool), shared by every policy of the
    process (eval makes one per episode), as SWE-RL shares one ``OpenAIClient``. (``openai`` is imported here, not
    with the module: 0.6 s that only a served model's run pays.)"""
    import openai

    key = (base_url, api_key, timeout_s)
    with _CLIENTS_LOCK:
        if key not in _CLIENTS:
            _CLIENTS[key] = openai.OpenAI(
                base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=0
            )
        return _CLIENTS[key]


@contextlib.contextmanager
def request_slot(base_url: str, slots: int) -> Iterator[int]:
    """Hold one of the ``slots`` request slots of a server on this machine while a request is in flight: ``flock``
    on ``slots`` files in ``$SWE_SRL_HOME/locks/requests/<server>`` (as ``infra/sandbox/start_limit.py`` holds
    container starts), so every thread and process here counts (eval's spawned workers, other runs, a Ray node's
    workers) and a dead process's slot is free at once. SWE-RL bounds its one process with an ``asyncio.Semaphore``
    of ``max_concurrent_requests``; a request that finds every slot taken waits, it is never refused."""
    name = hashlib.sha256(f"{base_url} {slots}".encode()).hexdigest()[:16]
    with paths.held_slot(paths.cache_dir("locks") / "requests" / name, slots, "slot") as index:
        yield index


class OpenAIPolicy:
    """A model behind an OpenAI-compatible ``/chat/completions`` endpoint (vLLM, SGLang, ...), called through the
    ``openai`` package as SWE-RL's ``utils/api.py`` calls it.

    Transient failures (connection refused or reset, timeouts, 408/409/429/5xx) are retried with exponential
    backoff; other HTTP errors fail at once with the server's message; a prompt over the model's context is a
    :class:`~swe_srl.errors.ContextOverflow`. The policies of a process share a client per server (:func:`client`),
    and at most ``max_concurrent`` requests of this machine are in flight to it (:func:`request_slot`).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        max_tokens: int = 1024,
        temperature: float = 0.0,
        timeout_s: float = 600.0,
        retries: int = 4,
        backoff_s: float = 1.0,
        max_concurrent: int = MAX_CONCURRENT_REQUESTS,
    ) -> None:
        if max_concurrent < 1:
            raise PolicyError(f"max_concurrent={max_concurrent}: need at least one request in flight")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key or os.environ.get("OPENAI_API_KEY", "EMPTY")
        self.max_tokens, self.temperature = max_tokens, temperature
        self.timeout_s, self.retries, self.backoff_s = timeout_s, retries, backoff_s
        self.max_concurrent = max_concurrent
        self.name = f"openai:{model}"
        self.last_usage: dict[str, int] = {}
        """The server's ``usage`` report of the last call (prompt/completion tokens), when it sends one."""
        self.last_finish_reason: str | None = None

    def reset(self, instance: Instance) -> None:
        pass

    def generate(self, messages: Messages) -> str:
        body = {"model": self.model, "messages": messages, "max_tokens": self.max_tokens}
        body["temperature"] = self.temperature
        payload = self._create(body)
        try:
            usage = payload.get("usage")
            self.last_usage = dict(usage) if isinstance(usage, dict) else {}
            self.last_finish_reason = payload["choices"][0].get("finish_reason")
            return payload["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError, AttributeError):
            raise PolicyError(
                f"{self.base_url}/chat/completions: unexpected response {str(payload)[:300]!r}"
            ) from None

    def _create(self, body: dict[str, Any]) -> dict[str, Any]:
        """``chat.completions.create`` with our retries (the client's own are off), each attempt holding one of
        the server's request slots (none while it backs off); the reply as the server sent it (a dict)."""
        import openai

        server = client(self.base_url, self.api_key, self.timeout_s)
        url = f"{self.base_url}/chat/completions"
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff_s * 2 ** (attempt - 1))
            try:
                with request_slot(self.base_url, self.max_concurrent):
                    return server.chat.completions.create(**body).to_dict()
            except openai.APIStatusError as exc:
                status, detail = exc.status_code, exc.response.text[:500]
                if overflow := context_overflow(status, detail):
                    raise overflow from None
                if status not in RETRY_STATUS:
                    raise PolicyError(
                        f"{url} answered HTTP {status}: {detail} (check --model {self.model!r} and --base-url)"
                    ) from None
                last = f"HTTP {status}: {detail}"
            except openai.APIConnectionError as exc:  # refused, reset, timed out (APITimeoutError)
                last = f"{exc.message} {exc.__cause__ or ''}".strip()
            except json.JSONDecodeError as exc:
                raise PolicyError(f"{url} answered with invalid JSON: {exc}") from None
        raise PolicyError(
            f"OpenAI-compatible server at {self.base_url} is unreachable after {self.retries + 1} attempts ({last}); "
            "start it (e.g. `vllm serve MODEL`) or fix --base-url"
        )
