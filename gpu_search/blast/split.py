"""BLAST+'s query splitting: long queries searched in overlapping chunks in the preliminary stage.

BLAST+ concatenates its queries into batches (``hitlist.query_batches``) and,
where a batch holds at least 19,800 residues, cuts the concatenation into
chunks of about 10,000 residues overlapping by 100 (``CQuerySplitter``,
split_query.cpp).  Each chunk is searched on its own through the preliminary
stage: every query's piece inside it has its own lookup table, its own
ungapped Karlin block and cutoffs, and its own length in the E-values
(Spouge's m).  The chunks' hit lists are then merged in chunk order
(``BlastHSPStreamMerge``): HSPs that meet across a chunk boundary are joined
into one, and each hit list is cut again to the preliminary list's size.  The
traceback then runs on whole queries, as without splitting.  So a query that
BLAST+ splits gets other preliminary HSPs, and other rows, than the same query
searched whole; this module reproduces the split and the merge.

A query that lies inside one chunk is searched whole: its piece is the query.
"""

from __future__ import annotations

import numpy as np

from .gapped import score_order
from .hitlist import list_order_key, query_batches

CHUNK_SIZE = 10_000             # SplitQuery_GetChunkSize (blastp)
CHUNK_OVERLAP = 100             # SplitQuery_GetOverlapChunkSize
OVERLAP_DIAG_CLOSE = 10         # blast_hits.c: HSPs whose diagonals differ by less may be joined


def chunk_bounds(total: int) -> list[tuple[int, int]]:
    """The chunks of a batch of ``total`` residues, [start, end) on the concatenated queries
    (``SplitQuery_CalculateNumChunks`` and ``CQuerySplitter::x_ComputeChunkRanges``): one
    chunk unless the batch holds at least two chunks' worth; then chunks of an even size,
    each starting 100 residues before the last one's end, the last one ending at the end."""
    n = total // (CHUNK_SIZE - CHUNK_OVERLAP)
    if n <= 1:
        return [(0, total)]
    size = (total + (n - 1) * CHUNK_OVERLAP) // n
    if n < size - CHUNK_OVERLAP:         # rounded up where that keeps the number of chunks
        size += 1
    bounds, start = [], 0
    for k in range(n):
        end = start + size
        if end >= total or k + 1 == n:
            end = total
        bounds.append((start, end))
        start += size - CHUNK_OVERLAP
        if start > total or end == total:
            break
    return bounds


def split_queries(lengths) -> dict[int, list[tuple[int, int]]]:
    """The queries BLAST+ splits, each with its pieces in chunk order: {query: [(start, end),
    ...]}, positions on the query, ends exclusive.  A query inside one chunk is not listed."""
    splits: dict[int, list[tuple[int, int]]] = {}
    for batch in query_batches(lengths):
        sizes = [int(lengths[q]) for q in batch]
        chunks = chunk_bounds(sum(sizes))
        if len(chunks) == 1:
            continue
        first = 0
        for q, size in zip(batch, sizes):
            last = first + size
            pieces = [(max(a, first) - first, min(b, last) - first) for a, b in chunks if a < last and first < b]
            if len(pieces) > 1:
                splits[q] = pieces
            first = last
    return splits


# --- merging the chunks' hit lists ---------------------------------------------------------------
# A hit list here is {subject: (rows, evalues)}: PRELIM_HSP rows (positions on the whole query)
# in score order, and each row's preliminary E-value, as its chunk computed it.


