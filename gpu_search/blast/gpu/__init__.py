"""blastp on CUDA GPUs: cuBLASTP's word finder and ungapped extension (:mod:`.ungapped`,
``GpuUngapped``), the preliminary gapped stage (:mod:`.gapped`, ``GpuPrelim``) and the
traceback's alignments (:mod:`.traceback`, ``GpuTraceback``).
The database on the GPU, kernel loading and grid sizes are the GPU layer's
(:mod:`gpu_search.gpu`).
"""

import itertools

import numpy as np

from ...gpu import longest_first
from ...gpu import residue_chunks as _chunks
from . import gapped, traceback, ungapped
from .ungapped import (BLOCK, EXTENSIONS, HIT_SLOTS, KERNEL_FILE, LOW_COMPLEXITY_CELL, MAX_SMEM_CELLS, ORDER_FILE,
                       SCORES, SLOTS_PER_HIT_X2, STREAMED_QUERIES_PER_PASS, WINDOW_LANES, GpuUngapped, KernelChoice,
                       block_size, extension_for, kernel_choice, kernel_options, load_kernel, load_order_kernels,
                       matrix_in_smem_for, order_key_bits, resident_queries_per_pass, window_lanes_for)


def kernel_shapes():
    """(file, options) of every kernel shape a blastp run can load: the ungapped stage's and
    the order kernels' (:func:`.ungapped.kernel_shapes`), the gapped stage's
    (:func:`.gapped.kernel_shapes`), the traceback's (:func:`.traceback.kernel_shapes`).
    :mod:`gpu_search.gpu.compiled` builds them ahead of time."""
    return itertools.chain(ungapped.kernel_shapes(), gapped.kernel_shapes(), traceback.kernel_shapes())


def _longest_first(offsets: np.ndarray) -> np.ndarray:
    """The subjects of a chunk (its offsets) longest first, as GpuUngapped orders them."""
    return longest_first(np.diff(offsets))


__all__ = ["BLOCK", "EXTENSIONS", "HIT_SLOTS", "KERNEL_FILE", "LOW_COMPLEXITY_CELL", "MAX_SMEM_CELLS", "ORDER_FILE",
           "SCORES", "SLOTS_PER_HIT_X2", "STREAMED_QUERIES_PER_PASS", "WINDOW_LANES", "GpuUngapped", "KernelChoice",
           "_chunks", "_longest_first", "block_size", "extension_for", "kernel_choice", "kernel_options",
           "kernel_shapes", "load_kernel", "load_order_kernels", "matrix_in_smem_for", "order_key_bits",
           "resident_queries_per_pass", "window_lanes_for"]
