"""Composition-based statistics of blastp (``-comp_based_stats`` 1, 2, 3), as BLAST+ does them.

With composition-based statistics BLAST does not trace back the preliminary
HSPs with the standard matrix: it realigns each subject's HSPs with a score
matrix adjusted to the composition of the query and of that subject (Yu &
Altschul 2005; Altschul et al. 2005).  This module is that stage, for one query
and one subject at a time; :mod:`.composition` computes the adjusted matrices,
:mod:`.seg` masks the subject.  Mirrors (src/algo/blast/):

* ``Blast_RedoAlignmentCore`` (core/blast_kappa.c): the search is rescaled by
  ``SCALING_FACTOR`` = 32 for precision (gapped lambda / 32, gap costs x 32,
  matrices in 1/32 units); the final X-drop is recomputed for the scaled
  lambda; an HSP enters the redo with its preliminary score x 32.
* ``Blast_RedoOneMatch`` (composition_adjustment/redo_alignment.c), blastp's
  case: one window, the whole subject; the HSPs in score order; an HSP whose
  preliminary alignment is nearly identical to the query
  (``s_preliminaryTestNearIdentical``: at least 1.74 bits a position, then
  ``s_TestNearIdentical``: more than 96% identities) is realigned with the
  subject unmasked, every other one with the subject masked by SEG (window 10,
  locut 1.8, hicut 2.1, ``s_DoSegSequenceData``; the identity test looks at the
  subject's first HSP, whichever HSP asks, and once SEG has found nothing to mask
  the status is no longer tested); the subject composition and the adjusted
  matrix are recomputed for the first HSP and whenever the near-identity status
  changes (an adjustment that fails skips the HSP and leaves the last matrix, or
  the search's own, in place); an HSP contained in an earlier alignment
  scoring 2 bits more (``s_IsContained``) is skipped; the realignment starts at
  the preliminary start point (``s_RedoOneAlignment``:
  ``BLAST_GappedAlignmentWithTraceback`` with the scaled matrix and X-drop);
  ``s_WithDistinctEnds`` keeps one alignment per end point.
* back in ``Blast_RedoAlignmentCore``: the alignments sorted by score, those
  contained in a better one removed (``s_HitlistReapContained``), E-values from
  the scaled scores and lambda (``Blast_HSPListGetEvalues``, Spouge), the
  reap by -evalue, then scores divided by 32 and rounded
  (``s_HSPListNormalizeScores``, bit scores from the rounded score) and
  identities counted on the unmasked sequences (``s_ComputeNumIdentities``).
* which subjects are kept: ``BlastCompo_Heap`` (compo_heap.c) with
  -max_target_seqs records, every subject with E <= 0.002 kept beyond them, and
  ``BlastCompo_EarlyTermination``: once the heaps of every query of the batch hold
  that many such subjects, the subjects whose preliminary E-value is above 5 x
  0.002 are not redone.  ``Blast_RedoAlignmentCore_MT`` deals a batch's subjects
  to its threads, each with heaps of its own (``redo_selection``).

Coordinates are 0-based, ends exclusive, as in :mod:`.traceback`.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

import numpy as np

from . import composition, seg, stats
from .gapped import pad
from .traceback import alignment_stats, gapped_alignment_with_traceback

SCALING_FACTOR = 32                      # blast_kappa.c: scores in 1/32 units during the redo
NEAR_IDENTICAL_BITS_PER_POSITION = 1.74  # blast_kappa.c: the preliminary near-identity test
MINIMUM_LENGTH_NEAR_IDENTICAL = 50       # redo_alignment.c
MIN_FRACTION_NEAR_IDENTICAL = 0.96       # s_TestNearIdentical
NEAR_IDENTICAL_MAX_SHIFT = 8             # s_TestNearIdentical: mismatches or gaps skipped
NEAR_IDENTICAL_WORD = 8                  # s_FindNumIdentical: word matches between the ends
KAPPA_BIT_TOL = 2.0                      # s_IsContained: bits an enclosing alignment must exceed by
INCLUSION_ETHRESH = 0.002                # PSI_INCLUSION_ETHRESH: the heap keeps every subject below it
EVALUE_STRETCH = 5                       # BlastCompo_EarlyTermination
X = 21                                   # NCBIstdaa X, SEG's mask letter
SELENOCYSTEINE, CYSTEINE = 24, 3


def nint(x: float) -> int:
    """BLAST_Nint: round half away from zero."""
    return int(x + 0.5) if x >= 0 else int(x - 0.5)


# --------------------------------------------------------------------------------------------
# The query's side, fixed for all its subjects
# --------------------------------------------------------------------------------------------

@dataclass
class KappaQuery:
    """What the redo needs of one query (``s_GetQueryInfo``, ``s_RescaleSearch``,
    ``s_GappingParamsNew``, ``s_GetAlignParams``)."""

    codes: np.ndarray          # the query as searched (NCBIstdaa)
    data: np.ndarray           # the query the redo aligns: U as C (s_SequenceGetRange)
    padded: np.ndarray
    words: np.ndarray          # the 8-letter word starting at each position (s_CreateWordArray)
    composition: object        # composition.read_composition of the query
    mode: int                  # -comp_based_stats
    kbp: stats.KarlinBlk       # gapped, scaled: Lambda / 32
    gap_open: int              # scaled
    gap_extend: int
    x_dropoff: int             # scaled final X-drop
    near_identical_cutoff: float
    matrix_info: object
    workspace: object = None   # the target-frequency optimisation's (modes 2 and 3)
    matrices: dict = field(default_factory=dict)


def kappa_query(codes: np.ndarray, setup, mode: int) -> KappaQuery:
    """The redo's view of one query under the run's matrix and gap costs."""
    g = setup.gapped.kbp
    lam = g.Lambda / SCALING_FACTOR
    kbp = stats.KarlinBlk(Lambda=lam, K=g.K, logK=math.log(g.K), H=g.H)
    # BlastExtensionParameters' final X-drop (unscaled) and the scaled one of s_GappingParamsNew
    _, x_final = stats.gapped_x_dropoffs(g)
    x_dropoff = int(max(stats.GAP_X_DROPOFF_FINAL_BITS * stats.LN2 / lam, float(x_final)))
    data = np.where(codes == SELENOCYSTEINE, CYSTEINE, codes).astype(np.uint8)
    info = composition.matrix_info(setup.matrix.name)
    return KappaQuery(
        codes=codes, data=data, padded=pad(data), words=_word_hashes(codes),
        composition=composition.read_composition(codes), mode=mode, kbp=kbp,
        gap_open=nint(setup.gap_open * SCALING_FACTOR), gap_extend=nint(setup.gap_extend * SCALING_FACTOR),
        x_dropoff=x_dropoff, near_identical_cutoff=NEAR_IDENTICAL_BITS_PER_POSITION * stats.LN2 / lam,
        matrix_info=info, workspace=composition.new_workspace(info) if mode > 1 else None)


def _word_hashes(codes: np.ndarray) -> np.ndarray:
    """s_CreateWordArray: 5 bits a letter, the 8 letters from each position (the last
    positions, without a whole word, are never looked at)."""
    n = len(codes) - NEAR_IDENTICAL_WORD + 1
    if n <= 0:
        return np.zeros(0, dtype=np.uint64)
    h = np.zeros(n, dtype=np.uint64)
    for k in range(NEAR_IDENTICAL_WORD):
        h = (h << np.uint64(5)) + codes[k:k + n].astype(np.uint64)
    return h


# --------------------------------------------------------------------------------------------
# Near-identical HSPs (their subject is not masked)
# --------------------------------------------------------------------------------------------

def preliminary_near_identical(score: int, q0: int, q1: int, s0: int, s1: int, query_len: int,
                               cutoff: float) -> bool:
    """s_preliminaryTestNearIdentical: long enough and at least 1.74 bits a position
    (``score`` scaled, ``cutoff`` in scaled units)."""
    if (s1 - s0 + 1) < min(query_len, MINIMUM_LENGTH_NEAR_IDENTICAL):
        return False
    align_len = min(q1 - q0, s1 - s0)
    return align_len > 0 and score / align_len >= cutoff


def _extend_right(q, s, max_shift: int):
    """s_ExtendRight: identities along the diagonal from the start, skipping up to
    ``max_shift`` - 1 mismatches or gap letters where two identities follow.
    Returns (identities, query letters, subject letters)."""
    qn, sn = len(q), len(s)
    ident = qp = sp = 0
    while qp < qn and sp < sn:
        while qp < qn and sp < sn and q[qp] == s[sp]:
            ident += 1
            qp += 1
            sp += 1
        match = False
        n = 1
        while n < max_shift and qp + n + 1 < qn and sp + n + 1 < sn and not match:
            if q[qp + n] == s[sp + n] and q[qp + n + 1] == s[sp + n + 1]:
                qp += n + 2
                sp += n + 2
                ident += 2
                match = True
            if not match and q[qp + n] == s[sp] and q[qp + n + 1] == s[sp + 1]:
                qp += n + 2
                sp += 2
                ident += 2
                match = True
            if not match and q[qp] == s[sp + n] and q[qp + 1] == s[sp + n + 1]:
                qp += 2
                sp += n + 2
                ident += 2
                match = True
            n += 1
        if not match:
            break
    return ident, qp, sp


def _extend_left(q, s, max_shift: int):
    """s_ExtendLeft: ``_extend_right`` from the ends, leftwards.
    Returns (identities, query letters, subject letters)."""
    qp, sp = len(q) - 1, len(s) - 1
    ident = 0
    while qp >= 0 and sp >= 0:
        while qp > 0 and sp > 0 and q[qp] == s[sp]:
            ident += 1
            qp -= 1
            sp -= 1
        match = False
        n = 1
        while n < max_shift and qp - n - 1 > 0 and sp - n - 1 > 0 and not match:
            if q[qp - n] == s[sp - n] and q[qp - n - 1] == s[sp - n - 1]:
                qp -= n + 2
                sp -= n + 2
                ident += 2
                match = True
            if not match and q[qp - n] == s[sp] and q[qp - n - 1] == s[sp - 1]:
                qp -= n + 2
                sp -= 2
                ident += 2
                match = True
            if not match and q[qp] == s[sp - n] and q[qp - 1] == s[sp - n - 1]:
                qp -= 2
                sp -= n + 2
                ident += 2
                match = True
            n += 1
        if not match:
            break
    return ident, len(q) - qp - 1, len(s) - sp - 1


def _find_num_identical(query, q_base: int, q_len: int, q_words, subject, s_base: int, s_len: int,
                        max_shift: int) -> int:
    """s_FindNumIdentical on query[q_base:q_base + q_len] and subject[s_base:s_base + s_len]:
    8-letter word matches (the first query word equal to the subject's, at or after the
    last match) extended both ways.

    The left extension is BLAST's as written: s_ExtendLeft gets the letter before the
    word as its start and the gap back to the last match as its length, and reads that
    many letters from there on (rightwards into the word); letters past the end of a
    sequence read as no match."""
    w = NEAR_IDENTICAL_WORD
    if q_len < w or s_len < w:
        return 0
    ident = 0
    q_from = s_from = 0
    s_pos = 0
    while s_pos < s_len - w:
        word = _hash(subject[s_base + s_pos:s_base + s_pos + w])
        hit = -1
        for q_pos in range(q_from, q_len - w):
            if q_words[q_base + q_pos] == word:
                hit = q_pos
                break
        if hit >= 0:
            ident += w
            ident += _extend_left(_window(query, q_base + hit - 1, hit - q_from, -1),
                                  _window(subject, s_base + s_pos - 1, s_pos - s_from, -2), max_shift)[0]
            r_ident, q_right, s_right = _extend_right(query[q_base + hit + w:q_base + q_len],
                                                      subject[s_base + s_pos + w:s_base + s_len], max_shift)
            ident += r_ident
            q_from = hit + w + q_right
            s_from = s_pos + w + s_right
            s_pos = s_from          # (the C loop's s_pos = subject_from - 1, then its increment)
        else:
            s_pos += 1
    return ident


def _window(seq, start: int, length: int, fill: int) -> np.ndarray:
    """seq[start:start + length] with ``fill`` for positions outside the sequence."""
    out = np.full(max(length, 0), fill, dtype=np.int64)
    for k in range(max(length, 0)):
        if 0 <= start + k < len(seq):
            out[k] = seq[start + k]
    return out


def _hash(word) -> int:
    h = 0
    for c in word:
        h = ((h << 5) + int(c)) & 0xFFFFFFFFFF
    return h


def near_identical(query: np.ndarray, q_words: np.ndarray, subject: np.ndarray,
                   q0: int, q1: int, s0: int, s1: int) -> bool:
    """s_TestNearIdentical: more than 96% of the shorter side identical (BLAST+ 2.12; later
    versions take 95%), counted by
    extensions from both ends and word matches in between."""
    q = query[q0:q1]
    s = subject[s0:s1]
    align_len = min(len(q), len(s))
    if align_len == 0:
        return False
    ident, q_right, s_right = _extend_right(q, s, NEAR_IDENTICAL_MAX_SHIFT)
    if q_right >= len(q) or s_right >= len(s):
        return ident / align_len > MIN_FRACTION_NEAR_IDENTICAL
    l_ident, q_left, s_left = _extend_left(q[q_right:], s[s_right:], NEAR_IDENTICAL_MAX_SHIFT)
    ident += l_ident
    if q_left + q_right >= len(q) or s_left + s_right >= len(s):
        return ident / align_len > MIN_FRACTION_NEAR_IDENTICAL
    ident += _find_num_identical(query, q0 + q_right, len(q) - q_left - q_right, q_words,
                                 subject, s0 + s_right, len(s) - s_left - s_right, NEAR_IDENTICAL_MAX_SHIFT)
    return ident / align_len > MIN_FRACTION_NEAR_IDENTICAL


# --------------------------------------------------------------------------------------------
# The redo of one subject
# --------------------------------------------------------------------------------------------

@dataclass
class Alignment:
    """BlastCompo_Alignment: a redone alignment, scaled score; ends exclusive."""

    score: int
    q0: int
    q1: int
    s0: int
    s1: int
    ops: np.ndarray = None
    nums: np.ndarray = None


def _contained(score: int, q0, q1, s0, s1, aligns: list, lam: float) -> bool:
    """s_IsContained: both ends inside an alignment scoring at least 2 bits more."""
    thresh = score + KAPPA_BIT_TOL * stats.LN2 / lam
    for a in aligns:
        if (a.q0 <= q0 <= a.q1 and a.s0 <= s0 <= a.s1 and a.q0 <= q1 <= a.q1 and a.s0 <= s1 <= a.s1
                and thresh <= a.score):
            return True
    return False


def _same_end(new: Alignment, a: Alignment) -> bool:
    return (a.q0 == new.q0 and a.s0 == new.s0) or (a.q1 == new.q1 and a.s1 == new.s1)


def _similar_end(new: Alignment, a: Alignment) -> bool:
    """s_IsSimilarEndPoint: an end of ``new`` inside ``a`` and on the diagonal of a's same end."""
    start_in = a.q0 <= new.q0 <= a.q1 and a.s0 <= new.s0 <= a.s1
    end_in = a.q0 <= new.q1 <= a.q1 and a.s0 <= new.s1 <= a.s1
    return ((start_in and new.q0 - new.s0 == a.q0 - a.s0)
            or (end_in and new.q1 - new.s1 == a.q1 - a.s1))


