"""The filter kernels, compiled for a geometry: ``filters.cu`` (MSV, Viterbi filter),
``forward.cu`` (the float Forward prefilter) and ``bias.cu`` (the bias filter, the same
for every model), through the GPU layer's loader.

Their compile-time constants: G lanes a group, W words a lane, whether the
profile sits in shared memory, SEQS sequences a Viterbi group, and the
geometry's switches (REDUX, TRANS_REGS: :attr:`.geometry.Geometry.defines`).
"""

from __future__ import annotations

from pathlib import Path

from ...gpu import load_functions

KERNEL_FILE = Path(__file__).with_name("filters.cu")
FORWARD_FILE = Path(__file__).with_name("forward.cu")
BIAS_FILE = Path(__file__).with_name("bias.cu")


def kernel_options(G: int, W: int, profile_in_smem: bool, seqs: int = 1, defines: tuple = ()) -> tuple:
    """filters.cu's compile-time constants (NVRTC's options; the CPU emulator of the tests
    builds the kernels with the same)."""
    return (f"-DG={G}", f"-DW={W}", f"-DPROFILE_IN_SMEM={int(profile_in_smem)}", f"-DSEQS={seqs}", *defines)


# each kernel's switch in filters.cu: a compilation holds only the kernel it is for
KERNEL_SWITCH = {"msv_filter": "-DKERNEL_MSV", "viterbi_filter": "-DKERNEL_VITERBI",
                 "viterbi_filter16": "-DKERNEL_VITERBI16"}


def load_kernel(name: str, G: int, W: int, profile_in_smem: bool, device_id: int, seqs: int = 1,
                defines: tuple = ()):
    """filters.cu's kernel ``name`` (msv_filter, viterbi_filter or viterbi_filter16) for (G, W)
    on one device, compiled alone.

    seqs: sequences per group of the Viterbi filter (filters.cu)."""
    options = (*kernel_options(G, W, profile_in_smem, seqs, defines), KERNEL_SWITCH[name])
    return load_functions(KERNEL_FILE, options, (name,), device_id)[0]


def load_forward_kernel(G: int, W: int, profile_in_smem: bool, device_id: int):
    """forward.cu's forward_filter for (G, W) on one device."""
    return load_functions(FORWARD_FILE, (f"-DG={G}", f"-DW={W}", f"-DPROFILE_IN_SMEM={int(profile_in_smem)}"),
                          ("forward_filter",), device_id)[0]


def load_bias_kernel(device_id: int):
    """bias.cu's bias_filter on one device (one shape for every model)."""
    return load_functions(BIAS_FILE, (), ("bias_filter",), device_id)[0]
