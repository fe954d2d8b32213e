"""Where the seconds of one ``gpu-search hmmsearch`` (or ``phmmer``) command go, in time order,
on the GPU host.

    python3 bench/probes/hmmsearch_timeline.py [--models 200] [--db proteome] [--homologs few]
        [--device gpu] [--runs 2]
    python3 bench/probes/hmmsearch_timeline.py --program phmmer --models 100 --db 273m
        (--models: the queries, ``bench/query_search_bench.py``'s)

Runs the command (inputs built by ``bench/hmmsearch_matrix.py``, cached under --work, the
matrix's warm kernel cache) in a child interpreter that wraps the command's steps in timers
before it calls the command's ``main``: module imports (CuPy, numba, pyhmmer), CUDA's start,
reading the models and the database, the filter backend's construction (the database's
upload), kernel loading, the first numba call, the first and last model's result, writing the
outputs.  Prints each step's first start and last end (seconds since the interpreter
started), its calls and summed seconds, per thread role; then the wall time of the same
command unwrapped, and ``-X importtime``'s slowest top-level imports.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(BENCH.parent), str(BENCH)]

import hmmsearch_matrix as matrix  # noqa: E402

# the child: wraps, then runs the command; prints one "step role calls first last total" a line
CHILD = r'''
import os, sys, threading, time, importlib, json
clk = os.sysconf("SC_CLK_TCK")
start = float(open("/proc/self/stat").read().split()[21]) / clk
t0 = time.clock_gettime(time.CLOCK_BOOTTIME) - start   # seconds since the process began, now
base = time.perf_counter() - t0
steps = {}
lock = threading.Lock()

intervals = []

def note(name, a, b):
    role = threading.current_thread().name.split("_")[0]
    with lock:
        s = steps.setdefault((name, role), [0, a, b, 0.0])
        s[0] += 1; s[1] = min(s[1], a); s[2] = max(s[2], b); s[3] += b - a
        if name in ("Finisher.__call__", "run_cascade_batch"):
            intervals.append((name, a, b))

def wrap(modname, attr, name=None):
    mod = importlib.import_module(modname)
    owner, _, leaf = attr.rpartition(".")
    obj = getattr(mod, owner) if owner else mod
    fn = getattr(obj, leaf)
    label = name or attr
    if getattr(fn, "__code__", None) is not None and fn.__code__.co_flags & 0x20:   # a generator
        def gen(*a, **k):
            t = time.perf_counter() - base
            first = True
            for item in fn(*a, **k):
                now = time.perf_counter() - base
                note(label + (" first item" if first else " next items"), t, now)
                first = False
                yield item
                t = time.perf_counter() - base
        setattr(obj, leaf, gen)
        return
    def w(*a, **k):
        t = time.perf_counter() - base
        try:
            return fn(*a, **k)
        finally:
            note(label, t, time.perf_counter() - base)
    setattr(obj, leaf, w)

class Finder:
    """Times the first import of the heavy packages."""
    heavy = {"cupy", "numba", "pyhmmer", "numpy", "click", "llvmlite"}
    def find_spec(self, name, path=None, target=None):
        if name in self.heavy and name not in sys.modules:
            self.heavy.discard(name)
            t = time.perf_counter() - base
            spec = importlib.util.find_spec(name)
            loader = spec.loader
            exec_module = loader.exec_module
            def timed(module):
                try:
                    exec_module(module)
                finally:
                    note("import " + name, t, time.perf_counter() - base)
            loader.exec_module = timed
            return spec
        return None
import importlib.util
sys.meta_path.insert(0, Finder())
note("interpreter start", 0.0, time.perf_counter() - base)
import gpu_search.cli as cli
for mod, *attr in [("gpu_search.device", "start_cuda"), ("gpu_search.device", "wait_cuda"),
                  ("gpu_search.hmmer.models", "read_hmms"), ("gpu_search.hmmer.models", "open_hmms"),
                  ("gpu_search.seqdb", "open_database"),
                  ("gpu_search.hmmer.phmmer", "read_queries"), ("gpu_search.hmmer.phmmer", "build_models"),
                  ("gpu_search.hmmer.search", "make_backend"), ("gpu_search.hmmer.search", "hmmsearch"),
                  ("gpu_search.hmmer.search", "LengthTables.__init__"),
                  ("gpu_search.hmmer.models", "HMMStream.__iter__"),
                  ("gpu_search.hmmer.gpu", "GpuBackend.__init__"),
                  ("gpu_search.hmmer.search", "FilterProfile.from_hmm"),
                  ("gpu_search.hmmer.search", "Finisher.__init__"),
                  ("gpu_search.hmmer.gpufinish", "GpuFinishing.__init__"),
                  ("gpu_search.hmmer.search", "Finisher.__call__"),
                  ("gpu_search.hmmer.gpufinish", "GpuFinishing.finish"),
                  ("gpu_search.hmmer.search", "pipeline_stats"), ("gpu_search.hmmer.reportworkers", "format_query"),
                  ("gpu_search.hmmer.reportworkers", "_portable", "query to the report workers"),
                  ("gpu_search.gpu.loader", "_compiled"),
                  ("gpu_search.hmmer.search", "run_cascade_batch"),
                  ("gpu_search.hmmer.cascade", "_bias_filter_cpu", "bias_filter (numba)"),
                  ("gpu_search.cli", "write_outputs"), ("gpu_search.cli", "run_search")]:
    try:
        wrap(mod, *attr)
    except Exception as e:
        print("cannot wrap", mod, attr, e, file=sys.stderr)
try:
    cli.main(sys.argv[1:])
except SystemExit:
    pass
note("command returns", time.perf_counter() - base, time.perf_counter() - base)
for (name, role), (n, a, b, tot) in sorted(steps.items(), key=lambda kv: kv[1][1]):
    print("STEP\t%s\t%s\t%d\t%.3f\t%.3f\t%.3f" % (name, role, n, a, b, tot), file=sys.stderr)
for name, a, b in intervals:
    print("SPAN\t%s\t%.4f\t%.4f" % (name, a, b), file=sys.stderr)
'''


def busy(spans, width: float) -> None:
    """Mean number of finishing calls and filter batches under way in each time bin."""
    if not spans:
        return
    end = max(float(b) for _, _, b in spans)
    n = int(end / width) + 1
    rows = {"Finisher.__call__": [0.0] * n, "run_cascade_batch": [0.0] * n}
    for name, a, b in spans:
        a, b = float(a), float(b)
        for k in range(int(a / width), int(b / width) + 1):
            lo, hi = max(a, k * width), min(b, (k + 1) * width)
            if hi > lo:
                rows[name][k] += (hi - lo) / width
    print(f"  busy per {width:g} s from 0: finishing calls / filter batches under way")
    print("   " + " ".join(f"{f:4.1f}/{c:3.1f}" for f, c in zip(rows["Finisher.__call__"], rows["run_cascade_batch"])))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--program", choices=("hmmsearch", "phmmer"), default="hmmsearch")
    ap.add_argument("--models", type=int, default=200, help="models (phmmer: query sequences)")
    ap.add_argument("--db", default="proteome")
    ap.add_argument("--homologs", default="few")
    ap.add_argument("--device", default="gpu")
    ap.add_argument("--runs", type=int, default=2, help="timed runs of the wrapped command (the first warms)")
    ap.add_argument("--cpus", type=int, default=os.cpu_count())
    ap.add_argument("--work", type=Path, default=Path("/tmp/gsmatrix"))
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", ".")))
    ap.add_argument("--bin", type=float, default=0.25, help="time bins of the busy line (seconds)")
    ap.add_argument("--ab", type=Path, help="a folder holding another gpu_search: unwrapped runs of "
                                            "both, alternated, --ab-runs each")
    ap.add_argument("--ab-runs", type=int, default=3)
    ap.add_argument("--cold", action="store_true", help="every run with CuPy's, numba's and CUDA's caches a new "
                                                        "empty folder (a first run on a fresh host)")
    args = ap.parse_args()
    # every command runs in --work: `python -m` and `-c` put the working folder first on the
    # path, so in the repository's root the checkout's gpu_search would shadow --ab's
    args.work = args.work.resolve()
    args.copies, args.base_seqs, args.max_m = dict(matrix.DB_COPIES), 0, matrix.M_MAX
    args.work.mkdir(parents=True, exist_ok=True)
    _, gsdb, _ = matrix.build_database(args.db, args.homologs, args)
    env = matrix.cache_env(args.work / "cache")
    if args.program == "phmmer":
        import query_search_bench as bench
        queries = args.work / f"queries_{args.models}.faa"
        queries.write_bytes(b"".join(b">%s\n%s\n" % (name.encode(), seq) for name, seq in bench.pick_queries(args.models)))
        cmd = bench.ours_command(args, args.device, queries, gsdb, os.devnull)
    else:
        hmm, _ = matrix.build_models(args.models, args)
        cmd = matrix.ours_command(args, args.device, hmm, gsdb, os.devnull, os.devnull)
    argv = cmd[cmd.index(args.program):]
    print(f"== {args.program}: {args.models} models x {args.db}, {args.homologs} homologs, --device {args.device}"
          + (", cold" if args.cold else ""))
    if args.cold:
        import shutil
        import tempfile

        def fresh() -> dict:           # an empty cache folder a run
            folder = Path(tempfile.mkdtemp(prefix="cold-cache-", dir=args.work))
            return matrix.cache_env(folder)
    else:
        def fresh() -> dict:
            return env
    for run in range(args.runs):
        env = fresh()
        t = time.perf_counter()
        p = subprocess.run([sys.executable, "-c", CHILD, *argv], env=env, capture_output=True, text=True, cwd=args.work)
        wall = time.perf_counter() - t
        print(f"-- wrapped run {run + 1}: {wall:.2f} s (rc {p.returncode})")
        rows = [line.split("\t")[1:] for line in p.stderr.splitlines() if line.startswith("STEP\t")]
        print(f"  {'step':34s} {'thread':10s} {'calls':>5s} {'first':>7s} {'last':>7s} {'summed':>7s}")
        for name, role, n, a, b, tot in rows:
            print(f"  {name[:34]:34s} {role[:10]:10s} {n:>5s} {a:>7s} {b:>7s} {tot:>7s}")
        if p.returncode:
            print(p.stderr[-2000:])
        spans = [line.split("\t")[1:] for line in p.stderr.splitlines() if line.startswith("SPAN\t")]
        busy(spans, args.bin)
    for run in range(2):
        env = fresh()
        t = time.perf_counter()
        subprocess.run(cmd, env=env, check=True, capture_output=True, cwd=args.work)
        print(f"-- unwrapped run {run + 1}: {time.perf_counter() - t:.2f} s")
    if args.ab:               # (with --cold, every run on a new empty cache folder)
        times = {"this": [], "other": []}
        for run in range(args.ab_runs):
            for which in ("other", "this"):
                e = fresh()
                if which == "other":
                    e = dict(e, PYTHONPATH=str(args.ab.resolve()) + os.pathsep + e["PYTHONPATH"])
                t = time.perf_counter()
                subprocess.run(cmd, env=e, check=True, capture_output=True, cwd=args.work)
                times[which].append(time.perf_counter() - t)
        print("-- A/B, unwrapped, alternated: " + "; ".join(
            f"{k} {sorted(v)[len(v) // 2]:.2f} s (median of {' '.join(f'{x:.2f}' for x in v)})"
            for k, v in times.items()))
    if args.cold:
        for folder in args.work.glob("cold-cache-*"):
            shutil.rmtree(folder, ignore_errors=True)
        env = matrix.cache_env(args.work / "cache")
    p = subprocess.run([sys.executable, "-X", "importtime", *cmd[1:]], env=env, capture_output=True, text=True,
                       cwd=args.work)
    rows = []
    for line in p.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            _, cum, name = line[len("import time:"):].split("|")
            if cum.strip().isdigit() and not name[1:].startswith(" "):
                rows.append((int(cum), name.strip()))
    print("  slowest top-level imports (-X importtime, cumulative): " +
          ", ".join(f"{n} {c / 1e6:.2f} s" for c, n in sorted(rows, reverse=True)[:8]))


if __name__ == "__main__":
    main()