def _with_distinct_ends(new: Alignment, aligns: list, same_adjustment: bool) -> list:
    """s_WithDistinctEnds: ``new`` joins the list (at its head) unless an alignment sharing
    an end scores as much; the ones sharing an end with it leave.  With alignments computed
    under different adjustments (masked and unmasked subject), 'sharing an end' is the
    looser ``_similar_end`` for the first test."""
    for a in aligns:
        shares = _same_end(new, a) if same_adjustment else _similar_end(new, a)
        if shares and new.score <= a.score:
            return aligns
    return [new] + [a for a in aligns if not _same_end(new, a)]


def _subject_data(subject: np.ndarray, kq: KappaQuery, test_identical: bool, q0, q1, s0, s1):
    """s_SequenceGetProteinRange: the subject as the redo aligns it, and whether SEG
    masked anything in it (None: not looked at).  Masked by SEG unless the HSP passed the
    preliminary near-identity test and really is nearly identical."""
    if test_identical and near_identical(kq.data, kq.words, subject, q0, q1, s0, s1):
        return subject, None
    segments = seg.seg_intervals(subject, seg.KAPPA_WINDOW, seg.KAPPA_LOCUT, seg.KAPPA_HICUT)
    masked = np.array(subject, dtype=np.uint8, copy=True)
    for begin, end in segments:
        masked[begin:end + 1] = X
    return masked, bool(segments)


