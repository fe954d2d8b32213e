"""How many of the ungapped kernel's listed bins can trigger the two-hit rule (CPU only).

    python bench/probes/blastp_bins.py [--copies 3] [--lengths 127,517,1038]

For each query (the proteome protein nearest each length) against pyhmmer's
proteome and COPIES residue-shuffled copies: the word hits, the diagonal bins
with hits, the bins with two hits or more (those ungapped.cu lists for step 4)
and, of these, the bins holding two hits W to A - 1 apart: the only ones where
the two-hit rule can ever trigger an extension (the PREFILTER argument in
ungapped.cu's two_hits_in_window).  docs/gpu-design.md quotes the result.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parents[1]          # bench/: the benchmarks these probes build on
sys.path[:0] = [str(BENCH.parent), str(BENCH)]

from hmmsearch_bench import build_database, pyhmmer_data  # noqa: E402

from gpu_search import seqdb  # noqa: E402
from gpu_search.blast import pipeline  # noqa: E402
from gpu_search.blast.options import BlastOptions  # noqa: E402
from gpu_search.blast.wordhits import hit_layout, scan_hits, unpack_hits  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=3)
    ap.add_argument("--lengths", default="127,517,1038")
    ap.add_argument("--window", type=int, default=40)
    args = ap.parse_args()
    base = seqdb.open_database(pyhmmer_data() / "seqs" / "938293.PRJEB85.HG003687.faa")
    fasta = Path(f"/tmp/bins{args.copies}.faa")
    if not fasta.exists():
        build_database(args.copies, fasta)
    setup = pipeline.make_setup(seqdb.open_database(fasta), BlastOptions(num_threads=2))
    ids = np.arange(len(setup.offsets) - 1)

    print(f"{len(ids):,} subjects; two-hit window {args.window}")
    for n in (int(x) for x in args.lengths.split(",")):
        i = int(np.argmin(np.abs(base.lengths - n)))
        work = pipeline.new_work(i, base)       # query i of the proteome
        lookup = pipeline.prepare_query(work, setup)
        keys = scan_hits(lookup, setup.residues, setup.offsets, ids, args.window)
        subject, diag, s_off, _ = unpack_hits(keys, hit_layout(lookup, setup.offsets, ids, args.window))
        order = np.lexsort((s_off, diag, subject))            # bin by bin, hits in subject order
        subject, diag, s_off = subject[order], diag[order], s_off[order]
        first = np.r_[True, (subject[1:] != subject[:-1]) | (diag[1:] != diag[:-1])]
        bin_of = np.cumsum(first) - 1
        sizes = np.bincount(bin_of)
        listed = sizes >= 2
        may_trigger = np.zeros(len(sizes), bool)
        for k in range(1, int(sizes.max())):                  # hit j against hit j - k of its bin
            same = bin_of[k:] == bin_of[:-k]
            gap = s_off[k:] - s_off[:-k]
            may_trigger[bin_of[k:][same & (gap >= lookup.word_size) & (gap < args.window)]] = True
            if not (same & (gap < args.window)).any():
                break
        print(f"query {int(base.lengths[i])} aa: {len(keys):,} word hits in {len(sizes):,} bins; "
              f"{listed.sum():,} bins with two hits or more ({sizes[listed].sum():,} hits); "
              f"{may_trigger.sum():,} of them can trigger ({may_trigger.sum() / max(listed.sum(), 1):.0%}; "
              f"{sizes[may_trigger].sum():,} hits)")


if __name__ == "__main__":
    main()
