"""Which device runs the filters: a CUDA GPU through CuPy, or the CPU.

Importing this module never fails: CuPy is optional (``pip install
gpu-search[gpu]``).  Without it, or without a usable GPU, everything runs on
the CPU with the same results, and the user is told so once.
"""

from __future__ import annotations

import sys
from functools import lru_cache

from .errors import DeviceError

DEVICES = ("auto", "cpu", "gpu", "reference")


def to_gpu(cp, host):
    """A copy of the host array on the current GPU, complete when this returns.

    For database-sized arrays: ``cupy.asarray`` stages an array through page-locked
    memory that it allocates first, 175-180 ms for the 273 MB benchmark database on an
    H100 host, where the plain copy takes 29 ms (bench/upload_variants.py).
    """
    import numpy as np

    host = np.ascontiguousarray(host)
    dev = cp.empty(host.shape, dtype=host.dtype)
    dev.set(host)
    cp.cuda.get_current_stream().synchronize()     # (a pageable copy may still be in flight)
    return dev


@lru_cache(maxsize=1)
def gpu_status() -> tuple[bool, str, list[str]]:
    """(usable, reason, device names): can CuPy run kernels here?"""
    try:
        import cupy
    except Exception as exc:  # ImportError, or a broken CUDA install
        return False, f"CuPy is not installed ({type(exc).__name__})", []
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return False, f"no CUDA driver or GPU ({' '.join(str(exc).split())[:120]})", []
    if n == 0:
        return False, "no CUDA GPU visible", []
    names = []
    for i in range(n):
        props = cupy.cuda.runtime.getDeviceProperties(i)
        name = props["name"]
        names.append(name.decode() if isinstance(name, bytes) else str(name))
    return True, f"{n} GPU(s)", names


_told = False


def note(msg: str, quiet: bool = False) -> None:
    """Print a one-line note on stderr (once per distinct run, not for --quiet)."""
    if not quiet:
        print(f"gpu-search: {msg}", file=sys.stderr)


def resolve(device: str, quiet: bool = False) -> str:
    """Turn ``--device`` into the device actually used: 'gpu', 'cpu' or 'reference'."""
    global _told
    if device not in DEVICES:
        raise DeviceError(f"unknown device {device!r} (choose from {', '.join(DEVICES)})")
    if device in ("cpu", "reference"):
        return device
    ok, reason, _ = gpu_status()
    if ok:
        return "gpu"
    if device == "gpu":
        raise DeviceError(f"--device gpu: no usable GPU: {reason}")
    if not _told:
        note(f"no usable GPU ({reason}); searching on the CPU, same results", quiet)
        _told = True
    return "cpu"
