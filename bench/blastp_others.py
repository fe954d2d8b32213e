"""DIAMOND and MMseqs2 beside BLAST+ on the blastp benchmark: their speed, and how many BLAST+ hits each finds.

    python bench/blastp_others.py [--copies 399] [--threads N] [--sets 10,100] [--tools diamond,mmseqs]

``diamond blastp`` and ``mmseqs easy-search`` beside BLAST+, for speed and for
how many BLAST+ hits each finds.  Both are heuristic
searchers: faster than BLAST+, and they miss some of its hits.  This script
runs them on the benchmark's database and query sets (those of
``blastp_gpu_bench.py``) with every thread of the host, after BLAST+ in the
same run, and counts BLAST+'s hits among theirs.  ``blastp_gpu_bench.py
--others`` adds the same table to its own run, beside our GPU runs.

* Each tool runs with BLAST+'s reporting limits (E-value 10, 500 subjects per
  query; MMseqs2 keeps its own prefilter limit of 300), so that what it misses
  is what its seeds and filters miss.  Its database is made once and not
  timed, as makeblastdb and our makedb are not.
* DIAMOND 2.1 in its default (fast) and ``--ultra-sensitive`` modes; MMseqs2
  14 at its default sensitivity (-s 5.7) and at -s 7.5 (its "sensitive").
* A BLAST+ hit is a (query, subject) pair among BLAST+'s rows
  (``-comp_based_stats 0``, the rows our tool reproduces exactly); "found" is
  how many of those pairs the tool reports, for all of BLAST+'s hits, for
  those with E <= 1e-3 (the ones a biologist usually keeps), and for those of
  them whose subject is a real protein: the database's shuffled copies
  (names ending ``_shufN``) hold no homologs, so BLAST+'s hits there (E <= 1e-3
  without composition-based statistics or SEG) come from biased composition,
  which DIAMOND and MMseqs2 mask or correct for.

Debian 12 packages ``diamond-aligner`` and ``mmseqs2`` provide the programs;
``bench/device_bundle.sh`` carries them to the GPU host.  A tool that is
missing or does not run there is left out with the reason.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from blastp_bench import blast_programs, prepare_databases, query_sets, timed, write_queries  # noqa: E402
from hmmsearch_bench import pyhmmer_data  # noqa: E402

from gpu_search import seqdb  # noqa: E402

# (label, tool, the tool's own options for that mode)
MODES = [("DIAMOND (default, fast)", "diamond", []),
         ("DIAMOND --ultra-sensitive", "diamond", ["--ultra-sensitive"]),
         ("MMseqs2 -s 5.7 (default)", "mmseqs", ["-s", "5.7"]),
         ("MMseqs2 -s 7.5", "mmseqs", ["-s", "7.5"])]
KEPT_EVALUE = 1e-3


def real(subject: str) -> bool:
    """A subject of the original proteome, not one of its residue-shuffled copies."""
    return "_shuf" not in subject


def find_tools(wanted=("diamond", "mmseqs")) -> dict:
    """Each wanted tool's program, or why it cannot be used here (a string starting with 'no: ')."""
    found = {}
    for tool in wanted:
        exe = None
        if tool == "diamond":
            exe = shutil.which("diamond")
        elif tool == "mmseqs":
            # Debian's `mmseqs` is a script that picks a SIMD build from /usr/bin only; when the
            # package is unpacked elsewhere (the GPU host) call the AVX2 build directly
            flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
            exe = (" avx2" in flags and shutil.which("mmseqs-avx2")) or shutil.which("mmseqs")
        if not exe:
            found[tool] = f"no: {tool} not found"
            continue
        r = subprocess.run([exe, "version"], capture_output=True, text=True)
        found[tool] = exe if r.returncode == 0 else f"no: `{exe} version` failed: {r.stderr.strip()[-200:]}"
    return found


def make_database(tool: str, exe: str, fasta: Path, work: Path) -> tuple[Path, float]:
    """The tool's own database of the FASTA (made once per folder) and the seconds it took (0 if reused)."""
    t = time.perf_counter()
    if tool == "diamond":
        db = work / f"{fasta.stem}.dmnd"
        if not db.exists():
            subprocess.run([exe, "makedb", "--in", str(fasta), "-d", str(db.with_suffix("")), "--quiet"],
                           check=True, capture_output=True)
    else:
        db = work / f"{fasta.stem}.mmseqs"
        if not db.exists():
            subprocess.run([exe, "createdb", str(fasta), str(db), "-v", "1"], check=True, capture_output=True)
    return db, time.perf_counter() - t


def search(tool: str, exe: str, options: list, queries: Path, db: Path, work: Path,
           threads: int) -> tuple[float, list]:
    """Wall seconds of one search and its rows as (query, subject, E-value)."""
    out = work / f"{tool}.tsv"
    if tool == "diamond":
        cmd = [exe, "blastp", "-q", str(queries), "-d", str(db), "-o", str(out), "-p", str(threads),
               "-e", "10", "-k", "500", "--outfmt", "6", "qseqid", "sseqid", "evalue", "--quiet",
               "--tmpdir", str(work)] + options
    else:
        tmp = work / "mmseqs-tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        cmd = [exe, "easy-search", str(queries), str(db), str(out), str(tmp), "--threads", str(threads),
               "-e", "10", "--format-output", "query,target,evalue", "-v", "1"] + options
    seconds, _ = timed(cmd)
    rows = []
    for line in out.read_text().splitlines():
        q, s, e = line.split("\t")[:3]
        rows.append((q, s, float(e)))
    return seconds, rows


