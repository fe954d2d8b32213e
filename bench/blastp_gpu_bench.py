"""blastp on the GPU against BLAST+ blastp with every core of the same host, one run, one table.

    python bench/blastp_gpu_bench.py [--copies 399] [--threads N] [--sets single,10,100]

Database: pyhmmer's proteome plus COPIES residue-shuffled copies (399 copies =
the 273M-residue database of performance.md).  Queries: proteins of about
127, 517 and 1054 residues (cuBLASTP's lengths), then 10 and 100 proteins of
the proteome drawn at random.

Per query set:
* BLAST+ ``blastp -comp_based_stats 0 -num_threads N``: wall time and rows;
* BLAST+ with ``-ungapped`` added: its word finder and ungapped extensions
  (plus the E-values and output of the ungapped HSPs) -- the phases our GPU
  runs; BLAST+ cannot time its phases separately;
* gpu-search blastp --device gpu end to end (a fresh process, database read
  from a .gsdb): wall time, rows, rows identical to BLAST+'s;
* the same with ``--cpu-gapped`` (preliminary gapped extensions on CPU
  threads only; "!" after its time if its output differed);
* our GPU phases in-process (database already on the GPU): lookup tables,
  hit detection, binning, two-hit filter and ungapped extension of every
  query, init HSPs in BLAST's order; one query after another on one engine,
  then as the tool runs them (``BlastSettings().streams`` engines, each on its own
  CUDA stream and host thread, taking the next query);
* with ``--others``: DIAMOND and MMseqs2 on the same queries and threads, their
  time and how many of BLAST+'s hits each finds (``blastp_others.py``).

The last set is also run with other settings where asked: command-line options of
``gpu-search blastp`` (``--streams``, ``--cells``) as options, ``BlastSettings`` fields
(``--switch-intervals``, ``--prelim-batches``... ``--settings``) through
``blastp_with_settings.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from blastp_bench import blast_programs, prepare_databases, query_sets, timed, write_queries  # noqa: E402
from blastp_others import compare_others, find_tools, print_table  # noqa: E402
from hmmsearch_bench import pyhmmer_data  # noqa: E402

from gpu_search import seqdb  # noqa: E402
from gpu_search.blast.settings import BlastSettings  # noqa: E402

GPU_STREAMS = BlastSettings().streams       # engines per GPU in a run of the tool
DRIVER = Path(__file__).with_name("blastp_with_settings.py")


def our_blastp(gsdb, threads: int, settings: dict | None = None, timings: bool = False,
               timeline: Path | None = None) -> list[str]:
    """Our blastp on the GPU as the benchmarks run it (add ``-query``).

    settings: None, the command itself (``python -m gpu_search``); else a dict of
    ``BlastSettings`` fields, the command run by ``blastp_with_settings.py`` with them.
    timings: print where the time went on stderr (``--timings``); timeline: write every
    timed interval to this file (``--timeline``, read by probes/timeline.py).
    """
    if settings is None:
        head = [sys.executable, "-m", "gpu_search"]
        tail = ["--timings"] * timings + (["--timeline", str(timeline)] if timeline else [])
    else:
        fields = dict(settings, **({"timings": True} if timings else {}),
                      **({"timeline": str(timeline)} if timeline else {}))
        head, tail = [sys.executable, str(DRIVER), json.dumps(fields)], []
    return head + ["blastp", "-db", str(gsdb), "-comp_based_stats", "0", "-outfmt", "6", "-num_threads",
                   str(threads), "--device", "gpu", "-q"] + tail


def our_env(work: Path) -> dict:
    """The environment of our runs: this checkout's package, and bytecode kept under ``work``.

    An installed tool has its modules' bytecode: pip compiles it at install (our container
    too).  Where this host's Python packages have none and it may not be written
    (PYTHONDONTWRITEBYTECODE), every run would compile numpy, numba, CuPy... again: our runs
    keep their bytecode under the work folder, written by the warm-up runs.
    """
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent),
               PYTHONPYCACHEPREFIX=str(Path(work) / "pycache"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


class QuerySet:
    """The proteome's sequences idx as a query set (what pipeline.new_work reads)."""

    def __init__(self, base, idx):
        self.base, self.idx, self.n_seqs = base, idx, len(idx)

    def sequence(self, i):
        return self.base.sequence(self.idx[i])


