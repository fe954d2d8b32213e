"""What starting blastp's traceback workers costs on this host: raw fork()s and a
ProcessPoolExecutor's start, with the parent as big as a 273M-residue run's."""

import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
import multiprocessing

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


n = int(sys.argv[1]) if len(sys.argv) > 1 else 16
print(f"bare python: {n} forks {raw_forks(n):.3f} s, pool {pool_start(n):.3f} s")
t = time.perf_counter()
import gpu_search.blast.engine  # noqa: E402,F401  (numba)
print(f"import engine {time.perf_counter() - t:.3f} s")
from gpu_search.blast.lookup import build_lookup  # noqa: E402
from gpu_search.blast.matrix import load_matrix  # noqa: E402
t = time.perf_counter()
build_lookup(np.arange(1, 21, dtype=np.uint8).repeat(5), load_matrix("BLOSUM62").scores)
print(f"first numba call (build_lookup) {time.perf_counter() - t:.3f} s")
print(f"with numba: {n} forks {raw_forks(n):.3f} s, pool {pool_start(n):.3f} s")
big = np.ones(273_000_000, np.uint8)
print(f"+273 MB array: {n} forks {raw_forks(n):.3f} s, pool {pool_start(n):.3f} s")
t = time.perf_counter()
import cupy  # noqa: E402
print(f"import cupy {time.perf_counter() - t:.3f} s")
print(f"+cupy: {n} forks {raw_forks(n):.3f} s, pool {pool_start(n):.3f} s")
t = time.perf_counter()
cupy.cuda.runtime.getDeviceCount()
t1 = time.perf_counter()
cupy.zeros(1)
t2 = time.perf_counter()
d = cupy.asarray(big)
cupy.cuda.Device().synchronize()
t3 = time.perf_counter()
print(f"getDeviceCount {t1 - t:.3f} s, context {t2 - t1:.3f} s, upload 273 MB {t3 - t2:.3f} s")
print("THP:", open("/sys/kernel/mm/transparent_hugepage/enabled").read().strip())
