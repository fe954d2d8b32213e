"""Two-hit filtering (window A = 40) and ungapped X-drop extension, as BLAST+ 2.12 blastp.

Mirrors ``s_BlastAaWordFinder_TwoHit``, ``s_BlastAaExtendTwoHit``,
``s_BlastAaExtendLeft`` and ``s_BlastAaExtendRight`` (src/algo/blast/core/
aa_ungapped.c), with the diagonal array of blast_extend.c
(``s_BlastDiagTableNew``, ``Blast_ExtendWordExit``, ``s_BlastDiagClear``).

BLAST's two-hit rule, per hit (q_off, s_off) in scan order, on the diagonal-array
cell ``c = (q_off - s_off) & diag_mask`` holding (last_hit, flag), all subject
positions biased by ``diag_offset`` (which grows by length + window per subject,
so nothing carries over from one subject to the next):

* flag set (an extension to the right happened on this cell): if
  ``s_off + diag_offset < last_hit`` the hit lies inside the extension and is
  skipped; otherwise it becomes the new first hit (last_hit = s_off, flag = 0);
* flag clear: ``diff = s_off - last_hit``;
  ``diff >= window`` -> too far: the hit becomes the new first hit (so a pair at
  distance 40 does NOT trigger, 39 does);
  ``diff < wordsize`` -> overlapping (or an older aliased diagonal): ignored, the
  cell is not updated;
  otherwise extend: ``s_BlastAaExtendTwoHit(s_left_off = last_hit + wordsize,
  s_right_off = s_off, q_right_off = q_off)``; save if ``score >= cutoff``; if the
  extension went right, ``flag = 1, last_hit = s_last_off - (wordsize - 1)``,
  else ``last_hit = s_off``.

``s_BlastAaExtendTwoHit``: find the best-scoring prefix of the second word (one
beyond its end: ``right_d``), extend left from there with X-drop (running score
starting at 0, ``maxscore - score >= dropoff`` stops), and only if the left
extension reached the end of the first word (``left_d >= s_right_off -
s_left_off``) extend right from the same point (stops also when the running
score drops to <= 0).  The HSP starts ``left_d`` before the split point and is
``left_d + right_d`` long; its score is ``max(left_score, right_score)``.

Cutoff and X-drop (raw score units) are arguments.  In BLAST they are
``word_params->cutoffs[context]``: ``x_dropoff = ceil(7 ln2 / lambda_u)`` (2.12
no longer caps it at the cutoff, as older versions did) and, for gapped
blastp, ``cutoff_score = min(gap_trigger, cutoff_score_max)`` with
``gap_trigger = (Int4)((22 ln2 + ln K_u) / lambda_u)``
(``BlastInitialWordParametersUpdate``, blast_parameters.c); with ``-ungapped``
it is min(BLAST_Cutoffs at E = 1e-300, gap_trigger, cutoff_score_max), i.e. the
same.  The cutoff only decides what is saved: the diagonal state does not
depend on it, so a lower cutoff gives a superset of the same HSPs.

The diagonal array's aliasing (cells are true diagonals modulo the array
length L >= query_length + window) never changes anything: every hit of
diagonal d comes before every hit of d - L in the subject, a first hit on
d - L is at least L - query_length + 1 > window from d's last hit, and an
extension on d ends (s_last_off <= query_length - d) before d - L's first
possible hit (s >= L - d).  The same holds when blastp concatenates the
queries of a batch into one search (one lookup table, one diagonal array over
the concatenation): a diagonal running from one query into the next sees the
second query's hits after all of the first's; a pair across the boundary is
turned into a new first hit by BLAST's context check (``query_offset - diff <
context start``), as a fresh cell would be; and the sentinel between queries
(score -32768 against everything) stops every extension.  So each query can be
searched alone, with its own X-drop and cutoff (BLAST's per-context values).

Order of the output: the init HSPs of each subject in the order BLAST saves
them (``BlastSaveInitHsp``): by the triggering hit's subject offset, then by its
rank in the lookup cell (query word index, query offset).  ``BlastAaWordFinder``
then sorts them by score (``Blast_InitHitListSortByScore``): ``sort_by_score``.

Contents:
    1. INIT_HSP_DTYPE, extension kernels (s_BlastAaExtendLeft/Right/TwoHit)
    2. literal reference: the scan loop of s_BlastAaWordFinder_TwoHit, subject by subject
    3. binned pipeline: find_hits -> two-hit per diagonal bin -> BLAST's order
    4. ungapped_extensions(), sort_by_score()
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

from .._numba import copy_rows, numba
import numpy as np

from .lookup import Lookup
from .wordhits import diag_array_length, find_hits, hit_layout

INIT_HSP_DTYPE = np.dtype([('subject', 'i4'), ('q_off', 'i4'), ('s_off', 'i4'),
                           ('q_start', 'i4'), ('s_start', 'i4'), ('length', 'i4'),
                           ('score', 'i4')])

INT4_MAX = 2147483647


class UngappedJob(NamedTuple):
    """One query's arguments for the ungapped stage (the GPU takes a batch of them in one
    pass over the database: blast.gpu.GpuUngapped.ungapped_extensions_many)."""
    query_codes: np.ndarray         # NCBIstdaa residues
    lookup: Lookup
    matrix_scores: np.ndarray       # 28 x 28
    x_drop: int                     # raw score: the X-drop of stats.search_cutoffs
    cutoff: int                     # raw score an init HSP must reach (ungapped_cutoff)
    window: int = 40                # the two-hit window A (0: one-hit mode)


# --------------------------------------------------------------------------------------------
# 1. Extension kernels
# --------------------------------------------------------------------------------------------

@numba.njit(cache=True, nogil=True)
def extend_left(pssm, residues, sstart, s_off, q_off, dropoff, maxscore):
    """``s_BlastAaExtendLeft``: extend left from (q_off, s_off) inclusive.

    Returns (maxscore, length): the best running score (starting at ``maxscore``)
    and how many letters left of and including s_off it covers.
    """
    n = min(s_off, q_off)
    best_i = n + 1
    score = maxscore
    i = n
    while i >= 0:
        score += pssm[q_off - n + i, residues[sstart + s_off - n + i]]
        if score > maxscore:
            maxscore = score
            best_i = i
        if maxscore - score >= dropoff:
            break
        i -= 1
    return maxscore, n - best_i + 1


@numba.njit(cache=True, nogil=True)
def extend_right(pssm, residues, sstart, s_len, s_off, q_off, dropoff, maxscore):
    """``s_BlastAaExtendRight``: extend right from (q_off, s_off) inclusive.

    Stops when the running score drops to <= 0 or ``dropoff`` below the best.
    Returns (maxscore, length, s_last_off); s_last_off is the last subject
    offset examined (s_off + n when the loop ran to a sequence end).
    """
    n = min(s_len - s_off, pssm.shape[0] - q_off)
    best_i = -1
    score = maxscore
    i = 0
    while i < n:
        score += pssm[q_off + i, residues[sstart + s_off + i]]
        if score > maxscore:
            maxscore = score
            best_i = i
        if score <= 0 or (maxscore - score) >= dropoff:
            break
        i += 1
    return maxscore, best_i + 1, s_off + i


@numba.njit(cache=True, nogil=True)
def extend_two_hit(pssm, residues, sstart, s_len, s_left_off, s_right_off, q_right_off,
                   dropoff, word_size):
    """``s_BlastAaExtendTwoHit``.

    Args:
        s_left_off: end (one past) of the first hit's word in the subject.
        s_right_off, q_right_off: the second hit.

    Returns (score, hsp_q, hsp_s, hsp_len, right_extend, s_last_off).
    """
    left_score = 0
    right_d = 0
    score = 0
    for i in range(word_size):
        score += pssm[q_right_off + i, residues[sstart + s_right_off + i]]
        if score > left_score:
            left_score = score
            right_d = i + 1
    q_right_off += right_d
    s_right_off += right_d
    right_d = 0
    right_extend = False
    s_last_off = s_right_off
    right_score = 0
    left_score, left_d = extend_left(pssm, residues, sstart, s_right_off - 1, q_right_off - 1,
                                     dropoff, 0)
    if left_d >= s_right_off - s_left_off:
        right_extend = True
        right_score, right_d, s_last_off = extend_right(pssm, residues, sstart, s_len,
                                                        s_right_off, q_right_off, dropoff,
                                                        left_score)
    return (max(left_score, right_score), q_right_off - left_d, s_right_off - left_d,
            left_d + right_d, right_extend, s_last_off)


@numba.njit(cache=True, nogil=True)
def extend_one_hit(pssm, residues, sstart, s_len, s_off, q_off, dropoff, word_size):
    """``s_BlastAaExtendOneHit``: one word hit extended left, then right (one-hit mode).

    The best-scoring stretch of the word (a running sum that restarts after
    dropping to <= 0) is the seed; the left extension starts just before it
    with the seed's score, the right one just after it with the left result.

    Returns (score, hsp_q, hsp_s, hsp_len, s_last_off).
    """
    score = 0
    total = 0
    q_left = q_off
    q_right = q_off + word_size
    q_best_left = q_off
    for i in range(word_size):
        total += pssm[q_off + i, residues[sstart + s_off + i]]
        if total > score:
            score = total
            q_best_left = q_left
            q_right = q_off + i
        elif total <= 0:
            total = 0
            q_left = q_off + i + 1
    seed_width = q_right - q_left + 1       # as BLAST: from the last restart, not the best start
    q_left = q_best_left
    s_left = q_left + (s_off - q_off)
    s_right = q_right + (s_off - q_off)
    left_score, left_d = extend_left(pssm, residues, sstart, s_left - 1, q_left - 1, dropoff, score)
    right_score, right_d, s_last_off = extend_right(pssm, residues, sstart, s_len, s_right + 1,
                                                    q_right + 1, dropoff, left_score)
    return (right_score, q_left - left_d, s_left - left_d, left_d + right_d + seed_width,
            s_last_off)


@numba.njit(cache=True, nogil=True)
def _push(out, n, row):
    """Append one row to a growable (cap, 7) int32 table; returns the (possibly new) table."""
    if n == out.shape[0]:
        bigger = np.empty((max(16, 2 * out.shape[0]), 7), dtype=np.int32)
        copy_rows(bigger, 0, out[:n])
        out = bigger
    for k in range(7):
        out[n, k] = row[k]
    return out


@numba.njit(cache=True, nogil=True)
def _save(out, n, row, subject, q_off, s_off, hsp_q, hsp_s, hsp_len, score):
    """``BlastSaveInitHsp``: one init HSP appended to the table; returns the table."""
    row[0] = subject
    row[1] = q_off
    row[2] = s_off
    row[3] = hsp_q
    row[4] = hsp_s
    row[5] = hsp_len
    row[6] = score
    return _push(out, n, row)


# --------------------------------------------------------------------------------------------
# 2. Literal reference
# --------------------------------------------------------------------------------------------

@numba.njit(cache=True, nogil=True)
def _two_hit_subject_literal(cell_start, cell_offsets, word_size, pssm, residues, sstart,
                             s_len, last_hit, flag, diag_offset, diag_mask, window, dropoff,
                             cutoff, subject, out, n_out):
    """One subject through the scan loop of ``s_BlastAaWordFinder_TwoHit``, statement by statement.

    ``last_hit``/``flag`` are BLAST's ``diag_array`` (kept across subjects),
    ``diag_offset`` its ``diag->offset``.  Hits come straight from the scan
    (``s_BlastAaScanSubject``: subject offsets in order, cell offsets in table
    order); BLAST copies them into ``offset_pairs`` batches first, which changes
    nothing in the order.
    """
    row = np.empty(7, dtype=np.int32)
    if s_len < word_size:
        return out, n_out
    word_mask = (np.int64(1) << (5 * word_size)) - 1
    idx = np.int64(0)
    for k in range(word_size - 1):
        idx = (idx << 5) | residues[sstart + k]
    for subject_offset in range(s_len - word_size + 1):
        idx = ((idx << 5) | residues[sstart + subject_offset + word_size - 1]) & word_mask
        for e in range(cell_start[idx], cell_start[idx + 1]):
            query_offset = np.int64(cell_offsets[e])
            diag_coord = (query_offset - subject_offset) & diag_mask
            if flag[diag_coord]:
                if subject_offset + diag_offset < last_hit[diag_coord]:
                    continue
                last_hit[diag_coord] = subject_offset + diag_offset
                flag[diag_coord] = 0
            else:
                lh = last_hit[diag_coord] - diag_offset
                diff = subject_offset - lh
                if diff >= window:
                    last_hit[diag_coord] = subject_offset + diag_offset
                    continue
                if diff < word_size:
                    continue
                # BSearchContextInfo: one context starting at 0
                if query_offset - diff < 0:
                    last_hit[diag_coord] = subject_offset + diag_offset
                    continue
                score, hsp_q, hsp_s, hsp_len, right_extend, s_last_off = extend_two_hit(
                    pssm, residues, sstart, s_len, lh + word_size, subject_offset, query_offset,
                    dropoff, word_size)
                if score >= cutoff:
                    out = _save(out, n_out, row, subject, query_offset, subject_offset, hsp_q, hsp_s,
                                hsp_len, score)
                    n_out += 1
                if right_extend:
                    flag[diag_coord] = 1
                    last_hit[diag_coord] = s_last_off - (word_size - 1) + diag_offset
                else:
                    last_hit[diag_coord] = subject_offset + diag_offset
    return out, n_out


@numba.njit(cache=True, nogil=True)
def _one_hit_subject_literal(cell_start, cell_offsets, word_size, pssm, residues, sstart, s_len,
                             last_hit, diag_offset, diag_mask, dropoff, cutoff, subject, out, n_out):
    """One subject through the scan loop of ``s_BlastAaWordFinder_OneHit`` (``-window_size 0``).

    Every hit is extended unless an earlier extension on its diagonal already
    reached past it; the diagonal remembers where the last extension ended.
    (Diagonals are ``(s - q) & diag_mask`` here, as in BLAST's one-hit loop.)
    """
    row = np.empty(7, dtype=np.int32)
    if s_len < word_size:
        return out, n_out
    word_mask = (np.int64(1) << (5 * word_size)) - 1
    idx = np.int64(0)
    for k in range(word_size - 1):
        idx = (idx << 5) | residues[sstart + k]
    for subject_offset in range(s_len - word_size + 1):
        idx = ((idx << 5) | residues[sstart + subject_offset + word_size - 1]) & word_mask
        for e in range(cell_start[idx], cell_start[idx + 1]):
            query_offset = np.int64(cell_offsets[e])
            diag_coord = (subject_offset - query_offset) & diag_mask
            if subject_offset - (last_hit[diag_coord] - diag_offset) < 0:
                continue                      # inside the last extension of this diagonal
            score, hsp_q, hsp_s, hsp_len, s_last_off = extend_one_hit(
                pssm, residues, sstart, s_len, subject_offset, query_offset, dropoff, word_size)
            if score >= cutoff:
                out = _save(out, n_out, row, subject, query_offset, subject_offset, hsp_q, hsp_s,
                            hsp_len, score)
                n_out += 1
            last_hit[diag_coord] = s_last_off - (word_size - 1) + diag_offset
    return out, n_out


@numba.njit(cache=True, nogil=True)
def _reference_all(cell_start, cell_offsets, word_size, pssm, residues, offsets, subject_ids,
                   window, dropoff, cutoff, diag_length):
    """BLAST's per-subject loop with one diagonal array for the whole search
    (two-hit; one-hit when ``window`` is 0, as ``-window_size 0``)."""
    last_hit = np.zeros(diag_length, dtype=np.int64)     # calloc'd by BlastExtendWordNew
    flag = np.zeros(diag_length, dtype=np.uint8)
    diag_offset = np.int64(window)                       # s_BlastDiagTableNew
    diag_mask = np.int64(diag_length - 1)
    out = np.empty((64, 7), dtype=np.int32)
    n_out = 0
    for j in range(len(subject_ids)):
        sstart = offsets[subject_ids[j]]
        s_len = offsets[subject_ids[j] + 1] - sstart
        if window == 0:                                  # BLAST's one-hit word finder
            out, n_out = _one_hit_subject_literal(cell_start, cell_offsets, word_size, pssm,
                                                  residues, sstart, s_len, last_hit, diag_offset,
                                                  diag_mask, dropoff, cutoff, subject_ids[j], out,
                                                  n_out)
        else:
            out, n_out = _two_hit_subject_literal(cell_start, cell_offsets, word_size, pssm,
                                                  residues, sstart, s_len, last_hit, flag,
                                                  diag_offset, diag_mask, window, dropoff, cutoff,
                                                  subject_ids[j], out, n_out)
        # Blast_ExtendWordExit
        if diag_offset >= INT4_MAX // 4:
            diag_offset = np.int64(window)
            for c in range(diag_length):                 # s_BlastDiagClear
                flag[c] = 0
                last_hit[c] = -window
        else:
            diag_offset += s_len + window
    return out[:n_out]


def ungapped_extensions_reference(query_codes, lookup: Lookup, residues, offsets, subject_ids,
                                  matrix_scores, x_drop: int, cutoff: int,
                                  window: int = 40) -> np.ndarray:
    """The init HSPs by BLAST's own loop (no binning): the reference for the binned pipeline.

    Same arguments and result as ``ungapped_extensions``.
    """
    pssm = _pssm(query_codes, matrix_scores)
    rows = _reference_all(lookup.cell_start, lookup.offsets, lookup.word_size, pssm,
                          np.ascontiguousarray(residues, np.uint8),
                          np.ascontiguousarray(offsets, np.int64),
                          np.ascontiguousarray(subject_ids, np.int64), int(window), int(x_drop),
                          int(cutoff), diag_array_length(lookup.query_length, window))
    return _to_records(rows)


# --------------------------------------------------------------------------------------------
# 3. Binned pipeline
# --------------------------------------------------------------------------------------------

@numba.njit(cache=True, nogil=True)
def two_hit_binned(keys, s_bits, d_bits, pssm, residues, offsets, subject_ids, word_size,
                   window, dropoff, cutoff):
    """The two-hit rule and extensions over binned hit keys, one diagonal bin after another.

    Each (subject, diagonal bin) run of ``keys`` (wordhits.find_hits) replays the
    diagonal-array cell's history of ``s_BlastAaWordFinder_TwoHit`` in subject
    order, starting from a fresh cell (what ``Blast_ExtendWordExit``'s offset
    bump amounts to).  Bins are independent: this loop is the part a GPU runs
    one thread (or warp) per bin.

    Returns an int32 (n, 7) table: subject batch index, q_off, s_off, q_start,
    s_start, length, score -- grouped by bin, not yet in BLAST's order.
    """
    s_mask = (np.int64(1) << s_bits) - 1
    d_mask = (np.int64(1) << d_bits) - 1
    id_shift = s_bits + d_bits
    out = np.empty((64, 7), dtype=np.int32)
    row = np.empty(7, dtype=np.int32)
    n_out = 0
    cur_bin = np.int64(-1)
    last_hit = np.int64(0)
    flag = False
    sstart = np.int64(0)
    s_len = np.int64(0)
    for k in range(len(keys)):
        key = np.int64(keys[k])
        b = key >> s_bits
        s_off = key & s_mask
        if b != cur_bin:
            if (b >> d_bits) != (cur_bin >> d_bits):
                j = b >> d_bits
                sstart = offsets[subject_ids[j]]
                s_len = offsets[subject_ids[j] + 1] - sstart
            cur_bin = b
            last_hit = -window          # a fresh cell: any first hit is "too far"
            flag = False
        q_off = ((b & d_mask) + s_off) & d_mask
        if flag:
            if s_off < last_hit:
                continue
            last_hit = s_off
            flag = False
            continue
        diff = s_off - last_hit
        if diff >= window:
            last_hit = s_off
            continue
        if diff < word_size:
            continue
        if q_off - diff < 0:
            last_hit = s_off
            continue
        score, hsp_q, hsp_s, hsp_len, right_extend, s_last_off = extend_two_hit(
            pssm, residues, sstart, s_len, last_hit + word_size, s_off, q_off, dropoff,
            word_size)
        if score >= cutoff:
            row[0] = key >> id_shift
            row[1] = q_off
            row[2] = s_off
            row[3] = hsp_q
            row[4] = hsp_s
            row[5] = hsp_len
            row[6] = score
            out = _push(out, n_out, row)
            n_out += 1
        if right_extend:
            flag = True
            last_hit = s_last_off - (word_size - 1)
        else:
            last_hit = s_off
    return out[:n_out]


def blast_order(rows: np.ndarray, query_rank: np.ndarray) -> np.ndarray:
    """Rows of two_hit_binned in the order BLAST saves them.

    By subject (batch index), then the triggering hit's subject offset, then its
    rank in the lookup cell (``Lookup.query_rank``: query word index, then query
    offset).
    """
    if len(rows) == 0:
        return rows
    sub = rows[:, 0].astype(np.int64)
    s_off = rows[:, 2].astype(np.int64)
    rank = query_rank[rows[:, 1]].astype(np.int64)
    s_bits = max(1, int(s_off.max()).bit_length())
    r_bits = max(1, len(query_rank).bit_length())
    if int(sub.max()).bit_length() + s_bits + r_bits <= 63:
        order = np.argsort((sub << (s_bits + r_bits)) | (s_off << r_bits) | rank)
    else:
        order = np.lexsort((rank, s_off, sub))
    return rows[order]


# --------------------------------------------------------------------------------------------
# 4. Entry points
# --------------------------------------------------------------------------------------------

def _pssm(query_codes, matrix_scores) -> np.ndarray:
    q = np.asarray(query_codes, dtype=np.intp)
    return np.ascontiguousarray(np.asarray(matrix_scores, dtype=np.int32)[q], dtype=np.int32)


def _to_records(rows: np.ndarray) -> np.ndarray:
    """(n, 7) rows as INIT_HSP_DTYPE records: seven int32 fields are the same bytes as a
    C-ordered int32 row, so this is a view, not a copy (unless rows are not int32)."""
    rows = np.ascontiguousarray(rows, dtype=np.int32).reshape(-1, 7)
    return rows.view(INIT_HSP_DTYPE).reshape(-1)


def _batches(lengths: np.ndarray, batch_residues: int) -> list[tuple[int, int]]:
    """Contiguous ranges of subjects of about batch_residues residues each."""
    bounds = []
    start = 0
    acc = 0
    for i, n in enumerate(lengths.tolist()):
        acc += n
        if acc >= batch_residues:
            bounds.append((start, i + 1))
            start = i + 1
            acc = 0
    if start < len(lengths):
        bounds.append((start, len(lengths)))
    return bounds


def _run_batch(lookup, pssm, residues, offsets, ids, x_drop, cutoff, window, method):
    if method == "scan" or window == 0:      # one-hit mode: BLAST's loop (no binned twin)
        return _reference_all(lookup.cell_start, lookup.offsets, lookup.word_size, pssm, residues,
                              offsets, ids, int(window), int(x_drop), int(cutoff),
                              diag_array_length(lookup.query_length, window))
    keys = find_hits(lookup, residues, offsets, ids, window)
    layout = hit_layout(lookup, offsets, ids, window)
    rows = two_hit_binned(keys, layout.s_bits, layout.d_bits, pssm, residues, offsets, ids,
                          lookup.word_size, int(window), int(x_drop), int(cutoff))
    rows = blast_order(rows, lookup.query_rank)
    rows[:, 0] = ids[rows[:, 0]]
    return rows


def ungapped_extensions(query_codes, lookup: Lookup, residues, offsets, subject_ids,
                        matrix_scores, x_drop: int, cutoff: int, window: int = 40, *,
                        batch_residues: int = 1 << 22, threads: int = 1,
                        method: str = "binned") -> np.ndarray:
    """Init HSPs of one query against many subjects: hit detection, binning, two-hit, extension.

    Runs wordhits.find_hits and two_hit_binned batch by batch of subjects
    (about ``batch_residues`` residues each, so the hit keys stay small), on
    ``threads`` threads (the numba kernels release the GIL).  Subjects are
    independent in BLAST (``Blast_ExtendWordExit``), so batches are too.

    Args:
        query_codes: uint8 NCBIstdaa query (as BLAST sees it, masking applied).
        lookup: build_lookup(query_codes, matrix_scores, W, T).
        residues, offsets: the packed NCBIstdaa database (uint8, int64 (n+1,)).
        subject_ids: int64 database indices of the subjects, in BLAST's scan order.
        matrix_scores: int32 (28, 28) [query letter, subject letter].
        x_drop: ungapped X-drop, raw score (``cutoffs->x_dropoff``).
        cutoff: save an extension if its score >= cutoff (``cutoffs->cutoff_score``).
        window: two-hit window A (40).
        batch_residues, threads: batching and threads (results do not depend on them).
        method: "binned" (the cuBLASTP stages) or "scan" (BLAST's own loop, which
            a CPU runs about twice as fast); the results are identical.  With
            ``window`` 0 (BLAST's one-hit mode) BLAST's loop is used either way.

    Returns:
        INIT_HSP_DTYPE array: per subject (in subject_ids order) the init HSPs in
        the order BLAST saves them; ``subject`` is the database index.

    Raises:
        ValueError: query codes and lookup disagree in length.
    """
    query_codes = np.ascontiguousarray(query_codes, dtype=np.uint8)
    if len(query_codes) != lookup.query_length:
        raise ValueError("the lookup table was built for another query")
    if method not in ("binned", "scan"):
        raise ValueError(f"method must be 'binned' or 'scan', not {method!r}")
    residues = np.ascontiguousarray(residues, dtype=np.uint8)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    subject_ids = np.ascontiguousarray(subject_ids, dtype=np.int64)
    pssm = _pssm(query_codes, matrix_scores)
    lengths = offsets[subject_ids + 1] - offsets[subject_ids]
    bounds = _batches(lengths, max(1, int(batch_residues)))

    def work(b):
        return _run_batch(lookup, pssm, residues, offsets, subject_ids[b[0]:b[1]], x_drop,
                          cutoff, window, method)

    if threads > 1 and len(bounds) > 1:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            parts = list(pool.map(work, bounds))
    else:
        parts = [work(b) for b in bounds]
    rows = np.concatenate(parts) if parts else np.empty((0, 7), np.int32)
    return _to_records(rows)


def sort_by_score(hsps: np.ndarray) -> np.ndarray:
    """``Blast_InitHitListSortByScore`` within each subject (subjects keep their order).

    Score descending, then s_start ascending, length descending, q_start
    ascending (``score_compare_match``, blast_extend.c).  BLAST's qsort is not
    stable; rows equal on all four keys are identical alignments.
    """
    if len(hsps) == 0:
        return hsps
    first = np.unique(hsps['subject'], return_index=True)
    rank = np.empty(len(hsps), dtype=np.int64)
    # subjects in order of first appearance
    pos = {s: i for i, s in enumerate(hsps['subject'][np.sort(first[1])].tolist())}
    rank[:] = [pos[s] for s in hsps['subject'].tolist()]
    order = np.lexsort((hsps['q_start'], -hsps['length'].astype(np.int64), hsps['s_start'],
                        -hsps['score'].astype(np.int64), rank))
    return hsps[order]
