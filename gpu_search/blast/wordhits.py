"""Hit detection: word hits of many subjects against one query, packed and binned by diagonal.

The cuBLASTP decomposition of BLAST's scan (Zhang et al., cuBLASTP): instead of handing each
hit to the two-hit filter as the scan finds it (``s_BlastAaScanSubject`` in
blast_aascan.c feeding ``s_BlastAaWordFinder_TwoHit`` in aa_ungapped.c), all
hits of a batch of subjects are materialized as 64-bit keys, then sorted so
that the hits of one diagonal are contiguous and in subject order.  The two-hit
filter then runs one diagonal at a time (one GPU thread per bin later).

Key layout (most to least significant bits)::

    | subject (batch index) | diagonal bin | subject offset |
      64 - d_bits - s_bits    d_bits          s_bits

* subject: the index of the subject in the ``subject_ids`` array of the call
  (not the database id), so batches stay small;
* diagonal bin: BLAST's diagonal-array cell ``(q_off - s_off) & diag_mask``, with
  ``diag_array_length`` the smallest power of two >= query_length + window
  (``s_BlastDiagTableNew``).  Binning by BLAST's cell rather than by the true
  diagonal reproduces its state sharing; for one query the aliased diagonals
  never interact (see ungapped.py), but the cell is also the narrower field;
* subject offset: the word's start in the subject.

Given (diagonal bin, subject offset) the query offset is
``(bin + s_off) & diag_mask`` (``q_off < query_length <= diag_array_length``),
so a key is one hit.  Keys are unique, so sorting them is the same whatever
the algorithm: find_hits counting-sorts each subject's hits by bin as it scans
(in cache), bin_hits is an LSD radix sort of raw keys (the GPU's way), the
tests use ``np.sort``.

The scan mirrors ``s_BlastAaScanSubject``: subject offsets 0 .. length - W in
increasing order; at each, the offsets of the word's cell in table order.
Subjects shorter than W are skipped (BLAST scans offset 0 of them reading
the sentinel byte, which yields at most one hit per diagonal: never an
extension).

Contents:
    1. HitLayout, hit_layout(), pack/unpack helpers
    2. scan_hits()   raw hits in BLAST's scan order
    3. bin_hits()    radix sort of the keys: binned by diagonal, subject order within
    4. find_hits()   the scan and the binning in one pass per subject
"""

from __future__ import annotations

from dataclasses import dataclass

from .._numba import numba
import numpy as np

from .lookup import Lookup


# --------------------------------------------------------------------------------------------
# 1. Layout
# --------------------------------------------------------------------------------------------

def diag_array_length(query_length: int, window: int = 40) -> int:
    """``s_BlastDiagTableNew``: the smallest power of 2 >= query_length + window."""
    n = 1
    while n < query_length + window:
        n <<= 1
    return n


@dataclass(frozen=True)
class HitLayout:
    """Bit fields of the 64-bit hit keys of one ``find_hits`` call."""

    s_bits: int
    d_bits: int
    n_subjects: int

    @property
    def diag_mask(self) -> int:
        return (1 << self.d_bits) - 1

    @property
    def id_shift(self) -> int:
        return self.s_bits + self.d_bits

    @classmethod
    def make(cls, max_subject_length: int, query_length: int, n_subjects: int,
             window: int = 40) -> "HitLayout":
        s_bits = max(1, int(max(max_subject_length, 1)).bit_length())
        d_bits = diag_array_length(query_length, window).bit_length() - 1
        id_bits = 64 - s_bits - d_bits
        if n_subjects > 0 and (n_subjects - 1).bit_length() > id_bits:
            raise ValueError(f"{n_subjects} subjects do not fit in {id_bits} key bits: "
                             "use smaller batches")
        return cls(s_bits=s_bits, d_bits=d_bits, n_subjects=n_subjects)


def pack_hits(subject, diag, s_off, layout: HitLayout) -> np.ndarray:
    """Keys from (subject batch index, diagonal bin, subject offset) arrays."""
    return ((np.asarray(subject, np.uint64) << np.uint64(layout.id_shift))
            | (np.asarray(diag, np.uint64) << np.uint64(layout.s_bits))
            | np.asarray(s_off, np.uint64))


def unpack_hits(keys, layout: HitLayout):
    """(subject batch index, diagonal bin, subject offset, query offset) int64 arrays of keys."""
    keys = np.asarray(keys, dtype=np.uint64)
    s_off = (keys & np.uint64((1 << layout.s_bits) - 1)).astype(np.int64)
    diag = ((keys >> np.uint64(layout.s_bits)) & np.uint64(layout.diag_mask)).astype(np.int64)
    subject = (keys >> np.uint64(layout.id_shift)).astype(np.int64)
    q_off = (diag + s_off) & layout.diag_mask
    return subject, diag, s_off, q_off


