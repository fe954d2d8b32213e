"""Preliminary gapped extension of blastp, score only, as BLAST+ 2.12 does it.

For ONE query against ONE subject: the init HSPs of the ungapped stage go in,
the preliminary gapped HSPs come out, in the order BLAST hands them to the
E-value reaping and the traceback stage.  Mirrors (src/algo/blast/core/):

* ``BLAST_GetGappedScore`` (blast_gapalign.c): init HSPs best first; each one
  contained in an already found gapped HSP (``BlastIntervalTreeContainsHSP``,
  blast_itree.c) is skipped; the others get their start point
  (``BlastGetStartForGappedAlignment``: centre of the best 11-residue window of
  the ungapped HSP) and a score-only gapped extension
  (``s_BlastProtGappedAlignment``); an HSP scoring >= cutoff is saved and added
  to the tree (``BlastIntervalTreeAddHSP``, which also drops HSPs sharing an
  endpoint with a better one).  There is no gap-trigger test here: in 2.12 the
  init HSP list already holds only ungapped HSPs scoring >= the ungapped cutoff
  (min(gap trigger, cutoff), ungapped.py).
* The restricted ("approximate") variant: blastp with evalue <= 10 sets
  ``hit_params->restricted_align`` (``BlastHitSavingParametersUpdate``,
  blast_parameters.c); if the best init HSP of the subject scores below
  ``(Int4)(0.68 * cutoff_score_min)``, extensions use ``s_RestrictedGappedAlign``
  (gaps may open only at offsets that are multiples of 10 from the start
  point).  The first extension scoring in ``[(Int4)(0.68 * cutoff), cutoff)``
  throws away every gapped HSP of the subject and restarts the loop with exact
  extensions.
* ``Blast_SemiGappedAlign`` (score only): affine X-drop DP left of the start
  point on the reversed sequences (the start pair included) and right of it;
  the band shrinks as cells fall X below the best.
* After ``BLAST_GetGappedScore``, ``s_BlastSearchEngineOneContext``
  (blast_engine.c) calls ``Blast_HSPListPurgeHSPsWithCommonEndpoints`` (purge;
  blast_hits.c) and ``Blast_HSPListSortByScore`` (``ScoreCompareHSPs``).

In BLAST's code the restricted decision and the restart are per subject over
everything in the init HSP list, which holds the hits of all queries searched
together (best init HSP of the batch against ``cutoff_score_min``, the smallest
cutoff of the batch).  blastp 2.12 does not behave that way with several
queries in one run: with batches of 8 to 11 proteome queries (``-dbsize 1e10``)
the per-query decision below reproduced BLAST on every pair where the two
models differ, the batch-wide one on none.  So: decide per query
(``restricted_alignment_on`` with the query's own best init HSP of the subject
and its own cutoff), which is what the functions below do by default.

Coordinates are 0-based, ends exclusive (BLAST's ``query.offset``/``query.end``).
Scores, gap costs and X-drops are raw score units (arguments; stats.py computes
them: gapped X-drop ``(Int4)(15 ln2 / lambda_gapped)``).

Contents:
    1. PRELIM_HSP_DTYPE, constants, sequence padding
    2. Blast_SemiGappedAlign, s_RestrictedGappedAlign (score-only DP kernels)
    3. AdjustSubjectRange, s_BlastProtGappedAlignment, BlastGetStartForGappedAlignment
    4. containment set (BlastIntervalTreeContainsHSP / BlastIntervalTreeAddHSP)
    5. BLAST_GetGappedScore kernel
    6. HSP list helpers: ScoreCompareHSPs sort, Blast_HSPListPurgeHSPsWithCommonEndpoints
       (numpy and numba versions, per group of rows), the batch kernel (one query, many
       subjects); the GPU twin of sections 2-5 is blast/gpu/gapped.cu
    7. public API: get_gapped_score(), preliminary_gapped_hsps(),
       preliminary_gapped_hsps_batch(), restricted_cutoff(), restricted_alignment_on()
"""

from __future__ import annotations

from .._numba import copy_into, copy_rows, numba
import numpy as np

# --------------------------------------------------------------------------------------------
# 1. Dtype, constants, padding
# --------------------------------------------------------------------------------------------

PRELIM_HSP_DTYPE = np.dtype([('score', 'i4'),
                             ('q_start', 'i4'), ('q_end', 'i4'),
                             ('s_start', 'i4'), ('s_end', 'i4'),
                             ('q_gapped_start', 'i4'), ('s_gapped_start', 'i4')])
"""A preliminary gapped HSP (BlastHSP): 0-based, ends exclusive; the gapped start
point is where the extension started (``query.gapped_start``), the traceback
restarts from it."""

MININT = -(2 ** 31) // 2          # INT4_MIN/2 in blast_gapalign.c
RESTRICT_SIZE = 10                # gaps open only every RESTRICT_SIZE offsets
RESTRICTED_MULT = 0.68            # kRestrictedMult in BLAST_GetGappedScore
RESTRICTED_ALIGNMENT_WORST_EVALUE = 10.0   # blast_parameters.h
HSP_MAX_WINDOW = 11               # blast_gapalign_priv.h / blast_traceback.c
MAX_SUBJECT_OFFSET = 90000        # AdjustSubjectRange
MAX_TOTAL_GAPS = 3000
SENTINEL = 0                      # NCBIstdaa '-': BLAST's sequence sentinel byte


