"""A tiny Qwen2 checkpoint saved to disk as a real one is: bf16 weights, a BPE tokenizer with Qwen2.5's special
tokens and Qwen2.5's own chat template (its generation prompt opens no ``<think>``)."""

from __future__ import annotations

from pathlib import Path

QWEN25_CHAT_TEMPLATE = (
    "{%- if tools %}\n"
    "    {{- '<|im_start|>system\\n' }}\n"
    "    {%- if messages[0]['role'] == 'system' %}\n"
    "        {{- messages[0]['content'] }}\n"
    "    {%- else %}\n"
    "        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}\n"
    "    {%- endif %}\n"
    '    {{- "\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are '
    'provided with function signatures within <tools></tools> XML tags:\\n<tools>" }}\n'
    "    {%- for tool in tools %}\n"
    '        {{- "\\n" }}\n'
    "        {{- tool | tojson }}\n"
    "    {%- endfor %}\n"
    '    {{- "\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments '
    'within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\"name\\": <function-name>, \\"arguments\\": '
    '<args-json-object>}\\n</tool_call><|im_end|>\\n" }}\n'
    "{%- else %}\n"
    "    {%- if messages[0]['role'] == 'system' %}\n"
    "        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}\n"
    "    {%- else %}\n"
    "        {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
    "assistant.<|im_end|>\\n' }}\n"
    "    {%- endif %}\n"
    "{%- endif %}\n"
    "{%- for message in messages %}\n"
    '    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == '
    '"assistant" and not message.tool_calls) %}\n'
    "        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}\n"
    '    {%- elif message.role == "assistant" %}\n'
    "        {{- '<|im_start|>' + message.role }}\n"
    "        {%- if message.content %}\n"
    "            {{- '\\n' + message.content }}\n"
    "        {%- endif %}\n"
    "        {%- for tool_call in message.tool_calls %}\n"
    "            {%- if tool_call.function is defined %}\n"
    "                {%- set tool_call = tool_call.function %}\n"
    "            {%- endif %}\n"
    '            {{- \'\\n<tool_call>\\n{"name": "\' }}\n'
    "            {{- tool_call.name }}\n"
    '            {{- \'", "arguments": \' }}\n'
    "            {{- tool_call.arguments | tojson }}\n"
    "            {{- '}\\n</tool_call>' }}\n"
    "        {%- endfor %}\n"
    "        {{- '<|im_end|>\\n' }}\n"
    '    {%- elif message.role == "tool" %}\n'
    '        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}\n'
    "            {{- '<|im_start|>user' }}\n"
    "        {%- endif %}\n"
    "        {{- '\\n<tool_response>\\n' }}\n"
    "        {{- message.content }}\n"
    "        {{- '\\n</tool_response>' }}\n"
    '        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}\n'
    "            {{- '<|im_end|>\\n' }}\n"
    "        {%- endif %}\n"
    "    {%- endif %}\n"
    "{%- endfor %}\n"
    "{%- if add_generation_prompt %}\n"
    "    {{- '<|im_start|>assistant\\n' }}\n"
    "{%- endif %}\n"
)
"""Qwen2.5-Instruct's chat template (tokenizer_config.json of the Qwen2.5 release)."""


def save_qwen_checkpoint(directory: Path, texts: list[str], hidden: int = 64, layers: int = 2) -> Path:
    """A random-init Qwen2ForCausalLM (bf16 on disk) + a BPE tokenizer trained on ``texts`` with Qwen2.5's template."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from swe_srl.train.tiny.model import build_tokenizer

    tokenizer = build_tokenizer(texts, 1000)
    tokenizer.chat_template = QWEN25_CHAT_TEMPLATE
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=hidden * 4,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=16384,
        tie_word_embeddings=False,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
        dtype="bfloat16",
    )
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(config).to(torch.bfloat16)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    tokenizer.save_pretrained(directory)
    model.save_pretrained(directory)
    return directory


def prime_format(directory: Path, samples: list[dict], steps: int = 150) -> Path:
    """Teach the checkpoint in ``directory`` the answer format (a few seconds of next-token training on the
    samples' expert turns, ``<think>thought</think>`` + action + EOS, every token scored), saved back in bf16: its
    sampled completions then score apart, so GRPO has advantages and real gradients (a random model's are all −1
    and train nothing). The SFT loss scores only ``</think>`` + action; here the opening ``<think>`` must be learnt
    too, as Qwen2.5's generation prompt does not write it."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from swe_srl.train.sft import completion_nll, pad_left, sft_examples, target_batch

    tokenizer = AutoTokenizer.from_pretrained(directory)
    model = AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32)
    examples = [
        (p[-64:], (ids, [1] * len(ids))) for p, (ids, _) in sft_examples(samples, tokenizer, "", None)
    ]
    pad = tokenizer.pad_token_id
    torch.manual_seed(0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for step in range(steps):
        batch = [examples[(step * 8 + k) % len(examples)] for k in range(8)]
        targets = target_batch([t for _, t in batch], pad)
        prompts = pad_left([p for p, _ in batch], pad)
        prompt_mask = pad_left([[1] * len(p) for p, _ in batch], 0)
        completion_nll(model, prompts, prompt_mask, **targets).backward()
        optimizer.step()
        optimizer.zero_grad()
    model.to(torch.bfloat16).save_pretrained(directory)
    return directory
