"""The filter kernels, compiled for a geometry: ``filters.cu`` (MSV, Viterbi filter), and
the same for every model: ``bias.cu`` (the bias filter) and ``fwdback.cu`` (HMMER's exact
Forward parser), through the GPU layer's loader.

Their compile-time constants: G lanes a group, W words a lane, whether the
profile sits in shared memory, SEQS sequences a Viterbi group, and the
geometry's switches (REDUX, TRANS_REGS: :attr:`.geometry.Geometry.defines`).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from ...gpu import load_functions

KERNEL_FILE = Path(__file__).with_name("filters.cu")
BIAS_FILE = Path(__file__).with_name("bias.cu")
FWDBACK_FILE = Path(__file__).with_name("fwdback.cu")


def kernel_options(G: int, W: int, profile_in_smem: bool, seqs: int = 1, defines: tuple = ()) -> tuple:
    """filters.cu's compile-time constants (NVRTC's options; the CPU emulator of the tests
    builds the kernels with the same)."""
    return (f"-DG={G}", f"-DW={W}", f"-DPROFILE_IN_SMEM={int(profile_in_smem)}", f"-DSEQS={seqs}", *defines)


# each kernel's switch in filters.cu: a compilation holds only the kernel it is for
KERNEL_SWITCH = {"msv_filter": "-DKERNEL_MSV", "viterbi_filter": "-DKERNEL_VITERBI",
                 "viterbi_filter16": "-DKERNEL_VITERBI16"}


def filter_options(name: str, G: int, W: int, profile_in_smem: bool, seqs: int = 1, defines: tuple = ()) -> tuple:
    """The options filters.cu's kernel ``name`` is compiled with, alone."""
    return (*kernel_options(G, W, profile_in_smem, seqs, defines), KERNEL_SWITCH[name])


def load_kernel(name: str, G: int, W: int, profile_in_smem: bool, device_id: int, seqs: int = 1,
                defines: tuple = ()):
    """filters.cu's kernel ``name`` (msv_filter, viterbi_filter or viterbi_filter16) for (G, W)
    on one device, compiled alone.

    seqs: sequences per group of the Viterbi filter (filters.cu)."""
    return load_functions(KERNEL_FILE, filter_options(name, G, W, profile_in_smem, seqs, defines), (name,),
                          device_id)[0]


def load_bias_kernel(device_id: int):
    """bias.cu's bias_filter on one device (one shape for every model)."""
    return load_functions(BIAS_FILE, (), ("bias_filter",), device_id)[0]


# fwdback.cu compiled with forward_parser alone, as the filter cascade's Forward stage takes it
FORWARD_PARSER_OPTIONS = ("-DFORWARD_PARSER_ONLY",)


def load_forward_parser(device_id: int):
    """fwdback.cu's forward_parser (HMMER's exact Forward score) on one device (one shape for
    every model), compiled alone."""
    return load_functions(FWDBACK_FILE, FORWARD_PARSER_OPTIONS, ("forward_parser",), device_id)[0]


# the shared memory a block may opt in to, by compute capability (CUDA's
# sharedMemPerBlockOptin): A100 80, A10/L4-class 86 and 89, H100 and H200 90
SMEM_OPTIN = {"80": 166_912, "86": 101_376, "89": 101_376, "90": 232_448}
SM90_SMEM_OPTIN = SMEM_OPTIN["90"]
MAX_M_AHEAD = 3_000


def in_smem(nbytes: int, smem_optin: int) -> bool:
    """Whether a profile of nbytes goes in shared memory (beside the block's reserved 1 KiB)."""
    return nbytes <= smem_optin - 1024


def kernel_shapes(max_M: int = MAX_M_AHEAD, smem_optin: int = SM90_SMEM_OPTIN):
    """(file, options) of every kernel shape an hmmsearch of models up to max_M asks for on a
    GPU of that shared memory (:mod:`gpu_search.gpu.compiled` builds them ahead of time):
    each model size's MSV, Viterbi filter (16-bit, and int32 for rescoring and models with no
    16-bit offset) geometry, the bias filter and the Forward parser.  A batch's launch
    takes the geometry of one of its models (launch_groups), so no other shape occurs."""
    yield from FILTER_SHAPES
    yield from FINISHING_SHAPES
    for M in range(1, max_M + 1):
        yield from model_shapes(M, smem_optin)


# the shapes every model's filters use: the bias filter and the Forward parser
FILTER_SHAPES = ((BIAS_FILE, ()), (FWDBACK_FILE, FORWARD_PARSER_OPTIONS))
# HMMER's domain definition on the GPU (fwdback.cu whole: gpu_search.hmmer.gpu.domaindef)
FINISHING_SHAPES = ((FWDBACK_FILE, ()),)


@lru_cache(maxsize=None)
def model_shapes(M: int, smem_optin: int) -> tuple:
    """(file, options) of the filter kernels a model of M nodes is launched with, in this
    order: MSV, the 16-bit Viterbi filter, and the int32 one, which only models without a
    16-bit offset and the sequences the 16-bit filter hands back need."""
    from .geometry import msv_geometry, viterbi_geometry
    from .packing import profile_nbytes

    geo = msv_geometry(M)
    shapes = [(KERNEL_FILE, filter_options("msv_filter", geo.G, geo.W,
                                           in_smem(profile_nbytes("msv", geo), smem_optin)))]
    for geo in (viterbi_geometry(M), viterbi_geometry(M, cells=1)):
        name = "viterbi_filter16" if geo.cells_per_word == 2 else "viterbi_filter"
        shapes.append((KERNEL_FILE, filter_options(name, geo.G, geo.W,
                                                   in_smem(profile_nbytes("viterbi", geo), smem_optin),
                                                   geo.seqs, geo.defines)))
    return tuple(shapes)
