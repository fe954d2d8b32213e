"""Why an hmmsearch command takes longer than the same search in one warm process, on the GPU host.

    python3 bench/probes/cli_gap.py [--models 2000] [--db proteome] [--homologs few] [--runs 2]

One cell (inputs built by ``bench/hmmsearch_matrix.py``, cached under --work), timed four
ways, each in a new interpreter on the matrix's warm kernel cache, alternated --runs times:
the command itself (``gpu-search hmmsearch``, outputs to /dev/null); ``search.hmmsearch``
called in-process on models read as a list, first search of the process ("cold"); the same
process searching again with a new filter backend ("again, new backend"); and again with the
first backend ("again, same backend"), as the in-process probes measure.  With
``--workers 0,2``: then, in the same process and on the same backend, the search consumed by
the command's ``write_outputs`` (main report without alignments and both tables, to
/dev/null) with each number of report workers (``reportworkers``) in turn, --runs times.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(BENCH.parent), str(BENCH)]

import hmmsearch_matrix as matrix  # noqa: E402

CHILD = r'''
import json, sys, time
t0 = time.perf_counter()
import pyhmmer
from gpu_search.hmmer import search
from gpu_search.hmmer.gpu import GpuBackend
from gpu_search.seqdb import open_database
hmm_path, gsdb, cpus = sys.argv[1], sys.argv[2], int(sys.argv[3])
workers, runs = [int(w) for w in sys.argv[4].split(",") if w], int(sys.argv[5])
with pyhmmer.plan7.HMMFile(hmm_path) as fh:
    hmms = list(fh)
db = open_database(gsdb)
out = {"imports and reading": time.perf_counter() - t0}
backend = GpuBackend(db)
for name, b in (("cold", backend), ("again, new backend", None), ("again, same backend", backend)):
    t = time.perf_counter()
    n = sum(len(r.hits) for r in search.hmmsearch(hmms, db, device="gpu", cpus=cpus, backend=b))
    out[name] = time.perf_counter() - t
    out["hits"] = n
if workers:
    import os
    from gpu_search.cli import write_outputs
    from gpu_search.hmmer.options import SearchOptions
    options = SearchOptions(noali=True)
    for _ in range(runs):
        for w in workers:
            t = time.perf_counter()
            write_outputs(search.hmmsearch(hmms, db, options, device="gpu", cpus=cpus, backend=backend), options,
                          hmmfile="m", seqfile="d", output=os.devnull, tblout=os.devnull, domtblout=os.devnull,
                          pfamtblout=None, workers=w)
            out[f"written, {w} workers"] = out.get(f"written, {w} workers", []) + [time.perf_counter() - t]
print(json.dumps(out))
'''


def main():
    ap = argparse.ArgumentParser()
    matrix.add_cell_arguments(ap, "few")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--workers", default="", help="numbers of report workers to compare, e.g. 0,2")
    args = ap.parse_args()
    args.copies, args.base_seqs, args.max_m = dict(matrix.DB_COPIES), 0, matrix.M_MAX
    args.work = args.work.resolve()
    args.work.mkdir(parents=True, exist_ok=True)
    hmm, _ = matrix.build_models(args.models, args)
    _, gsdb, _ = matrix.build_database(args.db, args.homologs, args)
    env = matrix.cache_env(args.work / "cache")
    cmd = matrix.ours_command(args, "gpu", hmm, gsdb, os.devnull, os.devnull)
    subprocess.run(cmd, env=env, check=True, capture_output=True, cwd=args.work)     # (kernel cache filled)
    rows = {}
    for _ in range(1 if args.workers else args.runs):     # (with --workers, the child repeats)
        t = time.perf_counter()
        subprocess.run(cmd, env=env, check=True, capture_output=True, cwd=args.work)
        rows.setdefault("command", []).append(time.perf_counter() - t)
        t = time.perf_counter()
        p = subprocess.run([sys.executable, "-c", CHILD, str(hmm), str(gsdb), str(args.cpus),
                            args.workers, str(args.runs)], env=env,
                           check=True, capture_output=True, text=True, cwd=args.work)
        rows.setdefault("in-process child, whole", []).append(time.perf_counter() - t)
        for k, v in json.loads(p.stdout.splitlines()[-1]).items():
            rows.setdefault(k, []).extend(v if isinstance(v, list) else [v])
    print(f"== {args.models} models x {args.db}, {args.homologs} homologs, {args.cpus} threads")
    for k, v in rows.items():
        print(f"  {k:28s} " + " ".join(f"{x:8.2f}" for x in v))


if __name__ == "__main__":
    main()
