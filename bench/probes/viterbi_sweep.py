"""Viterbi-filter kernel variants on the GPU host: GCUPS of each, one table.

    python bench/probes/viterbi_sweep.py [--copies 99]

For four of the benchmark's models (M = 178 .. 1,152), every variant of
filters.cu's viterbi_filter that fits in registers: G lanes per sequence,
SEQS sequences per group (1 or 2), and the block size.  Kernel time only (CUDA events),
whole database (pyhmmer's proteome + COPIES shuffled copies, as
hmmsearch_bench.py builds it).  Every variant's xC must equal the default
variant's, and the default is checked against the numpy reference on a
sample (exactness itself is the GPU tests' job: pytest -m gpu).  Extra
filters.cu switches (--flags, --one) reach the compiler through the geometry
(SweepGeometry.defines), as the geometry's own REDUX and TRANS_REGS do.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parents[1]          # bench/: the benchmarks these probes build on
sys.path[:0] = [str(BENCH.parent), str(BENCH)]

from hmmsearch_bench import benchmark_inputs  # noqa: E402

from gpu_search.hmmer import reference as R  # noqa: E402
from gpu_search.hmmer.gpu import Geometry  # noqa: E402
from gpu_search.hmmer.models import read_hmms  # noqa: E402
from gpu_search.hmmer.profile import FilterProfile  # noqa: E402


@dataclass(frozen=True)
class SweepGeometry(Geometry):
    """A geometry with extra filters.cu switches (``-DNAME=1``...), given to the compiler after
    the geometry's own (so that they override them)."""

    flags: tuple = ()

    @property
    def defines(self) -> tuple:
        return super().defines + tuple(self.flags)


def with_flags(geo: Geometry, flags) -> Geometry:
    """geo with these extra switches (geo itself if none)."""
    if not flags:
        return geo
    return SweepGeometry(geo.G, geo.W, geo.cells_per_word, geo.seqs, redux=geo.redux, trans_regs=geo.trans_regs,
                         flags=tuple(flags))


