"""Query lookup table of neighborhood words, as BLAST+ 2.12 blastp builds it.

Mirrors ``BlastAaLookupTableNew`` / ``BlastAaLookupIndexQuery`` /
``s_AddNeighboringWords`` / ``s_AddWordHits`` / ``s_AddWordHitsCore`` /
``BlastAaLookupFinalize`` (src/algo/blast/core/blast_aalookup.c) and
``BlastLookupIndexQueryExactMatches`` (blast_lookup.c), for the plain
``eAaLookupTable`` that blastp uses with word sizes 2-4 (BLAST switches to a
compressed-alphabet table, ``eCompressedAaLookupTable``, for word size >= 5,
which is not implemented here).

What BLAST puts in the table, and in which order (the order matters: the scan
emits the offsets of a cell in this order, and the two-hit stage visits hits
in scan order):

1. Every query offset whose W letters lie inside an unmasked query range is a
   query word.  Words are indexed by ``(l0 << 10) | (l1 << 5) | l2`` (5 bits a
   letter, ``charsize = ilog2(28) + 1``).  NCBIstdaa codes are all < 32, so no
   letter is "invalid" (``invalid_mask = 0xff << charsize``): words containing
   X, ``*``, U ... are indexed like any other.  With ``-seg no`` (the blastp
   default) the whole query is one range.
2. ``BlastLookupIndexQueryExactMatches`` groups identical query words (the
   offsets of one word in increasing order).  ``s_AddNeighboringWords`` walks
   these groups in increasing word index and, for each group:

   * if the word's self score ``sum matrix[w_i][w_i]`` is below T (or T == 0),
     adds all its offsets to the word's own cell ("exact matches are added
     regardless of T");
   * adds all its offsets to the cell of every word ``x`` (all 28**W words of
     the 28-letter alphabet, gap/sentinel code 0 included) with
     ``sum matrix[w_i][x_i] >= T``.  ``s_AddWordHitsCore``'s recursion prunes
     with row maxima, which changes the visiting order only, not the set.

   A word whose self score is >= T reaches its own cell through the neighbor
   rule, so each query word appears at most once in a cell, and the offsets of
   a cell end up ordered by (query word index, query offset).

The query "PSSM" of BLAST's ungapped extension for blastp is just the matrix
row of each query letter: ``pssm[i, a] = matrix[query[i], a]`` (``matrix`` is
indexed ``[query letter][subject letter]``, as ``Int4 **matrix`` is in BLAST).

Contents:
    1. Lookup              the table (CSR: cell -> query offsets), the PSSM
    2. build_lookup()      build it
    3. numba kernels       _tables (_query_word_codes, _group_cells, _neighbors)
"""

from __future__ import annotations

from dataclasses import dataclass

from .._numba import copy_into, numba
import numpy as np

from .stats import c_int

ALPHABET_SIZE = 28          # BLASTAA_SIZE
CHARSIZE = 5                # ilog2(BLASTAA_SIZE) + 1
MAX_WORD_SIZE = 4           # the plain (uncompressed) table; W >= 5 uses another table in BLAST


# --------------------------------------------------------------------------------------------
# 1. The table
# --------------------------------------------------------------------------------------------

