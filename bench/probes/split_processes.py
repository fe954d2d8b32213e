"""Whether a many-model hmmsearch gains from several processes sharing one GPU, on the GPU host.

    python3 bench/probes/split_processes.py [--models 2000] [--homologs many] [--ways 2,3,4]

The matrix's cell (``bench/hmmsearch_matrix.py``'s files under --work, its warm kernel cache)
searched by one ``gpu-search hmmsearch`` command, then by K commands at once, each on every
K-th run of CHUNK models of the file (so each command holds models of every length), with all
cores or cores / K each.  Prints each variant's wall time (runs alternated, medians) and
whether the K commands' table rows, pooled, are the one command's rows.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(BENCH.parent), str(BENCH)]

import hmmsearch_matrix as matrix  # noqa: E402

CHUNK = 64


def split_models(path: Path, ways: int, out: Path) -> list[Path]:
    """The HMM file cut into ``ways`` files, chunk j of CHUNK models going to file j % ways."""
    text = path.read_bytes()
    models = [m + b"//\n" for m in text.split(b"//\n") if m.strip()]
    parts = [[] for _ in range(ways)]
    for j in range(0, len(models), CHUNK):
        parts[(j // CHUNK) % ways].extend(models[j:j + CHUNK])
    files = []
    for k, part in enumerate(parts):
        f = out / f"{path.stem}.part{k}of{ways}.hmm"
        f.write_bytes(b"".join(part))
        files.append(f)
    return files


def rows(paths) -> list[bytes]:
    return sorted(line for p in paths for line in Path(p).read_bytes().splitlines() if not line.startswith(b"#"))


def run_many(commands, env) -> float:
    t = time.perf_counter()
    procs = [subprocess.Popen(c, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for c in commands]
    errs = [p.communicate()[1] for p in procs]
    wall = time.perf_counter() - t
    for p, e in zip(procs, errs):
        if p.returncode:
            print("   ! rc", p.returncode, e.decode(errors="replace")[-400:], flush=True)
    return wall


def main():
    ap = argparse.ArgumentParser()
    matrix.add_cell_arguments(ap, "many")
    ap.add_argument("--ways", default="2,3,4")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    args.copies, args.base_seqs, args.max_m = dict(matrix.DB_COPIES), 0, matrix.M_MAX
    args.device = "gpu"
    args.work.mkdir(parents=True, exist_ok=True)
    hmm, _ = matrix.build_models(args.models, args)
    _, gsdb, _ = matrix.build_database(args.db, args.homologs, args)
    env = matrix.cache_env(args.work / "cache")
    out = args.work / "split"
    out.mkdir(exist_ok=True)

    def command(h, cpus, tag):
        a = argparse.Namespace(cpus=cpus)
        return matrix.ours_command(a, "gpu", h, gsdb, out / f"{tag}.tbl", out / f"{tag}.dom")

    variants = {"1 process": [command(hmm, args.cpus, "one")]}
    tags = {"1 process": ["one"]}
    for ways in map(int, args.ways.split(",")):
        files = split_models(hmm, ways, out)
        for cpus in (args.cpus, max(1, args.cpus // ways)):
            name = f"{ways} processes, --cpu {cpus}"
            tags[name] = [f"w{ways}c{cpus}k{k}" for k in range(ways)]
            variants[name] = [command(f, cpus, t) for f, t in zip(files, tags[name])]
    print(f"== {args.models} models x {args.db}, {args.homologs} homologs; warm-up", flush=True)
    run_many(variants["1 process"], env)
    times = {name: [] for name in variants}
    for _ in range(args.repeat):
        for name, cmds in variants.items():
            times[name].append(run_many(cmds, env))
            print(f"  {name}: {times[name][-1]:.2f} s", flush=True)
    ref = rows([out / "one.tbl"])
    print("\n| variant | runs (s) | median | same rows as 1 process |\n| --- | --- | ---: | --- |")
    for name, ts in times.items():
        same = rows([out / f"{t}.tbl" for t in tags[name]]) == ref
        print(f"| {name} | {', '.join(f'{t:.2f}' for t in ts)} | {statistics.median(ts):.2f} | {same} |")


if __name__ == "__main__":
    main()
