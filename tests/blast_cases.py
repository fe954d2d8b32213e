"""Helpers shared by the blastp GPU tests and their CPU-emulated twins: queries and BLAST's cutoffs."""

from __future__ import annotations

import numpy as np

from gpu_search.blast import stats
from gpu_search.blast.alphabet import EASEL_TO_NCBISTDAA, blast_query_codes


def cutoffs(q, matrix, db_length):
    """BLAST's ungapped X-drop and cutoff for query q against a database of db_length letters."""
    kbp = stats.ungapped_params(q, matrix)
    if kbp is None:                      # no Karlin block (e.g. all X): BLAST skips it; still compare
        return 16, 0
    g = stats.gapped_params(matrix.name, 11, 1)
    cut = stats.search_cutoffs(kbp, g, len(q), stats.BLAST_SEQSRC_MINLENGTH, db_length, evalue=10.0)
    return min(cut.x_drop_ungapped, cut.ungapped_cutoff), cut.ungapped_cutoff


def query_codes(db, i):
    """Sequence i of db as a BLAST query (NCBIstdaa, as BLAST sees it)."""
    return blast_query_codes(EASEL_TO_NCBISTDAA[np.asarray(db.sequence(i))])
