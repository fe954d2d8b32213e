"""blast/gpu/traceback.cu built for the CPU with a C++ compiler, and run as the kernel's threads would.

traceback.cu's per-job code compiles as plain C++ when ``__CUDACC__`` is not defined;
``align_ex_host`` then runs every job in turn.  ``HostTraceback`` is a ``GpuTraceback``
whose launch calls it instead of the GPU: the CPU-only tests check the kernel's code, and
the launcher's layout of jobs and results, against traceback.py without a GPU.
``EmulatedTraceback`` runs the CUDA kernels themselves (the warp kernel too) on the CPU
through tests/helpers/warp_emulator.cpp.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import emulator_build
import numpy as np

from gpu_search.blast.gpu import traceback as gpu_tb

CXX = shutil.which("g++") or shutil.which("c++")
_P = ctypes.c_void_p


def build(directory: Path):
    """traceback.cu as a shared library (ctypes)."""
    out = Path(directory) / "traceback_host.so"
    if not out.exists():
        subprocess.run([CXX, "-O2", "-std=c++17", "-shared", "-fPIC", "-x", "c++", "-o", str(out),
                        str(gpu_tb.KERNEL_FILE)], check=True, capture_output=True)
    lib = ctypes.CDLL(str(out))
    lib.align_ex_host.restype = None
    return lib


def _ptr(a: np.ndarray):
    return a.ctypes.data_as(_P)


class HostTraceback(gpu_tb.GpuTraceback):
    """GpuTraceback with the kernel run by the host build over the whole database
    (``residues``, NCBIstdaa, as the worker processes address it)."""

    class _Resident:
        streamed = False

    def __init__(self, lib, residues, tb_cap: int = gpu_tb.TB_CAP):
        super().__init__(self._Resident(), tb_cap)
        self.lib = lib
        self.residues = np.ascontiguousarray(residues, np.uint8)

    def _launch(self, plans, query_codes, matrix_scores, gap_open, gap_extend):
        lay, args = self._arguments(plans, query_codes, matrix_scores, gap_open, gap_extend)
        self.lib.align_ex_host(*args)
        return self._results(lay, args)

    def _arguments(self, plans, query_codes, matrix_scores, gap_open, gap_extend):
        """The layout of ``plans`` and the kernels' arguments (scratch full of garbage, as a
        GPU's memory is: a kernel that read back what it did not write would fail the tests)."""
        lay = gpu_tb.layout(plans, query_codes, self.tb_cap)
        jobs = np.ascontiguousarray(lay.jobs, np.int64)
        arrays = (jobs, np.ascontiguousarray(lay.queries, np.uint8), self.residues,
                  np.ascontiguousarray(matrix_scores, np.int32))
        scratch = (np.full(max(1, lay.n_ints), 0x5A5A5A5A, np.int32), np.full(max(1, lay.n_tb), 0x5A, np.uint8),
                   np.zeros(max(1, lay.n_steps), np.uint8), np.zeros(len(jobs) * gpu_tb.OUT_FIELDS, np.int32))
        self._kept = arrays + scratch
        pointers = [_ptr(a) for a in arrays]
        args = (pointers[0], ctypes.c_int(len(jobs)), *pointers[1:], ctypes.c_int(gap_open),
                ctypes.c_int(gap_extend), *[_ptr(a) for a in scratch])
        return lay, args

    def _results(self, lay, args):
        steps, out = self._kept[-2], self._kept[-1]
        return out.reshape(-1, gpu_tb.OUT_FIELDS), steps, lay.step_at


def build_emulated(directory: Path):
    """traceback.cu's CUDA kernels in the warp emulator, as a shared library (ctypes)."""
    out = emulator_build.build(Path(directory) / "traceback_emulated.so",
                               [f'-DTRACEBACK_CU="{gpu_tb.KERNEL_FILE}"'], optimize="-O2")
    lib = ctypes.CDLL(str(out))
    lib.emulator_error.restype = ctypes.c_char_p
    return lib


class EmulatedTraceback(HostTraceback):
    """GpuTraceback with a CUDA kernel of traceback.cu (``kernel``: "warp" or "thread") run by
    the warp emulator."""

    def __init__(self, lib, residues, tb_cap: int = gpu_tb.TB_CAP, kernel: str = "warp", seed: int = 1):
        super().__init__(lib, residues, tb_cap)
        self.kernel, self.seed = kernel, seed

    def _launch(self, plans, query_codes, matrix_scores, gap_open, gap_extend):
        lay, args = self._arguments(plans, query_codes, matrix_scores, gap_open, gap_extend)
        failed = self.lib.emulate_traceback(ctypes.c_int(0 if self.kernel == "warp" else 1),
                                            ctypes.c_uint(self.seed), *args)
        assert not failed, self.lib.emulator_error().decode()
        return self._results(lay, args)