def blast_hits(blast_out: str) -> list:
    """(query, subject, E-value) of BLAST+'s outfmt 6 rows."""
    rows = []
    for line in blast_out.splitlines():
        f = line.split("\t")
        rows.append((f[0], f[1], float(f[10])))
    return rows


def found(blast_rows: list, rows: list) -> dict:
    """How many of BLAST+'s (query, subject) pairs the tool reports, all of them and those with E <= 1e-3."""
    theirs = {(q, s) for q, s, _ in rows}
    every = {(q, s) for q, s, _ in blast_rows}
    kept = {(q, s) for q, s, e in blast_rows if e <= KEPT_EVALUE}
    kept_real = {(q, s) for q, s in kept if real(s)}
    return dict(pairs=len(theirs), blast_pairs=len(every), found=len(every & theirs),
                blast_kept=len(kept), found_kept=len(kept & theirs), blast_real=len(kept_real),
                found_real=len(kept_real & theirs), not_in_blast=len(theirs - every))


def compare_others(queries: Path, fasta: Path, work: Path, threads: int, blast_out: str, blast_s: float,
                   tools: dict) -> list:
    """Every mode of every usable tool on one query set: a result dict per mode (or per missing tool)."""
    blast_rows = blast_hits(blast_out)
    results = []
    for label, tool, options in MODES:
        exe = tools.get(tool)
        if exe is None:
            continue
        if exe.startswith("no: "):
            if not any(r["mode"] == tool for r in results):
                results.append(dict(mode=tool, skipped=exe[4:]))
            continue
        db, made = make_database(tool, exe, fasta, work)
        seconds, rows = search(tool, exe, options, queries, db, work, threads)
        results.append(dict(mode=label, seconds=seconds, vs_blast=blast_s / seconds, db_made_s=made,
                            **found(blast_rows, rows)))
    return results


def print_table(title: str, blast_s: float, blast_out: str, results: list, ours: tuple | None = None):
    """One table: BLAST+, (ours,) then each tool: seconds, speed-up over BLAST+, BLAST+ hits found."""
    base = found(blast_hits(blast_out), [])
    every, kept, kept_real = base["blast_pairs"], base["blast_kept"], base["blast_real"]
    print(f"\n{title}: BLAST+ {every:,} hits ((query, subject) pairs), {kept:,} with E <= {KEPT_EVALUE:g}, "
          f"{kept_real:,} of these to real proteins (not shuffled copies)")
    print(f"{'program':28} {'s':>8} {'vs BLAST+':>9} | {'BLAST+ hits found':>20} | {'E <= 1e-3':>20} | "
          f"{'E <= 1e-3, real':>20} | {'pairs':>7} {'not BLAST+':>10}")

    def cell(n, total):
        return f"{n:>11,} ({100.0 * n / max(total, 1):5.1f}%)"

    print(f"{'BLAST+ blastp':28} {blast_s:>8.2f} {'1.0x':>9} | {cell(every, every)} | {cell(kept, kept)} | "
          f"{cell(kept_real, kept_real)} | {every:>7,} {0:>10}")
    if ours is not None:
        label, seconds, identical = ours
        same = "identical rows" if identical else "ROWS DIFFER"
        print(f"{label:28} {seconds:>8.2f} {blast_s / seconds:>8.1f}x | {same:>20} | {same:>20} | {same:>20} |")
    for r in results:
        if "skipped" in r:
            print(f"{r['mode']:28} left out: {r['skipped']}")
            continue
        print(f"{r['mode']:28} {r['seconds']:>8.2f} {r['vs_blast']:>8.1f}x | {cell(r['found'], every)} | "
              f"{cell(r['found_kept'], kept)} | {cell(r['found_real'], kept_real)} | "
              f"{r['pairs']:>7,} {r['not_in_blast']:>10,}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=399)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--sets", default="10,100")
    ap.add_argument("--tools", default="diamond,mmseqs")
    ap.add_argument("--work", default="/tmp/gsblastbench")
    args = ap.parse_args()
    blastp, makeblastdb = blast_programs()
    tools = find_tools(args.tools.split(","))
    print("tools:", tools, flush=True)
    work = Path(args.work)
    fasta, blast_db, _ = prepare_databases(args.copies, work, makeblastdb)
    base = seqdb.open_database(pyhmmer_data() / "seqs" / "938293.PRJEB85.HG003687.faa")
    for label, idx in query_sets(base, args.sets.split(",")).items():
        q = work / "q.faa"
        write_queries(q, base, idx)
        t_b, out_b = timed([blastp, "-query", str(q), "-db", str(blast_db), "-comp_based_stats", "0",
                            "-outfmt", "6", "-num_threads", str(args.threads)])
        results = compare_others(q, fasta, work, args.threads, out_b, t_b, tools)
        print_table(f"{label}, {args.threads} threads", t_b, out_b, results)


if __name__ == "__main__":
    main()
