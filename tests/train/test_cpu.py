"""The tiny policy's CPU runtime (swe_srl.train.tiny.cpu): freed memory is reused, not faulted in again."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PROBE = """
import ctypes, resource, sys
from swe_srl.train.tiny.cpu import keep_freed_memory
if sys.argv[1] == "keep":
    assert keep_freed_memory()
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
size = 64 * 2**20  # above glibc's largest mmap threshold
start = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(12):  # a training step's pattern: a large block allocated, written and freed, again and again
    block = libc.malloc(size)
    ctypes.memset(block, 1, size)
    libc.free(block)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - start)
"""


def faults(mode: str) -> int:
    done = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True)
    return int(done.stdout.split()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc settings are Linux-only")
def test_freed_memory_is_reused_instead_of_faulted_in_again():
    default, kept = faults("default"), faults("keep")
    pages = 64 * 2**20 // 4096
    assert default > 8 * pages  # every allocation mapped afresh: its pages fault again
    assert kept < 3 * pages  # the first allocation's pages, then reuse


def test_tune_cpu_sets_the_torch_threads():
    code = (
        "import torch; from swe_srl.train.tiny.cpu import tune_cpu; tune_cpu(1); print(torch.get_num_threads()); "
        "tune_cpu(2); print(torch.get_num_threads())"
    )
    cpu_only = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}  # tune_cpu leaves a CUDA machine's threads alone
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=cpu_only
    )
    assert done.stdout.split() == ["1", "2"]
