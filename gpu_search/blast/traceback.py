"""Traceback stage of blastp (``-comp_based_stats 0``), as BLAST+ 2.12 does it.

For ONE query against ONE subject: the preliminary gapped HSPs (gapped.py,
score order, E-value reaped) go in; the final HSPs with their alignments come
out, in BLAST's order.  Mirrors (src/algo/blast/core/):

* ``Blast_TracebackFromHSPList`` (blast_traceback.c): HSPs best first; one
  contained in an already traced HSP (``BlastIntervalTreeContainsHSP``) is
  dropped; the start point is the preliminary one, as it is (2.12 no longer
  checks the 11-letter window around it: older versions' window test,
  ``BLAST_CheckStartForGappedAlignment``, dropped short gapped HSPs 2.12
  reports); only an HSP without one (both offsets 0) gets
  ``BlastGetOffsetsForGappedAlignment``'s (or is dropped if there is none);
  ``AdjustSubjectRange`` windows subjects of 90000+ letters;
  ``BLAST_GappedAlignmentWithTraceback`` realigns with the final X-drop;
  identities and positives (``Blast_HSPGetNumIdentitiesAndPositives``), the
  percent-identity / minimum-length test (``Blast_HSPTest``); the HSP joins the
  containment tree.  Then ``Blast_HSPListPurgeHSPsWithCommonEndpoints``, sort by
  score, a second containment pass over the score-sorted list, and
  ``s_HSPListPostTracebackUpdate``: E-values, ``Blast_HSPListReapByEvalue``,
  sort by score.
* ``BLAST_GappedAlignmentWithTraceback`` (blast_gapalign.c): ``ALIGN_EX`` left of
  the start point on the reversed sequences (the start pair included) and right
  of it, the two edit blocks joined by ``Blast_PrelimEditBlockToGapEditScript``;
  a leading or trailing gap is pruned (score and extents adjusted).
* ``ALIGN_EX``: the X-drop DP of ``Blast_SemiGappedAlign`` recording, per cell,
  the operation and whether the row/column gap was extended; the traceback walks
  back from the best cell.

Whether the loop drops an HSP whose traceback score falls below the cutoff
(``gap_align->score >= cutoff``) differs between BLAST+ versions (recent
versions keep it and let the E-value reap decide): ``cutoff=None`` keeps it.
For blastp both give the same results: the cutoff is computed for the shortest
possible subject (stats.hit_cutoff_score), so a score below it has E > evalue
on any subject of 10 or more letters (303 proteome queries: no difference).

Edit scripts use BLAST's op codes (``EGapAlignOpType``, gapinfo.h):
OP_DEL = 0 (gap in the query: consumes a subject letter), OP_SUB = 3
(aligned pair), OP_INS = 6 (gap in the subject: consumes a query letter).

Coordinates are 0-based, ends exclusive; ``tabular_rows`` gives BLAST's 1-based
inclusive columns.

Contents:
    1. FINAL_HSP_DTYPE, op codes
    2. ALIGN_EX kernel
    3. BLAST_GappedAlignmentWithTraceback
    4. start point of an HSP without one (BlastGetOffsetsForGappedAlignment)
    5. alignment statistics, strings
    6. traceback(): Blast_TracebackFromHSPList
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, NamedTuple

from .._numba import copy_into, numba
import numpy as np

from .gapped import (HSP_MAX_WINDOW, MININT, adjust_subject_range, pad, purge_and_sort_rows, tree_add,
                     tree_contains)
from .output import tuple_reduce

# --------------------------------------------------------------------------------------------
# 1. Output type, op codes
# --------------------------------------------------------------------------------------------

OP_DEL = 0   # eGapAlignDel: gap in query (subject letter against '-')
OP_SUB = 3   # eGapAlignSub
OP_INS = 6   # eGapAlignIns: gap in subject (query letter against '-')

_SCRIPT_OP_MASK = 0x07
_SCRIPT_EXTEND_GAP_A = 0x10
_SCRIPT_EXTEND_GAP_B = 0x40

FINAL_HSP_DTYPE = np.dtype([('score', 'i4'),
                            ('q_start', 'i4'), ('q_end', 'i4'),
                            ('s_start', 'i4'), ('s_end', 'i4'),
                            ('q_gapped_start', 'i4'), ('s_gapped_start', 'i4'),
                            ('num_ident', 'i4'), ('num_positives', 'i4'),
                            ('gaps', 'i4'), ('gap_opens', 'i4'), ('length', 'i4'),
                            ('evalue', 'f8')])
"""A final HSP: 0-based, ends exclusive; ``length`` counts alignment columns,
``gaps`` gap letters, ``gap_opens`` gap runs; ``evalue`` is NaN unless an
E-value function was given."""


@dataclass
class TracebackResult:
    """Final HSPs of one query/subject pair and their edit scripts.

    Attributes:
        hsps: FINAL_HSP_DTYPE array, BLAST's order (score order).
        ops, nums: per HSP, the edit script as two int arrays (op codes, run lengths).
    """
    hsps: np.ndarray
    ops: list
    nums: list

    def __len__(self):
        return len(self.hsps)

    def strings(self, query, subject, letters: str | None = None) -> list[tuple[str, str]]:
        """The aligned query and subject strings of every HSP ('-' for gaps)."""
        return [alignment_strings(query, subject, int(h['q_start']), int(h['s_start']), o, n,
                                  letters)
                for h, o, n in zip(self.hsps, self.ops, self.nums)]


# --------------------------------------------------------------------------------------------
# 2. ALIGN_EX
# --------------------------------------------------------------------------------------------

@numba.njit(cache=True, nogil=True)
def align_ex(qp, q_base, q_dir, sp, s_base, s_dir, M, N, matrix, gap_open, gap_extend,
             x_dropoff):
    """``ALIGN_EX`` (blast_gapalign.c): X-drop DP with traceback, one direction.

    Letter addressing as ``gapped.semi_gapped_align``.

    Returns:
        (best_score, a_offset, b_offset, steps): steps are the op codes
        (OP_SUB / OP_DEL / OP_INS, one per alignment column) in traceback order,
        i.e. from the best cell back to the start point.
    """
    gap_open_extend = gap_open + gap_extend
    if x_dropoff < gap_open_extend:
        x_dropoff = gap_open_extend
    if N <= 0 or M <= 0:
        return 0, 0, 0, np.empty(0, dtype=np.uint8)

    best = np.empty(N + 2, dtype=np.int64)
    best_gap = np.empty(N + 2, dtype=np.int64)
    row_start = np.empty(M + 1, dtype=np.int64)
    row_first = np.empty(M + 1, dtype=np.int64)
    cap = max(4 * (N + 2), 1024)
    buf = np.zeros(cap, dtype=np.uint8)

    row_start[0] = 0
    row_first[0] = 0
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
        buf[i] = OP_DEL
        i += 1
    cursor = i + 1
    b_size = i
    best_score = 0
    a_offset = 0
    b_offset = 0
    first_b_index = 0

    for a_index in range(1, M + 1):
        need = cursor + (N + 2 - first_b_index) + 1
        if need > cap:
            new_cap = max(2 * cap, need)
            nb = np.zeros(new_cap, dtype=np.uint8)
            copy_into(nb, 0, buf[:cursor])
            buf = nb
            cap = new_cap
        row_start[a_index] = cursor
        row_first[a_index] = first_b_index
        orig_b_index = first_b_index
        row = matrix[qp[q_base + q_dir * a_index]]
        score = MININT
        score_gap_row = MININT
        last_b_index = first_b_index
        b_end = b_size
        for b_index in range(first_b_index, b_end):
            score_gap_col = best_gap[b_index]
            next_score = best[b_index] + row[sp[s_base + s_dir * (b_index + 1)]]
            script = OP_SUB
            if score < score_gap_col:
                script = OP_INS
                score = score_gap_col
            if score < score_gap_row:
                script = OP_DEL
                score = score_gap_row
            if best_score - score > x_dropoff:
                if first_b_index == b_index:
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
                if score_gap_col < score - gap_open_extend:
                    best_gap[b_index] = score - gap_open_extend
                else:
                    best_gap[b_index] = score_gap_col
                    script += _SCRIPT_EXTEND_GAP_B
                if score_gap_row < score - gap_open_extend:
                    score_gap_row = score - gap_open_extend
                else:
                    script += _SCRIPT_EXTEND_GAP_A
                best[b_index] = score
            score = next_score
            buf[cursor + b_index - orig_b_index] = script

        if first_b_index == b_size:
            break

        if last_b_index < b_size - 1:
            b_size = last_b_index + 1
        else:
            while score_gap_row >= best_score - x_dropoff and b_size <= N:
                best[b_size] = score_gap_row
                best_gap[b_size] = score_gap_row - gap_open_extend
                score_gap_row -= gap_extend
                buf[cursor + b_size - orig_b_index] = OP_DEL
                b_size += 1

        cursor += max(b_end, b_size) - orig_b_index + 1

        if b_size <= N:
            best[b_size] = MININT
            best_gap[b_size] = MININT
            b_size += 1

    steps = np.empty(a_offset + b_offset, dtype=np.uint8)
    n = 0
    a_index = a_offset
    b_index = b_offset
    script = OP_SUB
    while a_index > 0 or b_index > 0:
        next_script = buf[row_start[a_index] + b_index - row_first[a_index]]
        if script == OP_DEL:
            script = next_script & _SCRIPT_OP_MASK
            if next_script & _SCRIPT_EXTEND_GAP_A:
                script = OP_DEL
        elif script == OP_INS:
            script = next_script & _SCRIPT_OP_MASK
            if next_script & _SCRIPT_EXTEND_GAP_B:
                script = OP_INS
        else:
            script = next_script & _SCRIPT_OP_MASK
        if script == OP_DEL:
            b_index -= 1
        elif script == OP_INS:
            a_index -= 1
        else:
            a_index -= 1
            b_index -= 1
        steps[n] = script
        n += 1
    return best_score, a_offset, b_offset, steps[:n]


# --------------------------------------------------------------------------------------------
# 3. BLAST_GappedAlignmentWithTraceback
# --------------------------------------------------------------------------------------------

@numba.njit(cache=True, nogil=True)
def _run_length(steps_left, steps_right):
    """``Blast_PrelimEditBlockToGapEditScript``: the left block as it is (already
    in alignment order), the right block reversed, runs of one op merged."""
    n = len(steps_left) + len(steps_right)
    ops = np.empty(n, dtype=np.int32)
    nums = np.empty(n, dtype=np.int32)
    k = -1
    for i in range(n):
        if i < len(steps_left):
            op = steps_left[i]
        else:
            op = steps_right[len(steps_right) - 1 - (i - len(steps_left))]
        if k >= 0 and ops[k] == op:
            nums[k] += 1
        else:
            k += 1
            ops[k] = op
            nums[k] = 1
    return ops[:k + 1], nums[:k + 1]


@numba.njit(cache=True, nogil=True)
def gapped_alignment_with_traceback(qp, query_length, sp, subject_length, q_start, s_start,
                                    matrix, gap_open, gap_extend, x_dropoff):
    """``BLAST_GappedAlignmentWithTraceback`` (in-frame) from the start point (q_start, s_start).

    ``subject_length`` is the (adjusted) length available: s_start + 1 letters
    to the left, subject_length - s_start - 1 to the right.  Subject
    coordinates are those of ``sp`` (shift applied by the caller).

    Returns:
        (score, q_begin, q_end, s_begin, s_end, ops, nums), ends exclusive.
    """
    score_left, a_l, b_l, steps_l = align_ex(qp, q_start + 2, -1, sp, s_start + 2, -1,
                                             q_start + 1, s_start + 1, matrix,
                                             gap_open, gap_extend, x_dropoff)
    score_right, a_r, b_r = 0, 0, 0
    steps_r = np.empty(0, dtype=np.uint8)
    if has_right_extension(query_length, subject_length, q_start, s_start):
        score_right, a_r, b_r, steps_r = align_ex(qp, q_start + 1, 1, sp, s_start + 1, 1,
                                                  query_length - q_start - 1,
                                                  subject_length - s_start - 1, matrix,
                                                  gap_open, gap_extend, x_dropoff)
    return join_extensions(query_length, subject_length, q_start, s_start, gap_open, gap_extend,
                           score_left, a_l, b_l, steps_l, score_right, a_r, b_r, steps_r)


@numba.njit(cache=True, nogil=True)
def has_right_extension(query_length, subject_length, q_start, s_start):
    """Whether ``BLAST_GappedAlignmentWithTraceback`` aligns right of the start point."""
    return q_start < query_length and s_start < subject_length


@numba.njit(cache=True, nogil=True)
def join_extensions(query_length, subject_length, q_start, s_start, gap_open, gap_extend,
                    score_left, a_l, b_l, steps_l, score_right, a_r, b_r, steps_r):
    """The rest of ``BLAST_GappedAlignmentWithTraceback`` once ``align_ex`` has run left of the
    start point and right of it (on the CPU or the GPU, blast/gpu/traceback.cu): the
    extents, the two edit blocks joined, a leading or trailing gap pruned.

    Returns:
        (score, q_begin, q_end, s_begin, s_end, ops, nums), ends exclusive.
    """
    q_begin = q_start - a_l + 1
    s_begin = s_start - b_l + 1
    if has_right_extension(query_length, subject_length, q_start, s_start):
        q_end = q_start + a_r + 1
        s_end = s_start + b_r + 1
    else:
        score_right = 0
        q_end = q_start - 1
        s_end = s_start - 1
        steps_r = steps_r[:0]
    ops, nums = _run_length(steps_l, steps_r)

    # prune a leading or trailing gap (only possible when scoring changed)
    lo = 0
    hi = len(ops)
    if hi > 0 and ops[0] != OP_SUB:
        score_left += gap_open + nums[0] * gap_extend
        if ops[0] == OP_DEL:
            s_begin += nums[0]
        else:
            q_begin += nums[0]
        lo = 1
    if hi - lo > 0 and ops[hi - 1] != OP_SUB:
        score_right += gap_open + nums[hi - 1] * gap_extend
        if ops[hi - 1] == OP_DEL:
            s_end -= nums[hi - 1]
        else:
            q_end -= nums[hi - 1]
        hi -= 1
    return (score_left + score_right, q_begin, q_end, s_begin, s_end,
            ops[lo:hi].copy(), nums[lo:hi].copy())


# --------------------------------------------------------------------------------------------
# 4. Start point of an HSP without one
# --------------------------------------------------------------------------------------------

@numba.njit(cache=True, nogil=True)
def get_offsets_for_gapped_alignment(qp, sp, matrix, q_off, q_end, s_off, s_end):
    """``BlastGetOffsetsForGappedAlignment`` (blast_gapalign.c).

    Returns (found, q, s): the centre of the best 11-letter window along the
    HSP's start diagonal, else the window at its end if that scores above 0.
    """
    q_length = q_end - q_off
    s_length = s_end - s_off
    if q_length <= HSP_MAX_WINDOW:
        return True, q_off + q_length // 2, s_off + q_length // 2
    score = 0
    for k in range(HSP_MAX_WINDOW):
        score += matrix[qp[q_off + k + 1], sp[s_off + k + 1]]
    max_score = score
    max_offset = q_off + HSP_MAX_WINDOW - 1
    hsp_end = q_off + min(q_length, s_length)
    d = s_off - q_off
    for index1 in range(q_off + HSP_MAX_WINDOW, hsp_end):
        score -= matrix[qp[index1 - HSP_MAX_WINDOW + 1], sp[index1 - HSP_MAX_WINDOW + d + 1]]
        score += matrix[qp[index1 + 1], sp[index1 + d + 1]]
        if score > max_score:
            max_score = score
            max_offset = index1
    if max_score > 0:
        return True, max_offset, max_offset - q_off + s_off
    score = 0
    qv = q_off + q_length - HSP_MAX_WINDOW
    sv = s_off + s_length - HSP_MAX_WINDOW
    for k in range(HSP_MAX_WINDOW):
        score += matrix[qp[qv + k + 1], sp[sv + k + 1]]
    if score > 0:
        return True, q_end - HSP_MAX_WINDOW // 2, s_end - HSP_MAX_WINDOW // 2
    return False, 0, 0


# --------------------------------------------------------------------------------------------
# 5. Alignment statistics and strings
# --------------------------------------------------------------------------------------------

@numba.njit(cache=True, nogil=True)
def alignment_stats(qp, sp, matrix, q_start, s_start, ops, nums):
    """``Blast_HSPGetNumIdentitiesAndPositives`` and ``Blast_HSPCalcLengthAndGaps``.

    Returns (num_ident, num_positives, align_length, gaps, gap_opens): positives
    are identities plus pairs scoring above 0.  A gap facing a '-' of the other
    sequence (makeblastdb keeps '-' in database sequences) counts as an identity, as
    BLAST+'s report counts it from the aligned strings.
    """
    q = q_start
    s = s_start
    ident = 0
    pos = 0
    length = 0
    gaps = 0
    opens = 0
    for k in range(len(ops)):
        n = nums[k]
        length += n
        if ops[k] == OP_SUB:
            for _ in range(n):
                a = qp[q + 1]
                b = sp[s + 1]
                if a == b:
                    ident += 1
                elif matrix[a, b] > 0:
                    pos += 1
                q += 1
                s += 1
        elif ops[k] == OP_DEL:
            for j in range(n):
                if sp[s + 1 + j] == 0:
                    ident += 1
            s += n
            gaps += n
            opens += 1
        else:
            for j in range(n):
                if qp[q + 1 + j] == 0:
                    ident += 1
            q += n
            gaps += n
            opens += 1
    return ident, ident + pos, length, gaps, opens


def alignment_strings(query, subject, q_start: int, s_start: int, ops, nums,
                      letters: str | None = None) -> tuple[str, str]:
    """Aligned query and subject strings (BLAST's qseq / sseq) of an edit script."""
    if letters is None:
        from .alphabet import NCBISTDAA as letters
    q, s = _aligned_letters(np.asarray(query, dtype=np.uint8), np.asarray(subject, dtype=np.uint8),
                            int(q_start), int(s_start), np.asarray(ops, dtype=np.int64),
                            np.asarray(nums, dtype=np.int64), _letter_table(letters))
    return q.tobytes().decode("ascii"), s.tobytes().decode("ascii")


@numba.njit(cache=True, nogil=True)
def _aligned_letters(query, subject, q, s, ops, nums, table):
    """The two rows of an alignment as ASCII bytes, '-' against the letters of a gap (one
    pass over the edit script: per-segment numpy calls cost more than the letters)."""
    n = 0
    for k in range(len(nums)):
        n += nums[k]
    qa = np.empty(n, np.uint8)
    sa = np.empty(n, np.uint8)
    _write_aligned(query, subject, q, s, ops, nums, 0, len(ops), table, qa, sa, 0)
    return qa, sa


@numba.njit(cache=True, nogil=True)
def _write_aligned(query, subject, q, s, ops, nums, k0, k1, table, qa, sa, j):
    """The rows of edit-script entries k0..k1 (the alignment starting at query letter q and
    subject letter s, 0-based) into qa and sa from position j."""
    gap = np.uint8(45)           # '-'
    for k in range(k0, k1):
        op = ops[k]
        for _ in range(nums[k]):
            if op == OP_SUB:
                qa[j] = table[query[q]]
                sa[j] = table[subject[s]]
                q += 1
                s += 1
            elif op == OP_DEL:
                qa[j] = gap
                sa[j] = table[subject[s]]
                s += 1
            else:
                qa[j] = table[query[q]]
                sa[j] = gap
                q += 1
            j += 1


@lru_cache(maxsize=8)
def _letter_table(letters: str) -> np.ndarray:
    """Residue code -> ASCII byte."""
    return np.frombuffer(letters.encode("ascii"), dtype=np.uint8).copy()


# --------------------------------------------------------------------------------------------
# 6. Blast_TracebackFromHSPList
# --------------------------------------------------------------------------------------------

# The extensions of preliminary HSPs aligned ahead (on the GPU: blast/gpu/traceback.py), one
# int64 row per preliminary HSP: the start point and subject window they were aligned from,
# then per direction (left of the start point, right of it) ALIGN_EX's status (0: done),
# best score, a_offset, b_offset and number of steps, then where each direction's steps are in
# the steps array (traceback order, as align_ex returns them).
PRE_Q_START, PRE_S_START, PRE_S_LENGTH, PRE_SHIFT = 0, 1, 2, 3
PRE_LEFT, PRE_RIGHT = 4, 9             # status, score, a_offset, b_offset, steps
PRE_STEPS_AT = 14                      # left's, right's
PRE_FIELDS = 16


def no_pre() -> tuple[np.ndarray, np.ndarray]:
    """(pre, steps) of a traceback with nothing aligned ahead."""
    return np.empty((0, PRE_FIELDS), dtype=np.int64), np.empty(0, dtype=np.uint8)


@numba.njit(cache=True, nogil=True)
def start_point(row, qp, sp, mat, qlen, slen):
    """Where ``Blast_TracebackFromHSPList`` aligns a preliminary HSP from (``row``: int64 columns
    of ``_prelim_rows``): (found, q_gs, s_gs, s_adj, s_len_adj, shift), the start point and
    ``AdjustSubjectRange``'s window of the subject."""
    q_gs = row[5]
    s_gs = row[6]
    # the preliminary start point as it is (BLAST+ 2.12 tests no window around it)
    if q_gs == 0 and s_gs == 0:
        found, q_gs, s_gs = get_offsets_for_gapped_alignment(qp, sp, mat, row[1], row[2], row[3], row[4])
        if not found:
            return False, q_gs, s_gs, 0, 0, 0
    s_adj, s_len_adj, shift = adjust_subject_range(s_gs, slen, q_gs, qlen)
    return True, q_gs, s_gs, s_adj, s_len_adj, shift


@numba.njit(cache=True, nogil=True)
def _traceback_kernel(prelim, qp, qlen, subject, sp, mat, gap_open, gap_extend, x_dropoff_final,
                      cutoff, percent_identity, min_hit_length, pre, pre_steps):
    """The body of ``traceback`` for one subject, compiled: one call instead of a Python
    loop over the preliminary HSPs (Python here held the GIL the GPU threads need).

    Args:
        prelim: int64 (n, 7) rows score, q_start, q_end, s_start, s_end,
            q_gapped_start, s_gapped_start, in score order.
        cutoff: drop an HSP whose traceback score is below it (MININT: keep all).
        pre, pre_steps: the HSPs' extensions aligned ahead (PRE_* rows, one per row of
            ``prelim``, and their steps), or no rows: those not done (status), or done from
            another start point, are aligned here.

    Returns:
        (rows, ops, nums, script_start, aligned_here): rows int64 (k, 12) in FINAL_HSP_DTYPE
        field order (evalue aside), purged, in score order; HSP i's edit script
        is ops/nums[script_start[i]:script_start[i + 1]]; aligned_here: HSPs whose
        extensions were aligned here rather than taken from ``pre``.
    """
    slen = len(subject)
    n = prelim.shape[0]
    tree = np.zeros((max(n, 1), 6), dtype=np.int64)
    n_tree = 0
    rows = np.empty((n, 14), dtype=np.int64)       # + columns 12, 13: the HSP's script (start, length)
    ops_all = np.empty(64, dtype=np.int32)
    nums_all = np.empty(64, dtype=np.int32)
    used = 0
    k = 0
    aligned_here = 0
    for i in range(n):
        score, q_off, q_end, s_off, s_end = prelim[i, 0], prelim[i, 1], prelim[i, 2], prelim[i, 3], prelim[i, 4]
        if tree_contains(tree, n_tree, q_off, q_end, s_off, s_end, score):
            continue
        found, q_gs, s_gs, s_adj, s_len_adj, shift = start_point(prelim[i], qp, sp, mat, qlen, slen)
        if not found:
            continue
        if shift:
            sub = np.empty(s_len_adj + 2, dtype=np.uint8)      # pad(subject[shift:shift + s_len_adj])
            sub[0] = 0
            sub[s_len_adj + 1] = 0
            copy_into(sub, 1, subject[shift:shift + s_len_adj])
        else:
            sub = sp
        if i < pre.shape[0] and pre[i, PRE_LEFT] == 0 and pre[i, PRE_RIGHT] == 0 and \
                pre[i, PRE_Q_START] == q_gs and pre[i, PRE_S_START] == s_adj and \
                pre[i, PRE_S_LENGTH] == s_len_adj and pre[i, PRE_SHIFT] == shift:
            at_l = pre[i, PRE_STEPS_AT]
            at_r = pre[i, PRE_STEPS_AT + 1]
            t_score, q0, q1, s0, s1, ops, nums = join_extensions(
                qlen, s_len_adj, q_gs, s_adj, gap_open, gap_extend,
                pre[i, PRE_LEFT + 1], pre[i, PRE_LEFT + 2], pre[i, PRE_LEFT + 3],
                pre_steps[at_l:at_l + pre[i, PRE_LEFT + 4]],
                pre[i, PRE_RIGHT + 1], pre[i, PRE_RIGHT + 2], pre[i, PRE_RIGHT + 3],
                pre_steps[at_r:at_r + pre[i, PRE_RIGHT + 4]])
        else:
            aligned_here += 1
            t_score, q0, q1, s0, s1, ops, nums = gapped_alignment_with_traceback(
                qp, qlen, sub, s_len_adj, q_gs, s_adj, mat, gap_open, gap_extend, x_dropoff_final)
        if t_score < cutoff:
            continue
        ident, pos, length, gaps, opens = alignment_stats(qp, sub, mat, q0, s0, ops, nums)
        if ident * 100.0 < length * percent_identity or length < min_hit_length:
            continue
        s0 += shift
        s1 += shift
        while used + len(ops) > len(ops_all):
            ops_all = np.concatenate((ops_all, np.empty(len(ops_all), dtype=np.int32)))
            nums_all = np.concatenate((nums_all, np.empty(len(nums_all), dtype=np.int32)))
        copy_into(ops_all, used, ops)
        copy_into(nums_all, used, nums)
        r = rows[k]
        r[0] = t_score; r[1] = q0; r[2] = q1; r[3] = s0; r[4] = s1; r[5] = q_gs; r[6] = s_gs + shift
        r[7] = ident; r[8] = pos; r[9] = gaps; r[10] = opens; r[11] = length; r[12] = used; r[13] = len(ops)
        used += len(ops)
        k += 1
        n_tree = tree_add(tree, n_tree, q0, q1, s0, s1, t_score)
    # Blast_HSPListPurgeHSPsWithCommonEndpoints, Blast_HSPListSortByScore, then the
    # containment pass over the score-sorted list
    arr = purge_and_sort_rows(rows[:k])
    tree = np.zeros((max(arr.shape[0], 1), 6), dtype=np.int64)
    n_tree = 0
    keep = np.zeros(arr.shape[0], dtype=np.bool_)
    for i in range(arr.shape[0]):
        if tree_contains(tree, n_tree, arr[i, 1], arr[i, 2], arr[i, 3], arr[i, 4], arr[i, 0]):
            continue
        n_tree = tree_add(tree, n_tree, arr[i, 1], arr[i, 2], arr[i, 3], arr[i, 4], arr[i, 0])
        keep[i] = True
    arr = arr[keep]
    # the kept HSPs' scripts, in their order
    script_start = np.zeros(arr.shape[0] + 1, dtype=np.int64)
    total = 0
    for i in range(arr.shape[0]):
        total += arr[i, 13]
        script_start[i + 1] = total
    ops_out = np.empty(total, dtype=np.int32)
    nums_out = np.empty(total, dtype=np.int32)
    for i in range(arr.shape[0]):
        a = arr[i, 12]
        m = arr[i, 13]
        copy_into(ops_out, script_start[i], ops_all[a:a + m])
        copy_into(nums_out, script_start[i], nums_all[a:a + m])
    return arr[:, :12].copy(), ops_out, nums_out, script_start, aligned_here


@numba.njit(cache=True, nogil=True)
def _traceback_subjects(prelim, first, subjects, residues, offsets, qp, qlen, mat, gap_open, gap_extend,
                        x_dropoff_final, cutoff, percent_identity, min_hit_length, pre, pre_steps):
    """``_traceback_kernel`` for every subject of a query's hit list in one call: the
    per-subject Python around the compiled traceback cost as much as the traceback.

    Args:
        prelim: int64 (n, 7), the subjects' preliminary HSPs one after the other, subject j's
            at rows first[j]:first[j + 1].
        subjects: the subjects' indices into ``offsets`` (the database's residues).
        cutoff, percent_identity, min_hit_length: as ``_traceback_kernel`` takes them, given
            by the caller rather than written here: constants would be typed as literals, and
            numba would compile ``_traceback_kernel`` a second time (its longest compilation).
        pre, pre_steps: the extensions aligned ahead, a PRE_* row per row of ``prelim`` (or
            none: all aligned here).

    Returns:
        (rows, ops, nums, script_start, aligned_here): rows int64 (k, 13), the 12 columns of
        ``_traceback_kernel`` and the subject's position j in ``subjects``, subject by
        subject in the hit list's order and within one in score order; HSP i's edit script
        is ops/nums[script_start[i]:script_start[i + 1]]; aligned_here: HSPs aligned here,
        not taken from ``pre``.
    """
    rows = np.empty((prelim.shape[0], 13), dtype=np.int64)
    ops_all = np.empty(max(64, 8 * prelim.shape[0]), dtype=np.int32)
    nums_all = np.empty(len(ops_all), dtype=np.int32)
    script_start = np.zeros(prelim.shape[0] + 1, dtype=np.int64)
    k = 0
    aligned_here = 0
    with_pre = pre.shape[0] > 0
    for j in range(len(subjects)):
        subject = residues[offsets[subjects[j]]:offsets[subjects[j] + 1]]
        sp = np.empty(len(subject) + 2, dtype=np.uint8)     # gapped.pad
        sp[0] = 0
        sp[len(subject) + 1] = 0
        copy_into(sp, 1, subject)
        rows_pre = pre[first[j]:first[j + 1]] if with_pre else pre
        arr, ops, nums, at, here = _traceback_kernel(prelim[first[j]:first[j + 1]], qp, qlen, subject, sp, mat,
                                                     gap_open, gap_extend, x_dropoff_final, cutoff,
                                                     percent_identity, min_hit_length, rows_pre, pre_steps)
        aligned_here += here
        used = script_start[k]
        while used + len(ops) > len(ops_all):
            ops_all = np.concatenate((ops_all, np.empty(len(ops_all), dtype=np.int32)))
            nums_all = np.concatenate((nums_all, np.empty(len(nums_all), dtype=np.int32)))
        copy_into(ops_all, used, ops)
        copy_into(nums_all, used, nums)
        for i in range(arr.shape[0]):
            for c in range(12):
                rows[k, c] = arr[i, c]
            rows[k, 12] = j
            script_start[k + 1] = used + at[i + 1]
            k += 1
    total = script_start[k]
    return (rows[:k].copy(), ops_all[:total].copy(), nums_all[:total].copy(), script_start[:k + 1].copy(),
            aligned_here)


@numba.njit(cache=True, nogil=True)
def _aligned_letters_many(query, residues, offsets, subjects, q0, s0, ops, nums, script_start, table):
    """``_aligned_letters`` of many HSPs of one query, the rows one after the other in two
    byte buffers; HSP i's are [line_start[i], line_start[i + 1])."""
    n = len(q0)
    line_start = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        length = 0
        for k in range(script_start[i], script_start[i + 1]):
            length += nums[k]
        line_start[i + 1] = line_start[i] + length
    qa = np.empty(line_start[n], np.uint8)
    sa = np.empty(line_start[n], np.uint8)
    for i in range(n):
        subject = residues[offsets[subjects[i]]:offsets[subjects[i] + 1]]
        _write_aligned(query, subject, q0[i], s0[i], ops, nums, script_start[i], script_start[i + 1], table,
                       qa, sa, line_start[i])
    return qa, sa, line_start


@dataclass
class HitListTraceback:
    """The traceback of a query's whole hit list (``traceback_hit_list``).

    Attributes:
        hsps: FINAL_HSP_DTYPE array, subject by subject in the hit list's order, within
            one subject in score order, E-values set and reaped.
        subject: per HSP, the subject's position in the hit list.
        qseq, sseq: per HSP, the aligned strings ('-' for gaps).
        aligned_here: preliminary HSPs traced back whose extensions were aligned here, not
            taken from those aligned ahead.
    """
    hsps: np.ndarray
    subject: np.ndarray
    qseq: list
    sseq: list
    aligned_here: int = 0


_PRELIM_COLUMNS = ("score", "q_start", "q_end", "s_start", "s_end", "q_gapped_start", "s_gapped_start")


def _prelim_rows(prelims: list) -> np.ndarray:
    """Preliminary HSP arrays (PRELIM_HSP_DTYPE, or PRELIM_BATCH rows with their subject)
    stacked as int64 (n, 7) in ``_traceback_kernel``'s column order.  Arrays of one dtype of
    int32 fields are stacked as plain int32 rows: numpy's concatenation of structured arrays
    promotes each array's fields, which cost more than the stacking."""
    if not prelims:
        return np.empty((0, 7), dtype=np.int64)
    dt = prelims[0].dtype
    if all(p.dtype == dt for p in prelims) and dt.itemsize % 4 == 0 and \
            all(dt.fields[n][0] == np.int32 for n in dt.names):
        flat = np.concatenate([np.ascontiguousarray(p).view(np.int32).reshape(-1, dt.itemsize // 4)
                               for p in prelims])
        rows = flat[:, [dt.fields[n][1] // 4 for n in _PRELIM_COLUMNS]]
    else:
        rows = np.stack([np.concatenate([p[n] for p in prelims]) for n in _PRELIM_COLUMNS], axis=1)
    return np.ascontiguousarray(rows, dtype=np.int64)      # (one layout: one compiled traceback)


class StackedPrelims(NamedTuple):
    """A hit list's preliminary HSPs as one array (``stack_prelims``): what crosses between
    processes instead of one array per subject."""
    rows: np.ndarray             # int64 (n, 7), ``_prelim_rows``
    first: np.ndarray            # int64 (subjects + 1,): subject j's rows are rows[first[j]:first[j + 1]]

    __reduce__ = tuple_reduce


def stack_prelims(prelims: list) -> StackedPrelims:
    """The preliminary HSPs of a hit list's subjects (one array each, in its order), stacked."""
    first = np.zeros(len(prelims) + 1, dtype=np.int64)
    first[1:] = np.cumsum([len(p) for p in prelims])
    return StackedPrelims(_prelim_rows(prelims), first)


def _final_hsps(rows: np.ndarray) -> np.ndarray:
    """The traceback kernels' rows (their first 12 columns) as FINAL_HSP_DTYPE, E-values 0."""
    out = np.zeros(len(rows), dtype=FINAL_HSP_DTYPE)
    for k, name in enumerate(FINAL_HSP_DTYPE.names[:12]):
        out[name] = rows[:, k]
    return out


def traceback_hit_list(prelims: list, query, subjects, residues, offsets, matrix, gap_open: int,
                       gap_extend: int, x_dropoff_final: int, evalue: Callable, expect_value: float,
                       letters: str, aligned: tuple | None = None) -> HitListTraceback:
    """``traceback`` (its defaults: no cutoff, no -perc_identity) for every subject of a
    query's hit list at once, with the alignment strings.

    Args:
        prelims: per subject of the hit list, its preliminary HSPs (PRELIM_HSP_DTYPE, or
            PRELIM_BATCH rows), in score order, E-value reaped; or all of them stacked
            (``StackedPrelims``).
        subjects: per subject, its index into ``offsets``; ``residues[offsets[s]:offsets[s + 1]]``
            is subject s (NCBIstdaa).
        evalue: maps (raw scores, subject lengths), two int arrays, to E-values; HSPs with
            E > expect_value are dropped.
        letters: the residue letters by code (alphabet.NCBISTDAA).
        aligned: (pre, steps), the extensions of the preliminary HSPs aligned ahead
            (PRE_* rows in the order of ``prelims``' rows: blast/gpu/traceback.py), or None.
    """
    query = np.asarray(query, dtype=np.uint8)
    subjects = np.asarray(subjects, dtype=np.int64)
    pre, pre_steps = aligned if aligned is not None else no_pre()
    prelim, first = prelims if isinstance(prelims, StackedPrelims) else stack_prelims(prelims)
    # the offsets as a read-only view, whatever the database: a .gsdb's are read-only, a FASTA
    # file's not, and numba compiles the traceback once per kind
    offsets = np.asarray(offsets, dtype=np.int64).view()
    offsets.flags.writeable = False
    arr, ops, nums, at, aligned_here = _traceback_subjects(
        prelim, first, subjects, residues, offsets, pad(query), len(query),
        np.ascontiguousarray(matrix, dtype=np.int32), int(gap_open), int(gap_extend), int(x_dropoff_final),
        MININT, 0.0, 0, np.ascontiguousarray(pre, dtype=np.int64), np.ascontiguousarray(pre_steps, dtype=np.uint8))
    out = _final_hsps(arr)
    subject_pos = arr[:, 12]
    hit_subjects = subjects[subject_pos]
    if len(out):
        out['evalue'] = evalue(out['score'].astype(np.int64), offsets[hit_subjects + 1] - offsets[hit_subjects])
    kept = ~(out['evalue'] > expect_value)
    script_length = np.diff(at)
    kept_ops = np.repeat(kept, script_length)
    script_start = np.zeros(int(kept.sum()) + 1, dtype=np.int64)
    np.cumsum(script_length[kept], out=script_start[1:])
    out = out[kept]
    qa, sa, line = _aligned_letters_many(query, residues, offsets, hit_subjects[kept],
                                         out['q_start'].astype(np.int64), out['s_start'].astype(np.int64),
                                         ops[kept_ops], nums[kept_ops], script_start, _letter_table(letters))
    qtext, stext = qa.tobytes().decode("ascii"), sa.tobytes().decode("ascii")
    bounds = list(zip(line[:-1].tolist(), line[1:].tolist()))
    return HitListTraceback(out, subject_pos[kept], [qtext[a:b] for a, b in bounds],
                            [stext[a:b] for a, b in bounds], int(aligned_here))


def traceback(prelim_hsps: np.ndarray, query, subject, matrix, gap_open: int, gap_extend: int,
              x_dropoff_final: int, cutoff: int | None = None, *,
              evalue: Callable[[np.ndarray], np.ndarray] | None = None,
              expect_value: float | None = None, percent_identity: float = 0.0,
              min_hit_length: int = 0) -> TracebackResult:
    """``Blast_TracebackFromHSPList`` for one query and one subject (blastp, no
    composition statistics).

    Args:
        prelim_hsps: gapped.PRELIM_HSP_DTYPE array in score order, E-value reaped
            (``gapped.preliminary_gapped_hsps`` then the caller's reap).
        query, subject: NCBIstdaa codes (uint8), unpadded.
        matrix: int32 (28, 28).
        gap_open, gap_extend: gap costs.
        x_dropoff_final: final X-drop, raw (``ext_params->gap_x_dropoff_final``).
        cutoff: drop an HSP whose traceback score is below it; None: keep it
            (the E-value reap decides), see the module docstring.
        evalue: maps an int array of raw scores to E-values
            (``Blast_HSPListGetEvalues``); with ``expect_value``, HSPs with
            E > expect_value are dropped (``Blast_HSPListReapByEvalue``).
        percent_identity, min_hit_length: ``Blast_HSPTest`` (-perc_identity,
            min_hit_length), 0 by default.

    Returns:
        TracebackResult in BLAST's order.

    >>> from gpu_search.blast.alphabet import encode
    >>> from gpu_search.blast.matrix import load_matrix
    >>> from gpu_search.blast.gapped import PRELIM_HSP_DTYPE
    >>> q = encode("W" * 10 + "E" * 10 + "W" * 10)
    >>> s = encode("W" * 10 + "C" * 10 + "W" * 10)
    >>> prelim = np.array([(110, 0, 10, 0, 10, 5, 5)], dtype=PRELIM_HSP_DTYPE)
    >>> r = traceback(prelim, q, s, load_matrix("BLOSUM62").scores, 11, 1, 64)
    >>> int(r.hsps['score'][0]), int(r.hsps['q_end'][0]), r.ops[0].tolist(), r.nums[0].tolist()
    (180, 30, [3], [30])
    """
    query = np.asarray(query, dtype=np.uint8)
    subject = np.asarray(subject, dtype=np.uint8)
    arr, ops, nums, at, _ = _traceback_kernel(
        _prelim_rows([prelim_hsps]), pad(query), len(query), subject, pad(subject),
        np.ascontiguousarray(matrix, dtype=np.int32), int(gap_open), int(gap_extend), int(x_dropoff_final),
        MININT if cutoff is None else int(cutoff), float(percent_identity), int(min_hit_length), *no_pre())
    out = _final_hsps(arr)
    out['evalue'] = np.nan
    keep = range(len(arr))
    if evalue is not None and len(out):
        out['evalue'] = np.asarray(evalue(out['score'].copy()), dtype=np.float64)
        if expect_value is not None:
            keep = np.flatnonzero(~(out['evalue'] > expect_value)).tolist()
            out = out[keep]
    return TracebackResult(out, [ops[at[i]:at[i + 1]] for i in keep], [nums[at[i]:at[i + 1]] for i in keep])


def tabular_rows(result: TracebackResult, query, subject, letters: str | None = None):
    """BLAST's outfmt-6 columns of each HSP, 1-based inclusive:
    (qstart, qend, sstart, send, score, nident, positive, gaps, gapopen, length, qseq, sseq)."""
    out = []
    for h, (qs, ss) in zip(result.hsps, result.strings(query, subject, letters)):
        out.append((int(h['q_start']) + 1, int(h['q_end']), int(h['s_start']) + 1,
                    int(h['s_end']), int(h['score']), int(h['num_ident']),
                    int(h['num_positives']), int(h['gaps']), int(h['gap_opens']),
                    int(h['length']), qs, ss))
    return out
