"""The traceback restarts from the preliminary HSP's own start point, as BLAST+ 2.12 does.

BLAST+ 2.12's Blast_TracebackFromHSPList (blast_traceback.c) no longer checks the
11-letter window around that point (the older BLAST_CheckStartForGappedAlignment);
only an HSP without a start point gets one from BlastGetOffsetsForGappedAlignment.
Two short gapped HSPs between proteins of pyhmmer's proteome whose window scores -1
and 0 were lost when the check was applied.  Expected rows: BLAST+ 2.12.0 blastp,
-comp_based_stats 0, on a database of the query and the subject with -dbsize 109522
(the size of the 299-protein database the cases were found in).
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import ROOT

from gpu_search.blast import traceback as tb
from gpu_search.blast.alphabet import EASEL_TO_NCBISTDAA, blast_query_codes
from gpu_search.blast.gapped import PRELIM_HSP_DTYPE
from gpu_search.blast.matrix import load_matrix

CASES = {
    # query, subject, options, BLAST+'s rows for the pair (-outfmt "6 std score")
    "PAM30": ("938293.PRJEB85.HG003684_2", "938293.PRJEB85.HG003685_208", ["-matrix", "PAM30"], [
        "938293.PRJEB85.HG003684_2\t938293.PRJEB85.HG003685_208\t47.368\t19\t3\t2\t218\t230\t191\t208\t2.2\t24.8\t51",
    ]),
    "BLOSUM62 -evalue 10000": ("938293.PRJEB85.HG003688_20", "938293.PRJEB85.HG003686_398", ["-evalue", "10000"], [
        "938293.PRJEB85.HG003688_20\t938293.PRJEB85.HG003686_398\t62.500\t8\t3\t0\t10\t17\t227\t234\t309\t15.4\t28",
        "938293.PRJEB85.HG003688_20\t938293.PRJEB85.HG003686_398\t42.105\t19\t6\t2\t30\t45\t316\t332\t970\t13.9\t24",
    ]),
}


def fasta(proteome, names: list[str]) -> str:
    """The named proteins of the proteome as FASTA text."""
    where = {proteome.name(i): i for i in range(proteome.n_seqs)}
    return "".join(f">{n} {proteome.description(where[n])}\n{proteome.text(where[n])}\n" for n in names)


@pytest.mark.parametrize("case", list(CASES))
def test_short_gapped_hsp_kept_as_blast(case, proteome, tmp_path):
    qname, sname, options, expected = CASES[case]
    query, db = tmp_path / "q.faa", tmp_path / "db.faa"
    query.write_text(fasta(proteome, [qname]))
    db.write_text(fasta(proteome, [qname, sname]))
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "gpu_search", "blastp", "-query", str(query), "-db", str(db),
                        "-outfmt", "6 std score", "-dbsize", "109522", "-comp_based_stats", "0", "-q", *options],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert [row for row in r.stdout.splitlines() if row.split("\t")[1] == sname] == expected


def test_traceback_starts_where_the_window_scores_zero(proteome):
    """The second case's preliminary HSP (score 24, start point query 37, subject 326): the
    5 + 1 + 5 letters around the start point score 0 under BLOSUM62; traced from there the
    alignment is BLAST's (query 30-45, subject 316-332, score 24, 2 gap opens)."""
    names = [proteome.name(i) for i in range(proteome.n_seqs)]
    q = blast_query_codes(EASEL_TO_NCBISTDAA[np.asarray(proteome.sequence(names.index("938293.PRJEB85.HG003688_20")))])
    s = EASEL_TO_NCBISTDAA[np.asarray(proteome.sequence(names.index("938293.PRJEB85.HG003686_398")))]
    prelim = np.array([(24, 29, 45, 315, 332, 37, 326)], dtype=PRELIM_HSP_DTYPE)
    r = tb.traceback(prelim, q, s, load_matrix("BLOSUM62").scores, 11, 1, 64)
    rows = tb.tabular_rows(r, q, s)
    assert [row[:10] for row in rows] == [(30, 45, 316, 332, 24, 8, 11, 5, 2, 19)]
    assert rows[0][10:] == ("VSGINGG---IGWIIYKLV", "ISGSSNGKIFLGW--YKKV")
