"""hmmsearch benchmark: gpu-search (GPU) against pyhmmer and hmmsearch on all cores.

Run on the GPU host (one run, one table at the end):

    python bench/hmmsearch_bench.py [--copies 399] [--cpus 16] [--out DIR]

The database is the one of docs/benchmarks.md ("The data"), built
deterministically: pyhmmer's 2,100-protein proteome plus COPIES copies whose
residues are shuffled within each sequence (same lengths and composition;
399 copies: 840,000 sequences, 273,033,200 residues).  The 20-model file is
pyhmmer's four Pfam-like models, the ten RREFam models and six models built
by pyhmmer from single proteome sequences of increasing length (M up to ~1500).

Reported: FASTA parsing vs pyhmmer's reader and .gsdb load time; MSV and
Viterbi-filter GCUPS of the kernels alone; end-to-end wall time and hits
for one model and for 20 models, database preloaded on both sides, with the
ratios; whether every tblout/domtblout row is identical to pyhmmer's.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gpu_search import seqdb  # noqa: E402
from gpu_search.hmmer import search  # noqa: E402
from gpu_search.hmmer.models import read_hmms  # noqa: E402
from gpu_search.hmmer.options import SearchOptions  # noqa: E402


def pyhmmer_data() -> Path:
    import pyhmmer

    return Path(pyhmmer.__file__).parent / "tests" / "data"


def build_database(copies: int, path: Path, seed: int = 42) -> None:
    """Proteome + `copies` residue-shuffled copies, written as FASTA."""
    base = seqdb.open_database(pyhmmer_data() / "seqs" / "938293.PRJEB85.HG003687.faa")
    rng = np.random.default_rng(seed)
    sym = np.frombuffer(seqdb.AMINO_SYMBOLS.encode(), dtype=np.uint8)
    seq_of = np.repeat(np.arange(base.n_seqs), base.lengths)
    with open(path, "wb") as fh:
        for c in range(copies + 1):
            res = base.residues.copy()
            if c:
                # shuffle within each sequence: sort by (sequence, random key)
                order = np.lexsort((rng.random(len(res)), seq_of))
                res = res[order]
            text = sym[res]
            chunks = []
            for i in range(base.n_seqs):
                a, b = base.offsets[i], base.offsets[i + 1]
                name = base.name(i) if c == 0 else f"{base.name(i)}_shuf{c}"
                chunks.append(b">" + name.encode() + b"\n" + text[a:b].tobytes() + b"\n")
            fh.write(b"".join(chunks))


def benchmark_inputs(work: str, copies: int):
    """(database, 20-model HMM file) of the benchmarks, built once under ``work``."""
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    fasta = work / f"db{copies}.faa"
    if not fasta.exists():
        build_database(copies, fasta)
    models = work / "twenty.hmm"
    build_models(models)
    return seqdb.open_database(fasta), models


def build_models(path: Path) -> None:
    """The 20-model HMM file."""
    import pyhmmer
    from pyhmmer.plan7 import Background, Builder

    d = pyhmmer_data() / "hmms" / "txt"
    hmms = []
    for name in ("Thioesterase", "PF02826", "LuxC", "KR", "RREFam"):
        hmms.extend(read_hmms(d / f"{name}.hmm"))
    base = seqdb.open_database(pyhmmer_data() / "seqs" / "938293.PRJEB85.HG003687.faa")
    abc = pyhmmer.easel.Alphabet.amino()
    builder, bg = Builder(abc, seed=42), Background(abc)
    order = np.argsort(base.lengths)
    for frac in (0.2, 0.5, 0.8, 0.95, 0.99, 0.999):
        i = int(order[int(frac * (len(order) - 1))])
        seq = base.digital_block([i])[0]
        hmm, _, _ = builder.build(seq, bg)
        hmm.name = f"seq{i}_M{hmm.M}"
        hmms.append(hmm)
    with open(path, "wb") as fh:
        for hmm in hmms[:20]:
            hmm.write(fh)


def tables(all_hits) -> list[bytes]:
    """tblout and domtblout rows of a list of pyhmmer TopHits."""
    out = []
    for hits in all_hits:
        for fmt in ("targets", "domains"):
            buf = io.BytesIO()
            hits.write(buf, format=fmt, header=False)
            out.append(buf.getvalue())
    return out


def timed(fn, repeat=1):
    best, value = None, None
    for _ in range(repeat):
        t = time.perf_counter()
        value = fn()
        dt = time.perf_counter() - t
        best = dt if best is None else min(best, dt)
    return best, value


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--copies", type=int, default=399)
    ap.add_argument("--cpus", type=int, default=os.cpu_count())
    ap.add_argument("--work", default="/tmp/gsbench")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--skip-baseline-20", action="store_true")
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    rows, info = [], {}

    fasta = work / f"db{args.copies}.faa"
    if not fasta.exists():
        t, _ = timed(lambda: build_database(args.copies, fasta))
        print(f"built {fasta} in {t:.0f} s", flush=True)
    models = work / "twenty.hmm"
    build_models(models)

    # --- database loading -------------------------------------------------------------
    import pyhmmer

    t_ours, db = timed(lambda: seqdb.open_database(fasta))
    t_pyh, block = timed(lambda: pyhmmer.easel.SequenceFile(str(fasta), digital=True).read_block())
    gsdb = work / "db.gsdb"
    seqdb.write_gsdb(db, gsdb)
    t_gsdb, _ = timed(lambda: seqdb.open_database(gsdb), repeat=3)
    rows.append(("parse FASTA (s)", f"{t_ours:.2f}", f"{t_pyh:.2f}", f"{t_pyh / t_ours:.2f}x"))
    rows.append(("load .gsdb (s)", f"{t_gsdb:.3f}", "", ""))
    info["db"] = {"sequences": db.n_seqs, "residues": db.n_residues}
    print(f"db: {db.n_seqs:,} sequences, {db.n_residues:,} residues", flush=True)

    # --- kernels alone ----------------------------------------------------------------
    import cupy as cp
    from gpu_search.hmmer.gpu import GpuBackend
    from gpu_search.hmmer.profile import FilterProfile

    info["device"] = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    t_up, backend = timed(lambda: GpuBackend(db))
    rows.append(("upload db to GPU (s)", f"{t_up:.2f}", "", ""))
    hmms20 = read_hmms(models)
    allidx = np.arange(db.n_seqs)
    kernel_rows, sweep = [], []
    from gpu_search.hmmer.gpu import msv_geometry, viterbi_geometry

    def kernel_time(fn, kind, repeat=3):
        best = None
        for _ in range(repeat):
            backend.kernel_seconds[kind] = 0.0
            fn()
            best = backend.kernel_seconds[kind] if best is None else min(best, backend.kernel_seconds[kind])
        return best

    for hmm in [hmms20[i] for i in (1, 0, 2)] + [h for h in hmms20 if h.M > 1000][:1]:
        prof = FilterProfile.from_hmm(hmm)
        cells = prof.M * db.n_residues
        # MSV: sweep the geometry (cells per lane) on the whole database
        for cpl in (8, 16, 32, 64):
            geo = msv_geometry(prof.M, cpl)
            backend.msv(prof, allidx[:2000], geo)                       # compile
            t = kernel_time(lambda: backend.msv(prof, allidx, geo), "msv")
            sweep.append((hmm.name, prof.M, "msv", geo.G, geo.W, cells / t / 1e9))
        # Viterbi: the default geometry with and without its switches (REDUX, transitions in
        # registers); bench/probes/viterbi_sweep.py sweeps them all
        default = viterbi_geometry(prof.M)
        for label, geo in (("viterbi", default), ("vit/int32", viterbi_geometry(prof.M, cells=1))):
            backend.viterbi(prof, allidx[:2000], geo)                   # compile
            t = kernel_time(lambda: backend.viterbi(prof, allidx, geo), "viterbi", repeat=1)
            sweep.append((hmm.name, prof.M, label, geo.G, geo.W, cells / t / 1e9))
        # the defaults, each compiled and its profile built before it is timed
        backend.msv(prof, allidx[:2000])
        backend.viterbi(prof, allidx[:2000])
        t_msv = kernel_time(lambda: backend.msv(prof, allidx), "msv")
        t_vit = kernel_time(lambda: backend.viterbi(prof, allidx), "viterbi", repeat=2)
        t_call, _ = timed(lambda: backend.msv(prof, allidx), repeat=3)
        kernel_rows.append((hmm.name, prof.M, cells / t_msv / 1e9, cells / t_vit / 1e9, t_msv, t_call))
        print(f"kernel {hmm.name} M={prof.M}: MSV {cells / t_msv / 1e9:.0f} GCUPS "
              f"(call {t_call * 1e3:.0f} ms, kernel {t_msv * 1e3:.0f} ms), "
              f"Viterbi {cells / t_vit / 1e9:.0f} GCUPS", flush=True)
    info["kernels"] = kernel_rows
    info["sweep"] = sweep
    for row in sweep:
        print("sweep %-16s M=%-5d %-10s G=%-2d W=%-3d %7.0f GCUPS" % row)

    # --- end to end ---------------------------------------------------------------------
    opts = SearchOptions()

    def ours(hmms):
        return list(search.hmmsearch(hmms, db, opts, device="gpu", cpus=args.cpus, backend=backend))

    def theirs(hmms):
        Z = float(db.n_seqs)
        return list(pyhmmer.hmmsearch(hmms, block, cpus=args.cpus, Z=Z))

    one = [hmms20[0]]
    ours(one)                                    # warm up (compiles the kernels)
    t_g1, r_g1 = timed(lambda: ours(one), repeat=2)
    print("1 model stage times (s): " + ", ".join(f"{k} {v:.3f}" for k, v in r_g1[0].seconds.items()))
    import cProfile
    import pstats

    prof_1 = cProfile.Profile()
    prof_1.enable()
    ours(one)
    prof_1.disable()
    buf = io.StringIO()
    pstats.Stats(prof_1, stream=buf).sort_stats("cumulative").print_stats(25)
    (Path(args.out) / "profile_one_model.txt").write_text(buf.getvalue())
    print("\n".join(buf.getvalue().splitlines()[:45]), flush=True)
    t_c1, r_c1 = timed(lambda: theirs(one))
    same1 = tables([r.hits for r in r_g1]) == tables(r_c1)
    rows.append((f"1 model ({one[0].name}, M={one[0].M}) (s)", f"{t_g1:.2f}", f"{t_c1:.2f}", f"{t_c1 / t_g1:.1f}x"))
    rows.append(("  hits / identical", str(sum(len(r.hits) for r in r_g1)), str(sum(len(h) for h in r_c1)), str(same1)))
    ours(hmms20)
    t_g20, r_g20 = timed(lambda: ours(hmms20))
    stage = {}
    for r in r_g20:
        for k, v in (r.seconds or {}).items():
            stage[k] = stage.get(k, 0.0) + v
    info["stages_20"] = stage
    print("20 models, summed stage times (s): " + ", ".join(f"{k} {v:.2f}" for k, v in stage.items()), flush=True)
    t_c20, r_c20 = timed(lambda: theirs(hmms20))
    same20 = tables([r.hits for r in r_g20]) == tables(r_c20)
    rows.append(("20 models (s)", f"{t_g20:.2f}", f"{t_c20:.2f}", f"{t_c20 / t_g20:.1f}x"))
    rows.append(("  hits / identical", str(sum(len(r.hits) for r in r_g20)), str(sum(len(h) for h in r_c20)), str(same20)))
    info["end_to_end"] = {"one": [t_g1, t_c1, same1], "twenty": [t_g20, t_c20, same20]}

    exe = shutil.which("hmmsearch")
    if exe:
        for label, hmmfile in (("1 model", None), ("20 models", models)):
            if hmmfile is None:
                hmmfile = work / "one.hmm"
                with open(hmmfile, "wb") as fh:
                    one[0].write(fh)
            cmd = [exe, "--cpu", str(args.cpus), "-o", "/dev/null", "--tblout", str(work / "bin.tbl"),
                   str(hmmfile), str(fasta)]
            t_bin, _ = timed(lambda: subprocess.run(cmd, check=True, capture_output=True))
            ver = subprocess.run([exe, "-h"], capture_output=True, text=True).stdout.split("\n")[1]
            rows.append((f"hmmsearch binary {label} (s)", "", f"{t_bin:.2f}", ver.strip("# ")[:20]))

    # --- table ----------------------------------------------------------------------------
    Path(args.out).mkdir(parents=True, exist_ok=True)
    with open(Path(args.out) / "hmmsearch_bench.json", "w") as fh:
        json.dump({"rows": rows, **info}, fh, indent=1, default=str)
    print()
    print(f"device: {info['device']}; CPU threads for baselines: {args.cpus}")
    print(f"{'kernel (GPU time)':28} {'M':>5} {'MSV GCUPS':>10} {'Vit GCUPS':>10} {'MSV call ms':>12}")
    for name, M, g1, g2, _, tc in kernel_rows:
        print(f"{name:28} {M:>5} {g1:>10.0f} {g2:>10.0f} {tc * 1e3:>12.0f}")
    print(f"{'measure':40} {'gpu-search':>11} {'pyhmmer':>9} {'ratio':>8}")
    for r in rows:
        print(f"{r[0]:40} {r[1]:>11} {r[2]:>9} {r[3]:>8}")


if __name__ == "__main__":
    main()