# --------------------------------------------------------------------------------------------
# 2. The scan
# --------------------------------------------------------------------------------------------

def hit_layout(lookup: Lookup, offsets, subject_ids, window: int = 40) -> HitLayout:
    """The key layout that scan_hits/find_hits use for these subjects."""
    offsets = np.asarray(offsets, dtype=np.int64)
    subject_ids = np.asarray(subject_ids, dtype=np.int64)
    max_len = int((offsets[subject_ids + 1] - offsets[subject_ids]).max()) if len(subject_ids) else 1
    return HitLayout.make(max_len, lookup.query_length, len(subject_ids), window)


def scan_hits(lookup: Lookup, residues, offsets, subject_ids, window: int = 40) -> np.ndarray:
    """All word hits of the subjects, in BLAST's scan order (subject, subject offset, cell order).

    Args:
        lookup: the query's table (lookup.build_lookup).
        residues: uint8 NCBIstdaa residues of the database, packed.
        offsets: int64 (n+1,): sequence i is residues[offsets[i]:offsets[i+1]].
        subject_ids: int64 database indices of the subjects to scan, in order.
        window: two-hit window (sets the diagonal array length, as in BLAST).

    Returns:
        uint64 keys (layout: ``hit_layout(lookup, offsets, subject_ids, window)``).
    """
    residues = np.ascontiguousarray(residues, dtype=np.uint8)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    subject_ids = np.ascontiguousarray(subject_ids, dtype=np.int64)
    layout = hit_layout(lookup, offsets, subject_ids, window)
    return _scan(lookup.cell_start, lookup.offsets, lookup.word_size, residues, offsets,
                 subject_ids, layout.s_bits, layout.d_bits)


@numba.njit(cache=True, nogil=True)
def _hit_counts(cell_start, word_size, residues, offsets, subject_ids):
    """The count pass of a scan: where each subject's hits start in the output (prefix sums)."""
    n_sub = len(subject_ids)
    word_mask = (np.int64(1) << (5 * word_size)) - 1
    counts = np.zeros(n_sub + 1, dtype=np.int64)
    for j in range(n_sub):
        start = offsets[subject_ids[j]]
        length = offsets[subject_ids[j] + 1] - start
        if length < word_size:
            continue
        idx = np.int64(0)
        for k in range(word_size - 1):
            idx = (idx << 5) | residues[start + k]
        c = np.int64(0)
        for s in range(length - word_size + 1):
            idx = ((idx << 5) | residues[start + s + word_size - 1]) & word_mask
            c += cell_start[idx + 1] - cell_start[idx]
        counts[j + 1] = c
    for j in range(n_sub):
        counts[j + 1] += counts[j]
    return counts


@numba.njit(cache=True, nogil=True)
def _scan(cell_start, cell_offsets, word_size, residues, offsets, subject_ids, s_bits, d_bits):
    """``s_BlastAaScanSubject`` over many subjects, writing packed keys (count pass, then fill)."""
    n_sub = len(subject_ids)
    mask = (np.int64(1) << d_bits) - 1
    word_mask = (np.int64(1) << (5 * word_size)) - 1
    counts = _hit_counts(cell_start, word_size, residues, offsets, subject_ids)
    keys = np.empty(counts[n_sub], dtype=np.uint64)
    id_shift = s_bits + d_bits
    for j in range(n_sub):
        start = offsets[subject_ids[j]]
        length = offsets[subject_ids[j] + 1] - start
        if length < word_size:
            continue
        out = counts[j]
        base = np.int64(j) << id_shift
        idx = np.int64(0)
        for k in range(word_size - 1):
            idx = (idx << 5) | residues[start + k]
        for s in range(length - word_size + 1):
            idx = ((idx << 5) | residues[start + s + word_size - 1]) & word_mask
            for e in range(cell_start[idx], cell_start[idx + 1]):
                q = np.int64(cell_offsets[e])
                keys[out] = np.uint64(base | (((q - s) & mask) << s_bits) | s)
                out += 1
    return keys


# --------------------------------------------------------------------------------------------
# 3. Binning
# --------------------------------------------------------------------------------------------

def bin_hits(keys, layout: HitLayout) -> np.ndarray:
    """Sort keys by (subject, diagonal bin, subject offset).

    The scan emits each subject's hits in increasing subject offset, so a stable
    LSD radix sort on the (subject, diagonal) bits only finishes the job -- the
    cuBLASTP binning step (a GPU radix sort later).
    """
    keys = np.ascontiguousarray(keys, dtype=np.uint64)
    hi = layout.id_shift + max(1, max(layout.n_subjects - 1, 0).bit_length())
    return _radix_sort(keys, layout.s_bits, min(hi, 64))


