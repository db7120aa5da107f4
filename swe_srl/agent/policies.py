"""Policies the evaluation agent can run: one small interface over scripted, local HF and served models.

A policy sees the chat messages of the training prompt format (``swe_srl.core.prompts.build_messages``) and answers with
the training output format: ``<think>…</think>`` then one bash action. ``reset(instance)`` starts each episode.
"""

from __future__ import annotations

import base64
import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from swe_srl.core.actions import SUBMIT, THINK_OPEN, format_output, is_submit
from swe_srl.errors import PolicyError
from swe_srl.trajectories.schema import read_jsonl

if TYPE_CHECKING:
    from swe_srl.benchmark.instances import Instance
    from swe_srl.trajectories.schema import Trajectory

Messages = list[dict[str, str]]
POLICY_SPECS = "gold | empty | replay:TRAJ.jsonl | hf:PATH_OR_ID | openai"


@runtime_checkable
class Policy(Protocol):
    """Maps the conversation so far to the next model output (``<think>…</think>`` + action)."""

    name: str

    def reset(self, instance: Instance) -> None: ...

    def generate(self, messages: Messages) -> str: ...


@dataclass
class ScriptedPolicy:
    """Answers with fixed outputs in order; raises ``PolicyError`` when it runs out of script.

    ``reset`` rewinds the script, so one instance can serve several episodes.
    """

    outputs: Sequence[str]
    name: str = "scripted"
    calls: int = field(default=0, init=False)

    def reset(self, instance: Instance) -> None:
        self.calls = 0

    def generate(self, messages: Messages) -> str:
        if self.calls >= len(self.outputs):
            raise PolicyError(
                f"policy {self.name!r} ran out of script after {len(self.outputs)} outputs "
                "(the episode needs more steps than were scripted; end the script with 'submit')"
            )
        self.calls += 1
        return self.outputs[self.calls - 1]


def _heredoc_write(path: str, text: str) -> str:
    """A bash command writing ``text`` to ``path`` byte-exactly (heredoc; base64 when the text could break it)."""
    if not text.endswith("\n"):
        text += "\n"
    delimiter = "SWE_SRL_EOF"
    if delimiter in text or "```" in text:
        encoded = base64.b64encode(text.encode()).decode()
        return f"echo {encoded} | base64 -d > {path}"
    return f"cat > {path} <<'{delimiter}'\n{text}{delimiter}"


def gold_script(instance: Instance) -> list[str]:
    """The outputs of the gold policy: write the gold patch, ``git apply`` it, submit."""
    write = _heredoc_write("/tmp/swe_srl_gold.patch", instance.patch)
    apply = "git apply --whitespace=nowarn /tmp/swe_srl_gold.patch && rm /tmp/swe_srl_gold.patch"
    return [
        format_output("Apply the reference fix.", f"{write}\n{apply}"),
        format_output("The fix is applied; submit it.", SUBMIT),
    ]


class GoldPolicy(ScriptedPolicy):
    """Applies each instance's gold patch through the shell, then submits (an upper bound for the harness)."""

    def __init__(self) -> None:
        super().__init__(outputs=[], name="gold")

    def reset(self, instance: Instance) -> None:
        self.outputs = gold_script(instance)
        self.calls = 0


class EmptyPolicy(ScriptedPolicy):
    """Submits at once: an empty patch (a lower bound)."""

    def __init__(self) -> None:
        super().__init__(outputs=[format_output("Submit without changes.", SUBMIT)], name="empty")


class ReplayPolicy(ScriptedPolicy):
    """Replays the actions of recorded trajectories (one per instance id), then submits.

    Raises ``PolicyError`` for an instance without a trajectory and when the episode outlives the script.
    """

    def __init__(self, trajectories: Sequence[Trajectory], *, name: str = "replay", auto_submit: bool = True):
        super().__init__(outputs=[], name=name)
        self.trajectories = {t.instance_id: t for t in trajectories}
        self.auto_submit = auto_submit

    @classmethod
    def from_file(cls, path: Path, **kwargs: Any) -> ReplayPolicy:

        if not Path(path).is_file():
            raise PolicyError(
                f"replay trajectory file {str(path)!r} does not exist (give a native JSONL file)"
            )
        return cls(list(read_jsonl(Path(path))), name=f"replay:{Path(path).name}", **kwargs)

    def reset(self, instance: Instance) -> None:
        traj = self.trajectories.get(instance.instance_id)
        if traj is None:
            known = ", ".join(sorted(self.trajectories)[:5]) or "none"
            raise PolicyError(
                f"policy {self.name!r} has no trajectory for instance {instance.instance_id!r} "
                f"(it has: {known}); pass --instances to restrict the run"
            )
        self.outputs = [format_output(s.thought or "(replayed step)", s.action) for s in traj.steps]
        if self.auto_submit and not (traj.steps and is_submit(traj.steps[-1].action)):
            self.outputs.append(format_output("Submit the replayed work.", SUBMIT))
        self.calls = 0


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
        import torch

        prompt = self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        inputs = self.tokenizer(prompt, return_tensors="pt", add_special_tokens=False).to(self.model.device)
        options: dict[str, Any] = {"max_new_tokens": self.max_new_tokens, "do_sample": self.temperature > 0}
        if self.temperature > 0:
            options["temperature"] = self.temperature
        pad = (
            self.tokenizer.pad_token_id
            if self.tokenizer.pad_token_id is not None
            else self.tokenizer.eos_token_id
        )
        with torch.no_grad():
            out = self.model.generate(**inputs, **options, pad_token_id=pad)
        text = self.tokenizer.decode(out[0, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
        # Templates of reasoning models (and the tiny one) open <think> in the generation prompt: put it back.
        return THINK_OPEN + text if prompt.rstrip().endswith(THINK_OPEN) else text


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


def make_policy(
    spec: str,
    *,
    base_url: str | None = None,
    model: str | None = None,
    max_new_tokens: int = 1024,
    temperature: float = 0.0,
) -> Policy:
    """Build a policy from its CLI spec: ``gold | empty | replay:TRAJ.jsonl | hf:PATH_OR_ID | openai``."""
    kind, _, arg = spec.partition(":")
    if kind == "gold" and not arg:
        return GoldPolicy()
    if kind == "empty" and not arg:
        return EmptyPolicy()
    if kind == "replay" and arg:
        return ReplayPolicy.from_file(Path(arg))
    if kind == "hf" and arg:
        return HFPolicy(arg, max_new_tokens=max_new_tokens, temperature=temperature)
    if kind == "openai":
        if not base_url or not (model or arg):
            raise PolicyError(
                "policy 'openai' needs --base-url URL and --model NAME (e.g. http://localhost:8000/v1)"
            )
        return OpenAIPolicy(base_url, model or arg, max_tokens=max_new_tokens, temperature=temperature)
    raise PolicyError(f"unknown policy {spec!r}; expected one of: {POLICY_SPECS}")
