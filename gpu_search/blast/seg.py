"""SEG low-complexity masking of a protein, as BLAST+ 2.12 does it (blast_seg.c).

Where BLAST+ uses it.  blastp with composition-based statistics (-comp_based_stats
1, 2 or 3) masks each database sequence with SEG before it realigns it with the
composition-adjusted matrix: ``s_DoSegSequenceData`` (blast_kappa.c) parses
``BLASTP_MASK_INSTRUCTIONS``, "S 10 1.8 2.1" (window 10, locut 1.8, hicut 2.1),
runs ``BlastSetUp_Filter`` (blast_filter.c; it asks ``SeqBufferSeg`` to merge
overlapping segments) and sets every residue of the segments to X
(``Blast_MaskTheResidues``, kProtMask = 21).  These are not SEG's own defaults:
``SegParametersNewAa`` and segmasker use window 12, locut 2.2, hicut 2.5.

The algorithm (Wootton and Federhen, Comput. Chem. 17, 149 (1993); ``SeqBufferSeg``):

1. Entropy of every window of ``window`` residues, in bits, over the 20 standard
   amino acids only (``s_SeqEntropy``).  Every other letter (X, B, Z, U, O, J, *,
   the gap) is "bogus": it does not count in the window's composition, and a window
   with more than 2 of them gets no entropy at all.
2. A window at most ``locut`` triggers a segment (``s_SegSeq``): it grows left and
   right over windows at most ``hicut``, then is trimmed to its least probable
   sub-window (``s_Trim``: lengths down to 50 below the segment's, probability from
   the number of compositions and arrangements, ``s_GetProb``).  A trim that cuts off
   a triggering window on the left gets that left part searched again, on its own;
   of the segments found there BLAST keeps only the last one (see ``_segments_of``).
3. Segments that overlap are merged (``s_MergeSegs``).

Exactness.  The probabilities add and subtract natural logs of factorials taken from
blast_seg.c's table, whose 10,001 entries (0! to 10000!) have 6 decimals; ``_LNFACT``
rebuilds it digit for digit (each entry rounded to 6 decimals from ``math.lgamma``:
all 10,001 equal the table's doubles in BLAST+ 2.12's libblast).  The sums run in the
same order as BLAST's: over the window's letter counts from the largest down.
BLAST reads past its table for a segment longer than 10,000 residues; there the
table goes on with the same rounding, and the result may differ from BLAST's.
"""

from __future__ import annotations

import functools
import math

from .._numba import numba
import numpy as np

from .alphabet import NCBISTDAA, X

# blastp's composition-based realignment (BLASTP_MASK_INSTRUCTIONS in blast_kappa.c).
KAPPA_WINDOW = 10
KAPPA_LOCUT = 1.8
KAPPA_HICUT = 2.1

# SEG's own defaults (SegParametersNewAa in blast_seg.c), also segmasker's.
SEG_WINDOW = 12
SEG_LOCUT = 2.2
SEG_HICUT = 2.5

MAXBOGUS = 2     # non-standard letters a window may hold and still get an entropy
MAXTRIM = 50     # s_Trim tries sub-windows down to this many residues shorter

_ALPHASIZE = 20
_BOGUS = _ALPHASIZE
_LN2 = 0.69314718055994530941723212145818     # NCBIMATH_LN2
_LN20 = 2.9957322735539909                    # kLn20 of s_AA20alphaStd

# NCBIstdaa code -> SEG's letter index 0..19 (A C D E F G H I K L M N P Q R S T V W Y),
# _BOGUS for every other code: SEG counts only codes 1, 3..20 and 22 (s_AA20alphaStd).
_SEG_INDEX = np.full(256, _BOGUS, dtype=np.int8)
for _i, _letter in enumerate("ACDEFGHIKLMNPQRSTVWY"):
    _SEG_INDEX[NCBISTDAA.index(_letter)] = _i