def pad(codes) -> np.ndarray:
    """A sequence with BLAST's sentinel byte before and after (residue i at [i + 1]).

    The DP kernels read one letter past each end of the extension (a value that
    is never used, as in BLAST), so they take padded sequences.
    """
    codes = np.asarray(codes, dtype=np.uint8)
    out = np.empty(len(codes) + 2, dtype=np.uint8)
    out[0] = SENTINEL
    out[-1] = SENTINEL
    out[1:-1] = codes
    return out


# --------------------------------------------------------------------------------------------
# 2. Score-only DP kernels
# --------------------------------------------------------------------------------------------
#
# Both kernels align A against B from an anchor, one direction.  Letter i >= 1 of
# A is qp[q_base + q_dir * i] (qp: padded query), letter j >= 1 of B is
# sp[s_base + s_dir * j].  Right of a start point (q, s): q_base = q + 1,
# s_base = s + 1, dir = +1 (letters q+1, q+2, ...).  Left of it, the start pair
# included: q_base = q + 2, s_base = s + 2, dir = -1 (letters q, q-1, ...).  This
# is BLAST's A[a_index] / A[M - a_index] and B[b_index] / B[N - b_index] indexing.

@numba.njit(cache=True, nogil=True)
def semi_gapped_align(qp, q_base, q_dir, sp, s_base, s_dir, M, N, matrix,
                      gap_open, gap_extend, x_dropoff):
    """``Blast_SemiGappedAlign`` with ``score_only`` (blast_gapalign.c).

    Args:
        qp, sp: padded NCBIstdaa query and subject (``pad``).
        q_base, q_dir, s_base, s_dir: letter addressing (see above).
        M, N: letters available in A (query) and B (subject).
        matrix: int32 (28, 28) substitution matrix.
        gap_open, gap_extend: gap costs (a gap of k letters costs open + k*extend).
        x_dropoff: X-drop in raw score; raised to gap_open + gap_extend if lower.

    Returns:
        (best_score, a_offset, b_offset): letters of A and B in the best
        extension (0, 0 when nothing scores above 0).
    """
    gap_open_extend = gap_open + gap_extend
    if x_dropoff < gap_open_extend:
        x_dropoff = gap_open_extend
    if N <= 0 or M <= 0:
        return 0, 0, 0

    best = np.empty(N + 2, dtype=np.int32)          # BLAST's Int4 BlastGapDP cells
    best_gap = np.empty(N + 2, dtype=np.int32)
    score = -gap_open_extend
    best[0] = 0
    best_gap[0] = -gap_open_extend
    i = 1
    while i <= N:
        if score < -x_dropoff:
            break
        best[i] = score
        best_gap[i] = score - gap_open_extend
        score -= gap_extend
        i += 1

    b_size = i
    best_score = 0
    a_offset = 0
    b_offset = 0
    first_b_index = 0

    for a_index in range(1, M + 1):
        row = matrix[qp[q_base + q_dir * a_index]]
        score = MININT
        score_gap_row = MININT
        last_b_index = first_b_index
        for b_index in range(first_b_index, b_size):
            score_gap_col = best_gap[b_index]
            next_score = best[b_index] + row[sp[s_base + s_dir * (b_index + 1)]]
            if score < score_gap_col:
                score = score_gap_col
            if score < score_gap_row:
                score = score_gap_row
            if best_score - score > x_dropoff:
                if b_index == first_b_index:
                    first_b_index += 1
                else:
                    best[b_index] = MININT
            else:
                last_b_index = b_index
                if score > best_score:
                    best_score = score
                    a_offset = a_index
                    b_offset = b_index
                score_gap_row -= gap_extend
                score_gap_col -= gap_extend
                best_gap[b_index] = max(score - gap_open_extend, score_gap_col)
                score_gap_row = max(score - gap_open_extend, score_gap_row)
                best[b_index] = score
            score = next_score

        if first_b_index == b_size:
            break

        if last_b_index < b_size - 1:
            b_size = last_b_index + 1
        else:
            while score_gap_row >= best_score - x_dropoff and b_size <= N:
                best[b_size] = score_gap_row
                best_gap[b_size] = score_gap_row - gap_open_extend
                score_gap_row -= gap_extend
                b_size += 1

        if b_size <= N:
            best[b_size] = MININT
            best_gap[b_size] = MININT
            b_size += 1

    return best_score, a_offset, b_offset


