"""What the finishing stage (pyhmmer's Forward, Backward and domain definition of the filters'
survivors) costs in an hmmsearch with many homologs, against pyhmmer's whole search, in one
process on the GPU host.

    python3 bench/probes/finish_probe.py [--models 2000] [--db proteome] [--homologs many]

Times, on the same database and models (built by ``bench/hmmsearch_matrix.py``):

* pyhmmer's ``hmmsearch`` over the whole database on all cores (every filter included), and its
  stage counts (past MSV, bias, Viterbi, Forward);
* our filter cascade on the GPU alone (one thread, batches of ``search.BATCH_MODELS``): how many
  survivors it hands to the finishing stage;
* our finishing stage (``search.Finisher`` in ``search._chunks_by_cells`` pieces on a pool of
  all cores, as the search runs it) over (a) the cascade's survivors, (b) only the sequences
  pyhmmer reported (the least any exact finishing must do); wall time and summed thread time.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(BENCH.parent), str(BENCH)]

import hmmsearch_matrix as matrix  # noqa: E402


def finish_all(finish, hmms, survivors, lengths, cpus, chunks):
    t = time.perf_counter()
    with ThreadPoolExecutor(cpus) as pool:
        futs = [pool.submit(finish, hmm, piece) for hmm, s in zip(hmms, survivors)
                for piece in (chunks(s, lengths, hmm.M) if len(s) else [])]
        thread_s = sum(f.result()[1] for f in futs)
    return time.perf_counter() - t, thread_s, len(futs)


def main():
    ap = argparse.ArgumentParser()
    matrix.add_cell_arguments(ap, homologs="many")
    ap.add_argument("--no-gpu", action="store_true", help="leave out the GPU cascade (a)")
    args = ap.parse_args()
    hmms, db, _, _ = matrix.probe_cell(args)
    import pyhmmer
    from pyhmmer.plan7 import Background

    from gpu_search.hmmer import search
    from gpu_search.hmmer.options import SearchOptions

    abc = hmms[0].alphabet
    block = db.digital_block(None, abc)
    Z = float(db.n_seqs)
    kwargs = SearchOptions().pipeline_kwargs(Z)
    print(f"== {args.models} models x {args.db}, {args.homologs} homologs, {args.cpus} threads")

    t = time.perf_counter()
    tops = list(pyhmmer.hmmsearch(hmms, block, cpus=args.cpus, **kwargs))
    t_py = time.perf_counter() - t
    counts = {k: sum(h.__getstate__()["pipeline"][k] for h in tops)
              for k in ("n_past_msv", "n_past_bias", "n_past_vit", "n_past_fwd")}
    index = {db.name(i): i for i in range(db.n_seqs)}
    reported = [np.array(sorted(index[h.name] for h in top), dtype=np.int64) for top in tops]
    print(f"  pyhmmer hmmsearch, whole search: {t_py:.2f} s; {counts}; reported {sum(map(len, reported))}")

    bg = Background(abc)
    finish = search.Finisher(db, abc, bg, kwargs)
    chunks = search._chunks_by_cells
    if not args.no_gpu:
        from gpu_search.hmmer.cascade import LengthTables, run_cascade_batch
        from gpu_search.hmmer.gpu import GpuBackend
        from gpu_search.hmmer.profile import FilterProfile
        from gpu_search.seqdb import amino_degeneracy

        backend = GpuBackend(db)
        searched = np.arange(db.n_seqs)
        bg_freq = np.asarray(bg.residue_frequencies, dtype=np.float32)
        tables = LengthTables(db, searched, FilterProfile.from_hmm(hmms[0], bg))
        for timed in (False, True):        # the first pass compiles
            t = time.perf_counter()
            survivors = []
            for i in range(0, len(hmms), search.BATCH_MODELS):
                profs = [FilterProfile.from_hmm(h, bg) for h in hmms[i:i + search.BATCH_MODELS]]
                for r in run_cascade_batch(profs, db, backend, F1=0.02, F2=1e-3, F3=1e-5, bias_filter=True,
                                           bg_freq=bg_freq, degeneracy=amino_degeneracy(), searched=searched,
                                           tables=tables):
                    survivors.append(r.survivors)
            if timed:
                n = sum(map(len, survivors))
                kept = sum(len(np.intersect1d(s, r)) for s, r in zip(survivors, reported))
                print(f"  our GPU cascade alone (one thread): {time.perf_counter() - t:.2f} s; "
                      f"{n} survivors, {kept} of pyhmmer's reported among them")
        wall, thread_s, pieces = finish_all(finish, hmms, survivors, db.lengths, args.cpus, chunks)
        print(f"  (a) finishing the cascade's survivors: {wall:.2f} s wall, {thread_s:.1f} thread-s, {pieces} pieces")
    wall, thread_s, pieces = finish_all(finish, hmms, reported, db.lengths, args.cpus, chunks)
    print(f"  (b) finishing only pyhmmer's reported sequences: {wall:.2f} s wall, {thread_s:.1f} thread-s, "
          f"{pieces} pieces")


if __name__ == "__main__":
    main()
