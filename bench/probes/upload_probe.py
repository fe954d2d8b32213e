"""Where a blastp run's "GPU upload" phase goes: the database's copy to the GPU, the buffers,
the other engines (on the GPU host).

    python bench/probes/upload_probe.py [--gsdb /tmp/gsblastbench/db399.gsdb]

Times, in a fresh process, as ``engine.build_gpu_engines`` runs them: CuPy's import and CUDA's
start, then GpuUngapped's construction split into its parts (the residues' copy, the
offsets and order, the blocks' buffers), its workers, and beside them the same copy from
page-locked (pinned) host memory, and a second copy of the pageable residues.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parents[1]          # bench/: the benchmarks these probes build on
sys.path[:0] = [str(BENCH.parent), str(BENCH)]

from gpu_search import seqdb  # noqa: E402
from gpu_search.blast import pipeline  # noqa: E402
from gpu_search.blast.options import BlastOptions  # noqa: E402
from gpu_search.blast.settings import BlastSettings  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gsdb", default="/tmp/gsblastbench/db399.gsdb")
    args = ap.parse_args()
    gsdb = Path(args.gsdb)
    if not gsdb.exists():
        gsdb = next(Path(args.gsdb).parent.glob("*.gsdb"))
    db = seqdb.open_database(gsdb)
    setup = pipeline.make_setup(db, BlastOptions(num_threads=16))
    rows = []

    def timed(label, fn):
        t = time.perf_counter()
        out = fn()
        rows.append((label, time.perf_counter() - t))
        return out

    cp = timed("CuPy import", lambda: __import__("cupy"))
    timed("CUDA start (first array)", lambda: cp.zeros(1))
    from gpu_search.blast.gpu import GpuUngapped

    real_upload, real_alloc = GpuUngapped._upload, GpuUngapped._alloc_buffers

    def upload(self, chunk):
        return timed(f"  _upload (residues {chunk['n']:,} subjects, offsets, order)",
                     lambda: real_upload(self, chunk))

    def alloc(self):
        return timed("  _alloc_buffers (scratch, rows out, counters, stream)", lambda: real_alloc(self))

    GpuUngapped._upload, GpuUngapped._alloc_buffers = upload, alloc
    gpu = timed("GpuUngapped(...) whole", lambda: GpuUngapped(setup.residues, setup.offsets,
                                                              length_order=db.length_order))
    for k in range(BlastSettings().streams - 1):
        timed(f"worker() {k + 1}", gpu.worker)
    cp.cuda.Device().synchronize()
    residues = setup.residues
    mb = residues.nbytes / 1e6
    d = timed("pageable residues copied again (cp.asarray)", lambda: cp.asarray(residues))
    cp.cuda.Device().synchronize()
    del d
    pinned_mem = timed("pinned buffer allocated", lambda: cp.cuda.alloc_pinned_memory(residues.nbytes))
    pinned = np.frombuffer(pinned_mem, np.uint8, residues.nbytes)
    timed("residues copied into it (np.copyto)", lambda: np.copyto(pinned, residues))
    dev = cp.empty(residues.nbytes, np.uint8)

    def from_pinned():
        dev.set(pinned)
        cp.cuda.Device().synchronize()

    timed("pinned residues copied to the GPU", from_pinned)
    print(f"database {db.n_seqs:,} sequences, {mb:.0f} MB of residues; {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    for label, t in rows:
        print(f"{label:60} {t * 1e3:9.1f} ms")


if __name__ == "__main__":
    main()
