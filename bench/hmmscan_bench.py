"""hmmscan end to end: ``gpu-search hmmscan`` against pyhmmer's hmmscan on all cores, on the
same host, in one run.

Cells: models x queries, e.g. ``2000:proteome,2000:shuffled,20000:proteome``.  The models are
``bench/hmmsearch_matrix.py``'s single-sequence models (built from proteins of the proteome and
their mutated copies, M ~30-1,500; built once under --work) in one file pressed by pyhmmer's
hmmpress, as Pfam is used.  The queries are the proteome's 2,100 proteins (stop symbols
removed): "proteome", where every model has homologs among the queries (many hits), or each
protein's residues shuffled, "shuffled" (nearly none).  Each cell, every tool a subprocess
timed by its wall time:

* ours: ``python -m gpu_search hmmscan -q --cpu N -o /dev/null --noali --device gpu --tblout T
  MODELS QUERIES``, cold (CuPy's, numba's and CUDA's caches a new empty folder) and warm (the
  same command again on the caches the cold run left); ``--device cpu`` where --cpu-path says;
* pyhmmer: ``pyhmmer.hmmer.hmmscan(queries, profiles, cpus=N)`` with the profiles read from
  the pressed files, in a subprocess that reads both files itself and writes each query's hits
  with ``TopHits.write(format="targets")``;
* rows: our warm run's --tblout against pyhmmer's and our cold run's (and our CPU run's);
* GPU busy: mean of ``nvidia-smi`` samples during our warm run.

The ratio is pyhmmer's time over our warm run's.  The table (markdown and JSON in --out) is
printed last.

    python bench/hmmscan_bench.py --cells 2000:proteome,2000:shuffled --cpu-path 2000:proteome
    python bench/hmmscan_bench.py --cells 2000:proteome1,2000:proteome10 --cpu-path 2000:proteome1
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

import hmmsearch_matrix as matrix

sys.path.insert(0, str(matrix.REPO))
from gpu_search.hmmer.hmmscan import PRESSED_SUFFIXES  # noqa: E402


def pyhmmer_worker(hmm_path: str, fasta: str, cpus: str, tbl: str) -> None:
    """The pyhmmer side of a cell (its own process): hmmscan from the pressed files."""
    import pyhmmer

    abc = pyhmmer.easel.Alphabet.amino()
    with pyhmmer.easel.SequenceFile(fasta, digital=True, alphabet=abc) as sf:
        seqs = sf.read_block()
    with pyhmmer.plan7.HMMFile(hmm_path) as hf:
        if not hf.is_pressed():
            raise SystemExit(f"{hmm_path}: not pressed")
        profiles = list(hf.optimized_profiles())
    with open(tbl, "wb") as out:
        for hits in pyhmmer.hmmer.hmmscan(seqs, profiles, cpus=int(cpus)):
            hits.write(out, format="targets", header=False)


def press(hmm_path: Path) -> None:
    """hmmpress's four files beside the model file (pyhmmer's hmmpress), once."""
    import pyhmmer

    if all(hmm_path.with_name(hmm_path.name + s).exists() for s in PRESSED_SUFFIXES):
        return
    with pyhmmer.plan7.HMMFile(hmm_path) as hf:
        pyhmmer.hmmer.hmmpress(hf, hmm_path)


def write_queries(kind: str, work: Path) -> tuple[Path, int, int]:
    """The proteome's proteins as the queries (kind "proteome"), or each one's residues shuffled
    with a fixed seed ("shuffled"); "proteomeN", e.g. proteome10: N proteins of 100-600
    residues at evenly spaced places (a few proteins annotated, fewer than the threads); (file,
    proteins, residues)."""
    if kind.startswith("proteome") and kind[len("proteome"):].isdigit():
        from query_search_bench import pick_queries

        names, seqs = zip(*pick_queries(int(kind[len("proteome"):])))
    else:
        names, seqs = matrix.read_proteome(None)
    seqs = [s.replace(b"*", b"") for s in seqs]
    if kind == "shuffled":
        rng = random.Random(11)
        seqs = [bytes(rng.sample(list(s), len(s))) for s in seqs]
    elif not kind.startswith("proteome"):
        raise SystemExit(f"unknown queries {kind!r}: proteome, proteomeN or shuffled")
    path = work / f"hmmscan_queries_{kind}.faa"
    path.write_bytes(b"".join(b">%s\n%s\n" % (n.encode(), s) for n, s in zip(names, seqs)))
    return path, len(seqs), sum(len(s) for s in seqs)


def ours_command(args, device, hmm, queries, tbl) -> list[str]:
    return [sys.executable, "-m", "gpu_search", "hmmscan", "-q", "--cpu", str(args.cpus), "-o", os.devnull,
            "--noali", "--device", device, "--tblout", str(tbl), str(hmm), str(queries)]


def run_cell(cell: str, args) -> dict:
    n, kind = cell.split(":")
    hmm, info = matrix.build_models(int(n), args)
    press(hmm)
    queries, n_queries, residues = write_queries(kind, args.work)
    row = {"cell": cell, "models": int(n), "queries": kind, "n_queries": n_queries, "residues": residues,
           "M_mean": info["M_mean"]}
    logs, tbl = matrix.cell_files("hmmscan", cell, args)
    print(f"== hmmscan {cell}: {n_queries} queries ({kind}) x {n} models (mean M {info['M_mean']})", flush=True)
    matrix.ours_cold_warm_cpu(lambda device, out: ours_command(args, device, hmm, queries, out), cell, args, logs,
                              tbl, row)
    row["pyhmmer"] = matrix.run_timed([sys.executable, __file__, "_pyhmmer", str(hmm), str(queries), str(args.cpus),
                                       str(tbl["pyhmmer"])], args.timeout, logs / f"{cell}_pyhmmer.log")
    matrix.compare_runs(row, tbl)
    print("   " + json.dumps(row), flush=True)
    return row


def markdown(rows: list[dict]) -> str:
    secs = matrix.seconds_text
    lines = ["| models | queries | ours cold | ours warm | ours CPU | pyhmmer hmmscan | pyhmmer / ours | "
             "rows (= pyhmmer; cold = warm; GPU = CPU) | GPU busy |",
             "| ---: | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |"]
    for r in rows:
        same = ["yes" if r["same_as_pyhmmer"] else f"NO ({r['pyhmmer_rows']:,})",
                "yes" if r["cold_same_as_warm"] else "NO"]
        if "gpu_same_as_cpu" in r:
            same.append("yes" if r["gpu_same_as_cpu"] else "NO")
        busy = r["ours_warm"].get("gpu_busy")
        lines.append(f"| {r['models']:,} (mean M {r['M_mean']}) | {r['n_queries']:,} {r['queries']} | "
                     f"{secs(r, 'ours_cold')} | {secs(r, 'ours_warm')} | {secs(r, 'ours_cpu')} | "
                     f"{secs(r, 'pyhmmer')} | {r.get('ratio', '')}x | {r['rows']:,} ({'; '.join(same)}) | "
                     f"{'' if busy is None else f'{busy:.0f}%'} |")
    return "\n".join(lines)


def main():
    if sys.argv[1:2] == ["_pyhmmer"]:
        pyhmmer_worker(*sys.argv[2:6])
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", default="2000:proteome,2000:shuffled", help="models:queries, comma-separated")
    matrix.add_run_arguments(ap)
    args = ap.parse_args()
    matrix.run_arguments(args)
    rows = []
    t = time.perf_counter()
    for cell in args.cells.split(","):
        rows.append(run_cell(cell, args))
        (args.out / "hmmscan_bench.json").write_text(json.dumps(rows, indent=1))
    table = markdown(rows)
    (args.out / "hmmscan_bench.md").write_text(table + "\n")
    print(f"\n{args.cpus} CPU threads each side; {time.perf_counter() - t:.0f} s in all\n{table}")


if __name__ == "__main__":
    main()