def gpu_phases(db, base, idx, threads, streams=1):
    """Seconds for our GPU phases of the queries (database already uploaded), and init HSPs found.

    ``streams`` 1: one query after another on one engine (the lookup table built,
    then the kernels, then the next query).  More: as ``run_blastp`` runs them,
    that many engines on the GPU (``GpuUngapped.worker``), each on its own CUDA
    stream and host thread taking the next query, with the interpreter's switch
    interval of GPU runs (``BlastSettings().switch_interval``); the wall time of all
    the queries.
    """
    import threading

    from gpu_search.blast import pipeline
    from gpu_search.blast.options import BlastOptions

    setup = pipeline.make_setup(db, BlastOptions(num_threads=threads))
    gpu = gpu_phases.engine_cache.get(id(db))
    if gpu is None:
        from gpu_search.blast.gpu import GpuUngapped

        t = time.perf_counter()
        gpu = GpuUngapped(setup.residues, setup.offsets)
        gpu_phases.upload = time.perf_counter() - t
        gpu_phases.engine_cache[id(db)] = gpu
    twins = gpu_phases.twins.setdefault(id(db), [])
    while len(twins) < streams - 1:
        twins.append(gpu.worker())
    engines = [gpu] + twins[:streams - 1]
    q = QuerySet(base, idx)
    per_query, n_init = [None] * q.n_seqs, [0] * q.n_seqs
    nxt, lock = [0], threading.Lock()

    def run(g):
        while True:
            with lock:
                i = nxt[0]
                nxt[0] += 1
            if i >= q.n_seqs:
                return
            t1 = time.perf_counter()
            work = pipeline.new_work(i, q)
            pipeline.ungapped_stage(work, setup, g)
            n_init[i] = len(work.init)
            per_query[i] = (time.perf_counter() - t1, len(work.codes), len(work.init), g.overflowed)

    switch = sys.getswitchinterval()
    t = time.perf_counter()
    if streams == 1:
        run(gpu)
    else:
        sys.setswitchinterval(BlastSettings().switch_interval)
        pool = [threading.Thread(target=run, args=(g,)) for g in engines]
        for th in pool:
            th.start()
        for th in pool:
            th.join()
        sys.setswitchinterval(switch)
    elapsed = time.perf_counter() - t
    if None in per_query:
        raise SystemExit("gpu_phases: a query failed")
    gpu_phases.slowest = sorted(per_query, reverse=True)[:5]
    return elapsed, sum(n_init)


