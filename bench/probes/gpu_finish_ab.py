"""hmmsearch on the GPU with HMMER's finishing on the GPU (where exact) against all of it on the
CPU threads, in one process on one host, against pyhmmer on every core: wall time, the stages'
summed seconds, hits identical.

The case is finish_cost.py's (single-sequence models of proteome proteins against the proteome
and copies mutated to 90/70/50/35% identity: many homologs).

Usage: python bench/probes/gpu_finish_ab.py [--models N]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from finish_cost import as_database, build  # noqa: E402

from gpu_search.hmmer import search  # noqa: E402
from gpu_search.hmmer.gpu import GpuBackend  # noqa: E402
from gpu_search.hmmer.options import SearchOptions  # noqa: E402


def rows(results) -> list:
    import io

    out = []
    for r in results:
        for fmt in ("targets", "domains"):
            buf = io.BytesIO()
            r.hits.write(buf, format=fmt, header=False)
            out.append(buf.getvalue())
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=1000)
    ap.add_argument("--work", type=Path, default=Path("/tmp/gpu_finish_ab"))
    args = ap.parse_args()
    import pyhmmer

    abc, bg, block, hmms = build(args.models)
    db = as_database(block, args.work)
    cores = os.cpu_count() or 1
    options = SearchOptions(Z=float(db.n_seqs))
    t = time.perf_counter()
    theirs = list(pyhmmer.hmmsearch(hmms, db.digital_block(None, abc), cpus=cores, Z=float(db.n_seqs)))
    t_pyhmmer = time.perf_counter() - t
    backend = GpuBackend(db)
    list(search.hmmsearch(hmms[:40], db, options, device="gpu", backend=backend))    # (kernels loaded)
    out = {}
    for on in (True, False, True):
        t = time.perf_counter()
        results = list(search.hmmsearch(hmms, db, options, device="gpu", backend=backend, gpu_finishing=on))
        wall = time.perf_counter() - t
        stages = {}
        for r in results:
            for k, v in (r.seconds or {}).items():
                stages[k] = stages.get(k, 0.0) + v
        out[on] = (wall, stages, rows(results) == [x for h in theirs for x in rows([type("R", (), {"hits": h})])])
        print(f"gpu finishing {on}: {wall:.2f} s, identical to pyhmmer: {out[on][2]}, stages "
              + ", ".join(f"{k} {v:.1f}" for k, v in stages.items()), flush=True)
    print(f"\n{args.models} models x {db.n_seqs} sequences, {cores} cores")
    print("| run | wall s |")
    print("| --- | ---: |")
    print(f"| pyhmmer, {cores} threads | {t_pyhmmer:.2f} |")
    print(f"| ours, finishing on the GPU where exact | {out[True][0]:.2f} |")
    print(f"| ours, finishing on the CPU threads | {out[False][0]:.2f} |")


if __name__ == "__main__":
    main()
