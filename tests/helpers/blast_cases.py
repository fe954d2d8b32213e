"""Helpers shared by the blastp tests: BLAST+'s programs, the reference queries, BLAST's cutoffs,
and the comparison of an ungapped engine (the GPU's, or its kernel emulated) with the CPU path."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from gpu_search.blast import stats
from gpu_search.blast.alphabet import EASEL_TO_NCBISTDAA, blast_query_codes
from gpu_search.blast.lookup import build_lookup
from gpu_search.blast.ungapped import ungapped_extensions

BLASTP = shutil.which("blastp")
MAKEBLASTDB = shutil.which("makeblastdb")
needs_blast = pytest.mark.skipif(BLASTP is None or MAKEBLASTDB is None,
                                 reason="BLAST+ (blastp, makeblastdb) not installed: apt-get install ncbi-blast+")

# Proteome queries of about 130, 500 and 1000 residues (cuBLASTP's lengths)
QUERIES = ["938293.PRJEB85.HG003686_354",   # 130
           "938293.PRJEB85.HG003685_287",   # 499
           "938293.PRJEB85.HG003685_162"]   # 1000


def cutoffs(q, matrix, db_length):
    """BLAST's ungapped X-drop and cutoff for query q against a database of db_length letters."""
    kbp = stats.ungapped_params(q, matrix)
    if kbp is None:                      # no Karlin block (e.g. all X): BLAST skips it; still compare
        return 16, 0
    g = stats.gapped_params(matrix.name, 11, 1)
    cut = stats.search_cutoffs(kbp, g, len(q), stats.BLAST_SEQSRC_MINLENGTH, db_length, evalue=10.0)
    return cut.x_drop_ungapped, cut.ungapped_cutoff


def query_codes(db, i):
    """Sequence i of db as a BLAST query (NCBIstdaa, as BLAST sees it)."""
    return blast_query_codes(EASEL_TO_NCBISTDAA[np.asarray(db.sequence(i))])


def compare(engine, db_codes, q, matrix, word_size=3, threshold=11, window=40, x_drop=None, cutoff=None):
    """An engine's init HSPs (``engine.ungapped_extensions``: the GPU's, or its kernel emulated)
    equal to the CPU path's, field for field and in order; returns how many."""
    residues, offsets = db_codes
    lookup = build_lookup(q, matrix.scores, word_size, threshold)
    xd, cu = cutoffs(q, matrix, int(offsets[-1]))
    xd = xd if x_drop is None else x_drop
    cu = cu if cutoff is None else cutoff
    cpu = ungapped_extensions(q, lookup, residues, offsets, np.arange(len(offsets) - 1), matrix.scores,
                              xd, cu, window, method="scan")
    got = engine.ungapped_extensions(q, lookup, matrix.scores, xd, cu, window)
    assert got.dtype == cpu.dtype
    if not np.array_equal(got, cpu):
        a, b = set(map(tuple, got.tolist())), set(map(tuple, cpu.tolist()))
        raise AssertionError(f"{type(engine).__name__} {len(got)} rows, CPU {len(cpu)}; only it: {sorted(a - b)[:5]}; "
                             f"only CPU: {sorted(b - a)[:5]}")
    return len(cpu)
