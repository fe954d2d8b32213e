"""Where one jackhmmer command's seconds go, round by round, on the GPU host.

    python3 bench/probes/jackhmmer_rounds.py [--cells 1:273m:few,1:273m:many] [--rounds 3]

For each cell (queries and databases as ``bench/query_search_bench.py`` builds them), runs
``gpu-search jackhmmer --device gpu`` twice (the first warms the caches) with the report
kept, and prints the second run's wall time, the seconds before the first round (start-up:
imports, CUDA, the database read and uploaded), and each round's elapsed seconds and filter
counts as the report gives them (pipeline statistics: sequences past MSV, bias, Viterbi and
Forward; Z; domZ, the hits reported where --domZ is not given); then, with py-spy where present, the innermost frames of ours per
thread role over a third run.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(BENCH.parent), str(BENCH)]

import hmmsearch_matrix as matrix  # noqa: E402
import query_search_bench as qs  # noqa: E402
from probes.hmmsearch_profile import summarise  # noqa: E402

STAT = re.compile(r"^(Passed MSV filter|Passed bias filter|Passed Vit filter|Passed Fwd filter|"
                  r"Initial search space \(Z\)|Domain search space  \(domZ\)):\s+(\S+)")


def rounds_of(report: str) -> list[dict]:
    """Each round's statistics, in report order."""
    out = []
    for block in report.split("Internal pipeline statistics summary:")[1:]:
        row = {}
        for line in block.splitlines()[:20]:
            m = STAT.match(line)
            if m:
                key = m.group(1)
                row[key.split()[1] if key.startswith("Passed") else "Z" if "(Z)" in key else "domZ"] = m.group(2)
            elif line.startswith("# CPU time:"):
                row["elapsed"] = line.split("Elapsed:")[1].strip()
        out.append(row)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cells", default="1:273m:few,1:273m:many")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cpus", type=int, default=os.cpu_count())
    ap.add_argument("--work", type=Path, default=Path("/tmp/gsmatrix"))
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", ".")))
    args = ap.parse_args()
    args.copies, args.base_seqs, args.max_m = dict(matrix.DB_COPIES), 0, matrix.M_MAX
    args.work.mkdir(parents=True, exist_ok=True)
    spy = shutil.which("py-spy")
    for cell in args.cells.split(","):
        n, db, homologs = cell.split(":")
        _, gsdb, info = matrix.build_database(db, homologs, args)
        queries = args.work / f"queries_{n}.faa"
        queries.write_bytes(b"".join(b">%s\n%s\n" % (name.encode(), seq) for name, seq in qs.pick_queries(int(n))))
        with tempfile.TemporaryDirectory() as tmp:
            report = Path(tmp) / "report.txt"
            cmd = [sys.executable, "-m", "gpu_search", "jackhmmer", "-q", "-N", str(args.rounds), "--cpu",
                   str(args.cpus), "-o", str(report), "--noali", "--device", "gpu", str(queries), str(gsdb)]
            env = matrix.cache_env(args.work / "cache")
            subprocess.run(cmd, env=env, check=True)
            t = time.perf_counter()
            subprocess.run(cmd, env=env, check=True)
            wall = time.perf_counter() - t
            rows = rounds_of(report.read_text())
            print(f"== {cell} ({info['residues'] / 1e6:.0f} M residues): {wall:.2f} s, {len(rows)} rounds")
            for k, row in enumerate(rows, start=1):
                print(f"  round {k}: " + ", ".join(f"{key} {value}" for key, value in row.items()))
            if spy:
                raw = args.out / f"spy-{cell.replace(':', '_')}.txt"
                t = time.perf_counter()
                subprocess.run([spy, "record", "--nonblocking", "--threads", "--rate", "200", "--format", "raw",
                                "-o", str(raw), "--"] + cmd, env=env, capture_output=True)
                if raw.exists():
                    summarise(raw, time.perf_counter() - t, 200, top=10)


if __name__ == "__main__":
    main()
