"""The ungapped X-drop is BLAST's x_dropoff_init even where the ungapped cutoff is lower.

Older BLAST versions capped x_dropoff at the cutoff (BlastInitialWordParametersUpdate,
blast_parameters.c); BLAST+ 2.12 does not.  At -evalue 10000 this query's ungapped
cutoff is 15 and its X-drop 16: the extension on diagonal 44 falls exactly 15 below
its best before it climbs back, and the longer init HSP leads to BLAST's score of 46
instead of 42.  Expected rows: BLAST+ 2.12.0 blastp, -comp_based_stats 0, on a
database of the query and the subject with -dbsize 109522.
"""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import ROOT

QUERY, SUBJECT = "938293.PRJEB85.HG003685_253", "938293.PRJEB85.HG003685_250"
BLAST_ROWS = [
    "938293.PRJEB85.HG003685_253\t938293.PRJEB85.HG003685_250\t" + row for row in (
        "23.000\t100\t68\t3\t20\t111\t65\t163\t1.4\t22.3\t46",
        "47.619\t21\t11\t0\t43\t63\t406\t426\t45\t17.7\t34",
        "25.455\t55\t32\t3\t12\t62\t407\t456\t81\t16.9\t32",
        "32.432\t37\t23\t1\t34\t70\t340\t374\t144\t16.2\t30",
        "30.000\t20\t14\t0\t30\t49\t167\t186\t815\t13.9\t24",
        "57.143\t7\t3\t0\t72\t78\t340\t346\t1087\t13.5\t23",
        "28.571\t14\t10\t0\t33\t46\t159\t172\t4558\t11.5\t18",
    )]


def test_ungapped_xdrop_not_capped_at_the_cutoff(proteome, tmp_path):
    where = {proteome.name(i): i for i in range(proteome.n_seqs)}

    def fasta(names):
        return "".join(f">{n} {proteome.description(where[n])}\n{proteome.text(where[n])}\n" for n in names)

    query, db = tmp_path / "q.faa", tmp_path / "db.faa"
    query.write_text(fasta([QUERY]))
    db.write_text(fasta([QUERY, SUBJECT]))
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "gpu_search", "blastp", "-query", str(query), "-db", str(db),
                        "-outfmt", "6 std score", "-evalue", "10000", "-dbsize", "109522", "-comp_based_stats", "0", "-q"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert [row for row in r.stdout.splitlines() if row.split("\t")[1] == SUBJECT] == BLAST_ROWS
