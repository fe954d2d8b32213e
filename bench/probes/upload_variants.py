"""The database's first copy to the GPU in a fresh process, done in several ways (each variant
in its own process): pageable, pinned staging, in slices; on the GPU host.

    python bench/probes/upload_variants.py [--mb 273]
"""

from __future__ import annotations

import argparse
import subprocess
import sys

VARIANT = r'''
import sys, time, numpy as np
n = int(sys.argv[1]); how = sys.argv[2]
host = np.random.default_rng(1).integers(0, 25, n, dtype=np.uint8)
import cupy as cp
cp.zeros(1); cp.cuda.Device().synchronize()
marks = []
t = time.perf_counter()
def mark(label):
    global t
    cp.cuda.Device().synchronize(); now = time.perf_counter(); marks.append(f"{label} {1e3 * (now - t):.1f}"); t = now
if how == "pageable":
    d = cp.empty(n, np.uint8); mark("empty"); d.set(host); mark("set"); d.set(host); mark("set again")
elif how == "asarray":
    d = cp.asarray(host); mark("asarray"); e = cp.asarray(host); mark("asarray again")
elif how == "pinned":
    mem = cp.cuda.alloc_pinned_memory(n); mark("pinned alloc")
    p = np.frombuffer(mem, np.uint8, n); np.copyto(p, host); mark("copyto")
    d = cp.empty(n, np.uint8); mark("empty"); d.set(p); mark("set from pinned")
elif how == "slices":
    d = cp.empty(n, np.uint8); mark("empty")
    step = 16 << 20
    for a in range(0, n, step):
        d[a:a + step].set(host[a:a + step])
    mark("set in 16 MB slices")
elif how == "register":
    d = cp.empty(n, np.uint8); mark("empty")
    cp.cuda.runtime.hostRegister(host.ctypes.data, n, 0); mark("hostRegister")
    d.set(host); mark("set registered"); cp.cuda.runtime.hostUnregister(host.ctypes.data); mark("unregister")
print(how + ": " + ", ".join(marks) + " (ms)")
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=273)
    ap.add_argument("--reps", type=int, default=2)
    args = ap.parse_args()
    for _ in range(args.reps):
        for how in ("pageable", "asarray", "pinned", "slices", "register"):
            r = subprocess.run([sys.executable, "-c", VARIANT, str(args.mb << 20), how], capture_output=True, text=True)
            print(r.stdout.strip() or r.stderr.strip().splitlines()[-1], flush=True)


if __name__ == "__main__":
    main()
