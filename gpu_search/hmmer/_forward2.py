"""Two-state scaled Forward of HMMER's bias filter, compiled with numba.

A line-by-line transcription of Easel's ``esl_hmm_Forward()`` for the
two-state filter HMM of ``p7_bg_SetFilter()``: float32 products and sums in
Easel's order, row maxima taken as ``ESL_MAX(dp, max)``, and each row's scale
recorded as ``(float) log((double) max)`` with the C library's log (numba
lowers ``math.log`` to it).  Every constant is float32 so that no operation
is silently promoted to double.
"""

import math

from .._numba import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def filter_forward(residues, offsets, lengths, idx, eo, p1, one_minus_p1, t10, t11):
    """Forward log-likelihood ratio (nats, float32) of each sequence in ``idx``.

    Args:
        residues, offsets: the packed database (uint8 codes, int64 starts).
        lengths: int64 length of each sequence *of idx* (same order as idx).
        idx: int64 database indices of the sequences to score.
        eo: float32 (Kp, 2) emission odds of the two states.
        p1, one_minus_p1: float32 per sequence, t[0][0] and t[0][1]
            (p7_bg_SetLength sets them from the target length).
        t10, t11: float32 transitions out of state 1.
    """
    zero = np.float32(0.0)
    pi0 = np.float32(0.999)
    pi1 = np.float32(0.001)
    out = np.empty(len(idx), dtype=np.float32)
    for n in range(len(idx)):
        start = offsets[idx[n]]
        L = lengths[n]
        t00 = p1[n]
        t01 = one_minus_p1[n]
        x = residues[start]
        d0 = eo[x, 0] * pi0
        d1 = eo[x, 1] * pi1
        mx = zero
        mx = d0 if d0 > mx else mx
        mx = d1 if d1 > mx else mx
        d0 = d0 / mx
        d1 = d1 / mx
        logsc = np.float32(math.log(np.float64(mx)))
        for i in range(1, L):
            x = residues[start + i]
            n0 = (zero + d0 * t00) + d1 * t10
            n0 = n0 * eo[x, 0]
            n1 = (zero + d0 * t01) + d1 * t11
            n1 = n1 * eo[x, 1]
            mx = zero
            mx = n0 if n0 > mx else mx
            mx = n1 if n1 > mx else mx
            d0 = n0 / mx
            d1 = n1 / mx
            logsc = logsc + np.float32(math.log(np.float64(mx)))
        # both states end with t[m][E] = 1.0
        end = (zero + d0 * np.float32(1.0)) + d1 * np.float32(1.0)
        logsc = logsc + np.float32(math.log(np.float64(end)))
        out[n] = logsc
    return out