@numba.njit(cache=True, nogil=True)
def restricted_gapped_align(qp, q_base, q_dir, sp, s_base, s_dir, M, N, matrix,
                            gap_open, gap_extend, x_dropoff):
    """``s_RestrictedGappedAlign`` (blast_gapalign.c): score-only, gaps restricted.

    As ``semi_gapped_align``, but a gap in A (query) may only open in rows
    a % 10 == 0 and a gap in B only in columns b % 10 == 0 (Cameron et al.
    2004).  Same arguments and return values.
    """
    gap_open_extend = gap_open + gap_extend
    if x_dropoff < gap_open_extend:
        x_dropoff = gap_open_extend
    if N <= 0 or M <= 0:
        return 0, 0, 0

    best = np.empty(N + 2, dtype=np.int32)          # BLAST's Int4 BlastGapDP cells
    best_gap = np.empty(N + 2, dtype=np.int32)
    score = -gap_open_extend
    best[0] = 0
    best_gap[0] = -gap_open_extend
    i = 1
    while i <= N:
        if score < -x_dropoff:
            break
        best[i] = score
        best_gap[i] = score - gap_open_extend
        score -= gap_extend
        i += 1

    b_size = i
    best_score = 0
    a_offset = 0
    b_offset = 0
    first_b_index = 0
    b_gap = 0

    for a_index in range(1, M + 1):
        row = matrix[qp[q_base + q_dir * a_index]]
        score = MININT
        score_gap_row = MININT
        last_b_index = first_b_index

        if a_index % RESTRICT_SIZE != 0:
            # a gap never starts in A in this row
            for b_index in range(first_b_index, b_size):
                next_score = best[b_index] + row[sp[s_base + s_dir * (b_index + 1)]]
                if b_index != b_gap:
                    if best_score - score > x_dropoff:
                        best[b_index] = MININT
                        if b_index == first_b_index:
                            first_b_index += 1
                    else:
                        last_b_index = b_index
                        if score > best_score:
                            best_score = score
                            a_offset = a_index
                            b_offset = b_index
                        best[b_index] = score
                else:
                    b_gap += RESTRICT_SIZE
                    score_gap_col = best_gap[b_index]
                    if score < score_gap_col:
                        score = score_gap_col
                    if best_score - score > x_dropoff:
                        best[b_index] = MININT
                        if b_index == first_b_index:
                            first_b_index += 1
                    else:
                        last_b_index = b_index
                        if score > best_score:
                            best_score = score
                            a_offset = a_index
                            b_offset = b_index
                        score_gap_col -= gap_extend
                        best_gap[b_index] = max(score - gap_open_extend, score_gap_col)
                        best[b_index] = score
                score = next_score
            score_gap_row = score
        else:
            # a gap may start in A
            for b_index in range(first_b_index, b_size):
                next_score = best[b_index] + row[sp[s_base + s_dir * (b_index + 1)]]
                if b_index != b_gap:
                    if score < score_gap_row:
                        score = score_gap_row
                    if best_score - score > x_dropoff:
                        best[b_index] = MININT
                        if b_index == first_b_index:
                            first_b_index += 1
                    else:
                        last_b_index = b_index
                        if score > best_score:
                            best_score = score
                            a_offset = a_index
                            b_offset = b_index
                        score_gap_row -= gap_extend
                        score_gap_row = max(score - gap_open_extend, score_gap_row)
                        best[b_index] = score
                else:
                    b_gap += RESTRICT_SIZE
                    score_gap_col = best_gap[b_index]
                    if score < score_gap_col:
                        score = score_gap_col
                    if score < score_gap_row:
                        score = score_gap_row
                    if best_score - score > x_dropoff:
                        best[b_index] = MININT
                        if b_index == first_b_index:
                            first_b_index += 1
                    else:
                        last_b_index = b_index
                        if score > best_score:
                            best_score = score
                            a_offset = a_index
                            b_offset = b_index
                        score_gap_row -= gap_extend
                        score_gap_col -= gap_extend
                        best_gap[b_index] = max(score - gap_open_extend, score_gap_col)
                        score_gap_row = max(score - gap_open_extend, score_gap_row)
                        best[b_index] = score
                score = next_score

        if first_b_index == b_size:
            break

        # first offset of the next row where a gap in B may start
        rem = first_b_index % RESTRICT_SIZE
        b_gap = first_b_index
        if rem > 0:
            b_gap += RESTRICT_SIZE - rem

        if last_b_index < b_size - 1:
            b_size = last_b_index + 1
        else:
            while score_gap_row >= best_score - x_dropoff and b_size <= N:
                best[b_size] = score_gap_row
                best_gap[b_size] = score_gap_row - gap_open_extend
                score_gap_row -= gap_extend
                b_size += 1

        if b_size <= N:
            best[b_size] = MININT
            best_gap[b_size] = MININT
            b_size += 1

    return best_score, a_offset, b_offset


# --------------------------------------------------------------------------------------------
# 3. Extension driver and start point
# --------------------------------------------------------------------------------------------

@numba.njit(cache=True, nogil=True)
def adjust_subject_range(subject_offset, subject_length, query_offset, query_length):
    """``AdjustSubjectRange`` (blast_gapalign.c): window a very long subject.

    Returns (subject_offset, subject_length, start_shift): unchanged (shift 0)
    for subjects shorter than 90000 letters.
    """
    if subject_length < MAX_SUBJECT_OFFSET:
        return subject_offset, subject_length, 0
    s_offset = subject_offset
    max_extension_left = query_offset + MAX_TOTAL_GAPS
    max_extension_right = query_length - query_offset + MAX_TOTAL_GAPS
    if s_offset <= max_extension_left:
        start_shift = 0
    else:
        start_shift = s_offset - max_extension_left
        subject_offset = max_extension_left
    subject_length = min(subject_length, s_offset + max_extension_right) - start_shift
    return subject_offset, subject_length, start_shift


