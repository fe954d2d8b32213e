"""phmmer and jackhmmer end to end: gpu-search's command against pyhmmer's phmmer or jackhmmer
on all cores, on the same host, in one run.

Cells: queries x database x homologs, e.g. ``1:273m:few,1:68m:many,10:68m:many``: the
databases of ``bench/hmmsearch_matrix.py`` (the proteome and its shuffled or mutated copies,
built once under --work), the queries proteins of the proteome (their homologs in the
database: the proteome's own, and in the many-homolog databases their mutated copies),
taken at evenly spaced places among those of 100-600 residues.  Each cell, every tool run
as a subprocess and timed by its wall time, the program of --program (jackhmmer: -N rounds,
--rounds, default 3):

* ours: ``python -m gpu_search PROGRAM -q [-N R] --cpu N -o /dev/null --noali --tblout T
  QUERIES DB.gsdb`` with ``--device gpu``: cold (CuPy's, numba's and CUDA's caches a new
  empty folder, the cubins built ahead of time, as the GPU image ships them) and warm (the
  same command again, the caches as the cold run left them); and ``--device cpu`` where
  --cpu-path says;
* pyhmmer: ``pyhmmer.hmmer.jackhmmer(queries, block, max_iterations=R, cpus=N,
  incE=0.001, incdomE=0.001)`` or ``pyhmmer.hmmer.phmmer(queries, block, cpus=N)`` in a
  subprocess that reads the FASTA file into a block itself and writes each query's hits (the
  last round's) with ``TopHits.write(format="targets")``;
* rows: our GPU run's --tblout against our CPU run's (identical, every column: the CPU path
  is tested line by line against HMMER's jackhmmer), and against pyhmmer's (the query name
  column left out: pyhmmer names the last round's model, ``<query>-i<round>``);
* GPU busy: mean of ``nvidia-smi`` samples during our warm run.

The ratio is pyhmmer's time over our warm run's.  The table (markdown and JSON in --out) is
printed last.

    python bench/query_search_bench.py --cells 1:273m:few,1:68m:many --cpu-path 1:68m:many
    python bench/query_search_bench.py --program phmmer --cells 100:273m:few
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import hmmsearch_matrix as matrix


def pick_queries(n: int) -> list[tuple[str, bytes]]:
    """n proteome proteins of 100-600 residues at evenly spaced places (stop symbols removed)."""
    names, seqs = matrix.read_proteome(None)
    fit = [(name, seq.replace(b"*", b"")) for name, seq in zip(names, seqs) if 100 <= len(seq) <= 600]
    step = len(fit) / n
    return [fit[int(step * (k + 0.5))] for k in range(n)]


def pyhmmer_worker(program, queries, fasta, cpus, rounds, tbl):
    """The pyhmmer side of a cell (run in its own process): read both files, search, write each
    query's hits (jackhmmer: the last round's)."""
    import pyhmmer

    abc = pyhmmer.easel.Alphabet.amino()
    with pyhmmer.easel.SequenceFile(fasta, digital=True, alphabet=abc) as sf:
        block = sf.read_block()
    with pyhmmer.easel.SequenceFile(queries, digital=True, alphabet=abc) as sf:
        qs = sf.read_block()
    with open(tbl, "wb") as out:
        if program == "phmmer":
            for hits in pyhmmer.hmmer.phmmer(qs, block, cpus=int(cpus)):
                hits.write(out, format="targets", header=False)
            return
        for result in pyhmmer.hmmer.jackhmmer(qs, block, max_iterations=int(rounds), cpus=int(cpus),
                                              incE=0.001, incdomE=0.001):
            result.hits.write(out, format="targets", header=False)


def ours_command(args, device, queries, gsdb, tbl) -> list[str]:
    rounds = ["-N", str(args.rounds)] if args.program == "jackhmmer" else []
    return [sys.executable, "-m", "gpu_search", args.program, "-q", *rounds, "--cpu", str(args.cpus),
            "-o", os.devnull, "--noali", "--device", device, "--tblout", str(tbl), str(queries), str(gsdb)]


def without_query_name(rows) -> list[bytes] | None:
    return None if rows is None else [b" ".join(r.split()[:2] + r.split()[3:]) for r in rows]


def run_cell(cell: str, args) -> dict:
    n, db, homologs = cell.split(":")
    fasta, gsdb, info = matrix.build_database(db, homologs, args)
    queries = args.work / f"queries_{n}.faa"
    queries.write_bytes(b"".join(b">%s\n%s\n" % (name.encode(), seq) for name, seq in pick_queries(int(n))))
    row = {"cell": cell, "program": args.program, "queries": int(n), "database": db, "homologs": homologs,
           "residues": info["residues"], "rounds": args.rounds if args.program == "jackhmmer" else "-"}
    logs, tbl = matrix.cell_files(args.program, cell, args)
    print(f"== {args.program} {cell}: {n} queries x {info['residues'] / 1e6:.0f} M residues ({homologs} "
          f"homologs)", flush=True)
    matrix.ours_cold_warm_cpu(lambda device, out: ours_command(args, device, queries, gsdb, out), cell, args, logs,
                              tbl, row)
    if args.no_pyhmmer:
        row["pyhmmer"] = {"rc": "not run"}
    else:
        row["pyhmmer"] = matrix.run_timed([sys.executable, __file__, "_pyhmmer", args.program, str(queries), str(fasta),
                                           str(args.cpus), str(args.rounds), str(tbl["pyhmmer"])],
                                          args.timeout, logs / f"{cell}_pyhmmer.log")
    matrix.compare_runs(row, tbl, lambda ours, theirs: without_query_name(ours) == without_query_name(theirs))
    print("   " + json.dumps(row), flush=True)
    return row


def markdown(rows: list[dict]) -> str:
    secs = matrix.seconds_text
    lines = ["| queries | database | homologs | rounds | ours cold | ours warm | ours CPU | pyhmmer | "
             "pyhmmer / ours | rows (GPU = CPU; = pyhmmer) | GPU busy |",
             "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |"]
    for r in rows:
        same = [("yes" if r["gpu_same_as_cpu"] else "NO") if "gpu_same_as_cpu" in r else "",
                "yes" if r["same_as_pyhmmer"] else f"NO ({r['pyhmmer_rows']:,})"]
        busy = r["ours_warm"].get("gpu_busy")
        lines.append(f"| {r['queries']} | {r['residues'] / 1e6:.0f} M | {r['homologs']} | {r['rounds']} | "
                     f"{secs(r, 'ours_cold')} | {secs(r, 'ours_warm')} | {secs(r, 'ours_cpu')} | "
                     f"{secs(r, 'pyhmmer')} | {r.get('ratio', '')}x | {r['rows']:,} ({'; '.join(same)}) | "
                     f"{'' if busy is None else f'{busy:.0f}%'} |")
    return "\n".join(lines)


def main():
    if sys.argv[1:2] == ["_pyhmmer"]:
        pyhmmer_worker(*sys.argv[2:8])
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", default="1:273m:few,1:68m:many", help="queries:database:homologs, comma-separated")
    ap.add_argument("--program", choices=["jackhmmer", "phmmer"], default="jackhmmer")
    ap.add_argument("--rounds", type=int, default=3, help="jackhmmer's -N")
    ap.add_argument("--no-pyhmmer", action="store_true", help="our runs only (a change measured against itself)")
    matrix.add_run_arguments(ap)
    args = ap.parse_args()
    matrix.run_arguments(args)
    rows = []
    t = time.perf_counter()
    for cell in args.cells.split(","):
        rows.append(run_cell(cell, args))
        (args.out / f"{args.program}_bench.json").write_text(json.dumps(rows, indent=1))
    table = markdown(rows)
    (args.out / f"{args.program}_bench.md").write_text(table + "\n")
    print(f"\n{args.cpus} CPU threads each side; {time.perf_counter() - t:.0f} s in all\n{table}")


if __name__ == "__main__":
    main()
