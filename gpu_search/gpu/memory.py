"""Host <-> GPU copies, and what counts as the GPU running out of memory.

Both searches answer an out-of-memory error by cutting their work smaller
(hmmsearch halves its database batches, blastp halves a streamed chunk, its
hit buffers or a batch of queries); ``is_out_of_memory`` is the one test of
such an error.
"""

from __future__ import annotations

import numpy as np

CUDA_ERROR_MEMORY_ALLOCATION = 2     # cudaErrorMemoryAllocation


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether exc is the GPU running out of memory: CuPy's memory pool could not allocate
    (``cupy.cuda.memory.OutOfMemoryError``), or a CUDA runtime call failed with
    cudaErrorMemoryAllocation."""
    try:
        import cupy
    except Exception:              # (no CuPy: no CUDA error either)
        return False
    if isinstance(exc, cupy.cuda.memory.OutOfMemoryError):
        return True
    return (isinstance(exc, cupy.cuda.runtime.CUDARuntimeError)
            and getattr(exc, "status", None) == CUDA_ERROR_MEMORY_ALLOCATION)


def to_gpu(cp, host):
    """A copy of the host array on the current GPU, complete when this returns.

    For database-sized arrays: ``cupy.asarray`` stages an array through page-locked
    memory that it allocates first, 175-180 ms for the 273 MB benchmark database on an
    H100 host, where the plain copy takes 29 ms (bench/probes/upload_variants.py).
    """
    host = np.ascontiguousarray(host)
    dev = cp.empty(host.shape, dtype=host.dtype)
    dev.set(host)
    cp.cuda.get_current_stream().synchronize()     # (a pageable copy may still be in flight)
    return dev


def to_gpu_async(cp, host, keep: list):
    """A copy of a small host array on the current GPU, queued on the current stream.

    ``cupy.asarray`` allocates page-locked memory for every copy and waits for it: a
    quarter of a millisecond each, several times per model in an hmmsearch of many
    models.  Here the array is staged through a buffer from CuPy's page-locked pool and
    copied behind the stream's earlier work; ``keep`` holds the buffer, and the caller
    keeps ``keep`` until it has waited for the stream.
    """
    host = np.ascontiguousarray(host)
    staged = pinned_empty(host.size, host.dtype).reshape(host.shape)
    staged[...] = host
    dev = cp.empty(host.shape, dtype=host.dtype)
    dev.set(staged, stream=cp.cuda.get_current_stream())
    keep.append(staged)
    return dev


def pinned_empty(n: int, dtype) -> np.ndarray:
    """A page-locked host array of n items, from CuPy's pinned-memory pool (a caller asking
    for the same size every time gets the same blocks back): copies from the GPU into it
    run behind the kernels."""
    import cupy

    dtype = np.dtype(dtype)
    memory = cupy.cuda.alloc_pinned_memory(max(1, n * dtype.itemsize))
    return np.ndarray((n,), dtype=dtype, buffer=memory)    # (as cupyx.empty_pinned; it holds the memory)
