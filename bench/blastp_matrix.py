"""blastp benchmark matrix: gpu-search blastp end to end through its command line against
BLAST+'s blastp on the same host and the same thread count, in one run.

Measured in each cell (number of queries x database x homolog density), every tool run as a
subprocess and timed by its wall time (interpreter start, imports, reading the inputs, the
search, writing the table):

* BLAST+: ``blastp -comp_based_stats C -num_threads N -outfmt 6 -query Q -db D -out T`` (C:
  --comp-based-stats, BLAST+'s default 2 unless given), D made
  by ``makeblastdb -dbtype prot`` from the database's FASTA file (before timing; cached beside
  it); BLAST+ found on PATH (bench/blastp_bench.py's blast_programs), else reported as absent
  and only our runs are made;
* gpu-search: ``python -m gpu_search blastp -comp_based_stats C -num_threads N -outfmt 6
  --device gpu -query Q -db D.gsdb -out T`` (``--device cpu`` in --smoke), runs:
    - cold: compiled-code caches empty (CUPY_CACHE_DIR, NUMBA_CACHE_DIR and CUDA_CACHE_PATH
      pointed at a new empty folder), as on the first run on a fresh host.  Kernels compiled
      ahead of time into the package's gpu_search/gpu/compiled/ folder are loaded from there
      (python -m gpu_search.gpu.compiled); the table's notes say how many cubins it held;
      With --cold image, numba's cache of the cold run holds the loops our container image
      carries instead, made as the image's build makes them (gpu-search compile --arch none with
      NUMBA_CPU_NAME=generic and no GPU visible; every run of ours then uses the generic
      CPU's code), the CuPy and CUDA caches still empty: the first run in a container made
      from our image, which also carries the cubins;
    - warm: the same command again, with caches holding what the cold run compiled (--work/cache,
      also filled by one untimed run of 1 query against 50 proteins before the first cell);
    - CPU: ``--device cpu``, warm, where BLAST+ took at most --cheap-seconds;
* rows: each of our tables against BLAST+'s, line by line: "identical", "same rows, other
  order" (the same lines as a multiset), or how many lines only ours and only BLAST+'s hold;
* GPU busy: mean of ``nvidia-smi --query-gpu=utilization.gpu`` sampled every 100 ms during the
  warm run (blank where nvidia-smi is absent);
* the ratios: BLAST+'s time over our warm run's and over our cold run's (above 1: gpu-search
  faster).

Cells: queries {1, 10, 100, 500, all} x databases {proteome (6.8 M residues), 68m (68 M), 273m
(273 M)} x homologs {few, many}, selected with --queries/--dbs/--homologs (their product) or
--cells 100:68m:many,all:proteome:few.  "all" is every protein of the proteome (2,100): the
all-against-all search of ortholog finding.  Cells run cheapest first (by an estimate printed
before each, from the project's last measurements and rescaled by the cells already run); a
cell whose estimate does not fit in what is left of --budget-seconds is reported as not run,
and a tool that passes --tool-timeout is reported as "> T s".  The table (JSON and markdown in
--out) is rewritten after every cell, and printed last.

Inputs, built deterministically (fixed seeds) from pyhmmer's test data (its 2,100-protein
Anaerococcus proteome, 682,583 residues), cached under --work keyed by their parameters:

* databases: bench/hmmsearch_matrix.py's (its build_database: the proteome plus 9, 99 or 399
  copies, shuffled within each sequence for few homologs, mutated to 90/70/50/35% identity
  for many), so that both benchmarks search the same files; the BLAST database is made from
  the same FASTA file into a folder beside it (built under a temporary name, then renamed);
* queries: the proteome's proteins (names and sequences as in its FASTA file, its '*' symbols
  kept) in one permutation (seed 42); the N-query file holds its first N, so each
  query set holds the smaller ones.

--smoke: the proteome's first 200 proteins and 2 copies of them, cells 1:proteome:many and
all:proteome:few, ``--device cpu``, 2 threads; its cold runs keep numba's cache where the
environment puts it (compiling the blastp engine's numba code takes 45 s on 2 cores: the
smoke run checks the code paths, not the first run's time).

Usage (on the GPU host: ``bash bench/device_run.sh blast-matrix [these options]``):

    python bench/blastp_matrix.py --queries 1,10,100 --dbs proteome --homologs few,many
    python bench/blastp_matrix.py --cells 500:68m:many,all:proteome:few --budget-seconds 500
    python bench/blastp_matrix.py --smoke      # a tiny run of every code path, no GPU, 2 cores
    python bench/blastp_matrix.py --build-only --queries all --dbs 273m
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import hmmsearch_matrix as hm  # noqa: E402
from blastp_bench import blast_programs  # noqa: E402

REPO = hm.REPO
GENERATOR = 1                     # part of the query files' cache key: bump it when they change
QUERY_SEED = 42
QUERY_COUNTS = ("1", "10", "100", "500", "all")
PROTEOME_RESIDUES = 682583


# --------------------------------------------------------------------------------------------
# inputs


def query_order(base_seqs: int) -> list[int]:
    """The proteome's proteins (its first base_seqs; all: 0) in the benchmark's fixed order."""
    names, _ = hm.read_proteome(base_seqs or None)
    return np.random.default_rng(QUERY_SEED).permutation(len(names)).tolist()


def query_count(label: str, args) -> int:
    n = args.n_proteins if label == "all" else int(label)
    return min(n, args.n_proteins)


def build_queries(label: str, args) -> tuple[Path, dict]:
    """The query FASTA file of a cell (the permutation's first N proteins), written once."""
    n = query_count(label, args)
    key = f"blastp_queries_n{n}_base{args.base_seqs or 'all'}_seed{QUERY_SEED}_g{GENERATOR}"
    path, meta = args.work / f"{key}.faa", args.work / f"{key}.json"
    if path.exists() and meta.exists():
        return path, json.loads(meta.read_text())
    names, seqs = hm.read_proteome(args.base_seqs or None)
    chosen = query_order(args.base_seqs)[:n]
    lengths = [len(seqs[i]) for i in chosen]
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(b"".join(b">%s\n%s\n" % (names[i].encode(), seqs[i]) for i in chosen))
    tmp.rename(path)
    info = {"queries": n, "residues": int(sum(lengths)), "min_length": min(lengths),
            "max_length": max(lengths)}
    meta.write_text(json.dumps(info))
    return path, info


def blast_database(fasta: Path, makeblastdb: str) -> Path:
    """The BLAST database of a FASTA file, in a folder beside it: made under a temporary name
    and renamed when whole, so that an interrupted build is never taken for a database."""
    folder = fasta.with_suffix(".blastdb")
    prefix = folder / fasta.stem
    if folder.is_dir():
        return prefix
    tmp = Path(tempfile.mkdtemp(prefix=fasta.stem + ".blastdb-building-", dir=fasta.parent))
    try:
        t = time.perf_counter()
        subprocess.run([makeblastdb, "-in", str(fasta), "-dbtype", "prot", "-out", str(tmp / fasta.stem)],
                       check=True, capture_output=True)
        tmp.rename(folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"  built {folder.name}: makeblastdb {time.perf_counter() - t:.1f} s", flush=True)
    return prefix


# --------------------------------------------------------------------------------------------
# running the tools


def ours_command(args, device, query, db, out) -> list[str]:
    return [sys.executable, "-m", "gpu_search", "blastp", "-comp_based_stats", args.comp_based_stats, "-num_threads",
            str(args.cpus), "-outfmt", "6", "--device", device, "-query", str(query), "-db", str(db),
            "-out", str(out)]


def blast_command(args, query, blast_db, out) -> list[str]:
    return [args.blastp, "-comp_based_stats", args.comp_based_stats, "-num_threads", str(args.cpus), "-outfmt", "6",
            "-query", str(query), "-db", str(blast_db), "-out", str(out)]


def our_env(folder: Path, args) -> dict:
    """hmmsearch_matrix's cache_env; in --smoke numba's cache is left where the environment puts
    it (the package's __pycache__ unless NUMBA_CACHE_DIR is set): the blastp engine's numba code
    takes 45 s to compile on 2 cores, which a smoke run of the code paths need not repeat."""
    env = hm.cache_env(folder)
    if args.cold == "image":
        env["NUMBA_CPU_NAME"] = "generic"          # as the image's loops are compiled (containers/Dockerfile)
    if args.smoke:
        env.pop("NUMBA_CACHE_DIR")
        if os.environ.get("NUMBA_CACHE_DIR"):
            env["NUMBA_CACHE_DIR"] = os.environ["NUMBA_CACHE_DIR"]
    return env


def image_numba(args) -> dict:
    """numba's compiled loops as our container image carries them, for --cold image: made by
    `gpu-search compile` as the image's build runs it (NUMBA_CPU_NAME=generic, no GPU visible:
    the GPU pipeline's host loops through its CPU stand-ins), once, into --work/image-numba."""
    args.image_numba = args.work / "image-numba"
    t = time.monotonic()
    if not args.image_numba.is_dir():
        tmp = Path(tempfile.mkdtemp(prefix="image-numba-", dir=args.work))
        env = hm.child_env(NUMBA_CACHE_DIR=str(tmp), NUMBA_CPU_NAME="generic", CUDA_VISIBLE_DEVICES="",
                           PATH=os.pathsep.join([os.path.dirname(sys.executable), str(hm.REPO / "bin"),
                                                 os.environ.get("PATH", "")]))     # (its gpu-search, this python)
        subprocess.run([sys.executable, "-m", "gpu_search", "compile", "--arch", "none", "--quiet"], env=env,
                       check=True, capture_output=True)
        tmp.rename(args.image_numba)
    loops = sum(1 for _ in args.image_numba.rglob("*.nbc"))
    print(f"numba's loops as the image carries them: {loops} in {args.image_numba} "
          f"({time.monotonic() - t:.0f} s)", flush=True)
    return {"loops": loops, "seconds": round(time.monotonic() - t, 1)}


def warm_up(args) -> dict:
    """One untimed run of ours per device, 1 query against 50 proteins (.gsdb), so that
    --work/cache holds the code every warm run needs."""
    query, _ = build_queries("1", args)
    names, seqs = hm.read_proteome(50)
    fasta, gsdb = args.work / "blastp-warmup.faa", args.work / "blastp-warmup.gsdb"
    fasta.write_bytes(b"".join(b">%s\n%s\n" % (n.encode(), s) for n, s in zip(names, seqs)))
    env = our_env(args.work / "cache", args)
    subprocess.run([sys.executable, "-m", "gpu_search", "makedb", "-q", "-o", str(gsdb), str(fasta)],
                   check=True, env=env)
    t, rcs = time.perf_counter(), []
    for device in sorted({args.device, "cpu"}):
        cmd = ours_command(args, device, query, gsdb, os.devnull)
        rcs.append(subprocess.run(cmd, env=env, capture_output=True).returncode)
    return {"seconds": round(time.perf_counter() - t, 1), "rcs": rcs}


def read_rows(path: Path) -> list[bytes] | None:
    return path.read_bytes().splitlines() if path.exists() else None


def compare_rows(ours: list[bytes], blast: list[bytes]) -> str:
    """Our table's lines against BLAST+'s: in the same order, as the same multiset, or the
    number of lines only each side holds."""
    if ours == blast:
        return "identical"
    mine, ref = Counter(ours), Counter(blast)
    only_ours, only_blast = sum((mine - ref).values()), sum((ref - mine).values())
    if not only_ours and not only_blast:
        return "same rows, other order"
    return f"{only_ours} rows only ours, {only_blast} only BLAST+"


# --------------------------------------------------------------------------------------------
# estimates: rates of the project's end-to-end blastp runs (docs/benchmarks.md: H100 and H200,
# 16 cores; 100 queries x 273 M residues, 500 queries x 68 M), then rescaled by this run

RATE = {
    "blast_start": 0.15,           # s: BLAST+'s start and reading the database's index
    "blast_cells_per_thread": 1.7e10,   # query x database residues a second and thread
    "blast_many_factor": 1.3,      # more gapped extensions where every query has homologs
    "row_thread_s": 0.0015,        # thread-seconds per row reported (gapped extension, traceback)
    "ours_start": 1.5,             # s: imports, CUDA's start, the database's upload
    "ours_per_query": 0.005,       # s of host work per query
    "ours_gpu_cells": 8e12,        # query x database residues a second through the GPU kernels
    "ours_cpu_factor": 1.1,        # our --device cpu against BLAST+ (bench/blastp_bench.py)
    "ours_cpu_start": 1.2,         # s: imports and numba's code loaded
    "numba_compile": 8.0,          # s: numba's code on an empty cache (45 s on 2 slow cores)
    "kernel_compile": 5.0,         # s: blastp's CUDA kernels by NVRTC, where no cubin was shipped
    "makeblastdb_per_s": 20e6,     # residues a second
}


def expected_rows(n, residues, homologs, copies) -> float:
    """Rows of a cell: about 150 chance hits a query against 273 M shuffled residues (E <= 10,
    proportional to the database's size), plus, with many homologs, about 2.5 a mutated copy
    (the query's and its paralogs'), at most 500 subjects a query."""
    chance = 3 + 150 * residues / 273e6
    return n * min(500, chance + (2.5 * (copies + 1) if homologs == "many" else 0))


class Estimator(hm.Estimator):
    """hmmsearch_matrix's estimator (learning from measured runs), blastp's model of a run:
    raw(tool, queries, query residues, database residues, homologs, copies)."""

    def __init__(self, cpus, device, cubins, numba_cold=True):
        super().__init__(cpus, device)
        self.cubins, self.numba_cold = cubins, numba_cold

    def raw(self, tool, n, q_res, residues, homologs, copies):
        th = self.cpus
        rows_s = expected_rows(n, residues, homologs, copies) * RATE["row_thread_s"] / th
        search = q_res * residues / (RATE["blast_cells_per_thread"] * th)
        blast = RATE["blast_start"] + search * (RATE["blast_many_factor"] if homologs == "many" else 1) + rows_s
        if tool == "blastp":
            return blast
        if tool == "ours_cpu" or self.device == "cpu":
            base = RATE["ours_cpu_start"] + (blast - RATE["blast_start"]) * RATE["ours_cpu_factor"]
        else:
            base = (RATE["ours_start"] + residues / 1e9 + n * RATE["ours_per_query"]
                    + q_res * residues / RATE["ours_gpu_cells"] + rows_s)
        if tool == "ours_cold":
            base += RATE["numba_compile"] if self.numba_cold else 0
            if self.device != "cpu" and not self.cubins:
                base += RATE["kernel_compile"]
        return base


# --------------------------------------------------------------------------------------------
# the matrix


COLUMNS = [("ours_cold", "ours cold"), ("ours_warm", "ours warm"), ("ours_cpu", "ours --device cpu"),
           ("blastp", "BLAST+")]


def table(cells, device) -> list[list[str]]:
    head = ["queries", "database", "homologs", "residues", "query residues"] + [
        label.replace("ours", f"ours ({device})") if key not in ("ours_cpu", "blastp") else label
        for key, label in COLUMNS] + ["BLAST+ / ours warm", "BLAST+ / ours cold", "rows", "identical",
                                      "GPU busy %"]
    ok = lambda r: r and not r.get("skipped") and r.get("rc") == 0   # noqa: E731
    rows = [head]
    for c in cells:
        row = [c["queries"], c["db"], c["homologs"],
               f"{c['residues'] / 1e6:.1f} M" if c.get("residues") else "",
               f"{c['query_residues']:,}" if c.get("query_residues") else ""]
        if c.get("not_run") or "runs" not in c:
            rows.append(row + [f"not run: {c.get('not_run', 'not reached')}"] + [""] * (len(head) - len(row) - 1))
            continue
        runs = c["runs"]
        row += [fmt_time(runs.get(k)) for k, _ in COLUMNS]
        b = runs.get("blastp")
        for k in ("ours_warm", "ours_cold"):
            r = runs.get(k)
            row.append(f"{b['seconds'] / r['seconds']:.2f}x" if ok(b) and ok(r) else "")
        row.append(c.get("rows", ""))
        row.append(c.get("identical", ""))
        busy = (runs.get("ours_warm") or {}).get("gpu_busy")
        row.append("" if busy is None else f"{busy:.0f}")
        rows.append(row)
    return rows


def fmt_time(r) -> str:
    if r and r.get("absent"):
        return "absent"
    return hm.fmt_time(r)


def cubin_note(host) -> str:
    c = host["compiled"]
    if host.get("cold") == "image":
        return ("ours cold: as in a container made from our image: numba's loops as gpu-search compile "
                "makes them for the image (generic CPU, no GPU), CuPy's and CUDA's caches empty; " + (f"{c['folder']} held {c['cubins']} cubins ({', '.join(c['archs'])})"
                                           if c["cubins"] else f"{c['folder']} held no cubins"))
    if host["device"] == "cpu":
        return "ours cold: compiled-code caches empty (--device cpu: no CUDA kernels loaded)"
    if not c["cubins"]:
        return (f"ours cold: compiled-code caches empty; {c['folder']} held no cubins, so every CUDA "
                "kernel the run loaded was compiled by NVRTC in it")
    return (f"ours cold: compiled-code caches empty; {c['folder']} held {c['cubins']} cubins "
            f"({', '.join(c['archs'])}): the kernels found there were loaded, not compiled")


def write_outputs(out: Path, cells, host, device):
    rows = table(cells, device)
    notes = [f"host: {host.get('gpu') or 'no GPU'}; {host.get('cpu_model') or 'CPU'}, {host['cores']} cores, "
             f"{host['cpus']} threads for every tool; "
             f"gpu-search {host.get('gpu_search', '?')}, {host.get('blastp') or 'no BLAST+ (absent)'}",
             "times: wall seconds of the whole command; ours read the .gsdb, BLAST+ the database "
             f"makeblastdb made from the same FASTA file; -comp_based_stats {host['comp_based_stats']} "
             "-outfmt 6 on both sides",
             cubin_note(host),
             "skipped: our --device cpu run where BLAST+ took over "
             f"{host['cheap_seconds']:.0f} s (or where BLAST+ did not run); '> T s': stopped at the "
             "time limit, or not run where the estimate was over twice that",
             "rows: BLAST+'s table's lines (ours after '|' where the counts differ); identical: every "
             "run of ours against BLAST+'s lines (in order; as a multiset; else the lines only "
             "one side holds)"]
    if host.get("smoke"):
        notes.append("smoke run: numba's cache not emptied for the cold run (see our_env)")
    hm.save_tables(out, "blastp_matrix", host, cells, rows, notes)
    return rows, notes


def compiled_cubins() -> dict:
    """The cubins in the package's folder of kernels compiled ahead of time."""
    from gpu_search.gpu.compiled import FOLDER

    cubins = sorted(FOLDER.glob("*.cubin")) if FOLDER.is_dir() else []
    return {"folder": str(FOLDER.relative_to(REPO)) + "/", "cubins": len(cubins),
            "archs": sorted({p.suffixes[-2].lstrip(".") for p in cubins if len(p.suffixes) >= 2})}


def cpu_model() -> str | None:
    """The CPU's model name (Linux), which BLAST+'s times follow."""
    try:
        with open("/proc/cpuinfo") as fh:
            return next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), None)
    except OSError:
        return None


