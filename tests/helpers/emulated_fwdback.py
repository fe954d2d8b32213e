"""fwdback.cu's kernels on the CPU (tests/helpers/warp_emulator.cpp), called as
:class:`gpu_search.hmmer.gpu.domaindef.CupyKernels` calls them on a GPU: numpy arrays for
CuPy's, the same arguments in the same order, so that the GPU's domain definition runs
whole in the CPU-only tests."""

from __future__ import annotations

import ctypes
from pathlib import Path

import emulator_build
import numpy as np

from gpu_search.hmmer.gpu.kernels import FWDBACK_FILE

# where each kernel's emulator entry takes (n_jobs, most): after the kernel's jobs argument
_JOBS_AT = {"forward_parser": 4, "backward_parser": 4, "null2_by_expectation": 4, "domain_regions": 1,
            "posterior_decoding": 1, "optimal_accuracy": 1, "oa_trace": 1, "region_traces": 4}


class EmulatedKernels:
    """The kernels of fwdback.cu, emulated; ``launch`` checks that each returned cleanly."""

    def __init__(self, directory: Path, seed: int = 1):
        path = emulator_build.build(Path(directory) / "fwdback.so", [f'-DFWDBACK_CU="{FWDBACK_FILE}"'])
        self.lib = ctypes.CDLL(str(path))
        self.lib.emulator_error.restype = ctypes.c_char_p
        self.seed = seed
        self.launched: list[str] = []

    def matrix_floats(self) -> int:
        return 1 << 22

    def to_device(self, a: np.ndarray) -> np.ndarray:
        return np.array(a, copy=True, order="C")

    def zeros(self, n: int, dtype) -> np.ndarray:
        return np.zeros(int(max(n, 1)), dtype=dtype)

    def to_host(self, a: np.ndarray) -> np.ndarray:
        return a.copy()

    @staticmethod
    def _c(a):
        if a is None:
            return None
        if isinstance(a, np.ndarray):
            assert a.flags.c_contiguous
            return a.ctypes.data_as(ctypes.c_void_p)
        return ctypes.c_int(int(a))

    def launch(self, name: str, n_jobs: int, most: int, args: tuple) -> None:
        self.seed += 1
        args = [self._c(a) for a in args]
        if name in ("sequence_null2_sum", "trace_clusters"):
            rc = getattr(self.lib, "emulate_" + name)(ctypes.c_uint(self.seed), *args)
        else:
            at = _JOBS_AT[name]
            rc = getattr(self.lib, "emulate_" + name)(ctypes.c_uint(self.seed), *args[:at], ctypes.c_int(n_jobs),
                                                      ctypes.c_int(most), *args[at:])
        assert rc == 0, f"{name}: {self.lib.emulator_error().decode()}"
        self.launched.append(name)
