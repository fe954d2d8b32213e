"""Where an hmmsearch run with many models spends its time, on the GPU host.

    python bench/probes/hmmsearch_profile.py [--models 200] [--db proteome] [--homologs many,few]

For each cell (inputs built by ``bench/hmmsearch_matrix.py``, cached under --work):

* in-process: ``gpu_search.hmmer.search.hmmsearch(..., device="gpu")`` over the models
  (one untimed warm-up run first; --filter-threads: timed again with each number of filter
  threads), with the sum of each stage's seconds over the models (``SearchResult.seconds``:
  the cascade's stages on the filter threads, the finishing stage's CPU seconds), the GPU's
  kernel seconds, and our CPU path (pyhmmer's ``hmmsearch`` over the same database, all
  cores) timed in the same process unless --no-cpu; --impl: another checkout's gpu_search;
* through the command line: py-spy ``--gil`` (who holds the interpreter's lock) and plain
  (every thread's innermost frames), summarised by thread role (filter threads, finishing
  threads, the main thread).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(BENCH.parent), str(BENCH)]

import hmmsearch_matrix as matrix  # noqa: E402


def role_of(name: str) -> str:
    for prefix, role in (("MainThread", "main"), ("filter", "filter threads"), ("finish", "finish threads")):
        if name.startswith(prefix):
            return role
    return name.split("_")[0] or "other"


def summarise(raw: Path, wall: float, rate: int, top: int = 14) -> None:
    roles = defaultdict(lambda: [Counter(), Counter(), set()])
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack:
            continue
        thread, _, frames = stack.partition(";")
        tid, _, name = thread.partition(": ")
        role = roles[role_of(name)]
        names = frames.split(";")
        role[0][names[-1]] += int(n)
        mine = [f for f in names if "gpu_search/" in f]
        role[1][mine[-1] if mine else "(none of ours)"] += int(n)
        role[2].add(tid)
    total = sum(sum(r[0].values()) for r in roles.values())
    print(f"  {total} samples at {rate}/s = {total / rate:.2f} thread-s in a {wall:.2f} s run")
    for role, (own, ours, threads) in sorted(roles.items(), key=lambda kv: -sum(kv[1][0].values())):
        n = sum(own.values())
        print(f"  {role}: {n / rate:.2f} s ({len(threads)} threads); innermost frame / innermost of ours:")
        for (f, k), (g, j) in zip(own.most_common(top), ours.most_common(top)):
            print(f"    {k / rate:7.3f} {f[:70]:70s} {j / rate:7.3f} {g[:90]}")


def in_process(hmm_path, gsdb, cpus, with_cpu=True, filter_threads=None):
    import pyhmmer

    import gpu_search
    from gpu_search.hmmer.gpu import GpuBackend
    from gpu_search.hmmer.search import hmmsearch
    from gpu_search.seqdb import open_database

    db = open_database(str(gsdb))
    with pyhmmer.plan7.HMMFile(str(hmm_path)) as fh:
        hmms = list(fh)
    backend = GpuBackend(db)
    list(hmmsearch(hmms, db, device="gpu", cpus=cpus, backend=backend))     # warm-up: compiles
    for threads in filter_threads or []:          # an A/B of the number of filter threads
        t = time.perf_counter()
        list(hmmsearch(hmms, db, device="gpu", cpus=cpus, backend=backend, filter_threads=threads))
        print(f"  in-process gpu, {threads} filter threads: {time.perf_counter() - t:.2f} s", flush=True)
    for k in backend.kernel_seconds:
        backend.kernel_seconds[k] = 0.0
    t = time.perf_counter()
    results = list(hmmsearch(hmms, db, device="gpu", cpus=cpus, backend=backend))
    wall = time.perf_counter() - t
    stages = Counter()
    for r in results:
        stages.update(r.seconds or {})
    n_hits = sum(len(r.hits) for r in results)
    print(f"  gpu_search from {Path(gpu_search.__file__).parent}")
    print(f"  in-process gpu: {wall:.2f} s ({len(hmms)} models, {n_hits} hits)")
    if with_cpu:
        t = time.perf_counter()
        cpu = list(hmmsearch(hmms, db, device="cpu", cpus=cpus))
        wall_cpu = time.perf_counter() - t
        same = all(len(a.hits) == len(b.hits) for a, b in zip(results, cpu))
        print(f"  our cpu path (pyhmmer.hmmsearch): {wall_cpu:.2f} s; same hit counts: {same}")
    print("  stage seconds summed over models: " + ", ".join(f"{k} {v:.2f}" for k, v in stages.items()))
    print("  kernel seconds: " + ", ".join(f"{k} {v:.3f}" for k, v in backend.kernel_seconds.items()))
    survivors = [r.stats.n_past_vit for r in results]
    print(f"  survivors (past Viterbi) per model: mean {sum(survivors) / len(survivors):.0f}, "
          f"max {max(survivors)}; sum {sum(survivors)}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", type=int, default=200)
    ap.add_argument("--db", default="proteome")
    ap.add_argument("--homologs", default="many,few")
    ap.add_argument("--cpus", type=int, default=os.cpu_count())
    ap.add_argument("--rate", type=int, default=200)
    ap.add_argument("--work", type=Path, default=Path("/tmp/gsmatrix"))
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", ".")))
    ap.add_argument("--no-spy", action="store_true")
    ap.add_argument("--impl", type=Path, help="a folder holding another gpu_search (an A/B against an older commit)")
    ap.add_argument("--no-cpu", action="store_true", help="leave out the in-process CPU path")
    ap.add_argument("--filter-threads", type=lambda v: [int(x) for x in v.split(",")],
                    help="numbers of filter threads to time in-process, e.g. 4,8")
    args = ap.parse_args()
    if args.impl:
        sys.path.insert(0, str(args.impl))
    args.copies, args.base_seqs, args.max_m = dict(matrix.DB_COPIES), 0, matrix.M_MAX
    args.work.mkdir(parents=True, exist_ok=True)
    spy = shutil.which("py-spy")
    hmm, _ = matrix.build_models(args.models, args)
    env = matrix.cache_env(args.work / "cache")
    for h in args.homologs.split(","):
        _, gsdb, _ = matrix.build_database(args.db, h, args)
        print(f"\n== {args.models} models x {args.db}, {h} homologs", flush=True)
        in_process(hmm, gsdb, args.cpus, not args.no_cpu, args.filter_threads)
        if args.no_spy:
            continue
        cmd = matrix.ours_command(args, "gpu", hmm, gsdb, os.devnull, os.devnull)
        t = time.perf_counter()
        subprocess.run(cmd, env=env, check=True)
        print(f"  CLI warm: {time.perf_counter() - t:.2f} s", flush=True)
        if spy is None or args.no_spy:
            continue
        for gil in (True, False):
            raw = args.out / f"spy-{h}-{'gil' if gil else 'all'}.txt"
            t = time.perf_counter()
            subprocess.run([spy, "record", *(["--gil"] if gil else []), "--nonblocking", "--threads",
                            "--rate", str(args.rate), "--format", "raw", "-o", str(raw), "--"] + cmd,
                           env=env, capture_output=True)
            wall = time.perf_counter() - t
            print(f"  py-spy {'--gil (lock holders)' if gil else '(every active thread)'}:")
            if raw.exists():
                summarise(raw, wall, args.rate)


if __name__ == "__main__":
    main()