def streamed_passes(db, base, idx, threads, batches, n_chunks=4):
    """Our GPU phases of the queries with the database streamed through the GPU in chunks of
    a n_chunks-th of its residues (as one larger than GPU memory is; whole sequences, so
    there may be one more), queries searched in batches of each size
    in ``batches``, one pass over the database (each chunk uploaded once) per batch.

    Returns ([(batch size, seconds, init HSPs)], chunks); the init HSPs of every batch
    size must be the same arrays, query by query.
    """
    from gpu_search.blast import pipeline
    from gpu_search.blast.gpu import GpuUngapped
    from gpu_search.blast.options import BlastOptions

    setup = pipeline.make_setup(db, BlastOptions(num_threads=threads))
    gpu = GpuUngapped(setup.residues, setup.offsets, streamed=True,
                      max_chunk_residues=len(setup.residues) // n_chunks + 1)
    q, first, timed_runs = QuerySet(base, idx), None, []
    for b in batches:
        t = time.perf_counter()
        works = []
        for start in range(0, q.n_seqs, b):
            batch = [pipeline.new_work(i, q) for i in range(start, min(q.n_seqs, start + b))]
            pipeline.ungapped_batch([(w, pipeline.prepare_query(w, setup)) for w in batch], setup, gpu)
            works += batch
        elapsed = time.perf_counter() - t
        if first is None:
            first = [w.init for w in works]
        elif not all(np.array_equal(a, w.init) for a, w in zip(first, works)):
            raise SystemExit(f"streamed_passes: batches of {b} found other init HSPs")
        timed_runs.append((b, elapsed, sum(len(w.init) for w in works)))
    return timed_runs, len(gpu.chunks)


gpu_phases.engine_cache = {}
gpu_phases.twins = {}
gpu_phases.upload = 0.0


def process_lifetime(stderr: str, launched: float, ended: float) -> str:
    """Where a run's wall time went, from its stamps (``--timings``): start-up to the
    command line's module, its imports and reading the inputs, the search, then the exit."""
    line = next((x for x in stderr.splitlines() if "stamps (epoch s):" in x), None)
    if line is None:
        return "no stamps"
    stamps = dict(kv.split("=") for kv in line.split(": ", 1)[1].split())
    t = [launched] + [float(v) for v in stamps.values()] + [ended]
    names = ["interpreter start", "imports, inputs", "search", "output, exit"]
    return "  ".join(f"{n} {b - a:.2f}" for n, a, b in zip(names, t, t[1:]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=399)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--sets", default="single,10,100")
    ap.add_argument("--work", default="/tmp/gsblastbench")
    ap.add_argument("--out", default=None, help="folder for results.json")
    ap.add_argument("--streams", default="", help="also run the last set with these --gpu-streams, e.g. 1,2,4")
    ap.add_argument("--cells", default="", help="also run the last set with these --gpu-gapped-cells, e.g. 16384")
    # BlastSettings fields (bench/blastp_with_settings.py runs the command with them)
    ap.add_argument("--switch-intervals", default="",
                    help="also run the last set with these GIL switch intervals in ms, e.g. 5,0.5 "
                         "(switch_interval)")
    ap.add_argument("--prelim-batches", default="",
                    help="also run the last set with at most these queries per launch of the GPU's "
                         "preliminary gapped kernel, e.g. 1,4 (gapped_batch)")
    ap.add_argument("--prelim-threads", default="",
                    help="also run the last set with these numbers of threads per GPU launching the "
                         "preliminary gapped kernel, e.g. 1,3 (gapped_threads)")
    ap.add_argument("--traceback-processes", default="",
                    help="also run the last set with the traceback in worker processes (1) or on threads "
                         "(0) (traceback_processes)")
    ap.add_argument("--gapped-kernels", default="",
                    help="also run the last set with these preliminary gapped kernels, e.g. thread "
                         "(gapped_kernel: a thread per subject instead of a warp)")
    ap.add_argument("--prefilter", default="",
                    help="also run the last set with the window-based extension's bins that cannot trigger "
                         "struck off first (1) or not (0), e.g. 1,0 (prefilter)")
    ap.add_argument("--streamed-batches", default="",
                    help="also time the last set's GPU phases, and run it end to end, with the database "
                         "streamed through the GPU in chunks of a quarter of it and these queries per pass, e.g. 1,32 "
                         "(stream_residues, queries_per_pass)")
    ap.add_argument("--resident-batches", default="",
                    help="also run the last set with these queries per pass over the resident database, "
                         "e.g. 1,4 (queries_per_pass)")
    ap.add_argument("--settings", default="",
                    help="also run the last set with each of these BlastSettings, JSON objects separated by "
                         "';', e.g. '{\"extension\": \"diagonal\"};{\"window_lanes\": 8}'")
    ap.add_argument("--others", action="store_true",
                    help="also run DIAMOND and MMseqs2 on every set (bench/blastp_others.py)")
    ap.add_argument("--timeline", action="store_true",
                    help="keep the last set's main run's timeline (--timeline) and summarise it "
                         "(bench/probes/timeline.py)")
    args = ap.parse_args()
    blastp, makeblastdb = blast_programs()
    tools = find_tools() if args.others else {}
    if tools:
        print("other tools:", tools, flush=True)
    t0 = time.perf_counter()
    work = Path(args.work)
    fasta, blast_db, gsdb = prepare_databases(args.copies, work, makeblastdb)
    db = seqdb.open_database(gsdb)
    print(f"database ready in {time.perf_counter() - t0:.0f} s: {db.n_seqs:,} sequences, "
          f"{db.n_residues:,} residues", flush=True)
    base = seqdb.open_database(pyhmmer_data() / "seqs" / "938293.PRJEB85.HG003687.faa")
    sets = query_sets(base, args.sets.split(","))
    env = our_env(work)
    bytecode = ("import os, sys, numpy; print('bytecode written:', not sys.dont_write_bytecode, "
                "'; numpy ships its bytecode:', os.path.isdir(os.path.join(os.path.dirname(numpy.__file__), "
                "'__pycache__')))")
    print(subprocess.run([sys.executable, "-c", bytecode], capture_output=True, text=True).stdout.strip(),
          "(here, before our runs' own)", flush=True)
    ours = our_blastp(gsdb, args.threads)
    # compiled-code caches warm (numba, NVRTC), as in an installed tool after its first run
    write_queries(work / "warm.faa", base, [0])
    # (--cpu-gapped too: numba's gapped code, which the GPU runs reach only for some subjects)
    timed_ours = our_blastp(gsdb, args.threads, timings=True)
    for extra in ([], [], ["--cpu-gapped"]):
        r = subprocess.run(timed_ours + ["-query", str(work / "warm.faa")] + extra, capture_output=True,
                           text=True, env=env)
        print("warm-up run:", r.stderr.strip().splitlines()[-1:] if r.stderr else "", flush=True)
    # what a run costs before its search starts: the interpreter, our imports, CuPy's, CUDA's start
    probe = ("import time; t0 = time.perf_counter(); import gpu_search.cli, gpu_search.blast.engine; "
             "t1 = time.perf_counter(); import cupy; t2 = time.perf_counter(); cupy.zeros(1); "
             "t3 = time.perf_counter(); print(f'imports {t1 - t0:.2f} s, CuPy import {t2 - t1:.2f} s, "
             "CUDA start {t3 - t2:.2f} s')")
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env)
    print(f"start-up probe: {r.stdout.strip()}; whole process {time.perf_counter() - t:.2f} s", flush=True)
    # every kernel variant (block size by query length; the diagonal-based extension of
    # low-complexity queries, proteome protein 863) loaded once before timing
    gpu_phases(db, base, [int(np.argmin(np.abs(base.lengths - n))) for n in (127, 1038, 2627)] + [863],
               args.threads)
    results, blast_rows = [], {}           # blast_rows: BLAST+'s output per set (for --others)
    for label, idx in sets.items():
        q = work / "q.faa"
        write_queries(q, base, idx)
        blast = [blastp, "-query", str(q), "-db", str(blast_db), "-comp_based_stats", "0", "-outfmt", "6",
                 "-num_threads", str(args.threads)]
        t_b, out_b = timed(blast)
        t_bu, _ = timed(blast + ["-ungapped"])
        t, launched = time.perf_counter(), time.time()
        timeline = work / "timeline.json"
        main_run = our_blastp(gsdb, args.threads, timings=True, timeline=timeline if args.timeline else None)
        r = subprocess.run(main_run + ["-query", str(q)], capture_output=True, text=True, env=env)
        t_o, out_o = time.perf_counter() - t, r.stdout
        lifetime = process_lifetime(r.stderr, launched, time.time())
        if r.returncode:
            raise SystemExit(f"gpu-search failed: {r.stderr}")
        phases = [line for line in r.stderr.splitlines() if "timings" in line]
        t = time.perf_counter()
        r = subprocess.run(ours + ["-query", str(q), "--cpu-gapped"], capture_output=True, text=True, env=env)
        t_c, same_c = time.perf_counter() - t, r.stdout == out_o and not r.returncode
        t_g, n_init = gpu_phases(db, base, idx, args.threads)
        slowest = gpu_phases.slowest
        # as the tool runs them: GPU_STREAMS engines on the GPU, queries taken in turn
        t_gs, n_init_s = gpu_phases(db, base, idx, args.threads, streams=GPU_STREAMS)
        rb, ro = out_b.splitlines(), out_o.splitlines()
        same = sum(1 for a, b in zip(sorted(rb), sorted(ro)) if a == b) if rb != ro else len(rb)
        r = dict(queries=label, blast_s=t_b, blast_ungapped_s=t_bu, ours_s=t_o, ours_gpu_phases_s=t_g,
                 ours_gpu_phases_streams_s=t_gs, gpu_streams=GPU_STREAMS, init_hsps_streams_equal=n_init_s == n_init,
                 ours_cpu_gapped_s=t_c, cpu_gapped_identical=same_c,
                 init_hsps=n_init, rows_blast=len(rb), rows_ours=len(ro), identical=rb == ro,
                 rows_equal_sorted=same, our_phases=phases[-1] if phases else "", lifetime=lifetime)
        r["slowest_queries_s_len_init_overflowed"] = slowest
        if tools:
            r["others"] = compare_others(q, fasta, work, args.threads, out_b, t_b, tools)
            blast_rows[label] = out_b
        results.append(r)
        print(json.dumps(r), flush=True)
    sweep = []
    streamed, n_chunks = [], 0
    if args.streamed_batches:
        streamed, n_chunks = streamed_passes(db, base, idx, args.threads,
                                             [int(x) for x in args.streamed_batches.split(",") if x.strip()])
        for b, t, n in streamed:
            print(f"GPU phases, database streamed in {n_chunks} chunks, {b} queries per pass: {t:.2f} s, "
                  f"{n} init HSPs (resident, one after another: {results[-1]['init_hsps']})", flush=True)

    def as_field(name, read=int):
        return lambda x: {name: read(x)}

    def on_off(name):
        return lambda x: {name: x.lower() in ("1", "true", "on", "yes")}

    chunk = db.n_residues // 4 + 1           # (as streamed_passes: quarters)
    # (label, values, how a value is given: None for a command-line option of gpu-search blastp,
    # else a function giving the BlastSettings fields that set it)
    settings = [("--gpu-streams", args.streams, None), ("--gpu-gapped-cells", args.cells, None),
                ("switch interval ms", args.switch_intervals, as_field("switch_interval", lambda ms: float(ms) / 1000)),
                ("queries per gapped launch", args.prelim_batches, as_field("gapped_batch")),
                ("gapped threads per GPU", args.prelim_threads, as_field("gapped_threads")),
                ("traceback processes", args.traceback_processes, on_off("traceback_processes")),
                ("gapped kernel", args.gapped_kernels, as_field("gapped_kernel", str)),
                ("bins struck off first", args.prefilter, on_off("prefilter")),
                ("resident, queries per pass", args.resident_batches, as_field("queries_per_pass")),
                (f"streamed in {n_chunks} chunks, queries per pass", args.streamed_batches,
                 lambda n: {"stream_residues": chunk, "queries_per_pass": int(n)})]
    options = [(opt, x.strip(), how) for opt, values, how in settings for x in values.split(",") if x.strip()]
    options += [("settings", x.strip(), json.loads) for x in args.settings.split(";") if x.strip()]
    for opt, n, how in options:
        if how is None:
            cmd = our_blastp(gsdb, args.threads, timings=True) + [opt, n]
        else:
            cmd = our_blastp(gsdb, args.threads, settings=how(n), timings=True)
        t = time.perf_counter()
        r = subprocess.run(cmd + ["-query", str(q)], capture_output=True, text=True, env=env)
        sweep.append((f"{opt} {n}", time.perf_counter() - t, r.stdout == out_o and not r.returncode,
                      r.stderr.strip().splitlines()[-1:]))
        print(f"{opt} {n}: {sweep[-1][1]:.2f} s, same rows: {sweep[-1][2]}  {sweep[-1][3]}", flush=True)
    name = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                          text=True).stdout.strip().splitlines()[0]
    commit = os.environ.get("GIT_COMMIT") or subprocess.run(  # the GPU host's copy may hold a stale .git
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    print(f"\n{name}, {args.threads} CPU threads, commit {commit or '?'}; database {db.n_seqs:,} sequences, "
          f"{db.n_residues:,} residues (upload to the GPU {gpu_phases.upload:.2f} s)")
    print(f"our GPU phases: one query after another; 'streams': {GPU_STREAMS} engines (CUDA streams, host "
          f"threads) on the GPU taking queries in turn, as the tool runs them ('!': other init HSPs)")
    print(f"{'queries':22} {'BLAST+ s':>9} {'ours s':>7} {'ratio':>6} {'--cpu-gapped s':>14} | "
          f"{'BLAST+ -ungapped s':>18} {'our GPU phases s':>16} {'ratio':>6} {'streams s':>9} {'ratio':>6} | "
          f"{'rows':>6} identical")
    for r in results:
        print(f"{r['queries']:22} {r['blast_s']:>9.2f} {r['ours_s']:>7.2f} {r['blast_s'] / r['ours_s']:>5.1f}x "
              f"{r['ours_cpu_gapped_s']:>13.2f}{'' if r['cpu_gapped_identical'] else '!'} | "
              f"{r['blast_ungapped_s']:>18.2f} {r['ours_gpu_phases_s']:>16.2f} "
              f"{r['blast_ungapped_s'] / r['ours_gpu_phases_s']:>5.1f}x "
              f"{r['ours_gpu_phases_streams_s']:>9.2f} {r['blast_ungapped_s'] / r['ours_gpu_phases_streams_s']:>5.1f}x"
              f"{'' if r['init_hsps_streams_equal'] else '!'} | {r['rows_blast']:>6} {r['identical']}")
    for n, t, same, _ in sweep:
        print(f"{label} with {n}: {t:.2f} s ({results[-1]['blast_s'] / t:.1f}x BLAST+), "
              f"same rows: {same}")
    for b, t, n in streamed:
        print(f"{label}, GPU phases, database streamed in {n_chunks} chunks, {b} queries per pass: {t:.2f} s "
              f"({results[-1]['blast_ungapped_s'] / t:.1f}x BLAST+ -ungapped), init HSPs "
              f"{'the same' if n == results[-1]['init_hsps'] else 'OTHER'}")
    print("our phases (seconds summed over threads), end-to-end runs:")
    for r in results:
        print(f"  {r['queries']:20} {r['our_phases'].split(': ', 1)[-1]}")
    print("our process's life, end-to-end runs (s):")
    for r in results:
        print(f"  {r['queries']:20} {r['lifetime']}")
    for r in results:
        if "others" in r:
            print_table(f"{r['queries']}, {args.threads} threads", r["blast_s"], blast_rows[r["queries"]], r["others"],
                        ours=("gpu-search blastp (GPU)", r["ours_s"], r["identical"]))
    if args.timeline:
        print(f"timeline of the last set's main run ({timeline}):", flush=True)
        subprocess.run([sys.executable, str(Path(__file__).parent / "probes" / "timeline.py"), str(timeline),
                        "--step", "1"])
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        if args.timeline:
            shutil.copy(timeline, Path(args.out) / "timeline.json")
        (Path(args.out) / "blastp_gpu_bench.json").write_text(json.dumps(dict(device=name, commit=commit,
                                                                                results=results), indent=1))


if __name__ == "__main__":
    main()
