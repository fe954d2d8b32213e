"""How a kernel's blocks fit on a GPU's multiprocessors (SMs).

The kernels of both searches run persistent grids (each block pulls
sequences from a counter until none are left), sized to the blocks an SM can
hold at once: ``blocks_per_sm`` from the threads a block and its dynamic
shared memory.  A kernel asking for more than 48 KiB of dynamic shared memory
must say so first (``allow_smem``).
"""

from __future__ import annotations

import threading
from functools import lru_cache
from typing import NamedTuple

MAX_THREADS_PER_SM = 2048       # H100, H200 (compute capability 9.0), A100
SMEM_RESERVED_PER_BLOCK = 1024  # shared memory the runtime keeps for each block
DEFAULT_SMEM_LIMIT = 48 * 1024  # dynamic shared memory a kernel may take without asking


class SmProps(NamedTuple):
    """What the grid computations need to know of a GPU."""
    n_sm: int              # multiprocessors
    smem_per_sm: int       # shared memory per multiprocessor (bytes)
    smem_optin: int        # most shared memory one block may ask for (bytes)


@lru_cache(maxsize=None)
def device_props(device_id: int) -> SmProps:
    """The GPU's multiprocessor count and shared-memory sizes (H100 values where CUDA does
    not say)."""
    import cupy as cp

    props = cp.cuda.runtime.getDeviceProperties(device_id)
    return SmProps(int(props["multiProcessorCount"]), int(props.get("sharedMemPerMultiprocessor", 228 * 1024)),
                   int(props.get("sharedMemPerBlockOptin", 227 * 1024)))


def blocks_per_sm(block: int, smem: int, smem_per_sm: int) -> int:
    """Blocks of ``block`` threads and ``smem`` bytes of dynamic shared memory one SM holds at
    once, by threads and shared memory (registers not counted: blocks beyond what they allow
    wait, find no work left and exit); at least 1."""
    return max(1, min(MAX_THREADS_PER_SM // block, smem_per_sm // (smem + SMEM_RESERVED_PER_BLOCK)))


_SMEM_ALLOWED: dict = {}
_SMEM_LOCK = threading.Lock()


def allow_smem(kernel, nbytes: int) -> None:
    """Let the kernel take nbytes of dynamic shared memory.  The limit only ever rises: a
    compiled kernel is shared by every engine of a GPU (blastp runs queries of different
    lengths at once on several host threads), and a launch in flight must keep what it
    asked for."""
    if nbytes <= DEFAULT_SMEM_LIMIT:
        return
    with _SMEM_LOCK:
        if _SMEM_ALLOWED.get(id(kernel), (0,))[0] < nbytes:
            kernel.max_dynamic_shared_size_bytes = nbytes
            _SMEM_ALLOWED[id(kernel)] = (nbytes, kernel)     # (held: its id stays its own)