@numba.njit(cache=True, nogil=True)
def prot_gapped_alignment(qp, query_length, sp, subject_length, q_off, s_off, matrix,
                          gap_open, gap_extend, x_dropoff, restricted):
    """``s_BlastProtGappedAlignment`` (in-frame blastp) from the start point (q_off, s_off).

    Left extension (reversed, the start pair included) then right extension,
    exact (``Blast_SemiGappedAlign``) or restricted (``s_RestrictedGappedAlign``).

    Returns:
        (score, q_start, q_stop, s_start, s_stop), ends exclusive, as
        ``gap_align->query_start`` etc.
    """
    q_length = q_off + 1
    s_length = s_off + 1
    s_length, subject_len_adj, subject_shift = adjust_subject_range(
        s_length, subject_length, q_length, query_length)

    # left: A = query[0 .. q_off], B = subject[shift .. shift + s_length - 1], reversed
    score_left = 0
    q_start = q_off
    s_start = s_off
    if q_length != 0 and s_length != 0:
        if restricted:
            score_left, pq, ps = restricted_gapped_align(
                qp, q_off + 2, -1, sp, s_off + 2, -1, q_length, s_length, matrix,
                gap_open, gap_extend, x_dropoff)
        else:
            score_left, pq, ps = semi_gapped_align(
                qp, q_off + 2, -1, sp, s_off + 2, -1, q_length, s_length, matrix,
                gap_open, gap_extend, x_dropoff)
        q_start = q_length - pq
        s_start = s_length - ps + subject_shift

    score_right = 0
    if q_length < query_length and s_length < subject_len_adj:
        M = query_length - q_length
        N = subject_len_adj - s_length
        if restricted:
            score_right, pq, ps = restricted_gapped_align(
                qp, q_off + 1, 1, sp, s_off + 1, 1, M, N, matrix,
                gap_open, gap_extend, x_dropoff)
        else:
            score_right, pq, ps = semi_gapped_align(
                qp, q_off + 1, 1, sp, s_off + 1, 1, M, N, matrix,
                gap_open, gap_extend, x_dropoff)
        q_stop = pq + q_off + 1
        s_stop = ps + s_off + 1
    else:
        # found_end == FALSE
        q_stop = q_off
        s_stop = s_off
    return score_left + score_right, q_start, q_stop, s_start, s_stop


@numba.njit(cache=True, nogil=True)
def get_start_for_gapped_alignment(qp, sp, matrix, q_start, q_length, s_start, s_length):
    """``BlastGetStartForGappedAlignment`` (blast_gapalign.c).

    The query offset of the centre of the best-scoring 11-letter window of the
    ungapped HSP (its midpoint if it is at most 11 long; its first letter if no
    window scores above 0).  The subject offset lies on the same diagonal.
    """
    if q_length <= HSP_MAX_WINDOW:
        return q_start + q_length // 2
    hsp_end = q_start + HSP_MAX_WINDOW
    score = 0
    for k in range(HSP_MAX_WINDOW):
        score += matrix[qp[q_start + k + 1], sp[s_start + k + 1]]
    max_score = score
    max_offset = hsp_end - 1
    hsp_end = q_start + min(q_length, s_length)
    d = s_start - q_start
    for index1 in range(q_start + HSP_MAX_WINDOW, hsp_end):
        score -= matrix[qp[index1 - HSP_MAX_WINDOW + 1], sp[index1 - HSP_MAX_WINDOW + d + 1]]
        score += matrix[qp[index1 + 1], sp[index1 + d + 1]]
        if score > max_score:
            max_score = score
            max_offset = index1
    if max_score > 0:
        max_offset -= HSP_MAX_WINDOW // 2
    else:
        max_offset = q_start
    return max_offset


# --------------------------------------------------------------------------------------------
# 4. Containment set (blast_itree.c semantics for one query, one subject strand)
# --------------------------------------------------------------------------------------------
#
# BLAST's interval tree is an index: ``BlastIntervalTreeContainsHSP`` reports
# exactly whether some HSP of the tree contains the input (both endpoints inside
# the tree HSP's box, ends inclusive, and input score <= tree score), and
# ``BlastIntervalTreeAddHSP`` first removes tree HSPs sharing the input's start
# (or end) point and scoring worse (``s_HSPsHaveCommonEndpoint``: higher score,
# then shorter query range, then shorter subject range wins; identical: the
# tree's), and does not add the input if a better one shares its start or end.
# No two tree HSPs ever share a start or an end, so the set semantics below is
# the tree's.  Rows: q_start, q_end, s_start, s_end, score, alive.

@numba.njit(cache=True, nogil=True)
def tree_contains(tree, n_tree, q_start, q_end, s_start, s_end, score):
    """``BlastIntervalTreeContainsHSP`` with min_diag_separation 0 (s_HSPIsContained)."""
    for t in range(n_tree):
        if tree[t, 5] == 0:
            continue
        if (score <= tree[t, 4]
                and tree[t, 0] <= q_start and q_start <= tree[t, 1]
                and tree[t, 2] <= s_start and s_start <= tree[t, 3]
                and tree[t, 0] <= q_end and q_end <= tree[t, 1]
                and tree[t, 2] <= s_end and s_end <= tree[t, 3]):
            return True
    return False


@numba.njit(cache=True, nogil=True)
def _common_endpoint_keeps_tree(tree, t, q_start, q_end, s_start, s_end, score):
    """``s_HSPsHaveCommonEndpoint`` on a match: True if the tree HSP is kept."""
    if score > tree[t, 4]:
        return False
    if score < tree[t, 4]:
        return True
    in_q = q_end - q_start
    tree_q = tree[t, 1] - tree[t, 0]
    if in_q > tree_q:
        return True
    if in_q < tree_q:
        return False
    in_s = s_end - s_start
    tree_s = tree[t, 3] - tree[t, 2]
    if in_s > tree_s:
        return True
    if in_s < tree_s:
        return False
    return True


