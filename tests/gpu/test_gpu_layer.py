"""The GPU layer both searches stand on (gpu_search.gpu), where it runs without a GPU: the
kernel loader (with a stand-in CuPy), the shared-memory limit, blocks per SM, the database's
chunks and their order, the ``--gpus`` check.  The layer on a GPU is exercised by
test_gpu.py and test_blast_gpu.py."""

from __future__ import annotations

import os
import re
import sys
import tempfile
import types
from pathlib import Path

import numpy as np
import pytest

from gpu_search import gpu
from gpu_search.errors import DeviceError


def test_dynamic_shared_memory_limit_only_rises():
    """Engines on one GPU share a compiled kernel and run queries of different lengths at once:
    its dynamic shared-memory limit must never drop below what a launch in flight asked for."""

    class Kernel:
        max_dynamic_shared_size_bytes = 0

    k = Kernel()
    for nbytes, expected in ((16 * 1024, 0), (128 * 1024, 128 * 1024), (64 * 1024, 128 * 1024),
                             (132 * 1024, 132 * 1024)):
        gpu.allow_smem(k, nbytes)
        assert k.max_dynamic_shared_size_bytes == expected


def test_blocks_per_sm():
    """By threads (2,048 an SM) or by shared memory (1 KiB reserved a block), at least one."""
    smem_per_sm = 228 * 1024
    assert gpu.blocks_per_sm(256, 0, smem_per_sm) == 8
    assert gpu.blocks_per_sm(128, 0, smem_per_sm) == 16
    assert gpu.blocks_per_sm(128, 64 * 1024, smem_per_sm) == 3
    assert gpu.blocks_per_sm(128, 227 * 1024, smem_per_sm) == 1
    assert gpu.blocks_per_sm(512, 300 * 1024, smem_per_sm) == 1


def test_residue_chunks_and_longest_first():
    lengths = np.array([5, 1, 7, 3, 3, 9, 2])
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    chunks = gpu.residue_chunks(offsets, 10)
    assert chunks == [(0, 2), (2, 4), (4, 5), (5, 6), (6, 7)]
    assert all(offsets[b] - offsets[a] <= 10 or b - a == 1 for a, b in chunks)
    assert gpu.residue_chunks(offsets, 4) == [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (6, 7)]
    order = gpu.longest_first(lengths)
    assert order.dtype == np.int32 and order.tolist() == [5, 2, 0, 3, 4, 6, 1]     # ties keep their order