def _lnfact_table(n: int) -> np.ndarray:
    """ln(k!) for k = 0..n-1 rounded to 6 decimals, as blast_seg.c's ``lnfact`` holds them."""
    return np.array([float("%.6f" % math.lgamma(k + 1)) for k in range(n)], dtype=np.float64)


_LNFACT = _lnfact_table(10001)


def seg_intervals(codes, window: int = KAPPA_WINDOW, locut: float = KAPPA_LOCUT,
                  hicut: float = KAPPA_HICUT, merge: bool = True) -> list:
    """SEG's segments of a protein in NCBIstdaa codes: 0-based inclusive (begin, end) pairs.

    In the order found, as segmasker prints them.  ``merge`` as ``SeqBufferSeg``'s
    ``overlaps``: True for blastp (``BlastSetUp_Filter``: blast_kappa.c's masking of
    database sequences, and -seg on queries), False for segmasker, which prints the
    segments unmerged.  Not empty exactly where blast_kappa.c's ``is_seq_biased`` is
    true.  Parameters out of range are corrected as ``s_SegParametersCheck`` does.
    """
    seq = _SEG_INDEX[np.asarray(codes, dtype=np.uint8)]
    if window <= 0:
        window = SEG_WINDOW
    locut = max(float(locut), 0.0)
    hicut = max(float(hicut), 0.0, locut)
    lnfact = _LNFACT if len(seq) < len(_LNFACT) else _lnfact_table(len(seq) + 1)
    segs = []
    _segments_of(seq, 0, len(seq), int(window), locut, hicut, lnfact, _entropy_terms(window), segs)
    return _merge_overlaps(segs) if merge else segs


def _segments_of(seq, start, length, window, locut, hicut, lnfact, bits, segs):
    """``s_SegSeq`` on seq[start:start + length]: its segments appended to ``segs`` in the
    order found, 0-based inclusive, with positions in the whole sequence."""
    if window > length:
        return
    downset = (window + 1) // 2 - 1
    upset = window - downset
    H = _window_entropies(seq, start, length, window, min(MAXBOGUS, window), bits)
    i = lowlim = downset
    while True:
        i, lo, hi, leftend, rightend = _next_segment(seq, start, length, H, i, lowlim, window,
                                                     locut, hicut, MAXTRIM, lnfact)
        if i < 0:
            return
        if i + upset - 1 < leftend:
            # The trim cut off the triggering window: search that left part by itself.
            # BLAST links the part's list of segments (newest first) into its own by the
            # head only (leftsegs->next = *segs), so only the last one found there is kept.
            part = lo - downset
            left = []
            _segments_of(seq, start + part, leftend - part, window, locut, hicut, lnfact, bits, left)
            if left:
                segs.append(left[-1])
        segs.append((start + leftend, start + rightend))
        # Scan on from the first window starting after the trimmed segment, or from the
        # one after the segment's last window at most hicut if that comes first.
        i = lowlim = min(hi, rightend + downset) + 1


@functools.lru_cache(maxsize=None)
def _entropy_terms(window: int) -> np.ndarray:
    """bits[c, total]: one letter's term of ``s_Entropy``, c * log2(c / total), as BLAST computes it."""
    bits = np.zeros((window + 1, window + 1))
    for total in range(1, window + 1):
        for c in range(1, total + 1):
            bits[c, total] = c * math.log(c / total) / _LN2
    return bits


def _merge_overlaps(segs: list) -> list:
    """``s_MergeSegs``: segments that overlap become one, from the first begin to the last end.

    BLAST's list holds the segments newest first, and each one is compared with the one
    after it (found before it): they are joined when it begins at or before that one's
    end.  The joining of segments closer than ``hilenmin`` residues never happens, as
    BLAST sets hilenmin to 0.  Returned oldest first again, as segmasker prints them.
    """
    newest_first = [[b, e] for b, e in reversed(segs)]
    k = 0
    while k + 1 < len(newest_first):
        seg, older = newest_first[k], newest_first[k + 1]
        if seg[0] <= older[1]:
            seg[0] = min(seg[0], older[0])
            seg[1] = max(seg[1], older[1])
            del newest_first[k + 1]
        else:
            k += 1
    return [(b, e) for b, e in reversed(newest_first)]


