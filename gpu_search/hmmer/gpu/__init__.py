"""HMMER's MSV, bias and Viterbi filters and its Forward parser on CUDA GPUs.

:mod:`.backend` (``GpuBackend``: the database on the GPUs, the kernels
launched for batches of models), :mod:`.geometry` (which kernel variant a model gets),
:mod:`.packing` (profiles into the kernels' layouts, outputs back into
HMMER's states), :mod:`.kernels` (filters.cu, bias.cu and fwdback.cu compiled).
"""

from .backend import GpuBackend
from .geometry import BLOCK, VITERBI_BLOCK, Geometry, launch_groups, msv_geometry, viterbi_block, viterbi_geometry
from .kernels import (BIAS_FILE, FWDBACK_FILE, KERNEL_FILE, kernel_options, load_bias_kernel, load_forward_parser,
                      load_kernel)
from .packing import (JOB_INTS, KP, OVERFLOW_W, PAD_EMIT_W, PAD_TRANS, RESCORE_W, bias_params, fwdback_params,
                      job_table, length_table, msv_params, msv_states, pack_fwdback_profiles, pack_msv_profile,
                      pack_viterbi_profile, viterbi16_again, viterbi16_bounds, viterbi_params, viterbi_states)

__all__ = ["BIAS_FILE", "BLOCK", "FWDBACK_FILE", "GpuBackend", "Geometry", "JOB_INTS", "KERNEL_FILE", "KP",
           "OVERFLOW_W", "PAD_EMIT_W", "PAD_TRANS", "RESCORE_W", "VITERBI_BLOCK", "bias_params", "fwdback_params",
           "job_table", "kernel_options", "launch_groups", "length_table", "load_bias_kernel", "load_forward_parser",
           "load_kernel", "msv_geometry", "msv_params", "msv_states", "pack_fwdback_profiles", "pack_msv_profile",
           "pack_viterbi_profile", "viterbi16_again", "viterbi16_bounds", "viterbi_block", "viterbi_geometry",
           "viterbi_params", "viterbi_states"]
