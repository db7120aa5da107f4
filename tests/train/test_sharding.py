"""FSDP2 (torch's fully_shard, on CPU over gloo with 2 processes): inside ``full_weights`` each process generates
as often and as long as its own episodes need, with no collective to wait on, and gets the unsharded model's tokens;
after it the model is sharded again. Without it the process that stops first leaves the other waiting forever."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.train

ROOT = Path(__file__).resolve().parents[2]
WORKER = """
import torch
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard
from transformers import Qwen2Config, Qwen2ForCausalLM

from swe_srl.agent.models import generate_ids
from swe_srl.train.sharding import full_weights

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
config = Qwen2Config(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2, eos_token_id=None)
whole = Qwen2ForCausalLM(config).eval()
model = Qwen2ForCausalLM(config).eval()
model.load_state_dict(whole.state_dict())
mesh = torch.distributed.device_mesh.init_device_mesh("cpu", (2,))
for layer in model.model.layers:
    fully_shard(layer, mesh=mesh)
fully_shard(model, mesh=mesh)
tokenizer = type("T", (), {"pad_token_id": 0, "eos_token_id": 63})()
calls = 1 + 2 * rank  # rank 1 makes three calls, rank 0 one, of other lengths
with full_weights(model):
    for k in range(calls):
        out = generate_ids(model, tokenizer, [[1, 2, 3, 4]], 3 + 2 * rank + k, synced_gpus=False)
want = generate_ids(whole, tokenizer, [[1, 2, 3, 4]], 3 + 2 * rank + calls - 1)
with torch.no_grad():
    model(torch.tensor([[1, 2, 3]]))  # a collective forward on the sharded model still works
print(f"rank {rank}: {'same' if out == want else 'DIFF'} {len(out[0])}", flush=True)
dist.barrier()  # neither rank tears gloo down while the other still uses it (std::terminate at exit)
dist.destroy_process_group()
"""


def test_full_weights_lets_processes_generate_apart(tmp_path: Path):
    script = tmp_path / "worker.py"
    script.write_text(WORKER, encoding="utf-8")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29533"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([*cmd, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=240, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "rank 0: same 3" in proc.stdout and "rank 1: same 7" in proc.stdout