def seg_mask(codes, window: int = KAPPA_WINDOW, locut: float = KAPPA_LOCUT,
             hicut: float = KAPPA_HICUT) -> np.ndarray:
    """A copy of the protein (NCBIstdaa codes, uint8) with SEG's segments set to X (21).

    The defaults are blastp's for composition-based realignment (window 10, locut 1.8,
    hicut 2.1), with segments merged as ``BlastSetUp_Filter`` asks; segmasker's
    defaults are ``SEG_WINDOW``, ``SEG_LOCUT``, ``SEG_HICUT``.
    """
    out = np.array(codes, dtype=np.uint8, copy=True)
    for begin, end in seg_intervals(out, window, locut, hicut, merge=True):
        out[begin:end + 1] = X
    return out


# ---- the compiled core -------------------------------------------------------------------
# A window's letter counts are kept twice, as in blast_seg.c: ``comp`` by letter, and
# ``state``, the non-zero counts sorted from the largest down (then zeros), on which the
# entropy and the probability are summed in BLAST's order.

@numba.njit(cache=True, nogil=True)
def _open_window(seq, start, length, comp, state):
    """Counts of seq[start:start + length] into comp and state; returns the bogus count."""
    comp[:] = 0
    bogus = 0
    for k in range(start, start + length):
        a = seq[k]
        if a == _BOGUS:
            bogus += 1
        else:
            comp[a] += 1
    state[:] = 0
    n = 0
    for a in range(_ALPHASIZE):
        c = comp[a]
        if c > 0:
            k = n                     # insertion, largest first
            while k > 0 and state[k - 1] < c:
                state[k] = state[k - 1]
                k -= 1
            state[k] = c
            n += 1
    return bogus


@numba.njit(cache=True, nogil=True)
def _state_lose(state, count):
    """One letter whose count was ``count`` left the window: the last entry equal to it drops."""
    k = 0
    while state[k] != 0:
        if state[k] == count and state[k + 1] < count:
            state[k] = count - 1
            return
        k += 1


@numba.njit(cache=True, nogil=True)
def _state_gain(state, count):
    """One letter whose count was ``count`` (maybe 0) came in: the first entry equal to it grows."""
    k = 0
    while state[k] != count:
        k += 1
    state[k] = count + 1


@numba.njit(cache=True, nogil=True)
def _slide(seq, start, length, comp, state):
    """Move the window seq[start:start + length] one residue right; returns the bogus change."""
    change = 0
    a = seq[start]
    if a == _BOGUS:
        change -= 1
    else:
        _state_lose(state, comp[a])
        comp[a] -= 1
    a = seq[start + length]
    if a == _BOGUS:
        change += 1
    else:
        _state_gain(state, comp[a])
        comp[a] += 1
    return change


@numba.njit(cache=True, nogil=True)
def _entropy(state, bits):
    """``s_Entropy``: Shannon entropy of the counts, in bits; bits[c, total] is one count's term."""
    total = 0
    k = 0
    while state[k] != 0:
        total += state[k]
        k += 1
    if total == 0:
        return 0.0
    ent = 0.0
    k = 0
    while state[k] != 0:
        ent += bits[state[k], total]
        k += 1
    return abs(ent / total)