@numba.njit(cache=True, nogil=True)
def tree_add(tree, n_tree, q_start, q_end, s_start, s_end, score):
    """``BlastIntervalTreeAddHSP`` (eQueryAndSubject). Returns the new row count."""
    for which in range(2):
        for t in range(n_tree):
            if tree[t, 5] == 0:
                continue
            if which == 0:
                match = tree[t, 0] == q_start and tree[t, 2] == s_start
            else:
                match = tree[t, 1] == q_end and tree[t, 3] == s_end
            if match:
                if _common_endpoint_keeps_tree(tree, t, q_start, q_end, s_start, s_end, score):
                    return n_tree
                tree[t, 5] = 0
    tree[n_tree, 0] = q_start
    tree[n_tree, 1] = q_end
    tree[n_tree, 2] = s_start
    tree[n_tree, 3] = s_end
    tree[n_tree, 4] = score
    tree[n_tree, 5] = 1
    return n_tree + 1


# --------------------------------------------------------------------------------------------
# 5. BLAST_GetGappedScore
# --------------------------------------------------------------------------------------------

@numba.njit(cache=True, nogil=True)
def _get_gapped_score_kernel(init_q_start, init_s_start, init_length, init_score,
                             qp, query_length, sp, subject_length, matrix,
                             gap_open, gap_extend, x_dropoff, cutoff, restricted):
    n = len(init_score)
    out = np.empty((n, 7), dtype=np.int32)
    tree = np.zeros((n, 6), dtype=np.int64)
    n_out = 0
    n_tree = 0
    restarted = False
    restricted_cutoff = 0
    if restricted:
        restricted_cutoff = int(RESTRICTED_MULT * cutoff)
    index = 0
    while index < n:
        q_start = init_q_start[index]
        s_start = init_s_start[index]
        length = init_length[index]
        q_end = q_start + length
        s_end = s_start + length
        if tree_contains(tree, n_tree, q_start, q_end, s_start, s_end, init_score[index]):
            index += 1
            continue
        max_offset = get_start_for_gapped_alignment(qp, sp, matrix, q_start, length,
                                                    s_start, length)
        q_off = max_offset
        s_off = s_start + (max_offset - q_start)
        score, gq0, gq1, gs0, gs1 = prot_gapped_alignment(
            qp, query_length, sp, subject_length, q_off, s_off, matrix,
            gap_open, gap_extend, x_dropoff, restricted)
        if restricted and score < cutoff and score >= restricted_cutoff:
            # inconclusive: drop everything and recompute exactly
            restricted = False
            restarted = True
            n_out = 0
            n_tree = 0
            tree[:, 5] = 0
            index = 0
            continue
        if score >= cutoff:
            out[n_out, 0] = score
            out[n_out, 1] = gq0
            out[n_out, 2] = gq1
            out[n_out, 3] = gs0
            out[n_out, 4] = gs1
            out[n_out, 5] = q_off
            out[n_out, 6] = s_off
            n_out += 1
            n_tree = tree_add(tree, n_tree, gq0, gq1, gs0, gs1, score)
        index += 1
    return out[:n_out], restarted


# --------------------------------------------------------------------------------------------
# 6. HSP list helpers
# --------------------------------------------------------------------------------------------

def score_order(score, q_start, q_end, s_start, s_end) -> np.ndarray:
    """Indices sorting HSPs as ``Blast_HSPListSortByScore`` (``ScoreCompareHSPs``).

    Score descending, then subject start ascending, subject end descending,
    query start ascending, query end descending.
    """
    score = np.asarray(score, dtype=np.int64)
    return np.lexsort((-np.asarray(q_end, np.int64), np.asarray(q_start, np.int64),
                       -np.asarray(s_end, np.int64), np.asarray(s_start, np.int64), -score))


def sort_by_score(hsps: np.ndarray) -> np.ndarray:
    """``Blast_HSPListSortByScore`` on a structured HSP array (fields score, q_start,
    q_end, s_start, s_end)."""
    if len(hsps) <= 1:
        return hsps
    return hsps[score_order(hsps['score'], hsps['q_start'], hsps['q_end'],
                            hsps['s_start'], hsps['s_end'])]


def purge_common_endpoints_index(score, q_start, q_end, s_start, s_end) -> np.ndarray:
    """Indices kept by ``Blast_HSPListPurgeHSPsWithCommonEndpoints`` (purge = TRUE).

    Of the HSPs sharing a start point (query and subject) the first in
    ``s_QueryOffsetCompareHSPs`` order is kept (higher score, then larger
    query end, then larger subject end); then of those sharing an end point the
    first in ``s_QueryEndCompareHSPs`` order (higher score, then larger query
    start, then larger subject start).  For blastp the purge flag is always
    TRUE (``purge |= program != blastn``).  Returns the kept indices in the
    order the second pass leaves them (sort by score afterwards).
    """
    score = np.asarray(score, np.int64)
    q_start = np.asarray(q_start, np.int64)
    q_end = np.asarray(q_end, np.int64)
    s_start = np.asarray(s_start, np.int64)
    s_end = np.asarray(s_end, np.int64)
    idx = np.arange(len(score))
    if len(idx) <= 1:
        return idx
    order = np.lexsort((-s_end, -q_end, -score, s_start, q_start))
    keep = np.ones(len(order), dtype=bool)
    keep[1:] = ((q_start[order[1:]] != q_start[order[:-1]])
                | (s_start[order[1:]] != s_start[order[:-1]]))
    idx = order[keep]
    order = idx[np.lexsort((-s_start[idx], -q_start[idx], -score[idx], s_end[idx], q_end[idx]))]
    keep = np.ones(len(order), dtype=bool)
    keep[1:] = (q_end[order[1:]] != q_end[order[:-1]]) | (s_end[order[1:]] != s_end[order[:-1]])
    return order[keep]