def host_info(args) -> dict:
    from importlib import metadata

    info = {"cpus": args.cpus, "cores": os.cpu_count(), "cpu_model": cpu_model(), "device": args.device,
            "python": sys.version.split()[0], "generator": GENERATOR, "compiled": compiled_cubins()}
    for dist in ("numpy", "numba", "cupy-cuda12x", "cupy-cuda13x", "cupy"):
        try:
            info[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    v = subprocess.run([sys.executable, "-m", "gpu_search", "--version"], capture_output=True,
                       text=True, env=hm.child_env())
    info["gpu_search"] = v.stdout.strip().split()[-1] if v.returncode == 0 and v.stdout.strip() else None
    info["blastp"], info["blastp_path"] = None, args.blastp
    if args.blastp:
        b = subprocess.run([args.blastp, "-version"], capture_output=True, text=True)
        info["blastp"] = "BLAST+ " + b.stdout.split()[1] if b.returncode == 0 and b.stdout.split()[1:] else "blastp"
    return {**info, **hm.gpu_and_commit()}


def select_cells(args) -> list[tuple[str, str, str]]:
    if args.cells:
        out = [tuple(item.split(":")) for item in args.cells.split(",")]
    else:
        out = list(itertools.product(args.queries.split(","), args.dbs.split(","), args.homologs.split(",")))
    for cell in out:
        if len(cell) != 3 or not (cell[0] == "all" or cell[0].isdigit() and int(cell[0]) >= 1) \
                or cell[1] not in args.copies or cell[2] not in hm.HOMOLOGS:
            raise SystemExit(f"unknown cell {':'.join(cell)} (queries a number or all; databases "
                             f"{', '.join(args.copies)}; homologs few, many)")
    return out


def shape(label, db, homologs, args) -> tuple:
    """(queries, query residues, database residues, homologs, copies): the estimator's input."""
    n = query_count(label, args)
    q_res = sum(args.lengths[i] for i in args.order[:n])
    base = sum(args.lengths)
    return n, q_res, (args.copies[db] + 1) * base, homologs, args.copies[db]


def run_cell(label, db, homologs, args, est: Estimator, deadline: float, cell: dict):
    """Build the inputs of one cell, run every tool, compare the tables; fills `cell`."""
    query, qinfo = build_queries(label, args)
    fasta, gsdb, dinfo = hm.build_database(db, homologs, args)
    blast_db = blast_database(fasta, args.makeblastdb) if args.blastp else None
    cell.update(residues=dinfo["residues"], sequences=dinfo["sequences"], query_info=qinfo)
    cshape = (qinfo["queries"], qinfo["residues"], dinfo["residues"], homologs, dinfo["copies"])
    rundir = args.work / "runs" / f"blastp_{label}_{db}_{homologs}"
    shutil.rmtree(rundir, ignore_errors=True)
    rundir.mkdir(parents=True)
    cold = Path(tempfile.mkdtemp(prefix="kernel-cache-", dir=rundir))   # empty for the cold run
    if args.cold == "image":
        shutil.copytree(args.image_numba, cold / "numba")   # the loops the image carries, nothing more
    runs = cell["runs"] = {}

    for tool in ("blastp", "ours_cold", "ours_warm", "ours_cpu"):
        raw = est.raw(tool, *cshape)
        e = raw * est.factor(tool)
        left = deadline - time.monotonic()
        if tool == "blastp" and not args.blastp:
            runs[tool] = {"absent": True}
            continue
        if tool == "ours_cpu":
            if args.device == "cpu":
                continue                       # the same as the warm run
            b = runs["blastp"]
            if b.get("absent") or b.get("skipped") or b["rc"] != 0 or b["seconds"] > args.cheap_seconds:
                runs[tool] = {"skipped": "skipped", "estimate": round(e, 1)}
                continue
        timeout = min(args.tool_timeout, left - 5)       # (5 s to compare and write the table)
        reason = None
        if e > 2 * args.tool_timeout:
            reason = f"> {args.tool_timeout:g} s (est. {e:.0f})"
        elif timeout < min(e, args.tool_timeout):
            reason = "budget"
        if reason:
            runs[tool] = {"skipped": reason, "estimate": round(e, 1)}
            print(f"    {tool}: not run ({reason})", flush=True)
            continue
        out = rundir / f"{tool}.tsv"
        if tool == "blastp":
            cmd, env = blast_command(args, query, blast_db, out), hm.child_env()
        else:
            device = "cpu" if tool == "ours_cpu" else args.device
            cmd = ours_command(args, device, query, gsdb, out)
            env = our_env(cold if tool == "ours_cold" else args.work / "cache", args)
        runs[tool] = hm.run_tool(tool, cmd, env, timeout, e, raw, est, rundir, cold, args)

    # rows: every finished run of ours against BLAST+'s lines
    b = runs["blastp"]
    ref = read_rows(rundir / "blastp.tsv") if b.get("rc") == 0 else None
    if ref is not None:
        b["rows"] = len(ref)
    verdicts = {}
    for tool in ("ours_cold", "ours_warm", "ours_cpu"):
        r = runs.get(tool)
        if not r or r.get("skipped") or r["rc"] != 0:
            continue
        mine = read_rows(rundir / f"{tool}.tsv") or []
        r["rows"] = len(mine)
        if ref is not None:
            r["compared"] = verdicts[tool] = compare_rows(mine, ref)
    first = next((runs[t]["rows"] for t in ("ours_warm", "ours_cold", "ours_cpu") if "rows" in runs.get(t, {})),
                 None)
    if ref is not None:
        cell["rows"] = f"{len(ref):,}" + ("" if first in (None, len(ref)) else f" | {first:,}")
    elif first is not None:
        cell["rows"] = f"ours {first:,}"
    if verdicts:
        if all(v == "identical" for v in verdicts.values()):
            cell["identical"] = "identical"
            if not {"ours_cold", "ours_warm"} <= set(verdicts):      # (a run of ours failed)
                cell["identical"] += f" ({', '.join(t.replace('ours_', '') for t in verdicts)} only)"
        else:
            cell["identical"] = "; ".join(f"{t.replace('ours_', '')}: {v}" for t, v in verdicts.items())
    elif b.get("absent"):
        cell["identical"] = "BLAST+ absent"
    shutil.rmtree(cold, ignore_errors=True)
    if not args.keep_tables:
        for f in rundir.glob("*.tsv"):
            f.unlink()


def build_estimate(label, db, homologs, args) -> float:
    """Seconds to build a cell's database and BLAST database where they are not cached yet."""
    copies = args.copies[db]
    key = f"db_{homologs}_c{copies}_base{args.base_seqs or 'all'}_seed{hm.BUILD_SEED}_g{hm.GENERATOR}"
    residues = (copies + 1) * sum(args.lengths)
    s = 0.0
    if not (args.work / f"{key}.json").exists():
        s += (copies + 1) * hm.RATE["copy_build_cpu_s"] / args.cpus + residues / hm.RATE["makedb_per_s"]
    if args.blastp and not (args.work / f"{key}.blastdb").is_dir():
        s += residues / RATE["makeblastdb_per_s"]
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", default=",".join(QUERY_COUNTS), help="query counts, or all (default: all five)")
    ap.add_argument("--dbs", default=",".join(hm.DB_COPIES), help="databases: proteome,68m,273m")
    ap.add_argument("--homologs", default="few,many")
    ap.add_argument("--cells", help="explicit cells QUERIES:DB:HOMOLOGS,... (instead of the three above)")
    ap.add_argument("--cpus", type=int, default=os.cpu_count(), help="threads for every tool (default: all cores)")
    ap.add_argument("--comp-based-stats", choices=("0", "1", "2", "3"), default="2",
                    help="-comp_based_stats of both tools (default: BLAST+'s, 2)")
    ap.add_argument("--device", choices=("gpu", "cpu"), default="gpu", help="our device for the cold/warm runs")
    ap.add_argument("--budget-seconds", type=float, default=500,
                    help="cells whose estimate does not fit in what is left are not run")
    ap.add_argument("--tool-timeout", type=float, default=240, help="seconds per tool and cell")
    ap.add_argument("--cold", choices=("host", "image"), default="host",
                    help="ours cold: every compiled-code cache empty (host: a fresh host), or numba's "
                         "loops kept (image: a container made from our image)")
    ap.add_argument("--cheap-seconds", type=float, default=60,
                    help="our --device cpu run only where BLAST+ took at most this")
    ap.add_argument("--work", type=Path, default=Path("/tmp/gsmatrix"),
                    help="inputs cached here (the same as bench/hmmsearch_matrix.py's)")
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", ".")))
    ap.add_argument("--base-seqs", type=int, default=0, help="use the proteome's first N proteins (0: all)")
    ap.add_argument("--build-only", action="store_true", help="build the cells' inputs, run nothing")
    ap.add_argument("--keep-tables", action="store_true", help="keep every tool's table under --work/runs")
    ap.add_argument("--smoke", action="store_true",
                    help="tiny inputs (200 proteins, 2 copies; cells 1:proteome:many and all:proteome:few unless "
                         "chosen), --device cpu, 2 cores: "
                         "every code path without a GPU")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, hm._on_term)   # a time limit around us: the running tool ends too
    args.copies = dict(hm.DB_COPIES)
    args.smoke = bool(args.smoke)
    if args.smoke:
        args.copies = {"proteome": 2}
        args.base_seqs, args.device, args.cpus = 200, "cpu", 2
        if not args.cells and args.queries == ",".join(QUERY_COUNTS):
            args.cells = "1:proteome:many,all:proteome:few"     # both densities, a count and all
        args.dbs = "proteome"
        if args.work == Path("/tmp/gsmatrix"):
            args.work = Path("/tmp/gsmatrix-smoke")
    args.work.mkdir(parents=True, exist_ok=True)
    try:
        args.blastp, args.makeblastdb = blast_programs()
    except SystemExit:                        # (absent: our runs alone, BLAST+ marked absent)
        args.blastp = args.makeblastdb = None
    _, seqs = hm.read_proteome(args.base_seqs or None)
    args.lengths, args.n_proteins = [len(s) for s in seqs], len(seqs)
    args.order = query_order(args.base_seqs)
    start = time.monotonic()
    deadline = start + args.budget_seconds
    host = host_info(args)
    host["cold"] = args.cold
    host.update(comp_based_stats=args.comp_based_stats, cheap_seconds=args.cheap_seconds,
                tool_timeout=args.tool_timeout, smoke=args.smoke, budget_seconds=args.budget_seconds, base_seqs=args.n_proteins, copies=args.copies,
                query_seed=QUERY_SEED)
    print(f"host: {host.get('gpu') or 'no GPU'}; {args.cpus} threads; device {args.device}; "
          f"gpu-search {host['gpu_search']}, {host['blastp'] or 'BLAST+ absent'}; "
          f"{host['compiled']['cubins']} cubins compiled ahead of time", flush=True)

    est = Estimator(args.cpus, args.device, host["compiled"]["cubins"], numba_cold=not args.smoke and args.cold == "host")
    chosen = select_cells(args)
    if args.build_only:
        for label, db, h in chosen:
            build_queries(label, args)
            fasta, _, _ = hm.build_database(db, h, args)
            if args.blastp:
                blast_database(fasta, args.makeblastdb)
        return
    if args.cold == "image":
        host["image_numba"] = image_numba(args)
    host["warm_up"] = warm_up(args)
    print(f"warm-up of the compiled-code caches: {host['warm_up']['seconds']} s "
          f"(exit codes {host['warm_up']['rcs']})", flush=True)

    def cell_estimate(c):
        s = shape(*c, args)
        tools = ["ours_cold", "ours_warm"] + (["blastp"] if args.blastp else [])
        if args.blastp and args.device == "gpu" and est("blastp", *s) <= args.cheap_seconds:
            tools.append("ours_cpu")
        return build_estimate(*c, args) + sum(min(est(t, *s), args.tool_timeout) for t in tools)

    order = sorted(chosen, key=cell_estimate)                 # the cheapest first
    cells = {c: {"queries": c[0], "db": c[1], "homologs": c[2], "residues": shape(*c, args)[2],
                 "query_residues": shape(*c, args)[1]} for c in chosen}
    hm.run_cells(order, cells, cell_estimate, lambda c: run_cell(*c, args, est, deadline, cells[c]), deadline,
                 lambda: write_outputs(args.out, [cells[k] for k in chosen], host, args.device), "queries")

    rows, notes = write_outputs(args.out, [cells[k] for k in chosen], host, args.device)
    print(f"\ntotal {time.monotonic() - start:.0f} s; table in {args.out}/blastp_matrix.md and .json\n")
    hm.print_table(rows, notes, cell_columns=5)


if __name__ == "__main__":
    main()