@numba.njit(cache=True, nogil=True)
def _log_probability(state, length, lnfact):
    """``s_GetProb``: ln of the probability of the window's composition state.

    ln(compositions in this state, ``s_LnAss``) + ln(arrangements, ``s_LnPerm``)
    - length * ln 20.  Zero counts at the end of ``state`` are the absent letters.
    """
    # s_LnAss: 20! over the product of (number of letters sharing a count)!.
    ass = lnfact[_ALPHASIZE]
    if state[0] != 0:
        left = _ALPHASIZE
        run = 1
        i = 0
        while True:
            i += 1
            if i == _ALPHASIZE:
                ass -= lnfact[run]
                break
            if state[i] == state[i - 1]:
                run += 1
                continue
            left -= run
            ass -= lnfact[run]
            if state[i] == 0:
                ass -= lnfact[left]
                break
            run = 1
    # s_LnPerm: length! over the product of the counts' factorials.
    perm = lnfact[length]
    k = 0
    while state[k] != 0:
        perm -= lnfact[state[k]]
        k += 1
    return ass + perm - length * _LN20


@numba.njit(cache=True, nogil=True)
def _trim(seq, start, length, maxtrim, lnfact):
    """``s_Trim``: the least probable sub-window of seq[start:start + length].

    Lengths from the whole down to ``length - maxtrim + 1`` (at least 2), each at every
    offset from the left; the first one of lowest probability wins.  Returns its first
    and last offsets, 0-based inclusive, relative to ``start``.
    """
    comp = np.zeros(_ALPHASIZE, dtype=np.int64)
    state = np.zeros(_ALPHASIZE + 1, dtype=np.int64)
    lend = 0
    rend = length - 1
    minlen = 1
    if length - maxtrim > minlen:
        minlen = length - maxtrim
    minprob = 1.0
    for sub in range(length, minlen, -1):
        _open_window(seq, start, sub, comp, state)
        i = 0
        while True:
            prob = _log_probability(state, sub, lnfact)
            if prob < minprob:
                minprob = prob
                lend = i
                rend = sub + i - 1
            if i + sub >= length:
                break
            _slide(seq, start + i, sub, comp, state)
            i += 1
    return lend, rend


@numba.njit(cache=True, nogil=True)
def _window_entropies(seq, start, length, window, maxbogus, bits):
    """``s_SeqEntropy``: entropy of the window centred on each position of seq[start:start + length].

    H[i] belongs to the window starting at i - downset; -1 where no window fits or it
    holds more than ``maxbogus`` non-standard letters.
    """
    comp = np.zeros(_ALPHASIZE, dtype=np.int64)
    state = np.zeros(_ALPHASIZE + 1, dtype=np.int64)
    H = np.full(length, -1.0)
    downset = (window + 1) // 2 - 1
    upset = window - downset
    bogus = _open_window(seq, start, window, comp, state)
    for i in range(downset, length - upset + 1):
        if bogus <= maxbogus:
            H[i] = _entropy(state, bits)
        if i + upset < length:
            bogus += _slide(seq, start + i - downset, window, comp, state)
    return H


@numba.njit(cache=True, nogil=True)
def _next_segment(seq, start, length, H, i, lowlim, window, locut, hicut, maxtrim, lnfact):
    """The next segment of ``s_SegSeq``'s scan of seq[start:start + length] from H[i] on.

    The first window at most ``locut`` triggers it; it grows over the windows at most
    ``hicut`` (``s_FindLow`` down to ``lowlim``, ``s_FindHigh``), from the first residue of
    the first window to the last of the last, and is trimmed (``s_Trim``).  Returns the
    trigger's index, the first and last windows' (lo, hi) and the trimmed segment's
    first and last residues, relative to ``start``; (-1, ...) when no window triggers.
    """
    downset = (window + 1) // 2 - 1
    last = length - (window - downset)
    while i <= last:
        if H[i] <= locut and H[i] != -1.0:
            lo = i
            while lo >= lowlim and H[lo] != -1.0 and H[lo] <= hicut:
                lo -= 1
            lo += 1
            hi = i
            while hi <= last and H[hi] != -1.0 and H[hi] <= hicut:
                hi += 1
            hi -= 1
            leftend = lo - downset
            lend, rend = _trim(seq, start + leftend, hi - lo + window, maxtrim, lnfact)
            return i, lo, hi, leftend + lend, leftend + rend
        i += 1
    return -1, 0, 0, 0, 0
