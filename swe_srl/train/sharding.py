"""FSDP2 under ``configs/accelerate/fsdp.yaml``: the same sharding on CPU as on GPUs, and whole weights for
generation.

:func:`shard_on_cpu`: accelerate 1.16 shards with FSDP on accelerators only; launched on CPU (gloo), it runs the
FSDP config as plain data parallel. swe-srl has it shard there too, so the 2-process CPU launch CI makes runs the
8-GPU path: sharded weights, sharded checkpoints, held-out decoding and generation on shards.

:func:`full_weights`: RLVR plays episodes of different lengths on each process, so a model whose every forward
all-gathers its shards (a collective every process must join) would wait forever for the process that finished
first. It gathers the shards once, for the whole rollout, and frees them after: every process enters and leaves it
the same number of times, and what happens inside needs no collective."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any


def shard_on_cpu() -> bool:
    """Under ``accelerate launch`` with an FSDP config, several processes and no CUDA: make the trainer's
    accelerator shard (``DistributedType.FSDP`` with the config's plugin) instead of falling back to data parallel.
    Call it before any trainer is built; True when it applies (it is idempotent). Elsewhere it changes nothing."""
    import torch
    from accelerate.state import AcceleratorState, PartialState
    from accelerate.utils import DistributedType

    fsdp = os.environ.get("ACCELERATE_USE_FSDP", "false").lower() == "true"
    if not fsdp or torch.cuda.is_available() or int(os.environ.get("WORLD_SIZE", "1")) < 2:
        return False
    init = AcceleratorState.__init__
    if getattr(init, "_swe_srl_cpu_fsdp", False):
        return True

    def sharding_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        # Accelerator passes the plugin by name, built from the launch's FSDP config
        plugin = kwargs.get("fsdp_plugin")
        if plugin is not None and self.distributed_type == DistributedType.MULTI_CPU:
            self.distributed_type = DistributedType.FSDP
            self.fsdp_plugin = plugin
            PartialState._shared_state["distributed_type"] = DistributedType.FSDP

    sharding_init._swe_srl_cpu_fsdp = True  # type: ignore[attr-defined]
    AcceleratorState.__init__ = sharding_init  # type: ignore[method-assign]
    return True


@contextlib.contextmanager
def full_weights(model: Any) -> Iterator[Any]:
    """``model`` with its FSDP2 units unsharded and kept so for every forward inside the block (no collective per
    forward), resharded on exit; any other model (one process, DDP, CPU), or none (a rollout without a trainer), as
    it is."""
    from torch.distributed.fsdp import FSDPModule

    units = [m for m in model.modules() if isinstance(m, FSDPModule)] if model is not None else []
    if not units:
        yield model
        return
    for unit in units:
        unit.set_reshard_after_forward(False)
        unit.unshard()
    try:
        yield model
    finally:
        for unit in units:
            unit.reshard()
            unit.set_reshard_after_forward(True)
