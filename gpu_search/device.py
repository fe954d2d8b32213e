"""Which device runs the filters: a CUDA GPU through CuPy, or the CPU.

Importing this module never fails: CuPy is optional (``pip install
gpu-search[gpu]``).  Without it, or without a usable GPU, everything runs on
the CPU with the same results, and the user is told so once.  The GPU work
itself (kernels, grids, the database on a GPU) is :mod:`gpu_search.gpu`.
"""

from __future__ import annotations

import atexit
import ctypes
import importlib.util
import sys
import threading
from functools import lru_cache

from .errors import DeviceError, GpuSearchError

DEVICES = ("auto", "cpu", "gpu", "reference")


@lru_cache(maxsize=1)
def _import_cupy():
    """CuPy, imported once its kernel cache folder is writable: CuPy 14 cannot be imported
    where it cannot make that folder, and a failed import stays failed.  The folder is tried
    once a process (start_cuda, its helper thread and gpu_status all ask; a failure is not
    kept, so each asker raises it)."""
    from .gpu.loader import use_writable_kernel_cache

    use_writable_kernel_cache()
    import cupy

    return cupy


@lru_cache(maxsize=1)
def gpu_status() -> tuple[bool, str, list[str]]:
    """(usable, reason, device names): can CuPy run kernels here?"""
    try:
        cupy = _import_cupy()
    except GpuSearchError:    # no writable folder for compiled code: the run's error, not the GPU's
        raise
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


_cuda_start: threading.Thread | None = None


def start_cuda(device: str, gpus: list[int] | None = None, forks: bool = True) -> None:
    """Start CUDA on a helper thread while the main thread reads the inputs: the driver's
    start and each GPU's context take about 0.2 s on an H100 host, in the driver, without
    the GIL (bench/upload_probe.py).  ``wait_cuda`` joins it before the first use.

    ``forks``: the run forks worker processes (blastp's traceback workers, which never call
    CUDA): CuPy is imported here, on the calling thread, so that the helper holds no import
    lock at a fork.  Without (the HMMER programs) the helper imports it too (0.3 s), while
    the main thread reads the inputs and builds the models.  Failures are left to the real
    first use, which reports them (CuPy's import in ``gpu_status`` raising them again).
    """
    global _cuda_start
    if device not in ("auto", "gpu") or _cuda_start is not None or importlib.util.find_spec("cupy") is None:
        return
    if forks:
        try:
            _import_cupy()
        except GpuSearchError:     # no writable folder for compiled code: the run's error
            raise
        except Exception:          # reported by gpu_status when the run asks
            return

    def create():
        try:
            _driver_start()
            cupy = _import_cupy()
            ok, _, names = gpu_status()
            if not ok:
                return
            for d in gpus or range(len(names)):
                if d < len(names):
                    with cupy.cuda.Device(d):
                        cupy.cuda.runtime.free(0)      # creates the context
        except Exception:
            pass

    _cuda_start = threading.Thread(target=create, name="cuda-start", daemon=True)
    _cuda_start.start()
    atexit.register(_wait_at_exit)    # (an input error ends the command: not inside the driver)


def _driver_start() -> None:
    """The CUDA driver's start (``cuInit``) called through ctypes, which lets go of the
    interpreter's lock for the call: CuPy's first runtime call (``gpu_status``) holds it
    through the driver's start, 0.1 s on an H200 host (py-spy --gil), while the main thread
    reads the inputs.  Starting it twice is allowed; any failure is left to CuPy's call,
    which reports it."""
    try:
        ctypes.CDLL("libcuda.so.1").cuInit(0)
    except Exception:
        pass


def wait_cuda() -> None:
    """Wait for ``start_cuda``'s thread, if one was started."""
    if _cuda_start is not None:
        _cuda_start.join()


def _wait_at_exit() -> None:
    try:
        wait_cuda()
    except KeyboardInterrupt:          # a second Ctrl-C while leaving: already on the way out
        pass


_told = False


def note(msg: str, quiet: bool = False) -> None:
    """Print a one-line note on stderr (not for --quiet)."""
    if not quiet:
        print(f"gpu-search: {msg}", file=sys.stderr)


def resolve(device: str, quiet: bool = False) -> str:
    """Turn ``--device`` into the device actually used: 'gpu', 'cpu' or 'reference'.

    A GPU asked for (``auto``) and not usable is said on stderr even with ``--quiet``, which
    silences progress only: Galaxy and Nextflow run with --quiet, and a job that lost its
    GPU (no ``--nv`` or ``--gpus``) runs many times slower; its stderr says why."""
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
        note(f"no usable GPU ({reason}); searching on the CPU, same results")
        _told = True
    return "cpu"