def redo_subject(prelim: np.ndarray, kq: KappaQuery, subject: np.ndarray, start_matrix) -> list[Alignment]:
    """Blast_RedoOneMatch for blastp: the alignments of one subject, redone with its
    adjusted matrices; scaled scores, in ``s_WithDistinctEnds``' list order.

    ``prelim``: the subject's preliminary HSPs (PRELIM_HSP rows) in score order;
    ``start_matrix``: the search's own matrix, which an HSP aligns with (and the scaled
    gap costs) if the subject's first adjustment failed.
    """
    aligns: list[Alignment] = []
    data = padded = None
    matrix = start_matrix
    # get_range tests the window's first alignment for identity, whichever HSP asks
    first = prelim[0]
    f_q0, f_q1, f_s0, f_s1 = (int(first["q_start"]), int(first["q_end"]), int(first["s_start"]),
                              int(first["s_end"]))
    near = old_near = False
    maybe_biased = True
    adjustments = 0
    for i, h in enumerate(prelim):
        score = int(int(h["score"]) * SCALING_FACTOR)
        q0, q1, s0, s1 = int(h["q_start"]), int(h["q_end"]), int(h["s_start"]), int(h["s_end"])
        if i == 0 or maybe_biased:
            near = preliminary_near_identical(score, q0, q1, s0, s1, len(kq.codes), kq.near_identical_cutoff)
        if i == 0 or (maybe_biased and near != old_near):
            data, biased = _subject_data(subject, kq, near, f_q0, f_q1, f_s0, f_s1)
            if biased is not None:
                maybe_biased = biased
            padded = pad(data)
        if not _contained(score, q0, q1, s0, s1, aligns, kq.kbp.Lambda):
            failed = False
            if kq.mode != 0 and (i == 0 or near != old_near):
                adjusted, failed = _adjusted_matrix(kq, data)
                if not failed:        # (a failed one leaves the last matrix in place)
                    matrix = adjusted
                adjustments += 1
            if not failed:
                new = _redo_one(h, kq, padded, len(data), matrix)
                if new.score >= 1:
                    aligns = _with_distinct_ends(new, aligns, adjustments == 1)
        old_near = near
    return aligns


