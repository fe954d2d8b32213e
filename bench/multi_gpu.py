"""Scaling of the GPU filters over several GPUs of one host (run on a multi-GPU machine).

    python bench/multi_gpu.py [--copies 399]

Same database as hmmsearch_bench.py.  For each model: the MSV and Viterbi
filter stages over the whole database (kernels plus their host transfers:
the work that is split across GPUs) on 1 GPU and on all visible GPUs, with
the results checked equal; then the whole 20-model search on 1 and on all GPUs.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from hmmsearch_bench import benchmark_inputs, tables  # noqa: E402

from gpu_search.hmmer import search  # noqa: E402
from gpu_search.hmmer.gpu import GpuBackend  # noqa: E402
from gpu_search.hmmer.models import read_hmms  # noqa: E402
from gpu_search.hmmer.options import SearchOptions  # noqa: E402
from gpu_search.hmmer.profile import FilterProfile  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=399)
    ap.add_argument("--work", default="/tmp/gsbench")
    args = ap.parse_args()
    import cupy as cp

    db, models = benchmark_inputs(args.work, args.copies)
    n = cp.cuda.runtime.getDeviceCount()
    names = [cp.cuda.runtime.getDeviceProperties(i)["name"].decode() for i in range(n)]
    print(f"{n} GPU(s): {', '.join(names)}; {db.n_seqs:,} sequences, {db.n_residues:,} residues", flush=True)
    one, many = GpuBackend(db, gpus=[0]), GpuBackend(db)
    hmms = read_hmms(models)
    allidx = np.arange(db.n_seqs)
    rows = []
    for hmm in hmms[:4] + [h for h in hmms if h.M > 1000]:
        prof = FilterProfile.from_hmm(hmm)
        for b in (one, many):       # compiles the kernels, the int32 Viterbi kernel that rescores too
            b.msv(prof, allidx[:1000]); b.viterbi(prof, allidx)
        t1 = min(timeit(lambda: one.msv(prof, allidx)) for _ in range(3))
        tn = min(timeit(lambda: many.msv(prof, allidx)) for _ in range(3))
        assert all(np.array_equal(a, b) for a, b in zip(one.msv(prof, allidx), many.msv(prof, allidx)))
        v1 = min(timeit(lambda: one.viterbi(prof, allidx)) for _ in range(2))
        vn = min(timeit(lambda: many.viterbi(prof, allidx)) for _ in range(2))
        assert all(np.array_equal(a, b) for a, b in zip(one.viterbi(prof, allidx), many.viterbi(prof, allidx)))
        rows.append((hmm.name, hmm.M, t1, tn, v1, vn))
    opts = SearchOptions()
    r1 = list(search.hmmsearch(hmms, db, opts, device="gpu", backend=one))
    s1 = timeit(lambda: list(search.hmmsearch(hmms, db, opts, device="gpu", backend=one)))
    rn = list(search.hmmsearch(hmms, db, opts, device="gpu", backend=many))
    sn = timeit(lambda: list(search.hmmsearch(hmms, db, opts, device="gpu", backend=many)))
    same = tables([r.hits for r in r1]) == tables([r.hits for r in rn])
    print(f"\n{'model':24} {'M':>5} {'MSV 1 GPU ms':>13} {f'MSV {n} GPUs ms':>14} {'speedup':>8} "
          f"{'Vit 1 ms':>9} {f'Vit {n} ms':>9} {'speedup':>8}")
    for name, M, t1, tn, v1, vn in rows:
        print(f"{name:24} {M:>5} {t1 * 1e3:>13.1f} {tn * 1e3:>14.1f} {t1 / tn:>7.2f}x "
              f"{v1 * 1e3:>9.1f} {vn * 1e3:>9.1f} {v1 / vn:>7.2f}x")
    print(f"20-model search: 1 GPU {s1:.2f} s, {n} GPUs {sn:.2f} s ({s1 / sn:.2f}x), identical hits: {same}")

    print("\nwhere a whole-database call goes (ms, the fastest of 5 calls): launches = the host's work in _run "
          "before collecting (the kernels, each GPU's gather and its copy back queued behind them); collect = "
          "waiting for the copies; after = the profile's packing before and the reading into HMMER's states after "
          "(and the Viterbi filter's rescoring); kernel = CUDA events, the slowest GPU")
    print(f"{'model':16} {'filter':8} {'GPUs':>4} {'call':>7} {'kernel':>7} {'launches':>9} {'collect':>8} {'after':>7}")
    for hmm in hmms[:2]:
        prof = FilterProfile.from_hmm(hmm)
        for kind in ("msv", "viterbi"):
            for b in (one, many):
                t = breakdown(b, kind, prof, allidx)
                print(f"{hmm.name:16} {kind:8} {len(b.gpus):>4} {t['call'] * 1e3:>7.2f} {t['kernel'] * 1e3:>7.2f} "
                      f"{(t['run'] - t['collect']) * 1e3:>9.2f} {t['collect'] * 1e3:>8.2f} "
                      f"{(t['call'] - t['run']) * 1e3:>7.2f}")


def breakdown(backend, kind, prof, allidx, repeat=5):
    """One filter call over the whole database, split by wrapping the backend's _run and
    _collect (instance attributes shadow the methods for the calls): the fastest of repeat."""
    spans = []

    def wrapped(name, real):
        def call(*args, **kwargs):
            t = time.perf_counter()
            try:
                return real(*args, **kwargs)
            finally:
                spans[-1][name] += time.perf_counter() - t
        return call

    backend._run, backend._collect = wrapped("run", backend._run), wrapped("collect", backend._collect)
    try:
        for _ in range(repeat):
            spans.append({"run": 0.0, "collect": 0.0})
            backend.kernel_seconds[kind] = 0.0
            t = time.perf_counter()
            getattr(backend, kind)(prof, allidx)
            spans[-1]["call"] = time.perf_counter() - t
            spans[-1]["kernel"] = backend.kernel_seconds[kind]
    finally:
        del backend._run, backend._collect
    return min(spans, key=lambda s: s["call"])


def timeit(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


if __name__ == "__main__":
    main()
