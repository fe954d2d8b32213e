"""The one way a CUDA kernel file becomes callable functions: NVRTC, loaded through CuPy.

Every kernel of both searches (HMMER's filters.cu, bias.cu and fwdback.cu, blastp's
ungapped.cu, order.cu and gapped.cu) is compiled here at run time, with its
compile-time constants (``-D`` options: the sizes its loops unroll over), for
one device, once per process: the compiled functions are kept per (file,
options, functions, device), as CuPy's ``@memoize(for_each_device=True)``
keeps them per device.

The compile-time constants become ``#define`` lines before the source
(:func:`source_with_defines` says why), then ``#line 1 "<file>"`` so that
NVRTC's messages name the real file and line; the file's folder is on the
include path (filters.cu includes groups.cuh, every HMMER kernel jobs.cuh).  A shape compiled ahead of
time for the device's architecture (:mod:`.compiled`) is loaded from its cubin instead;
any other shape is compiled to a cubin once a host and kept in CuPy's cache folder
(:func:`_host_cubin`), so that a later run loads it without calling NVRTC.  A search that
knows the shapes it is about to ask for has them compiled side by side on a pool of threads
(:func:`prepare`): on a fresh host each is otherwise compiled in turn by the thread that
first launches it, the search waiting (2,000 models x 6.8 M residues on an H200 host: 13.6
thread-seconds of NVRTC in the filter threads, the first run 4 s slower than the next).

CuPy keeps what NVRTC made (ours and its own array operations') in a folder it must be able
to write, CUPY_CACHE_DIR or ``~/.cupy/kernel_cache``, and fails where it cannot (a container
without a writable home: Apptainer's ``--no-home``/``--containall``, ``docker run
--read-only``): there the folder is one of this user's under the temporary directory
(:func:`use_writable_kernel_cache`).
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

from . import compiled


def load_functions(path: Path, options: tuple, names: tuple, device_id: int) -> tuple:
    """The kernels ``names`` of the CUDA file ``path`` compiled with ``options`` for one device.

    Args:
        path: the .cu file.
        options: its compile-time constants, e.g. ``("-DG=8", "-DW=16")``.
        names: the ``extern "C"`` kernels to return, in this order.
        device_id: the CUDA device.

    Returns:
        a tuple of ``cupy.RawKernel``, one per name.
    """
    use_writable_kernel_cache()
    return _compiled(Path(path), tuple(options), tuple(names), int(device_id))


@lru_cache(maxsize=1)
def use_writable_kernel_cache() -> None:
    """Point CuPy's kernel cache at a folder it can write, where its own is not writable; once
    a process.  Best called before CuPy is first imported: CuPy 14 makes its cache folder when
    imported, fails to import where it cannot (measured on an H200 host: HOME unwritable, the
    GPU lost as "CuPy is not installed"), and a failed import leaves CuPy half-imported for
    good.  Where CuPy 14 is imported already, its cache is replaced; older CuPy reads
    CUPY_CACHE_DIR before each compilation."""
    configured = os.environ.get("CUPY_CACHE_DIR", os.path.expanduser("~/.cupy/kernel_cache"))
    try:
        os.makedirs(configured, exist_ok=True)
        tempfile.TemporaryFile(dir=configured).close()
        return
    except OSError:
        pass
    # (the folder's checks are the numba cache's; imported only here, where they are needed)
    from .._numba import private_cache_dir

    folder = private_cache_dir("cupy")
    os.environ["CUPY_CACHE_DIR"] = folder
    compiler = sys.modules.get("cupy.cuda.compiler")
    if compiler is not None and hasattr(compiler, "_set_kernel_cache_backend"):   # CuPy 14, imported already
        compiler._set_kernel_cache_backend(compiler._DiskKernelCacheBackend(folder))


def source_with_defines(text: str, options: tuple, filename: str) -> tuple[str, tuple]:
    """(the source with the ``-D`` options as ``#define`` lines before it, the other options).

    CuPy keys its disk cache of compiled kernels on the source and the options, and for
    each distinct set of options it first compiles an empty program (to learn NVRTC's
    version), once per process: with the sizes as ``-D`` options every kernel shape cost
    one NVRTC call on every run, cache warm or not (1.6 s of a 2,000-model hmmsearch).
    As ``#define`` lines they change only the source; the options stay the same.
    """
    defines, flags = [], []
    for option in options:
        if option.startswith("-D"):
            name, eq, value = option[2:].partition("=")
            defines.append(f"#define {name} {value if eq else 1}\n")     # -DNAME means NAME 1
        else:
            flags.append(option)
    return "".join(defines) + f'#line 1 "{filename}"\n' + text, tuple(flags)


@lru_cache(maxsize=None)
def _compiled(path: Path, options: tuple, names: tuple, device_id: int) -> tuple:
    import cupy as cp

    with cp.cuda.Device(device_id):
        arch = cp.cuda.Device(device_id).compute_capability
        # compiled ahead of time for this architecture (a container image's build), or by an
        # earlier run on this host: no NVRTC
        source, flags, ahead, here = _cubins(path, options, arch)
        if here is not None and not here.exists():
            _wait_if_prepared(here)
        for cubin in (ahead, here):
            if cubin is not None and cubin.exists():
                try:
                    module = cp.RawModule(path=str(cubin))
                    return tuple(module.get_function(name) for name in names)
                except cp.cuda.driver.CUDADriverError:
                    pass           # a cubin this driver cannot load: compiled again below
        module = None
        if here is not None:
            try:
                _compile_to(here, source, flags, path, arch)
                module = cp.RawModule(path=str(here))
            except Exception:
                module = None       # NVRTC's error, or no room to save: CuPy compiles it and says why
        if module is None:
            module = cp.RawModule(code=source, options=(*flags, f"-I{path.parent}"))
        return tuple(module.get_function(name) for name in names)


def _cubins(path: Path, options: tuple, arch: str) -> tuple:
    """(source, NVRTC's flags, the ahead-of-time cubin or None, this host's cubin or None) of
    a kernel shape for an architecture."""
    source, flags = source_with_defines(path.read_text(), tuple(options), path.name)
    flags = (compiled.STD, *flags)
    ahead = compiled.cubin_path(source, flags, path.parent, arch) if compiled.FOLDER.is_dir() else None
    return source, flags, ahead, _host_cubin(source, flags, path.parent, arch)


def _compile_to(here: Path, source: str, flags: tuple, path: Path, arch: str) -> None:
    """NVRTC's cubin of a shape saved as ``here``, whole or not at all (other threads and runs
    read it)."""
    data = compiled.compile_cubin(source, flags, path.parent, arch, path.name)
    tmp = here.with_name(f"{here.name}.tmp{os.getpid()}.{threading.get_ident()}")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, here)
    finally:
        tmp.unlink(missing_ok=True)


# the shapes being compiled ahead of their first launch (:func:`prepare`): host cubin -> Future
_building: dict[Path, Future] = {}
_building_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def _wait_if_prepared(here: Path) -> None:
    """Where :func:`prepare` is compiling the shape of cubin ``here``, wait for it.  One still
    queued is taken off the queue: the caller, about to launch it, compiles it at once
    instead of waiting behind the others."""
    with _building_lock:
        future = _building.get(here)
    if future is not None and not future.cancel():
        try:
            future.result()
        except Exception:          # (NVRTC's error: the caller compiles again and reports it)
            pass


def prepare(shapes, device_id: int, threads: int | None = None) -> list[Future | None]:
    """Compile, on a pool of ``threads`` threads (by default the cores this process may run
    on; the pool is made by the first call, once a process), the kernel shapes ``shapes``
    ((.cu file, options) as :func:`load_functions` takes them) that have no cubin yet for the
    device's architecture, into this host's cache, in the order given: a search's launches
    then find them compiled, or wait for the one being compiled.  Returns, for each shape,
    the future of its compilation, or None where none was queued (a cubin on disk, a
    compilation already queued or under way); the caller cancels those still queued when
    its search ends (its last launches are done)."""
    import cupy as cp

    global _pool
    use_writable_kernel_cache()
    arch = cp.cuda.Device(device_id).compute_capability
    out, queued = [], []
    with _building_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=max(1, threads or _usable_cores()), thread_name_prefix="nvrtc")
        for path, options in shapes:
            path = Path(path)
            source, flags, ahead, here = _cubins(path, options, arch)
            if here is None or here in _building or here.exists() or (ahead is not None and ahead.exists()):
                out.append(None)
                continue
            future = _pool.submit(_compile_ahead, source, flags, path, arch, here)
            _building[here] = future
            queued.append((here, future))
            out.append(future)
    # (outside the lock: a future done already runs its callback here, and _forget takes the lock)
    for here, future in queued:
        future.add_done_callback(lambda f, here=here: _forget(here, f))
    return out


def _usable_cores() -> int:
    """The cores this process may run on (a batch job's share of a node), else all of them."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _compile_ahead(source: str, flags: tuple, path: Path, arch: str, here: Path) -> None:
    if not here.exists():          # (compiled meanwhile by another run on this host)
        _compile_to(here, source, flags, path, arch)


def _forget(here: Path, future: Future) -> None:
    """A prepared shape's future is dropped once done: its cubin is on disk (or, cancelled or
    failed, the launching thread compiles it)."""
    with _building_lock:
        if _building.get(here) is future:
            del _building[here]


def _host_cubin(source: str, flags: tuple, folder: Path, arch: str) -> Path | None:
    """Where this host keeps a kernel shape NVRTC compiled for it: a folder of CuPy's kernel
    cache, each cubin named as the ahead-of-time ones are, plus NVRTC's version (a new NVRTC
    compiles again).  None where NVRTC's bindings or the folder are missing.

    A cubin loaded directly costs no NVRTC call at all, where CuPy's own cache, reached through
    ``RawModule(code=...)``, first compiles an empty program once a process for each set of
    options (to learn NVRTC's version): 0.1-0.4 s before a run's first kernel on an H200.
    """
    version = _nvrtc_version()
    if version is None:
        return None
    top = Path(os.environ.get("CUPY_CACHE_DIR", os.path.expanduser("~/.cupy/kernel_cache"))) / "gpu-search"
    try:
        top.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return top / f"{compiled.key(source, flags, folder, arch)}.sm_{arch}.nvrtc{version[0]}.{version[1]}.cubin"


def _nvrtc_version() -> tuple | None:
    try:
        from cupy_backends.cuda.libs import nvrtc

        return tuple(nvrtc.getVersion())
    except Exception:           # (CuPy without NVRTC: its own compile path reports that)
        return None


def clear_cache() -> None:
    """Forget every compiled kernel (a benchmark comparing edited copies of a kernel file)."""
    _compiled.cache_clear()
    use_writable_kernel_cache.cache_clear()