@numba.njit(cache=True, nogil=True)
def _radix_sort(keys, lo_bit, hi_bit):
    """Stable LSD radix sort of keys on bits [lo_bit, hi_bit), 11 bits a pass."""
    n = len(keys)
    src = keys.copy()
    if n < 2 or hi_bit <= lo_bit:
        return src
    dst = np.empty_like(src)
    digit_bits = 11
    nb = 1 << digit_bits
    shift = lo_bit
    while shift < hi_bit:
        width = min(digit_bits, hi_bit - shift)
        dmask = np.uint64((1 << width) - 1)
        sh = np.uint64(shift)
        count = np.zeros(nb + 1, dtype=np.int64)
        for i in range(n):
            count[np.int64((src[i] >> sh) & dmask) + 1] += 1
        for b in range(nb):
            count[b + 1] += count[b]
        for i in range(n):
            d = np.int64((src[i] >> sh) & dmask)
            dst[count[d]] = src[i]
            count[d] += 1
        src, dst = dst, src
        shift += width
    return src


def find_hits(lookup: Lookup, residues, offsets, subject_ids, window: int = 40) -> np.ndarray:
    """Word hits of the subjects, packed in 64-bit keys, binned by diagonal and sorted.

    The scan and the binning in one pass per subject: the subject's hits are
    counted per diagonal bin, then written bin by bin (a counting sort that
    stays in cache; ``bin_hits(scan_hits(...))`` is the same array).

    Args: as scan_hits.

    Returns:
        uint64 keys sorted by (subject, diagonal bin, subject offset);
        ``unpack_hits(keys, hit_layout(lookup, offsets, subject_ids, window))``
        gives the fields.
    """
    residues = np.ascontiguousarray(residues, dtype=np.uint8)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    subject_ids = np.ascontiguousarray(subject_ids, dtype=np.int64)
    layout = hit_layout(lookup, offsets, subject_ids, window)
    return _scan_binned(lookup.cell_start, lookup.offsets, lookup.word_size, lookup.query_length,
                        residues, offsets, subject_ids, layout.s_bits, layout.d_bits)


@numba.njit(cache=True, nogil=True)
def _scan_binned(cell_start, cell_offsets, word_size, query_length, residues, offsets,
                 subject_ids, s_bits, d_bits):
    """``s_BlastAaScanSubject`` per subject, hits counting-sorted by diagonal bin on the way out."""
    n_sub = len(subject_ids)
    n_bins = np.int64(1) << d_bits
    mask = n_bins - 1
    word_mask = (np.int64(1) << (5 * word_size)) - 1
    counts = _hit_counts(cell_start, word_size, residues, offsets, subject_ids)
    keys = np.empty(counts[n_sub], dtype=np.uint64)
    longest = np.int64(0)
    for j in range(n_sub):
        longest = max(longest, counts[j + 1] - counts[j])
    tmp = np.empty(longest, dtype=np.int64)      # one subject's hits: (bin << s_bits) | s
    cnt = np.zeros(n_bins, dtype=np.int64)
    id_shift = s_bits + d_bits
    for j in range(n_sub):
        if counts[j + 1] == counts[j]:
            continue
        start = offsets[subject_ids[j]]
        length = offsets[subject_ids[j] + 1] - start
        base = np.int64(j) << id_shift
        # bins this subject can touch: diagonals -(length-1) .. query_length-1
        if query_length + length - 1 <= n_bins:
            r1_end = query_length
            r2_start = n_bins - length + 1
        else:
            r1_end = n_bins
            r2_start = n_bins
        # the scan, counting hits per bin
        n = 0
        idx = np.int64(0)
        for k in range(word_size - 1):
            idx = (idx << 5) | residues[start + k]
        for s in range(length - word_size + 1):
            idx = ((idx << 5) | residues[start + s + word_size - 1]) & word_mask
            for e in range(cell_start[idx], cell_start[idx + 1]):
                d = (np.int64(cell_offsets[e]) - s) & mask
                cnt[d] += 1
                tmp[n] = (d << s_bits) | s
                n += 1
        # bin starts, bins in increasing order
        acc = counts[j]
        for b in range(r1_end):
            t = cnt[b]
            cnt[b] = acc
            acc += t
        for b in range(r2_start, n_bins):
            t = cnt[b]
            cnt[b] = acc
            acc += t
        # scatter in scan order (so subject offsets increase within a bin)
        for i in range(n):
            d = tmp[i] >> s_bits
            keys[cnt[d]] = np.uint64(base | tmp[i])
            cnt[d] += 1
        for b in range(r1_end):
            cnt[b] = 0
        for b in range(r2_start, n_bins):
            cnt[b] = 0
    return keys