def _adjusted_matrix(kq: KappaQuery, subject_data: np.ndarray):
    """Blast_AdjustScores for the subject as aligned: (scaled int32 28 x 28 matrix,
    failed).  A failed adjustment skips the HSP."""
    s_comp = composition.read_composition(subject_data)
    adj = composition.adjust_scores(kq.matrix_info, kq.composition, len(kq.codes), s_comp,
                                    len(subject_data), kq.mode, kq.workspace)
    return adj.matrix, adj.failed


def _redo_one(h, kq: KappaQuery, subject_padded, subject_len: int, matrix) -> Alignment:
    """s_RedoOneAlignment: BLAST_GappedAlignmentWithTraceback from the preliminary start point."""
    t_score, q0, q1, s0, s1, ops, nums = gapped_alignment_with_traceback(
        kq.padded, len(kq.data), subject_padded, subject_len, int(h["q_gapped_start"]),
        int(h["s_gapped_start"]), matrix, kq.gap_open, kq.gap_extend, kq.x_dropoff)
    return Alignment(int(t_score), int(q0), int(q1), int(s0), int(s1), ops, nums)


# --------------------------------------------------------------------------------------------
# Back in Blast_RedoAlignmentCore: order, E-values, scores
# --------------------------------------------------------------------------------------------