@dataclass
class Lookup:
    """BLAST's protein lookup table for one query (``BlastAaLookupTable``, thick backbone).

    Attributes:
        word_size: W (letters per word).
        threshold: T, the neighborhood score threshold.
        query_length: residues in the query.
        cell_start: int32 (n_cells + 1,): the offsets of cell ``c`` (a word index
            ``sum l_i << 5*(W-1-i)``) are ``offsets[cell_start[c]:cell_start[c+1]]``.
        offsets: int32 query offsets (word starts), cell by cell, each cell in
            BLAST's order (query word index, then query offset).
        query_word: int32 (query_length - W + 1,): the word index of the query word
            at each offset, or -1 where no word is indexed (masked).
        query_rank: int32 (query_length - W + 1,): rank of each offset in the order
            (query_word, offset).  Within any cell, offsets appear in increasing
            rank, so (subject offset, query_rank[q]) is BLAST's visiting order of
            hits; the two-hit stage uses it to restore that order after binning.
        pssm: int32 (query_length, 28): ``matrix[query[i], :]``.
        longest_chain: largest cell (``lookup->longest_chain``).
    """

    word_size: int
    threshold: int
    query_length: int
    cell_start: np.ndarray
    offsets: np.ndarray
    query_word: np.ndarray
    query_rank: np.ndarray
    pssm: np.ndarray
    longest_chain: int

    @property
    def n_cells(self) -> int:
        return len(self.cell_start) - 1

    @property
    def n_entries(self) -> int:
        return len(self.offsets)

    def cell(self, word_index: int) -> np.ndarray:
        """The query offsets of one cell, in BLAST's order."""
        return self.offsets[self.cell_start[word_index]:self.cell_start[word_index + 1]]


def word_index(letters, word_size: int | None = None) -> int:
    """BLAST's table index of a word (``ComputeTableIndex``): ``(l0 << 10) | (l1 << 5) | l2`` for W=3."""
    idx = 0
    for x in letters[:word_size] if word_size else letters:
        idx = (idx << CHARSIZE) | int(x)
    return idx


# --------------------------------------------------------------------------------------------
# 2. Building it
# --------------------------------------------------------------------------------------------

def build_lookup(query_codes, matrix_scores, word_size: int = 3, threshold: int = 11,
                 mask=None) -> Lookup:
    """Build BLAST's lookup table and the query PSSM.

    Mirrors ``LookupTableWrapInit`` (case ``eAaLookupTable``) ->
    ``BlastAaLookupIndexQuery`` -> ``s_AddNeighboringWords`` -> ``BlastAaLookupFinalize``.

    Args:
        query_codes: uint8 NCBIstdaa codes of the query (after any masking BLAST
            applies to the sequence itself).
        matrix_scores: int32 (28, 28) score matrix, ``[query letter, subject letter]``,
            exactly BLAST's ``sbp->matrix->data`` (``matrix.load_matrix(name).scores``).
        word_size: W, 2 to 4.
        threshold: T (BLAST's ``lookup->threshold = (Int4)opt->threshold``); 0 means
            exact words only.
        mask: optional bool array (query_length,): True where the query is masked
            (outside BLAST's ``lookup_segments``); words touching a masked residue
            are not indexed.  None = nothing masked (``-seg no``).

    Returns:
        Lookup.

    Raises:
        ValueError: word size outside 2-4, or a bad matrix shape.

    >>> import numpy as np
    >>> m = np.full((28, 28), -1, np.int32); np.fill_diagonal(m, 5)
    >>> lut = build_lookup(np.array([1, 2, 3, 1, 2, 3], np.uint8), m, 3, 11)
    >>> lut.cell(word_index([1, 2, 3])).tolist()
    [0, 3]
    """
    if not 2 <= word_size <= MAX_WORD_SIZE:
        raise ValueError(f"word size {word_size}: only 2-{MAX_WORD_SIZE} are implemented "
                         "(BLAST uses a compressed-alphabet table from 5 on)")
    q = np.ascontiguousarray(query_codes, dtype=np.uint8)
    m = np.ascontiguousarray(matrix_scores, dtype=np.int32)
    if m.shape != (ALPHABET_SIZE, ALPHABET_SIZE):
        raise ValueError(f"matrix must be 28 x 28 (NCBIstdaa), got {m.shape}")
    if len(q) and int(q.max()) >= ALPHABET_SIZE:
        raise ValueError("query codes must be NCBIstdaa (< 28)")
    if mask is None:
        valid = np.ones(len(q), dtype=np.bool_)
    else:
        valid = ~np.asarray(mask, dtype=np.bool_)
        if valid.shape != q.shape:
            raise ValueError("mask must have the query's length")
    n_cells = 1 << (CHARSIZE * word_size)
    threshold = c_int(threshold)        # BLAST's lookup table keeps (Int4) of the option's double
    qword, cell_start, offsets, pssm, rank, longest = _tables(q, valid, m, word_size, threshold, n_cells)
    return Lookup(word_size=word_size, threshold=threshold, query_length=len(q),
                  cell_start=cell_start, offsets=offsets, query_word=qword, query_rank=rank,
                  pssm=pssm, longest_chain=int(longest))


