"""numba as this package imports it: numba's check for a BLAS run with scipy's BLAS marked absent.

Where scipy is installed, numba imports scipy.linalg the first time it compiles or loads
code (numba.np.arraymath checks for a BLAS), which took 0.3 s of every blastp run on the GPU
host (py-spy, bench/probes/gil_profile.py).  Our compiled code uses no BLAS (no np.dot, no
np.linalg): numba's check runs here with scipy's BLAS module marked absent, and finds none;
the mark is taken back after, so scipy stays importable.

Every module of ours that compiles with numba imports it from here (``from ._numba import
numba``), when it is first needed: a run that compiles nothing (hmmsearch on the CPU path
from a .gsdb) never imports numba, a quarter of a second of its start.
"""

import importlib
import sys


def _check_blas_without_scipy() -> None:
    if "numba" in sys.modules or "scipy.linalg.cython_blas" in sys.modules:
        return
    sys.modules["scipy.linalg.cython_blas"] = None
    try:
        importlib.import_module("numba.np.arraymath")
    except ImportError:
        pass                               # (numba's own import error comes next, where it is needed)
    finally:
        if "scipy.linalg.cython_blas" in sys.modules and sys.modules["scipy.linalg.cython_blas"] is None:
            del sys.modules["scipy.linalg.cython_blas"]


_check_blas_without_scipy()

import numba  # noqa: E402

__all__ = ["numba"]
