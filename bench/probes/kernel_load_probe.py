"""What loading one filter kernel from its cubin costs, step by step, on the GPU host.

    python3 bench/probes/kernel_load_probe.py QUERIES.faa

For the kernel shapes of models up to the longest query (``kernels.kernel_shapes``) that a
search compiled into this host's cache (run the search first): the source with its defines
and the cubin's name (hashing), ``cupy.RawModule(path=...)`` and ``get_function`` (the
driver's load), the cubin's size; one thread, the GPU idle.  Then the same shapes loaded
again through the loader by 4 threads, and by 1.
"""

from __future__ import annotations

import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import cupy as cp

from gpu_search.gpu import compiled, loader
from gpu_search.gpu.occupancy import device_props
from gpu_search.hmmer.gpu.kernels import BIAS_FILE, FWDBACK_FILE, KERNEL_SWITCH, kernel_shapes
from gpu_search.seqdb import read_fasta


def main():
    queries = read_fasta(sys.argv[1])
    cp.cuda.runtime.free(0)
    smem = device_props(0).smem_optin
    kernel_of = {switch: name for name, switch in KERNEL_SWITCH.items()}
    arch = cp.cuda.Device(0).compute_capability
    shapes, rows, listed = {}, [], 0
    for file, options in kernel_shapes(int(queries.lengths.max()), smem):
        listed += 1
        name = ("bias_filter" if file == BIAS_FILE else "forward_parser" if file == FWDBACK_FILE
                else kernel_of[options[-1]])
        t0 = time.perf_counter()
        source, flags = loader.source_with_defines(file.read_text(), options, file.name)
        flags = (compiled.STD, *flags)
        path = loader._host_cubin(source, flags, file.parent, arch)
        t1 = time.perf_counter()
        if path is None or not path.exists() or (file, options) in shapes:
            continue
        shapes[(file, options)] = name
        module = cp.RawModule(path=str(path))
        t2 = time.perf_counter()
        module.get_function(name)
        t3 = time.perf_counter()
        rows.append((t1 - t0, t2 - t1, t3 - t2, path.stat().st_size))
    n = len(rows)
    print(f"{listed} shapes up to M = {int(queries.lengths.max())}, {n} with a cubin in the host's cache")
    if n:
        for i, what in enumerate(("source + name", "RawModule", "get_function")):
            v = sorted(r[i] for r in rows)
            print(f"  {what:14s} summed {sum(v):.3f} s, median {v[n // 2] * 1e3:.1f} ms, max {v[-1] * 1e3:.1f} ms")
        sizes = sorted(r[3] for r in rows)
        print(f"  cubin bytes: median {sizes[n // 2]:,}, max {sizes[-1]:,}")
    loader.clear_cache()
    t = time.perf_counter()
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda kv: loader.load_functions(kv[0][0], kv[0][1], (kv[1],), 0), shapes.items()))
    print(f"  load_functions of all on 4 threads: {time.perf_counter() - t:.3f} s "
          f"({threading.active_count()} threads left)")
    loader.clear_cache()
    t = time.perf_counter()
    for kv in shapes.items():
        loader.load_functions(kv[0][0], kv[0][1], (kv[1],), 0)
    print(f"  load_functions of all on 1 thread: {time.perf_counter() - t:.3f} s")


if __name__ == "__main__":
    main()