@dataclass
class RedoneSubject:
    """One subject after the redo: its HSPs best first, E-values, normalised scores."""

    aligns: list               # Alignment, scaled scores, score order
    evalues: np.ndarray
    scores: np.ndarray         # normalised (score / 32, rounded)
    bit_scores: np.ndarray
    best_evalue: float
    best_scaled_score: int


def _score_order(aligns: list) -> list:
    """Blast_HSPListSortByScore (ScoreCompareHSPs): score down, subject start up, subject end
    down, query start up, query end down."""
    return sorted(aligns, key=lambda a: (-a.score, a.s0, -a.s1, a.q0, -a.q1))


def _reap_contained(aligns: list) -> list:
    """s_HitlistReapContained: an HSP with both ends inside an earlier, as good one goes."""
    alive = [True] * len(aligns)
    for i in range(1, len(aligns)):
        b = aligns[i]
        for j in range(i):
            if not alive[i]:
                break
            if not alive[j]:
                continue
            a = aligns[j]
            if (a.q0 <= b.q0 <= a.q1 and a.s0 <= b.s0 <= a.s1 and a.q0 <= b.q1 <= a.q1
                    and a.s0 <= b.s1 <= a.s1 and b.score <= a.score):
                alive[i] = False
    return [a for a, keep in zip(aligns, alive) if keep]