def test_streamed_database_chunks_and_halves():
    """A streamed DeviceDatabase's chunks (nothing uploaded), each longest first; a database
    order given for a chunk holding the whole database; halving by sequences."""
    rng = np.random.default_rng(1)
    lengths = rng.integers(1, 50, 40)
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    residues = rng.integers(0, 25, int(offsets[-1])).astype(np.uint8)
    db = gpu.DeviceDatabase(residues, offsets, 0, 200, resident=False, first=3, last=37)
    assert [c.first for c in db.chunks][0] == 3 and sum(c.n for c in db.chunks) == 34
    assert not any(c.resident for c in db.chunks)
    for c in db.chunks:
        assert int(offsets[c.first + c.n] - offsets[c.first]) <= 200 or c.n == 1
        assert np.array_equal(c.host_order, gpu.longest_first(lengths[c.first:c.first + c.n]))
        assert np.array_equal(db.lengths(c), lengths[c.first:c.first + c.n])
    n_chunks, c = len(db.chunks), db.chunks[1]
    db.halve(1)
    assert len(db.chunks) == n_chunks + 1
    halves = db.chunks[1:3]
    assert [(h.first, h.n) for h in halves] == [(c.first, c.n // 2), (c.first + c.n // 2, c.n - c.n // 2)]
    assert all(np.array_equal(h.host_order, gpu.longest_first(lengths[h.first:h.first + h.n])) for h in halves)
    given = np.arange(40, dtype=np.int32)
    whole = gpu.DeviceDatabase(residues, offsets, 0, 10 ** 6, resident=False, length_order=given)
    assert len(whole.chunks) == 1 and whole.chunks[0].host_order is not None
    assert np.array_equal(whole.chunks[0].host_order, given)
    unordered = gpu.DeviceDatabase(residues, offsets, 0, 200, resident=False, with_order=False)
    assert all(c.host_order is None for c in unordered.chunks)


@pytest.mark.parametrize("gpus,visible,expected", [(None, 2, [0, 1]), ([1], 2, [1]), ([0, 1], 2, [0, 1]),
                                                   ([2], 2, "--gpus 2: 2 GPU(s) visible"),
                                                   ([0, 3], 2, "--gpus 0,3: 2 GPU(s) visible"),
                                                   ([], 2, "--gpus : 2 GPU(s) visible"),
                                                   (None, 0, "--gpus : 0 GPU(s) visible")])
def test_check_gpus(gpus, visible, expected, monkeypatch):
    from gpu_search import device

    monkeypatch.setattr(device, "gpu_status", lambda: (visible > 0, "", ["H100"] * visible))
    if isinstance(expected, str):
        with pytest.raises(DeviceError, match=f"^{re.escape(expected)}$"):
            gpu.check_gpus(gpus)
    else:
        assert gpu.check_gpus(gpus) == expected


def test_loader_compiles_once_per_device(tmp_path, monkeypatch):
    """One RawModule per (file, options, functions, device); the -D options become #define
    lines before #line 1 (so that NVRTC names the real file and line); the file's folder is on
    the include path."""
    compiled = []
    loaded = []

    class RawModule:
        def __init__(self, code=None, options=(), path=None):
            if path is not None:         # a cubin compiled ahead of time
                loaded.append((path, current[-1]))
                return
            compiled.append((code, options, current[-1]))

        def get_function(self, name):
            return (name, len(compiled))

    current = [0]

    class Device:
        compute_capability = "90"

        def __init__(self, device_id):
            self.device_id = device_id

        def __enter__(self):
            current.append(self.device_id)

        def __exit__(self, *exc):
            current.pop()

    cupy = types.SimpleNamespace(RawModule=RawModule, cuda=types.SimpleNamespace(Device=Device))
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setenv("CUPY_CACHE_DIR", str(tmp_path / "kernel_cache"))
    gpu.loader.clear_cache()
    monkeypatch.setattr(gpu.loader, "_nvrtc_version", lambda: None)     # no NVRTC: CuPy compiles
    kernel = tmp_path / "k.cu"
    kernel.write_text('extern "C" __global__ void a() {}\n')
    try:
        assert gpu.load_functions(kernel, ("-DX=1",), ("a", "b"), 0) == (("a", 1), ("b", 1))
        assert gpu.load_functions(kernel, ("-DX=1",), ("a", "b"), 0) == (("a", 1), ("b", 1))
        assert gpu.load_functions(kernel, ("-DX=1",), ("a", "b"), 1) == (("a", 2), ("b", 2))
        assert gpu.load_functions(kernel, ("-DX=2",), ("a", "b"), 1) == (("a", 3), ("b", 3))
    finally:
        gpu.loader.clear_cache()
    code, options, device_id = compiled[0]
    # the constants as #define lines, so that the options are the same for every shape
    assert code == '#define X 1\n#line 1 "k.cu"\n' + kernel.read_text()
    assert options == ("-std=c++17", f"-I{tmp_path}") and device_id == 0
    assert compiled[2][0].startswith("#define X 2\n") and compiled[2][1] == options
    assert [c[2] for c in compiled] == [0, 1, 1] and loaded == []
    # a cubin compiled ahead of time for the device's architecture is loaded, not compiled
    monkeypatch.setattr(gpu.compiled, "FOLDER", tmp_path / "compiled")
    (tmp_path / "compiled").mkdir()
    source, flags = gpu.loader.source_with_defines(kernel.read_text(), ("-DX=3",), kernel.name)
    cubin = gpu.compiled.cubin_path(source, (gpu.compiled.STD, *flags), tmp_path, "90")
    cubin.write_bytes(b"stand-in")
    try:
        gpu.load_functions(kernel, ("-DX=3",), ("a",), 0)
        gpu.load_functions(kernel, ("-DX=4",), ("a",), 0)
    finally:
        gpu.loader.clear_cache()
    assert loaded == [(str(cubin), 0)] and compiled[-1][0].startswith("#define X 4\n")


def stand_in_cupy(loaded: list, compiled_by_cupy: list):
    """A CuPy of one device of compute capability 9.0 whose modules note what they load: a
    cubin's bytes in ``loaded``, source given to CuPy's own compile path in ``compiled_by_cupy``."""
    class RawModule:
        def __init__(self, code=None, options=(), path=None):
            (loaded.append(Path(path).read_bytes()) if path is not None else compiled_by_cupy.append(code))

        def get_function(self, name):
            return name

    class Device:
        compute_capability = "90"

        def __init__(self, device_id):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            pass

    return types.SimpleNamespace(RawModule=RawModule, cuda=types.SimpleNamespace(Device=Device))


def test_loader_keeps_what_nvrtc_made_for_later_runs(tmp_path, monkeypatch):
    """A shape without an ahead-of-time cubin is compiled by NVRTC to a cubin once a host, saved
    in CuPy's cache folder under a name holding NVRTC's version, and loaded from there by later
    runs (a fresh process: the loader's memory cleared) without NVRTC; a newer NVRTC compiles
    it again; where NVRTC fails, CuPy's own compile path runs (and reports the error)."""
    nvrtc_calls, loaded, cupy_compiled = [], [], []

    def compile_cubin(source, flags, folder, arch, name):
        nvrtc_calls.append((source, arch))
        if "broken" in source:
            raise RuntimeError("NVRTC: error")
        return b"cubin of " + source.encode()

    monkeypatch.setitem(sys.modules, "cupy", stand_in_cupy(loaded, cupy_compiled))
    monkeypatch.setenv("CUPY_CACHE_DIR", str(tmp_path / "kernel_cache"))
    monkeypatch.setattr(gpu.compiled, "FOLDER", tmp_path / "none")
    monkeypatch.setattr(gpu.compiled, "compile_cubin", compile_cubin)
    version = [(12, 4)]
    kernel = tmp_path / "k.cu"
    kernel.write_text('extern "C" __global__ void a() {}\n')

    def fresh_run(options):
        gpu.loader.clear_cache()
        monkeypatch.setattr(gpu.loader, "_nvrtc_version", lambda: version[0])
        try:
            return gpu.load_functions(kernel, options, ("a",), 0)
        finally:
            gpu.loader.clear_cache()

    assert fresh_run(("-DX=1",)) == ("a",)
    assert len(nvrtc_calls) == 1 and loaded == [b"cubin of " + nvrtc_calls[0][0].encode()]
    saved = list((tmp_path / "kernel_cache" / "gpu-search").iterdir())
    assert [p.name.endswith(".sm_90.nvrtc12.4.cubin") for p in saved] == [True]
    fresh_run(("-DX=1",))                       # a later run: loaded, not compiled
    assert len(nvrtc_calls) == 1 and len(loaded) == 2 and loaded[1] == loaded[0]
    fresh_run(("-DX=2",))                       # another shape: compiled once
    assert len(nvrtc_calls) == 2 and len(saved) + 1 == len(list(saved[0].parent.iterdir()))
    version[0] = (12, 8)                        # a newer NVRTC: compiled again
    fresh_run(("-DX=1",))
    assert len(nvrtc_calls) == 3 and cupy_compiled == []
    kernel.write_text("broken\n")             # NVRTC fails: CuPy's compile path, nothing saved
    n_saved = len(list(saved[0].parent.iterdir()))
    fresh_run(("-DX=1",))
    assert len(cupy_compiled) == 1 and "broken" in cupy_compiled[0]
    assert len(list(saved[0].parent.iterdir())) == n_saved


def test_defines_as_nvcc_reads_them():
    """-DNAME=VALUE and -DNAME (1, as nvcc and NVRTC define it) become #define lines; other
    options stay options."""
    source, flags = gpu.loader.source_with_defines("body\n", ("-DG=8", "-DKERNEL_MSV", "-DE=", "-O3"), "f.cu")
    assert source == '#define G 8\n#define KERNEL_MSV 1\n#define E \n#line 1 "f.cu"\nbody\n'
    assert flags == ("-O3",)


def test_out_of_memory_is_typed():
    """CuPy's pool out of memory and cudaErrorMemoryAllocation count; other errors, and a
    message that merely mentions memory, do not."""
    cupy = pytest.importorskip("cupy")
    assert gpu.is_out_of_memory(cupy.cuda.memory.OutOfMemoryError(1 << 40, 0))
    assert gpu.is_out_of_memory(cupy.cuda.runtime.CUDARuntimeError(2))
    assert not gpu.is_out_of_memory(cupy.cuda.runtime.CUDARuntimeError(1))
    assert not gpu.is_out_of_memory(RuntimeError("out of memory"))


def test_kernel_cache_falls_back_where_cupy_cannot_write(tmp_path, monkeypatch):
    """CuPy's kernel cache folder not writable (no writable home in a container): CUPY_CACHE_DIR
    becomes <TMPDIR>/gpu-search-<uid>/cupy, and CuPy 14's cache, made when it was imported, is
    replaced; a writable folder is left as it is."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("CUPY_CACHE_DIR", str(blocker / "kernel_cache"))
    backends = []
    compiler = types.SimpleNamespace(_DiskKernelCacheBackend=lambda folder: ("disk", folder),
                                     _set_kernel_cache_backend=backends.append)
    monkeypatch.setitem(sys.modules, "cupy.cuda.compiler", compiler)
    gpu.loader.use_writable_kernel_cache.cache_clear()
    try:
        gpu.loader.use_writable_kernel_cache()
        private = tmp_path / f"gpu-search-{os.getuid()}" / "cupy"
        assert os.environ["CUPY_CACHE_DIR"] == str(private) and private.is_dir()
        assert backends == [("disk", str(private))]
        monkeypatch.setenv("CUPY_CACHE_DIR", str(tmp_path / "writable"))
        gpu.loader.use_writable_kernel_cache.cache_clear()
        gpu.loader.use_writable_kernel_cache()
        assert os.environ["CUPY_CACHE_DIR"] == str(tmp_path / "writable") and len(backends) == 1
    finally:
        gpu.loader.use_writable_kernel_cache.cache_clear()


def test_no_writable_folder_for_kernels_is_the_runs_error(monkeypatch):
    """Where no folder can take CuPy's compiled kernels, the run ends with that error (exit 10,
    its own line), not with a note that the GPU is unusable."""
    from gpu_search import device
    from gpu_search.errors import OutputError

    def no_folder():
        raise OutputError("no writable folder for compiled code (stand-in)")

    monkeypatch.setattr(gpu.loader, "use_writable_kernel_cache", no_folder)
    device.gpu_status.cache_clear()
    try:
        with pytest.raises(OutputError, match="no writable folder"):
            device.gpu_status()
    finally:
        device.gpu_status.cache_clear()


def stand_in_loader(tmp_path, monkeypatch, compile_cubin, loaded: list, pool) -> Path:
    """The loader with the stand-in CuPy (what it loads noted in ``loaded``), ``compile_cubin``
    as NVRTC (12.4), no cubins built ahead, a cache folder under tmp_path and ``pool`` as
    prepare()'s pool (None: made by prepare); returns a kernel file to load."""
    monkeypatch.setitem(sys.modules, "cupy", stand_in_cupy(loaded, loaded))
    monkeypatch.setenv("CUPY_CACHE_DIR", str(tmp_path / "kernel_cache"))
    monkeypatch.setattr(gpu.compiled, "FOLDER", tmp_path / "none")
    monkeypatch.setattr(gpu.compiled, "compile_cubin", compile_cubin)
    monkeypatch.setattr(gpu.loader, "_nvrtc_version", lambda: (12, 4))
    monkeypatch.setattr(gpu.loader, "_pool", pool)
    kernel = tmp_path / "k.cu"
    kernel.write_text('extern "C" __global__ void a() {}\n')
    return kernel


def test_shapes_prepared_ahead_are_compiled_once_and_waited_for(tmp_path, monkeypatch):
    """prepare() compiles the shapes a search is about to launch on a pool of threads: a launch
    of a shape being compiled there waits for it (NVRTC called once for it), a shape still
    queued is taken off the queue and compiled by the launching thread at once, a shape with a
    cubin already on disk is not queued, and no temporary file is left."""
    import threading

    calls, loaded = [], []
    release = threading.Event()

    def compile_cubin(source, flags, folder, arch, name):
        calls.append((source.partition("#line")[0], threading.current_thread().name))
        if "X 1" in source:
            assert release.wait(10)
        return b"cubin of " + source.partition("#line")[0].encode()

    kernel = stand_in_loader(tmp_path, monkeypatch, compile_cubin, loaded, pool=None)
    one, two = (kernel, ("-DX=1",)), (kernel, ("-DX=2",))
    gpu.loader.clear_cache()
    try:
        queued = gpu.loader.prepare([one, two, one], 0, threads=1)
        assert queued[2] is None                  # (the same shape twice: once)
        queued = queued[:2]
        while not calls:                          # the pool's one thread is compiling X=1, X=2 waits
            release.wait(0.01)
        assert gpu.load_functions(kernel, two[1], ("a",), 0) == ("a",)
        assert calls[1] == ("#define X 2\n", "MainThread") and queued[1].cancelled()
        waiter = threading.Thread(target=gpu.load_functions, args=(kernel, one[1], ("a",), 0))
        waiter.start()
        waiter.join(0.2)
        assert waiter.is_alive()                  # waits for the pool's compilation of X=1
        release.set()
        waiter.join(10)
        assert not waiter.is_alive() and queued[0].result() is None
        assert [c[0] for c in calls] == ["#define X 1\n", "#define X 2\n"]
        assert calls[0][1].startswith("nvrtc") and loaded[-1] == b"cubin of #define X 1\n"
        gpu.loader.clear_cache()
        assert gpu.loader.prepare([one, two], 0) == [None, None]     # both on disk now: nothing to compile
        assert len(calls) == 2
        left = sorted(p.name for p in (tmp_path / "kernel_cache" / "gpu-search").iterdir())
        assert len(left) == 2 and all(name.endswith(".sm_90.nvrtc12.4.cubin") for name in left)
    finally:
        release.set()
        if gpu.loader._pool is not None:
            gpu.loader._pool.shutdown(wait=True)
        gpu.loader.clear_cache()


def test_shapes_compiled_at_once_by_the_pool_do_not_hang_prepare(tmp_path, monkeypatch):
    """A shape whose compilation is done before prepare() has queued the rest (a failed NVRTC
    call, a cubin another run has just written) runs its done callback in the calling thread:
    prepare() must not then wait for its own lock."""
    import threading
    from concurrent.futures import Future

    class AtOnce:                     # a pool that has each shape done before submit returns
        def submit(self, fn, *args):
            future = Future()
            try:
                future.set_result(fn(*args))
            except Exception as exc:
                future.set_exception(exc)
            return future

    def compile_cubin(source, flags, folder, arch, name):
        raise RuntimeError("NVRTC: error")

    kernel = stand_in_loader(tmp_path, monkeypatch, compile_cubin, [], pool=AtOnce())
    got = []
    gpu.loader.clear_cache()
    try:
        caller = threading.Thread(target=lambda: got.append(gpu.loader.prepare(
            [(kernel, (f"-DX={x}",)) for x in range(3)], 0)), daemon=True)
        caller.start()
        caller.join(10)
        assert not caller.is_alive(), "prepare() hangs on a shape done at once"
        assert [f.exception() is not None for f in got[0]] == [True] * 3
        assert gpu.loader._building == {}             # (each forgotten once done)
    finally:
        gpu.loader.clear_cache()