@numba.njit(cache=True, nogil=True)
def _tables(q, valid, m, word_size, threshold, n_cells):
    """The table's arrays in one compiled call: the lookup tables are built on helper threads
    beside the threads feeding the GPUs, and each return to the interpreter between steps
    waits for its lock.  Returns (query_word, cell_start, offsets, pssm, query_rank,
    longest_chain)."""
    qword = _query_word_codes(q, valid, word_size)
    # each word's neighbours found once, then counted and filled in per cell, in that order
    order, starts, cells, cell_at = _group_cells(qword, m, word_size, threshold)
    counts = np.zeros(n_cells, dtype=np.int32)
    for g in range(len(starts) - 1):
        for j in range(cell_at[g], cell_at[g + 1]):
            counts[cells[j]] += np.int32(starts[g + 1] - starts[g])
    cell_start = np.zeros(n_cells + 1, dtype=np.int32)
    longest = 0
    for c in range(n_cells):
        cell_start[c + 1] = cell_start[c] + counts[c]
        longest = max(longest, counts[c])
    cursor = cell_start[:n_cells].copy()
    offsets = np.empty(cell_start[n_cells], dtype=np.int32)
    for g in range(len(starts) - 1):
        for j in range(cell_at[g], cell_at[g + 1]):
            c = cells[j]
            for i in range(starts[g], starts[g + 1]):
                offsets[cursor[c]] = order[i]
                cursor[c] += 1
    pssm = np.empty((len(q), m.shape[1]), dtype=np.int32)
    for i in range(len(q)):
        for a in range(m.shape[1]):
            pssm[i, a] = m[q[i], a]
    # rank of each offset in the order (query word, offset): a stable sort by word
    rank = np.empty(len(qword), dtype=np.int32)
    by_word = np.argsort(qword, kind="mergesort")
    for r in range(len(by_word)):
        rank[by_word[r]] = r
    return qword, cell_start, offsets, pssm, rank, longest


# --------------------------------------------------------------------------------------------
# 3. numba kernels
# --------------------------------------------------------------------------------------------

@numba.njit(cache=True, nogil=True)
def _query_word_codes(query, valid, word_size):
    """Word index at each query offset, -1 where the word touches a masked residue.

    Mirrors ``BlastLookupIndexQueryExactMatches`` over the unmasked ranges
    (``lookup_segments``): a word is indexed only if it lies inside one range.
    """
    n = len(query) - word_size + 1
    if n < 0:
        n = 0
    out = np.full(n, -1, dtype=np.int32)
    for i in range(n):
        code = 0
        ok = True
        for k in range(word_size):
            if not valid[i + k]:
                ok = False
                break
            code = (code << 5) | np.int32(query[i + k])
        if ok:
            out[i] = code
    return out


@numba.njit(cache=True, nogil=True)
def _word_groups(qword):
    """Distinct indexed query words in increasing index, each with its offsets in increasing order.

    The exact-match backbone of ``s_AddNeighboringWords``: returns (order, starts)
    with the offsets of group g = order[starts[g]:starts[g+1]].
    """
    n = len(qword)
    idx = np.argsort(qword, kind="mergesort")   # stable: offsets stay increasing
    first = 0
    while first < n and qword[idx[first]] < 0:
        first += 1
    order = idx[first:]
    m = len(order)
    starts = np.empty(m + 1, dtype=np.int64)
    g = 0
    for i in range(m):
        if i == 0 or qword[order[i]] != qword[order[i - 1]]:
            starts[g] = i
            g += 1
    starts[g] = m
    return order, starts[:g + 1]


