"""numba as this package imports it: a cache folder it can write, and numba's check for a BLAS
run with scipy's BLAS marked absent.

Where numba keeps compiled loops.  Our loops are compiled with ``cache=True``, and numba
needs a folder it can write to: NUMBA_CACHE_DIR when set, else ``__pycache__`` beside our
modules, else ``~/.cache/numba``; with none writable it fails ("no locator available").
A container often has none of them: a SIF made from the Docker image keeps its
NUMBA_CACHE_DIR=/opt/numba-cache but is read-only, ``docker run --read-only`` too, and
Apptainer's ``--no-home``/``--containall`` (Nextflow, Galaxy) may leave no writable home.
There the cache goes to a folder of this user's under the temporary directory
(:func:`private_cache_dir`), and the loops compiled into the image's read-only folder are
copied there first, so that they are still only read, not compiled again.

BLAS.  Where scipy is installed, numba imports scipy.linalg the first time it compiles or
loads code (numba.np.arraymath checks for a BLAS), which took 0.3 s of every blastp run on
the GPU host (py-spy, bench/probes/gil_profile.py).  Our compiled code uses no BLAS (no
np.dot, no np.linalg): numba's check runs here with scipy's BLAS module marked absent, and
finds none; the mark is taken back after, so scipy stays importable.

Copies between arrays.  ``a[i:j] = b`` in compiled code makes numba compile its shape check's
error message (string formatting: about 6 s of a process's first compilation, numba 0.68), in
every process that compiles such a loop: the first run on a fresh host, each of the traceback's
worker processes.  Our loops copy with :func:`copy_into` and :func:`copy_rows` instead.

Every module of ours that compiles with numba imports it from here (``from ._numba import
numba``), when it is first needed: a run that compiles nothing (hmmsearch on the CPU path
from a .gsdb) never imports numba, a quarter of a second of its start.
"""

import atexit
import importlib
import os
import shutil
import stat
import sys
import tempfile


def writable(folder: str) -> bool:
    """Whether a cache can be written in ``folder`` (made if missing): numba's own test."""
    try:
        os.makedirs(folder, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError:
        return False
    return True


def private_cache_dir(name: str) -> str:
    """``<temporary directory>/gpu-search-<uid>/<name>``, a cache folder only this user can write.

    A cache holds compiled code that is loaded and run, so a folder another user owns or can
    write to is never used: then a fresh folder of this process is, removed at exit.
    """
    uid = os.getuid()
    try:
        temp = tempfile.gettempdir()
    except OSError as exc:                       # every candidate read-only (docker run --read-only)
        from .errors import OutputError

        raise OutputError(f"no writable folder for compiled code ({exc}): give the container a writable "
                          f"temporary directory (docker run --read-only --tmpfs /tmp)") from None
    top = os.path.join(temp, f"gpu-search-{uid}")
    try:
        os.mkdir(top, 0o700)
    except FileExistsError:
        pass
    except OSError:
        top = None                                # no writable temporary directory: its error below
    if top is not None:
        st = os.lstat(top)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == uid and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            folder = os.path.join(top, name)
            if writable(folder):
                return folder
    folder = tempfile.mkdtemp(prefix=f"gpu-search-{name}-")
    atexit.register(shutil.rmtree, folder, True)
    return folder


def copy_missing(source: str, target: str) -> None:
    """Copy the files of ``source`` (a read-only cache) that ``target`` lacks, each complete or
    not at all (written beside, then renamed: runs starting together on one host)."""
    for folder, _, files in os.walk(source):
        dest = os.path.join(target, os.path.relpath(folder, source))
        for name in files:
            if os.path.exists(os.path.join(dest, name)):
                continue
            try:
                os.makedirs(dest, exist_ok=True)
                part = os.path.join(dest, f".{name}.{os.getpid()}")
                shutil.copyfile(os.path.join(folder, name), part)
                os.replace(part, os.path.join(dest, name))
            except OSError:
                return                            # (a full disk: numba compiles what is missing)


def choose_cache_dir() -> None:
    """Point numba at a writable cache folder where the one it would use is not writable."""
    configured = os.environ.get("NUMBA_CACHE_DIR")
    if configured:
        if writable(configured):
            return
        fallback = private_cache_dir("numba")
        copy_missing(configured, fallback)        # the loops compiled into a read-only image
    else:
        # numba's own choices: __pycache__ beside our modules, then its folder in the user's cache
        user_cache = os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "numba")
        if writable(os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__")) or writable(user_cache):
            return
        fallback = private_cache_dir("numba")
    # numba reads its settings from the environment, again before each compilation
    os.environ["NUMBA_CACHE_DIR"] = fallback
    if "numba.core.config" in sys.modules:
        sys.modules["numba.core.config"].CACHE_DIR = fallback


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


choose_cache_dir()
_check_blas_without_scipy()

import numba  # noqa: E402


@numba.njit(cache=True, nogil=True)
def copy_into(dst, at, src):
    """``dst[at:at + len(src)] = src`` for 1-d arrays, without numba's shape-check message."""
    for i in range(len(src)):
        dst[at + i] = src[i]


@numba.njit(cache=True, nogil=True)
def copy_rows(dst, at, src):
    """``dst[at:at + len(src)] = src`` for 2-d arrays of as many columns (src may have more)."""
    for i in range(src.shape[0]):
        for j in range(dst.shape[1]):
            dst[at + i, j] = src[i, j]


def not_compiled_here(dispatcher) -> bool:
    """Whether numba's cache holds nothing of this compiled function yet (its index file is
    missing): this host's first run, which compiles.  False where that cannot be told."""
    try:
        return not os.path.exists(dispatcher._cache._cache_file._index_path)
    except AttributeError:                    # (numba's internals changed: say nothing)
        return False


__all__ = ["numba", "copy_into", "copy_rows", "not_compiled_here"]