def old_geometry(M: int):
    """The geometry rule that viterbi_geometry's measured table replaced: about 32 cells per lane, one sequence."""
    G = min(32, 1 << max(0, (-(-M // 32) - 1).bit_length()))
    return G, -(-M // G), 1, 1


def lazy_stats(backend, prof, geo, idx):
    """Rows scored, rows where HMMER's Lazy-F test holds (filters.cu compiled with LAZY_STATS)."""
    import cupy as cp

    from gpu_search.hmmer.gpu import GpuBackend

    caller = sys.modules[GpuBackend.__module__]          # where the backend finds load_kernel
    real = caller.load_kernel
    kernel_file = sys.modules[real.__module__].KERNEL_FILE
    options = ("-std=c++17", f"-DG={geo.G}", f"-DW={geo.W}", "-DPROFILE_IN_SMEM=1", f"-DSEQS={geo.seqs}",
               "-DLAZY_STATS", f"-I{kernel_file.parent}")
    module = cp.RawModule(code=kernel_file.read_text(), options=options)
    counters = cp.ndarray((2,), cp.uint64, module.get_global("lazy_stats"))
    counters[:] = 0
    caller.load_kernel = lambda name, *a, **k: module.get_function(name)
    try:
        backend.viterbi(prof, idx, geo)
    finally:
        caller.load_kernel = real
    return [int(v) for v in counters.get()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--copies", type=int, default=99)
    ap.add_argument("--work", default="/tmp/gsbench")
    ap.add_argument("--all-int32", action="store_true", help="every int32-kernel geometry, not only the default")
    ap.add_argument("--models", default="", help="comma-separated model names (default: five of M 178..2,485)")
    ap.add_argument("--random", default="", help="also random models of these sizes, e.g. 300,330,370")
    ap.add_argument("--trans", default="", metavar="K,K,...",
                    help="G=32 with REDUX and the transitions of K (and all) nodes a lane in registers, e.g. 0,4,8")
    ap.add_argument("--trans16", default="", metavar="K,K,...",
                    help="viterbi_filter16 (two nodes a word), G=32, REDUX, one and two sequences a group, "
                         "the transitions of K (and all) words a lane in registers")
    ap.add_argument("--variants", default="", metavar="G,S,K,REDUX,BLOCK[,CELLS];...",
                    help="explicit variants: lanes a group, sequences a group, nodes (words) with transitions in "
                         "registers (a number or 'all'), REDUX 0/1, threads a block, nodes a word (1 or 2)")
    ap.add_argument("--g32", action="store_true", help="G=32 geometries (1, 2, 4 sequences) and the default")
    ap.add_argument("--flags", default="",
                    help="extra filters.cu flag sets to time, ';'-separated, '+' within a set, e.g. "
                         "REDUX;REDUX+TRANS_REGS=8 (on top of, and overriding, the default geometry's)")
    ap.add_argument("--one", metavar="MODEL,G,W,SEQS[,FLAG...]",
                    help="run one variant once after a warm-up launch (for ncu), e.g. LuxC,32,13,2")
    args = ap.parse_args()
    db, models = benchmark_inputs(args.work, args.copies)

    import cupy as cp

    from gpu_search.hmmer.gpu import GpuBackend, viterbi_block, viterbi_geometry

    device = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"{device}; db {db.n_seqs:,} sequences, {db.n_residues:,} residues", flush=True)
    backend = GpuBackend(db)
    allidx = np.arange(db.n_seqs)
    hmms = read_hmms(models)
    for M in (int(m) for m in args.random.split(",") if m):      # random models of chosen sizes
        from pyhmmer.easel import Alphabet, Randomness
        from pyhmmer.plan7 import HMM
        hmms.append(HMM.sample(Alphabet.amino(), M, Randomness(M)))
        hmms[-1].name = f"random{M}"
    rows = []
    if args.one:
        name, G, W, seqs, *flags = args.one.split(",")
        hmm = next(h for h in hmms if h.name == name)
        prof = FilterProfile.from_hmm(hmm)
        geo = with_flags(Geometry(int(G), int(W), 1, int(seqs)), [f"-D{f}=1" for f in flags])
        backend.viterbi(prof, allidx[:1000], geo, block=128)
        backend.viterbi(prof, allidx, geo, block=128)
        print(f"{name} {geo} {flags}: {prof.M * db.n_residues / backend.kernel_seconds['viterbi'] / 1e9:.0f} GCUPS")
        return
    flag_sets = [()] + [tuple(f"-D{f}" if "=" in f else f"-D{f}=1" for f in fs.split("+"))
                        for fs in args.flags.split(";") if fs]
    chosen = (hmms if args.models == "all" else
              [h for h in hmms if h.name.startswith("random")] if args.models == "random" else
              [h for h in hmms if h.name in args.models.split(",")] if args.models else
              [hmms[i] for i in (1, 0, 2)] + [h for h in hmms if h.M > 1000][:2])
    for hmm in chosen:
        prof = FilterProfile.from_hmm(hmm)
        cells = prof.M * db.n_residues
        ref, ref_ovf = backend.viterbi(prof, allidx)
        sample = allidx[:: max(1, db.n_seqs // 300)]
        rC, rO = R.viterbi_filter(prof, db.residues, db.offsets, db.lengths, sample)
        assert np.array_equal(ref_ovf[sample], rO) and np.array_equal(ref[sample][~rO], rC[~rO]), "default != reference"
        stats = lazy_stats(backend, prof, viterbi_geometry(prof.M, cells=1), allidx)
        print(f"{hmm.name} M={prof.M}: rows {stats[0]:,}, HMMER's Lazy-F test true in {stats[1] / stats[0]:.1%}",
              flush=True)
        variants = [(Geometry(*old_geometry(prof.M)), 256, ())]      # the rule before the sweep's measurements
        if args.all_int32 or args.g32:
            for seqs in (1, 2, 4):                                    # int32 kernel
                for G in ((32,) if args.g32 else (8, 16, 32)):
                    W = -(-prof.M // G)
                    if W * seqs > 48 or W < 2:
                        continue
                    for flags in flag_sets:
                        k = max([int(f.split("=")[1]) for f in flags if f.startswith("-DTRANS_REGS=")] or [0])
                        if W * 3 * seqs + 8 * min(k, W) > 200:
                            continue                                  # would spill
                        variants.append((Geometry(G, W, 1, seqs), 128, flags))
        if args.trans:                                                # nodes with transitions in registers
            W = -(-prof.M // 32)
            for seqs in (1, 2):
                for k in sorted({int(k) for k in args.trans.split(",")} | {W}):
                    if k <= W and W * seqs <= 48 and 3 * W * seqs + 8 * k <= 260:
                        variants.append((Geometry(32, W, 1, seqs, redux=True, trans_regs=k), 128, ()))
        for spec in (v for v in args.variants.split(";") if v):       # G,S,K,REDUX,BLOCK[,CELLS]
            G, seqs, k, redux, block, *cells_word = spec.split(",")
            c = int(cells_word[0]) if cells_word else 1
            W = -(-prof.M // (int(G) * c))
            k = W if k == "all" else min(W, int(k))
            variants.append((Geometry(int(G), W, c, int(seqs), redux=redux == "1", trans_regs=k), int(block), ()))
        if args.trans16:                                              # two nodes a word
            W = -(-prof.M // 64)
            for seqs in (1, 2):
                for k in sorted({int(k) for k in args.trans16.split(",")} | {W}):
                    if k <= W and W * seqs <= 48 and 3 * W * seqs + 8 * k <= 260:
                        geo = Geometry(32, W, 2, seqs, redux=True, trans_regs=k)
                        variants.append((geo, viterbi_block(geo), ()))
        if not args.all_int32:
            int32 = viterbi_geometry(prof.M, cells=1)                # the int32 kernel's default
            variants.append((int32, viterbi_block(int32), ()))
            geo = viterbi_geometry(prof.M)                           # the default
            for flags in flag_sets:
                variants.append((geo, viterbi_block(geo), flags))
        for plain, block, flags in variants:
            geo = with_flags(plain, flags)
            t0 = time.perf_counter()
            backend.viterbi(prof, allidx[:1000], geo, block=block)   # compile
            t_compile = time.perf_counter() - t0
            best = None
            for _ in range(2):
                backend.kernel_seconds["viterbi"] = 0.0
                xC, ovf = backend.viterbi(prof, allidx, geo, block=block)
                t = backend.kernel_seconds["viterbi"]
                best = t if best is None else min(best, t)
            same = bool(np.array_equal(ovf, ref_ovf) and np.array_equal(xC[~ovf], ref[~ref_ovf]))
            switches = ["REDUX"] * geo.redux + [f"TRANS_REGS={geo.trans_regs}"] * (geo.trans_regs > 0)
            named = [f[2:].removesuffix("=1") for f in flags]
            flag_names = "+".join(dict.fromkeys(switches + named)) or "-"
            rows.append((hmm.name, prof.M, geo.G, geo.W, geo.seqs, block, flag_names + f" c{geo.cells_per_word}",
                         cells / best / 1e9, same, t_compile))
            print("%-14s M=%-5d G=%-2d W=%-3d S=%d B=%-3d %-30s %7.0f GCUPS same=%s (compile %.1f s)" % rows[-1]
                  + (f" rescored {backend.viterbi_rescored}" if geo.cells_per_word == 2 else ""), flush=True)
    print("\nbest per model:")
    for name in dict.fromkeys(r[0] for r in rows):
        mine = [r for r in rows if r[0] == name]
        old = mine[0]
        top = max(mine, key=lambda r: r[7])
        print("%-14s M=%-5d before %6.0f GCUPS (G=%d W=%d)  best %6.0f GCUPS (G=%d W=%d S=%d B=%d %s)  %.2fx"
              % (name, old[1], old[7], old[2], old[3], top[7], top[2], top[3], top[4], top[5], top[6],
                 top[7] / old[7]))
    assert all(r[8] for r in rows), "a variant's scores differ"


if __name__ == "__main__":
    main()
