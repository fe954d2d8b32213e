"""One-pass FASTA scanner compiled with numba (used by :mod:`gpu_search.seqdb`).

It reads the bytes once: header lines are located and split into name and
description, sequence letters are digitized through a 256-entry table into a
preallocated residue array.  Parsing 273 M residues takes well under a
second, faster than Easel's own reader through pyhmmer.
"""

from ._numba import numba
import numpy as np

IGNORED = 254
ILLEGAL = 255
NL, CR, GT = 10, 13, 62


@numba.njit(cache=True, nogil=True)
def _is_space(c):
    return c == 32 or c == 9 or c == 10 or c == 13 or c == 11 or c == 12


@numba.njit(cache=True, nogil=True)
def scan(buf, table, max_headers):
    """Digitize a FASTA file.

    Returns:
        residues (uint8, trimmed later by n_res), n_res, header start and end
        positions (the '>' and the end of its line), residues per sequence,
        number of headers, and the position of the first illegal byte (-1 if none).
    """
    n = len(buf)
    residues = np.empty(n, dtype=np.uint8)
    hstart = np.empty(max_headers, dtype=np.int64)
    hend = np.empty(max_headers, dtype=np.int64)
    lengths = np.zeros(max_headers, dtype=np.int64)
    k = 0
    n_res = 0
    line_start = True
    p = 0
    while p < n:
        c = buf[p]
        if line_start and c == GT:
            hstart[k] = p
            q = p
            while q < n and buf[q] != NL:
                q += 1
            hend[k] = q
            k += 1
            p = q + 1
            line_start = True
            continue
        if c == NL:
            line_start = True
            p += 1
            continue
        line_start = False
        code = table[c]
        if code == IGNORED:
            p += 1
            continue
        if code == ILLEGAL or k == 0:
            return residues, n_res, hstart, hend, lengths, k, p
        residues[n_res] = code
        n_res += 1
        lengths[k - 1] += 1
        p += 1
    return residues, n_res, hstart, hend, lengths, k, -1


@numba.njit(cache=True, nogil=True)
def split_headers(buf, hstart, hend, k):
    """Name and description of each header, as Easel splits them.

    The name runs up to the first whitespace after '>' (leading whitespace
    skipped); the description is the rest with leading whitespace removed,
    trailing whitespace kept, the CR of a CRLF ending dropped.
    Returns packed blobs and offsets; a header without a name gets an empty name.
    """
    total = 0
    for i in range(k):
        total += hend[i] - hstart[i]
    name_blob = np.empty(total, dtype=np.uint8)
    desc_blob = np.empty(total, dtype=np.uint8)
    name_off = np.zeros(k + 1, dtype=np.int64)
    desc_off = np.zeros(k + 1, dtype=np.int64)
    nn = 0
    nd = 0
    for i in range(k):
        a = hstart[i] + 1
        b = hend[i]
        if b > a and buf[b - 1] == CR:
            b -= 1
        while a < b and _is_space(buf[a]):
            a += 1
        e = a
        while e < b and not _is_space(buf[e]):
            e += 1
        for j in range(a, e):
            name_blob[nn] = buf[j]
            nn += 1
        d = e
        while d < b and _is_space(buf[d]):
            d += 1
        for j in range(d, b):
            desc_blob[nd] = buf[j]
            nd += 1
        name_off[i + 1] = nn
        desc_off[i + 1] = nd
    return name_blob[:nn], name_off, desc_blob[:nd], desc_off
