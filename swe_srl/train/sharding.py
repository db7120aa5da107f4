"""Whole weights for generation under FSDP2 (``configs/accelerate/fsdp.yaml``): RLVR plays episodes of different
lengths on each process, so a model whose every forward all-gathers its shards (a collective every process must
join) would wait forever for the process that finished first. :func:`full_weights` gathers the shards once, for the
whole rollout, and frees them after: every process enters and leaves it the same number of times, and what happens
inside needs no collective."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any


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
