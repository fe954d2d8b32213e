"""What a GPU hmmscan would be measured against: a proteome scanned against a Pfam-like model
file by pyhmmer's hmmscan (from the pressed files, as Pfam is used), the same comparisons as
pyhmmer's hmmsearch (models against the proteome), and ``gpu-search hmmscan`` (its CPU path),
each on all cores of this host, in one run; the hmmscan rows compared.

A GPU hmmscan would run hmmscan's comparisons as hmmsearch's engine runs them (the models a
stream, the query sequences the resident database), so the ratio of pyhmmer's hmmscan to its
hmmsearch on the same pairs says how much of hmmsearch's speed-up such a transposition
could carry over.

    python3 bench/probes/hmmscan_baseline.py --models 2000 [--cpus 16] [--timeout 240]

Models: ``bench/hmmsearch_matrix.py``'s single-sequence models (built once under --work);
sequences: the proteome's 2,100 proteins (stop symbols removed).  Each tool is a
subprocess timed by its wall time, reading its files itself.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(BENCH.parent), str(BENCH)]

import hmmscan_bench as bench  # noqa: E402
import hmmsearch_matrix as matrix  # noqa: E402


def pyhmmer_worker(what: str, hmm_path: str, fasta: str, cpus: str, tbl: str) -> None:
    """One pyhmmer side (its own process): hmmscan from the pressed files
    (``hmmscan_bench.pyhmmer_worker``), or hmmsearch."""
    import pyhmmer

    if what == "hmmscan":
        bench.pyhmmer_worker(hmm_path, fasta, cpus, tbl)
        return
    abc = pyhmmer.easel.Alphabet.amino()
    with pyhmmer.easel.SequenceFile(fasta, digital=True, alphabet=abc) as sf:
        seqs = sf.read_block()
    with pyhmmer.plan7.HMMFile(hmm_path) as hf, open(tbl, "wb") as out:
        for hits in pyhmmer.hmmer.hmmsearch(list(hf), seqs, cpus=int(cpus)):
            hits.write(out, format="targets", header=False)


def main():
    if sys.argv[1:2] == ["_pyhmmer"]:
        pyhmmer_worker(*sys.argv[2:7])
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", type=int, default=2000)
    ap.add_argument("--cpus", type=int, default=os.cpu_count())
    ap.add_argument("--timeout", type=float, default=240, help="seconds per tool")
    ap.add_argument("--work", type=Path, default=Path("/tmp/gsmatrix"))
    args = ap.parse_args()
    args.base_seqs, args.max_m = 0, matrix.M_MAX
    args.work.mkdir(parents=True, exist_ok=True)
    hmm, info = matrix.build_models(args.models, args)
    bench.press(hmm)
    names, seqs = matrix.read_proteome(None)
    fasta = args.work / "proteome_queries.faa"
    fasta.write_bytes(b"".join(b">%s\n%s\n" % (n.encode(), s.replace(b"*", b"")) for n, s in zip(names, seqs)))
    logs = args.work / "hmmscan_baseline_logs"
    logs.mkdir(exist_ok=True)
    tbl = {k: args.work / f"hmmscan_baseline_{k}.tbl" for k in ("pyhmmer_hmmscan", "pyhmmer_hmmsearch", "ours")}
    for path in tbl.values():
        path.unlink(missing_ok=True)
    runs = {
        "pyhmmer_hmmscan": [sys.executable, __file__, "_pyhmmer", "hmmscan", str(hmm), str(fasta), str(args.cpus),
                            str(tbl["pyhmmer_hmmscan"])],
        "pyhmmer_hmmsearch": [sys.executable, __file__, "_pyhmmer", "hmmsearch", str(hmm), str(fasta),
                              str(args.cpus), str(tbl["pyhmmer_hmmsearch"])],
        "ours": [sys.executable, "-m", "gpu_search", "hmmscan", "-q", "--cpu", str(args.cpus), "-o", os.devnull,
                 "--noali", "--tblout", str(tbl["ours"]), str(hmm), str(fasta)],
    }
    print(f"{args.models} models (M {info['M_min']}-{info['M_max']}, mean {info['M_mean']}) x "
          f"{len(names)} proteins, {args.cpus} threads each", flush=True)
    t = time.perf_counter()
    row = {k: matrix.run_timed(cmd, args.timeout, logs / f"{k}.log") for k, cmd in runs.items()}
    scan_rows = {k: matrix.table_rows(tbl[k]) for k in ("pyhmmer_hmmscan", "ours")}
    same = scan_rows["ours"] is not None and scan_rows["ours"] == scan_rows["pyhmmer_hmmscan"]
    hits = matrix.table_rows(tbl["pyhmmer_hmmsearch"])

    def secs(k):
        return f"{row[k]['seconds']:.1f}" if row[k].get("rc") == 0 else f"rc {row[k].get('rc')}"

    print(f"({time.perf_counter() - t:.0f} s in all)\n")
    print("| models | proteins | pyhmmer hmmscan (pressed) | pyhmmer hmmsearch | gpu-search hmmscan (CPU) | "
          "hmmscan rows (ours = pyhmmer's) | hmmsearch rows |")
    print("| ---: | ---: | ---: | ---: | ---: | --- | ---: |")
    print(f"| {args.models:,} | {len(names):,} | {secs('pyhmmer_hmmscan')} | {secs('pyhmmer_hmmsearch')} | "
          f"{secs('ours')} | {len(scan_rows['pyhmmer_hmmscan'] or []):,} ({'yes' if same else 'NO'}) | "
          f"{len(hits or []):,} |")


if __name__ == "__main__":
    main()
