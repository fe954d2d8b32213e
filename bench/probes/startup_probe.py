"""What a blastp GPU run costs before its first query, on the GPU host, step by step:
the traceback workers' fork, CuPy's import, CUDA's start, and the engines' construction
(the database's upload, buffers, streams) for a database of the benchmark's size
(273 M residues; random letters: the start does not depend on them).

    python3 bench/probes/startup_probe.py [--workers 16]
"""

from __future__ import annotations

import argparse
import importlib
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np


def raw_forks(n):
    t, pids = time.perf_counter(), []
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            time.sleep(0.3)
            os._exit(0)
        pids.append(pid)
    dt = time.perf_counter() - t
    for p in pids:
        os.waitpid(p, 0)
    return dt


def pool_start(n):
    t = time.perf_counter()
    procs = ProcessPoolExecutor(max_workers=n, mp_context=multiprocessing.get_context("fork"))
    procs.submit(int).result()
    dt = time.perf_counter() - t
    procs.shutdown()
    return dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--residues", type=int, default=273_033_200)
    args = ap.parse_args()
    n = args.workers
    t = time.perf_counter()
    importlib.import_module("gpu_search.blast.engine")
    from gpu_search.blast.settings import BlastSettings
    print(f"import blast.engine (numba) {time.perf_counter() - t:.3f} s")
    settings = BlastSettings()              # the run's defaults: engines and gapped engines per GPU
    rng = np.random.default_rng(1)
    lengths = rng.integers(30, 1000, args.residues // 325)
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    residues = rng.integers(1, 25, int(offsets[-1]), dtype=np.uint8)
    print(f"{n} forks {raw_forks(n):.3f} s, pool of {n} up {pool_start(n):.3f} s "
          f"(parent holding {residues.nbytes / 1e6:.0f} MB)")
    t = time.perf_counter()
    import cupy
    t1 = time.perf_counter()
    cupy.cuda.runtime.getDeviceCount()
    t2 = time.perf_counter()
    cupy.cuda.runtime.memGetInfo()
    t3 = time.perf_counter()
    print(f"import cupy {t1 - t:.3f} s, getDeviceCount {t2 - t1:.3f} s, context (memGetInfo) {t3 - t2:.3f} s")

    from gpu_search.blast.gpu import GpuUngapped, _longest_first
    from gpu_search.blast.gpu.gapped import GpuPrelim

    t = time.perf_counter()
    _longest_first(offsets)
    print(f"longest-first order on the host {time.perf_counter() - t:.3f} s")
    t = time.perf_counter()
    d = cupy.asarray(residues)
    cupy.cuda.Device().synchronize()
    print(f"copy of the residues {time.perf_counter() - t:.3f} s")
    del d
    for rep in range(2):
        t = time.perf_counter()
        first = GpuUngapped(residues, offsets)
        cupy.cuda.Device().synchronize()
        t1 = time.perf_counter()
        twins = [first.worker() for _ in range(settings.streams - 1)]
        cupy.cuda.Device().synchronize()
        t2 = time.perf_counter()
        prelims = [GpuPrelim(first.stream_twin()) for _ in range(settings.gapped_threads)]
        t3 = time.perf_counter()
        print(f"engines, run {rep + 1}: first (upload, order, buffers) {t1 - t:.3f} s, "
              f"{len(twins)} more streams {t2 - t1:.3f} s, {len(prelims)} gapped engines {t3 - t2:.3f} s")
        del first, twins, prelims
        cupy.get_default_memory_pool().free_all_blocks()
    import cProfile
    import pstats
    prof = cProfile.Profile()
    prof.enable()
    GpuUngapped(residues, offsets)
    cupy.cuda.Device().synchronize()
    prof.disable()
    pstats.Stats(prof).sort_stats("cumulative").print_stats(14)


if __name__ == "__main__":
    main()
