"""Which device runs the filters: a CUDA GPU through CuPy, or the CPU.

Importing this module never fails: CuPy is optional (``pip install
gpu-search[gpu]``).  Without it, or without a usable GPU, everything runs on
the CPU with the same results, and the user is told so once.
"""

from __future__ import annotations

import sys
import threading
from functools import lru_cache

from .errors import DeviceError

DEVICES = ("auto", "cpu", "gpu", "reference")

_probe: threading.Thread | None = None


def probe_in_background() -> None:
    """Start finding out whether a GPU is usable (CuPy's import and the CUDA driver's start,
    ~0.5 s) on a thread, while the caller imports its other modules and reads its inputs.
    :func:`gpu_status` waits for it; so does :func:`wait_for_probe` (before a fork: the
    thread is ours, and CUDA's context is not started by it)."""
    global _probe
    if _probe is None and _gpu_status.cache_info().currsize == 0:
        _probe = threading.Thread(target=_gpu_status, name="gpu-probe", daemon=True)
        _probe.start()


def wait_for_probe() -> None:
    """Return once no :func:`probe_in_background` thread runs."""
    if _probe is not None:
        _probe.join()


def gpu_status() -> tuple[bool, str, list[str]]:
    """(usable, reason, device names): can CuPy run kernels here?"""
    wait_for_probe()
    return _gpu_status()


@lru_cache(maxsize=1)
def _gpu_status() -> tuple[bool, str, list[str]]:
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