def _sorted(rows: np.ndarray, evalues: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = score_order(rows["score"], rows["q_start"], rows["q_end"], rows["s_start"], rows["s_end"])
    return rows[order], evalues[order]


def _join_hsp_lists(old: tuple, new: tuple, split: int) -> tuple[np.ndarray, np.ndarray]:
    """One subject's HSPs of the chunks so far (``old``) and of the next chunk (``new``, its
    piece starting at ``split`` on the query) joined (``Blast_HSPListsMerge``).

    HSPs near the boundary (old ones ending after ``split``, new ones starting before
    ``split`` + the overlap) are candidates; an old HSP takes in each new one whose start
    diagonal is within 10 of its end diagonal and whose start or end lies in its box
    (``s_BlastMergeTwoHSPs``): the joined HSP spans both boxes, keeps the gapped start of the
    higher score, and scores the larger of that score and the two HSPs' score density times
    its length; its E-value stays the old one's.  The lists are then joined and sorted by score.
    """
    rows1, ev1 = old[0].copy(), old[1]
    rows2, ev2 = new
    keep2 = np.ones(len(rows2), dtype=bool)
    if split > 0:
        near2 = np.flatnonzero(rows2["q_start"] < split + CHUNK_OVERLAP)
        for i in np.flatnonzero(rows1["q_end"] > split):
            h1 = rows1[i]
            for j in near2:
                if not keep2[j]:
                    continue
                h2 = rows2[j]
                end_diag = int(h1["q_end"]) - int(h1["s_end"])
                start_diag = int(h2["q_start"]) - int(h2["s_start"])
                if abs(end_diag - start_diag) < OVERLAP_DIAG_CLOSE and _join(h1, h2):
                    keep2[j] = False
    rows = np.concatenate([rows1, rows2[keep2]])
    evalues = np.concatenate([ev1, ev2[keep2]])
    return _sorted(rows, evalues)


def _contains(q0, q1, s0, s1, q, s) -> bool:
    """CONTAINED_IN_HSP: the point (q, s) in the box [q0, q1] x [s0, s1]."""
    return q0 <= q <= q1 and s0 <= s <= s1


def _join(h1, h2) -> bool:
    """``s_BlastMergeTwoHSPs``: ``h1`` (a row, changed in place) takes in ``h2`` where h2's
    start or end lies in h1's box."""
    q0, q1, s0, s1 = int(h1["q_start"]), int(h1["q_end"]), int(h1["s_start"]), int(h1["s_end"])
    if not (_contains(q0, q1, s0, s1, int(h2["q_start"]), int(h2["s_start"]))
            or _contains(q0, q1, s0, s1, int(h2["q_end"]), int(h2["s_end"]))):
        return False
    score1, score2 = int(h1["score"]), int(h2["score"])
    density = (score1 + score2) * 1.0 / ((q1 - q0) + (int(h2["q_end"]) - int(h2["q_start"])))
    h1["q_start"] = min(q0, int(h2["q_start"]))
    h1["s_start"] = min(s0, int(h2["s_start"]))
    h1["q_end"] = max(q1, int(h2["q_end"]))
    h1["s_end"] = max(s1, int(h2["s_end"]))
    if score2 > score1:
        h1["q_gapped_start"] = h2["q_gapped_start"]
        h1["s_gapped_start"] = h2["s_gapped_start"]
        h1["score"] = score2
    h1["score"] = max(int(density * (int(h1["q_end"]) - int(h1["q_start"]))), int(h1["score"]))
    return True


def best_lists(lists: dict, size: int, first_oid: int) -> dict:
    """The ``size`` best subjects of a hit list (``Blast_HitListUpdate``'s heap): best E-value,
    then best score, then the later database position."""
    if len(lists) <= size:
        return lists
    ranked = sorted(lists, key=lambda s: list_key(lists[s], first_oid + s))
    return {s: lists[s] for s in ranked[:size]}


def list_key(hsps: tuple, oid: int):
    """``s_EvalueCompareHSPLists``' order of one subject's HSP list."""
    rows, evalues = hsps
    return list_order_key(float(evalues.min()), int(rows["score"].max()), oid)


def merge_chunk(combined: dict, new: dict, split: int, size: int, first_oid: int) -> dict:
    """The hit list of the chunks so far and the next chunk's (its piece of the query starting
    at ``split``), merged (``Blast_HitListMerge``): a subject in both gets its HSP lists
    joined (``_join_hsp_lists``; where the piece starts the query, appended), and the list
    is cut to ``size`` subjects again."""
    merged = dict(combined)
    for s, hsps in new.items():
        merged[s] = _join_hsp_lists(merged[s], hsps, split) if s in merged else hsps
    return best_lists(merged, size, first_oid)
