"""blastp benchmark: gpu-search blastp against BLAST+ blastp, same machine, same thread count.

    python bench/blastp_bench.py [--copies 20] [--threads N] [--device cpu|gpu]

Database: pyhmmer's proteome plus COPIES residue-shuffled copies (as
hmmsearch_bench.py; 399 copies = the 273M-residue database of performance.md).
Queries: proteins of about 127, 517 and 1054 residues (cuBLASTP's lengths),
alone, then 10 and 100 proteins of the proteome drawn at random.  Every run
checks that the rows are identical to BLAST+'s; one table at the end.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from hmmsearch_bench import build_database, pyhmmer_data  # noqa: E402

from gpu_search import seqdb  # noqa: E402


def write_queries(path, db, idx):
    with open(path, "w") as fh:
        for i in idx:
            fh.write(f">{db.name(i)} {db.description(i)}\n{db.text(i)}\n")


def blast_programs() -> tuple[str, str]:
    """BLAST+'s blastp and makeblastdb on PATH, or stop saying they are missing."""
    blastp, makeblastdb = shutil.which("blastp"), shutil.which("makeblastdb")
    if not (blastp and makeblastdb):
        raise SystemExit("BLAST+ (blastp, makeblastdb) not found")
    return blastp, makeblastdb


def timed(cmd, env=None):
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{r.stderr}")
    return time.perf_counter() - t, r.stdout


def prepare_databases(copies: int, work: Path, makeblastdb: str):
    """The benchmark database as FASTA, BLAST database and .gsdb (built once per folder).

    Under a lock, each file written whole before it is named: bench/device_run.sh builds
    them in the background while the GPU tests run, and a benchmark started meanwhile
    waits for them here."""
    work.mkdir(parents=True, exist_ok=True)
    with open(work / f"db{copies}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        fasta = work / f"db{copies}.faa"
        if not fasta.exists():
            build_database(copies, work / "building.faa")
            (work / "building.faa").rename(fasta)
        blast_db = work / f"db{copies}"
        if not (work / f"db{copies}.pin").exists() and not (work / f"db{copies}.00.pin").exists():
            subprocess.run([makeblastdb, "-in", str(fasta), "-dbtype", "prot", "-out", str(blast_db)],
                           check=True, capture_output=True)
        gsdb = work / f"db{copies}.gsdb"
        if not gsdb.exists():
            seqdb.write_gsdb(seqdb.open_database(fasta), gsdb)      # (itself written whole, then named)
    return fasta, blast_db, gsdb


def query_sets(base, wanted=("single", "10", "100")) -> dict:
    """cuBLASTP's three lengths (the nearest proteome proteins), then 10 and 100 drawn at random."""
    rng = np.random.default_rng(2026)
    sets = {}
    if "single" in wanted:
        for n in (127, 517, 1054):
            i = int(np.argmin(np.abs(base.lengths - n)))
            sets[f"1 query, {int(base.lengths[i])} aa"] = [i]
    for n in (10, 100):
        drawn = rng.choice(base.n_seqs, n, replace=False).tolist()   # drawn in this order always
        if str(n) in wanted:
            sets[f"{n} queries"] = drawn
    return sets


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=20)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--work", default="/tmp/gsblastbench")
    args = ap.parse_args()
    blastp, makeblastdb = blast_programs()
    work = Path(args.work)
    fasta, blast_db, gsdb = prepare_databases(args.copies, work, makeblastdb)
    db = seqdb.open_database(gsdb)
    base = seqdb.open_database(pyhmmer_data() / "seqs" / "938293.PRJEB85.HG003687.faa")
    sets = query_sets(base)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    rows = []
    # warm the compiled-code caches once (numba), as a real installation has them
    write_queries(work / "warm.faa", base, [0])
    timed([sys.executable, "-m", "gpu_search", "blastp", "-query", str(work / "warm.faa"), "-db", str(gsdb),
           "-comp_based_stats", "0", "-outfmt", "6"], env)
    for label, idx in sets.items():
        q = work / "q.faa"
        write_queries(q, base, idx)
        t_b, out_b = timed([blastp, "-query", str(q), "-db", str(blast_db), "-comp_based_stats",
                            "0", "-outfmt", "6", "-num_threads", str(args.threads)])
        t_o, out_o = timed([sys.executable, "-m", "gpu_search", "blastp", "-query", str(q), "-db", str(gsdb),
                            "-comp_based_stats", "0", "-outfmt", "6", "-num_threads", str(args.threads), "--device", args.device, "-q"], env)
        same = out_b == out_o
        rows.append((label, t_o, t_b, len(out_b.splitlines()), same))
        print(f"{label}: ours {t_o:.2f} s, BLAST+ {t_b:.2f} s, rows {len(out_b.splitlines())}, identical {same}",
              flush=True)
    print(f"\ndatabase: {db.n_seqs:,} sequences, {db.n_residues:,} residues; threads {args.threads}; "
          f"device {args.device}")
    print(f"{'queries':24} {'gpu-search s':>12} {'BLAST+ s':>9} {'ratio':>7} {'rows':>6} identical")
    for label, t_o, t_b, n, same in rows:
        print(f"{label:24} {t_o:>12.2f} {t_b:>9.2f} {t_b / t_o:>6.2f}x {n:>6} {same}")


if __name__ == "__main__":
    main()