def finish_subject(aligns: list, kq: KappaQuery, setup, subject_len: int, expect_value: float):
    """s_HSPListFromDistinctAlignments, s_HitlistReapContained, s_HitlistEvaluateAndPurge and
    s_HSPListNormalizeScores: the subject's final HSPs, or None if none has E <= -evalue."""
    if not aligns:
        return None
    aligns = _score_order(aligns)
    if len(aligns) > 1:
        aligns = _reap_contained(aligns)
    g = setup.gapped
    ev = np.array([stats.spouge_evalue(a.score, kq.kbp, g.gbp, len(kq.codes), subject_len, setup.db_length)
                   for a in aligns], dtype=np.float64)
    best = float(ev.min())
    keep = [k for k in range(len(aligns)) if not ev[k] > expect_value]
    if not keep:
        return None
    aligns = [aligns[k] for k in keep]
    ev = ev[keep]
    scores = np.array([nint(a.score / SCALING_FACTOR) for a in aligns], dtype=np.int64)
    bits = (scores * kq.kbp.Lambda * SCALING_FACTOR - kq.kbp.logK) / stats.LN2
    return RedoneSubject(aligns, ev, scores, bits, best, aligns[0].score)


def alignment_numbers(a: Alignment, query: np.ndarray, subject: np.ndarray, matrix) -> tuple:
    """Identities (s_ComputeNumIdentities), positives (the formatter's, with the run's own
    matrix), length, gaps and gap opens of an alignment on the unmasked sequences."""
    return alignment_stats(pad(query), pad(subject), matrix, a.q0, a.s0, a.ops, a.nums)