@numba.njit(cache=True, nogil=True)
def _neighbors(word, matrix, row_max, threshold, word_size, out):
    """Word indices of all words scoring >= threshold against ``word``, in BLAST's order.

    Mirrors ``s_AddWordHitsCore``: depth-first over positions, letters 0..27 at
    each, pruned by the row maxima of the positions still open.  Returns the
    number written to ``out``.
    """
    # best score of positions k.. (suffix sums of row maxima)
    suffix = np.zeros(word_size + 1, dtype=np.int64)
    for k in range(word_size - 1, -1, -1):
        suffix[k] = suffix[k + 1] + row_max[word[k]]
    letter = np.zeros(word_size, dtype=np.int64)
    partial = np.zeros(word_size + 1, dtype=np.int64)   # exact score of letters 0..k-1
    count = 0
    pos = 0
    letter[0] = -1
    while pos >= 0:
        letter[pos] += 1
        if letter[pos] >= 28:
            pos -= 1
            continue
        sc = partial[pos] + matrix[word[pos], letter[pos]]
        if sc + suffix[pos + 1] < threshold:
            continue
        if pos == word_size - 1:
            code = 0
            for k in range(word_size):
                code = (code << 5) | letter[k]
            out[count] = code
            count += 1
        else:
            partial[pos + 1] = sc
            pos += 1
            letter[pos] = -1
    return count


@numba.njit(cache=True, nogil=True)
def _row_max(matrix):
    rm = np.empty(28, dtype=np.int64)
    for i in range(28):
        best = matrix[i, 0]
        for j in range(1, 28):
            if matrix[i, j] > best:
                best = matrix[i, j]
        rm[i] = best
    return rm


@numba.njit(cache=True, nogil=True)
def _word_letters(code, word_size, word):
    for k in range(word_size - 1, -1, -1):
        word[k] = code & 31
        code >>= 5


@numba.njit(cache=True, nogil=True)
def _group_cells(qword, matrix, word_size, threshold):
    """The cells each indexed query word goes into, in ``s_AddWordHits``' order: the word
    itself (unless it scores T or more against itself: then it is among its neighbours),
    then its neighbours (``_neighbors``).

    Returns (order, starts, cells, cell_at): the offsets of word group g are
    order[starts[g]:starts[g+1]] (``_word_groups``), its cells cells[cell_at[g]:cell_at[g+1]].
    """
    order, starts = _word_groups(qword)
    n_groups = len(starts) - 1
    row_max = _row_max(matrix)
    word = np.zeros(word_size, dtype=np.int64)
    buf = np.empty(28 ** word_size, dtype=np.int64)
    cells = np.empty(max(64, 64 * n_groups), dtype=np.int64)
    cell_at = np.zeros(n_groups + 1, dtype=np.int64)
    n = 0
    for g in range(n_groups):
        code = qword[order[starts[g]]]
        _word_letters(code, word_size, word)
        self_score = 0
        for k in range(word_size):
            self_score += matrix[word[k], word[k]]
        nn = 0
        if threshold != 0:
            nn = _neighbors(word, matrix, row_max, threshold, word_size, buf)
        if n + nn + 1 > len(cells):
            grown = np.empty(max(2 * len(cells), n + nn + 1), dtype=np.int64)
            copy_into(grown, 0, cells[:n])
            cells = grown
        if threshold == 0 or self_score < threshold:
            cells[n] = code
            n += 1
        for j in range(nn):
            cells[n] = buf[j]
            n += 1
        cell_at[g + 1] = n
    return order, starts, cells, cell_at