def purge_common_endpoints(hsps: np.ndarray) -> np.ndarray:
    """``Blast_HSPListPurgeHSPsWithCommonEndpoints`` (purge) on a structured HSP array."""
    if len(hsps) <= 1:
        return hsps
    return hsps[purge_common_endpoints_index(hsps['score'], hsps['q_start'], hsps['q_end'],
                                             hsps['s_start'], hsps['s_end'])]


@numba.njit(cache=True, nogil=True)
def _before_in_score_order(r, i, j):
    """``ScoreCompareHSPs``(row i, row j) < 0 on rows (score, q0, q1, s0, s1, ...)."""
    if r[i, 0] != r[j, 0]:
        return r[i, 0] > r[j, 0]
    if r[i, 3] != r[j, 3]:
        return r[i, 3] < r[j, 3]
    if r[i, 4] != r[j, 4]:
        return r[i, 4] > r[j, 4]
    if r[i, 1] != r[j, 1]:
        return r[i, 1] < r[j, 1]
    return r[i, 2] > r[j, 2]


@numba.njit(cache=True, nogil=True)
def _before_in_offset_order(r, i, j):
    """``s_QueryOffsetCompareHSPs``(row i, row j) < 0."""
    if r[i, 1] != r[j, 1]:
        return r[i, 1] < r[j, 1]
    if r[i, 3] != r[j, 3]:
        return r[i, 3] < r[j, 3]
    if r[i, 0] != r[j, 0]:
        return r[i, 0] > r[j, 0]
    if r[i, 2] != r[j, 2]:
        return r[i, 2] > r[j, 2]
    return r[i, 4] > r[j, 4]


@numba.njit(cache=True, nogil=True)
def _before_in_end_order(r, i, j):
    """``s_QueryEndCompareHSPs``(row i, row j) < 0."""
    if r[i, 2] != r[j, 2]:
        return r[i, 2] < r[j, 2]
    if r[i, 4] != r[j, 4]:
        return r[i, 4] < r[j, 4]
    if r[i, 0] != r[j, 0]:
        return r[i, 0] > r[j, 0]
    if r[i, 1] != r[j, 1]:
        return r[i, 1] > r[j, 1]
    return r[i, 3] > r[j, 3]


@numba.njit(cache=True, nogil=True)
def _stable_sort_rows(r, which):
    """Stable insertion sort of the rows of r (glibc's qsort is a stable merge sort)."""
    n = r.shape[0]
    idx = np.arange(n)
    for k in range(1, n):
        x = idx[k]
        m = k - 1
        while m >= 0:
            if which == 0:
                before = _before_in_score_order(r, x, idx[m])
            elif which == 1:
                before = _before_in_offset_order(r, x, idx[m])
            else:
                before = _before_in_end_order(r, x, idx[m])
            if not before:
                break
            idx[m + 1] = idx[m]
            m -= 1
        idx[m + 1] = x
    return r[idx]


@numba.njit(cache=True, nogil=True)
def purge_and_sort_rows(rows):
    """``Blast_HSPListPurgeHSPsWithCommonEndpoints`` (purge) then ``Blast_HSPListSortByScore``
    on rows (score, q_start, q_end, s_start, s_end, ...)."""
    if rows.shape[0] <= 1:
        return rows.copy()
    r = _stable_sort_rows(rows, 1)
    keep = np.ones(r.shape[0], dtype=np.bool_)
    for k in range(1, r.shape[0]):
        keep[k] = r[k, 1] != r[k - 1, 1] or r[k, 3] != r[k - 1, 3]
    r = _stable_sort_rows(r[keep], 2)
    keep = np.ones(r.shape[0], dtype=np.bool_)
    for k in range(1, r.shape[0]):
        keep[k] = r[k, 2] != r[k - 1, 2] or r[k, 4] != r[k - 1, 4]
    return _stable_sort_rows(r[keep], 0)


@numba.njit(cache=True, nogil=True)
def purge_and_sort_groups(rows, counts):
    """``purge_and_sort_rows`` for each group of consecutive rows (``counts`` rows each).

    Args:
        rows: int32 (sum(counts), 7) rows of several subjects, group after group.
        counts: int64 rows per group.

    Returns:
        (rows, counts) after the purge and sort of every group.
    """
    out = np.empty_like(rows)
    new_counts = np.zeros(len(counts), dtype=np.int64)
    a = 0
    k = 0
    for g in range(len(counts)):
        n = counts[g]
        if n:
            r = purge_and_sort_rows(rows[a:a + n])
            copy_rows(out, k, r)
            new_counts[g] = r.shape[0]
            k += r.shape[0]
            a += n
    return out[:k], new_counts


@numba.njit(cache=True, nogil=True)
def _init_before(a, b, q_start, s_start, length, score):
    """``score_compare_match``(init HSP a, b) < 0 (blast_extend.c)."""
    if score[a] != score[b]:
        return score[a] > score[b]
    if s_start[a] != s_start[b]:
        return s_start[a] < s_start[b]
    if length[a] != length[b]:
        return length[a] > length[b]
    return q_start[a] < q_start[b]