# --------------------------------------------------------------------------------------------
# Which subjects are kept (BlastCompo_Heap)
# --------------------------------------------------------------------------------------------

class CompoHeap:
    """BlastCompo_Heap of one query: the redone subjects kept, ``hitlist_size`` of them,
    or more while every one kept has E <= INCLUSION_ETHRESH.  Mirrors
    BlastCompo_HeapWouldInsert, BlastCompo_HeapInsert and BlastCompo_HeapFilledToCutoff."""

    def __init__(self, hitlist_size: int):
        self.hitlist_size = hitlist_size
        # a min-heap of (order, arrival, item), order s_CompoHeapRecordCompare's reversed: the
        # worst record first (E-value largest, then score smallest, then database position lowest)
        self.kept: list = []
        self.worst = 0.0            # the largest E-value kept

    def filled_to_cutoff(self) -> bool:
        return len(self.kept) >= self.hitlist_size and self.worst <= INCLUSION_ETHRESH

    def offer(self, record: tuple, item) -> None:
        """record: (best E-value, best scaled score, database position) of a redone subject."""
        e = record[0]
        entry = ((-e, record[1], record[2]), len(self.kept), item)
        if len(self.kept) < self.hitlist_size or (e <= INCLUSION_ETHRESH and self.worst <= INCLUSION_ETHRESH):
            heapq.heappush(self.kept, entry)
            self.worst = max(self.worst, e)
            return
        # a full heap takes the record only in place of a worse one (records differ in their
        # database position: no two are equal)
        if self.kept[0][0] < entry[0]:
            heapq.heapreplace(self.kept, entry)
            self.worst = -self.kept[0][0][0]

    def items(self) -> list:
        return [item for _, _, item in self.kept]


def early_termination(prelim_evalue: float, heaps: list[CompoHeap]) -> bool:
    """BlastCompo_EarlyTermination: a subject is not redone once the heap of *every* query
    of the batch is filled to its cutoff and its preliminary E-value is above 5 x 0.002."""
    return prelim_evalue > EVALUE_STRETCH * INCLUSION_ETHRESH and all(h.filled_to_cutoff() for h in heaps)


def thread_ranges(n: int, threads: int) -> list[range]:
    """OpenMP's ``schedule(static)`` as libgomp deals it: n iterations in one contiguous
    range per thread, the first n % threads ranges one longer."""
    q, t = divmod(n, threads)
    return [range(q * i + min(i, t), q * (i + 1) + min(i + 1, t)) for i in range(threads)]


def redo_selection(matches: list, n_queries: int, hitlist_size: int, threads: int) -> list[list[list]]:
    """Which redone subjects Blast_RedoAlignmentCore_MT keeps, for one batch of queries.

    ``matches``: (query index in the batch, preliminary best E-value, record, item) in the
    order BLAST reads them from its HSP stream (the batch's queries one after the other,
    each its preliminary hit list best first); record is (best E-value, best scaled score,
    database position) of a subject with an HSP left after the reap, or None for one left
    without.  BLAST+ deals the matches to ``threads`` OpenMP threads in contiguous ranges;
    each thread has its own heap per query, and stops redoing (``early_termination``) by
    its own heaps of every query of the batch.  So the rows BLAST+ prints depend on its
    -num_threads and on which queries share a batch.

    Returns, per thread, per query, the items its heap kept.
    """
    kept = []
    for span in thread_ranges(len(matches), threads):
        heaps = [CompoHeap(hitlist_size) for _ in range(n_queries)]
        for k in span:
            q, prelim_evalue, record, item = matches[k]
            if early_termination(prelim_evalue, heaps):
                continue
            if record is not None:
                heaps[q].offer(record, item)
        kept.append([h.items() for h in heaps])
    return kept
