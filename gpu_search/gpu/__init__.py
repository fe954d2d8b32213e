"""The GPU layer both searches stand on (hmmsearch's filters, blastp's word finder and
gapped stage): kernels compiled at run time (:mod:`.loader`), grids sized to the GPU
(:mod:`.occupancy`), copies and out-of-memory errors (:mod:`.memory`), the database
on a GPU (:mod:`.database`) and the ``--gpus`` check (:mod:`.devices`).

Importing it never imports CuPy; each function does, when called.
"""

from .database import Chunk, DeviceDatabase, longest_first, residue_chunks
from .devices import check_gpus
from .loader import load_functions
from .memory import is_out_of_memory, pinned_empty, to_gpu, to_gpu_async
from .occupancy import SmProps, allow_smem, blocks_per_sm, device_props

__all__ = ["Chunk", "DeviceDatabase", "SmProps", "allow_smem", "blocks_per_sm", "check_gpus", "device_props",
           "is_out_of_memory", "load_functions", "longest_first", "pinned_empty", "residue_chunks", "to_gpu",
           "to_gpu_async"]