@numba.njit(cache=True, nogil=True)
def _prelim_batch_kernel(group_start, group_subject, init_q_start, init_s_start, init_length,
                         init_score, qp, query_length, residues, offsets, matrix, gap_open,
                         gap_extend, x_dropoff, cutoff, restricted_flags):
    n_groups = len(group_subject)
    parts = []
    counts = np.zeros(n_groups, dtype=np.int64)
    restarted = np.zeros(n_groups, dtype=np.bool_)
    for g in range(n_groups):
        lo = group_start[g]
        hi = group_start[g + 1]
        # Blast_InitHitListSortByScore (stable)
        order = np.arange(lo, hi)
        for k in range(1, hi - lo):
            x = order[k]
            m = k - 1
            while m >= 0 and _init_before(x, order[m], init_q_start, init_s_start,
                                          init_length, init_score):
                order[m + 1] = order[m]
                m -= 1
            order[m + 1] = x
        sj = group_subject[g]
        s0 = offsets[sj]
        slen = offsets[sj + 1] - s0
        sp = np.empty(slen + 2, dtype=np.uint8)
        sp[0] = SENTINEL
        sp[slen + 1] = SENTINEL
        copy_into(sp, 1, residues[s0:s0 + slen])
        rows, rs = _get_gapped_score_kernel(
            init_q_start[order], init_s_start[order], init_length[order], init_score[order],
            qp, query_length, sp, slen, matrix, gap_open, gap_extend, x_dropoff, cutoff,
            restricted_flags[g])
        rows = purge_and_sort_rows(rows)
        parts.append(rows)
        counts[g] = rows.shape[0]
        restarted[g] = rs
    total = counts.sum()
    out = np.empty((total, 7), dtype=np.int32)
    k = 0
    for g in range(n_groups):
        copy_rows(out, k, parts[g])
        k += counts[g]
    return out, counts, restarted


# --------------------------------------------------------------------------------------------
# 7. Public API
# --------------------------------------------------------------------------------------------

def restricted_cutoff(cutoff: int) -> int:
    """``(Int4)(0.68 * cutoff)``: below it a subject's best init HSP starts restricted
    extensions, and a restricted score from it up to the cutoff restarts them exactly."""
    return int(RESTRICTED_MULT * cutoff)


def restricted_alignment_on(best_ungapped_score: int, cutoff_score_min: int,
                            expect_value: float = 10.0) -> bool:
    """Whether ``BLAST_GetGappedScore`` starts with restricted (approximate) extensions.

    ``hit_params->restricted_align`` is set for blastp when evalue <= 10, and
    used when the subject's best init HSP scores below
    ``(Int4)(0.68 * cutoff_score_min)``; pass the query's own best init HSP of
    the subject and its own cutoff (see the module docstring).

    >>> restricted_alignment_on(40, 70), restricted_alignment_on(48, 70)
    (True, False)
    """
    if expect_value > RESTRICTED_ALIGNMENT_WORST_EVALUE:
        return False
    return int(best_ungapped_score) < restricted_cutoff(cutoff_score_min)


def init_hsp_score_order(init_hsps: np.ndarray) -> np.ndarray:
    """``Blast_InitHitListSortByScore`` (``score_compare_match``, blast_extend.c), stable.

    Score descending, subject start ascending, length descending, query start
    ascending; glibc's qsort (BLAST's) is a stable merge sort.
    """
    if len(init_hsps) <= 1:
        return init_hsps
    order = np.lexsort((init_hsps['q_start'], -init_hsps['length'].astype(np.int64),
                        init_hsps['s_start'], -init_hsps['score'].astype(np.int64)))
    return init_hsps[order]


def get_gapped_score(init_hsps: np.ndarray, query, subject, matrix, gap_open: int,
                     gap_extend: int, x_dropoff: int, cutoff: int, *,
                     restricted: bool = False) -> tuple[np.ndarray, bool]:
    """``BLAST_GetGappedScore`` for one query and one subject.

    Args:
        init_hsps: the subject's init HSPs (ungapped.INIT_HSP_DTYPE fields
            q_start, s_start, length, score), in BLAST's order or not: they are
            put in ``Blast_InitHitListSortByScore`` order first.
        query, subject: NCBIstdaa codes (uint8), unpadded.
        matrix: int32 (28, 28) matrix (matrix.load_matrix(name).scores).
        gap_open, gap_extend: gap costs (11, 1 for BLOSUM62).
        x_dropoff: preliminary gapped X-drop, raw (``ext_params->gap_x_dropoff``).
        cutoff: the query's cutoff score (``hit_params->cutoffs[context]``).
        restricted: start with restricted extensions (``restricted_alignment_on``).

    Returns:
        (hsps, restarted): PRELIM_HSP_DTYPE array in the order BLAST saves them;
        restarted is True when a restricted score fell in
        [(Int4)(0.68 cutoff), cutoff) and everything was recomputed exactly.
    """
    init_hsps = init_hsp_score_order(np.asarray(init_hsps))
    qp = pad(query)
    sp = pad(subject)
    mat = np.ascontiguousarray(matrix, dtype=np.int32)
    rows, restarted = _get_gapped_score_kernel(
        np.ascontiguousarray(init_hsps['q_start'], dtype=np.int64),
        np.ascontiguousarray(init_hsps['s_start'], dtype=np.int64),
        np.ascontiguousarray(init_hsps['length'], dtype=np.int64),
        np.ascontiguousarray(init_hsps['score'], dtype=np.int64),
        qp, len(query), sp, len(subject), mat,
        int(gap_open), int(gap_extend), int(x_dropoff), int(cutoff), bool(restricted))
    out = np.empty(len(rows), dtype=PRELIM_HSP_DTYPE)
    for k, name in enumerate(PRELIM_HSP_DTYPE.names):
        out[name] = rows[:, k]
    return out, bool(restarted)


