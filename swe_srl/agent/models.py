"""Model policies: a local HF causal LM and a model behind an OpenAI-compatible server (see ``policies.Policy``)."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from swe_srl.core.actions import THINK_OPEN
from swe_srl.errors import PolicyError

if TYPE_CHECKING:
    from swe_srl.benchmark.instances import Instance

Messages = list[dict[str, str]]


class HFPolicy:
    """A local causal LM (directory or hub id) prompted through its chat template, as in training.

    Greedy decoding unless ``temperature > 0``; ``count_tokens`` lets the agent keep the prompt in the context.
    """

    def __init__(self, model: str, *, max_new_tokens: int = 1024, temperature: float = 0.0) -> None:
        try:
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError:
            raise PolicyError("policy 'hf:…' needs the train extra: pip install 'swe-srl[train]'") from None
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(model)
            self.model = AutoModelForCausalLM.from_pretrained(model, dtype="auto")
        except (OSError, ValueError) as exc:
            raise PolicyError(f"cannot load model {model!r} (a local directory or a hub id): {exc}") from None
        if not getattr(self.tokenizer, "chat_template", None):
            raise PolicyError(
                f"model {model!r} has no chat template; save the tokenizer with the one used in training"
            )
        self.model.eval()
        self.name = f"hf:{model}"
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        positions = getattr(self.model.config, "max_position_embeddings", None)
        self.context_tokens: int | None = int(positions) if positions else None

    def reset(self, instance: Instance) -> None:
        pass

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False))

    def generate(self, messages: Messages) -> str:
        return self.generate_batch([messages])[0]

    def generate_batch(self, batch: Sequence[Messages]) -> list[str]:
        """One ``generate`` call for several conversations (left-padded), one output each."""
        import torch

        tokenizer = self.tokenizer
        prompts = [
            tokenizer.apply_chat_template(m, tokenize=False, add_generation_prompt=True) for m in batch
        ]
        encoded = [tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        width = max(map(len, encoded))
        ids = torch.tensor([[pad] * (width - len(e)) + list(e) for e in encoded], device=self.model.device)
        mask = torch.tensor(
            [[0] * (width - len(e)) + [1] * len(e) for e in encoded], device=self.model.device
        )
        options: dict[str, Any] = {"max_new_tokens": self.max_new_tokens, "do_sample": self.temperature > 0}
        if self.temperature > 0:
            options["temperature"] = self.temperature
        with torch.no_grad():
            out = self.model.generate(input_ids=ids, attention_mask=mask, **options, pad_token_id=pad)
        texts = tokenizer.batch_decode(out[:, width:], skip_special_tokens=True)
        # Templates of reasoning models (and the tiny one) open <think> in the generation prompt: put it back.
        return [
            THINK_OPEN + t if p.rstrip().endswith(THINK_OPEN) else t
            for p, t in zip(prompts, texts, strict=True)
        ]


RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


class OpenAIPolicy:
    """A model behind an OpenAI-compatible ``/chat/completions`` endpoint (vLLM, SGLang, ...).

    Transient failures (connection refused, timeouts, 429/5xx) are retried with exponential backoff; other HTTP
    errors fail at once with the server's message.
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
    ) -> None:

        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key or os.environ.get("OPENAI_API_KEY", "EMPTY")
        self.max_tokens, self.temperature = max_tokens, temperature
        self.timeout_s, self.retries, self.backoff_s = timeout_s, retries, backoff_s
        self.name = f"openai:{model}"

    def reset(self, instance: Instance) -> None:
        pass

    def generate(self, messages: Messages) -> str:
        body = {"model": self.model, "messages": messages, "max_tokens": self.max_tokens}
        body["temperature"] = self.temperature
        payload = self._post("/chat/completions", body)
        try:
            return payload["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError):
            raise PolicyError(
                f"{self.base_url}/chat/completions: unexpected response {str(payload)[:300]!r}"
            ) from None

    def _post(self, route: str, body: dict[str, Any]) -> dict[str, Any]:
        url = self.base_url + route
        data = json.dumps(body, ensure_ascii=False).encode()
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {self.api_key}"}
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff_s * 2 ** (attempt - 1))
            request = urllib.request.Request(url, data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                    return json.loads(response.read())
            except urllib.error.HTTPError as exc:
                detail = exc.read()[:500].decode(errors="replace")
                if exc.code not in RETRY_STATUS:
                    raise PolicyError(
                        f"{url} answered HTTP {exc.code}: {detail} (check --model {self.model!r} and --base-url)"
                    ) from None
                last = f"HTTP {exc.code}: {detail}"
            except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
                last = str(getattr(exc, "reason", exc))
            except json.JSONDecodeError as exc:
                raise PolicyError(f"{url} answered with invalid JSON: {exc}") from None
        raise PolicyError(
            f"OpenAI-compatible server at {self.base_url} is unreachable after {self.retries + 1} attempts ({last}); "
            "start it (e.g. `vllm serve MODEL`) or fix --base-url"
        )