def preliminary_gapped_hsps(init_hsps: np.ndarray, query, subject, matrix, gap_open: int,
                            gap_extend: int, x_dropoff: int, cutoff: int, *,
                            restricted: bool = False) -> tuple[np.ndarray, bool]:
    """The preliminary gapped stage of one query/subject pair, as blast_engine.c runs it.

    ``BLAST_GetGappedScore``, then ``Blast_HSPListPurgeHSPsWithCommonEndpoints``
    and ``Blast_HSPListSortByScore`` (``s_BlastSearchEngineOneContext``).  The
    caller computes E-values next and drops HSPs above the threshold
    (``Blast_HSPListReapByEvalue``, order kept) before ``traceback.traceback``.

    Arguments and returns as ``get_gapped_score``; the HSPs are in score order.

    >>> from gpu_search.blast.alphabet import encode
    >>> from gpu_search.blast.matrix import load_matrix
    >>> import numpy as np
    >>> q = encode("MKTAYIAKQRQISFVKSHFSRQ"); s = encode("MKTAYIAKQRQISFVKSHFSRQ")
    >>> init = np.array([(0, 0, 0, 0, 0, len(q), 100)], dtype=[('subject', 'i4'),
    ...     ('q_off', 'i4'), ('s_off', 'i4'), ('q_start', 'i4'), ('s_start', 'i4'),
    ...     ('length', 'i4'), ('score', 'i4')])
    >>> hsps, _ = preliminary_gapped_hsps(init, q, s, load_matrix("BLOSUM62").scores,
    ...                                   11, 1, 38, 20)
    >>> int(hsps['score'][0]), int(hsps['q_start'][0]), int(hsps['q_end'][0])
    (109, 0, 22)
    """
    hsps, restarted = get_gapped_score(init_hsps, query, subject, matrix, gap_open,
                                       gap_extend, x_dropoff, cutoff, restricted=restricted)
    return sort_by_score(purge_common_endpoints(hsps)), restarted


PRELIM_BATCH_DTYPE = np.dtype([('subject', 'i4')] + PRELIM_HSP_DTYPE.descr)
"""A preliminary gapped HSP with the database index of its subject."""


def preliminary_gapped_hsps_batch(init_hsps: np.ndarray, query, residues, offsets, matrix,
                                  gap_open: int, gap_extend: int, x_dropoff: int, cutoff: int,
                                  *, restricted=None, expect_value: float = 10.0
                                  ) -> tuple[np.ndarray, np.ndarray]:
    """``preliminary_gapped_hsps`` for one query against many subjects, in one numba call.

    Args:
        init_hsps: ungapped.INIT_HSP_DTYPE rows of several subjects, each
            subject's rows contiguous (as ``ungapped.ungapped_extensions`` returns
            them); ``subject`` indexes ``offsets``.
        query: NCBIstdaa query codes.
        residues, offsets: the packed NCBIstdaa database (uint8; int64 (n+1,)).
        matrix, gap_open, gap_extend, x_dropoff, cutoff: as ``get_gapped_score``.
        restricted: per subject group (in order of first appearance) whether
            extensions start restricted; None (BLAST's behaviour):
            ``restricted_alignment_on`` with the query's best init HSP of the
            subject and ``cutoff``.
        expect_value: -evalue (restricted alignment only for evalue <= 10).

    Returns:
        (hsps, restarted): PRELIM_BATCH_DTYPE rows, subjects in input order, each
        subject's HSPs purged and in score order; restarted: bool per subject
        group (same order as the groups), see ``get_gapped_score``.
    """
    init_hsps = np.asarray(init_hsps)
    subj = np.ascontiguousarray(init_hsps['subject'], dtype=np.int64)
    if len(subj):
        change = np.flatnonzero(subj[1:] != subj[:-1]) + 1
        group_start = np.concatenate(([0], change, [len(subj)])).astype(np.int64)
    else:
        group_start = np.zeros(1, dtype=np.int64)
    group_subject = subj[group_start[:-1]]
    if len(np.unique(group_subject)) != len(group_subject):
        raise ValueError("init HSPs of a subject must be contiguous")
    if restricted is None:
        best = np.maximum.reduceat(init_hsps['score'].astype(np.int64), group_start[:-1]) \
            if len(subj) else np.zeros(0, np.int64)
        # restricted_alignment_on for every group at once
        flags = (best < restricted_cutoff(cutoff)) & (expect_value <= RESTRICTED_ALIGNMENT_WORST_EVALUE)
    else:
        flags = np.broadcast_to(np.asarray(restricted, dtype=np.bool_),
                                (len(group_subject),)).copy()
    rows, counts, restarted = _prelim_batch_kernel(
        group_start, group_subject,
        np.ascontiguousarray(init_hsps['q_start'], dtype=np.int64),
        np.ascontiguousarray(init_hsps['s_start'], dtype=np.int64),
        np.ascontiguousarray(init_hsps['length'], dtype=np.int64),
        np.ascontiguousarray(init_hsps['score'], dtype=np.int64),
        pad(query), len(query), np.ascontiguousarray(residues, dtype=np.uint8),
        np.ascontiguousarray(offsets, dtype=np.int64), np.ascontiguousarray(matrix, np.int32),
        int(gap_open), int(gap_extend), int(x_dropoff), int(cutoff), flags)
    out = np.empty(len(rows), dtype=PRELIM_BATCH_DTYPE)
    out['subject'] = np.repeat(group_subject, counts)
    for k, name in enumerate(PRELIM_HSP_DTYPE.names):
        out[name] = rows[:, k]
    return out, restarted
