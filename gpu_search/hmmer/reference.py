"""Exact CPU reference of HMMER 3.4's filters: MSV, Viterbi filter, bias filter.

This is the arithmetic of ``impl_sse/msvfilter.c``, ``impl_sse/vitfilter.c``
and ``p7_bg.c`` written out in node order instead of Farrar's striped SIMD
layout (see ``docs/gpu-design.md``).  It reproduces HMMER's
scores bit for bit (tested against HMMER's own C functions), and it is what
the CUDA kernels are tested against on machines without a GPU.

MSV and Viterbi filter are vectorized across sequences of similar length: a
batch is processed one residue position at a time, with the DP row of every
sequence of the batch in one (n, M) array.  The bias filter (a two-state
float Forward) is a compiled numba loop per sequence, because its result
depends on the exact order of float operations and on the C library's log().

Overflow: like HMMER, a sequence whose MSV row maximum plus the bias reaches
255, or whose Viterbi row maximum reaches 32767, gets score +inf (it passes).

Contents:
    1. Batching sequences by length.
    2. MSV filter (unsigned 8-bit, saturating).
    3. Viterbi filter (signed 16-bit, saturating; full D->D instead of Lazy-F).
    4. Bias filter (p7_bg_FilterScore).
"""

from __future__ import annotations

import math

import numpy as np

from .profile import BM, DD, DM, II, IM, MD, MI, MM, FilterProfile
from .scores import null_p1
from .profile import _logf

NEG_INF_W = -32768  # -infinity of the 16-bit Viterbi filter

# --- 1. Batching -------------------------------------------------------------------


def length_batches(lengths: np.ndarray, max_batch: int = 2048, max_cells: int = 1 << 24):
    """Yield index arrays of sequences, longest first, in batches of similar length.

    Within a batch the sequences are sorted by decreasing length, so the ones
    still active at position i are always a prefix of the batch.
    """
    order = np.argsort(-lengths, kind="stable")
    start = 0
    while start < len(order):
        longest = max(int(lengths[order[start]]), 1)
        size = max(1, min(max_batch, max_cells // longest))
        yield order[start : start + size]
        start += size


def padded_residues(residues, offsets, lengths, batch) -> np.ndarray:
    """(n, Lmax) uint8 matrix of the batch's residues, zero padded."""
    L = lengths[batch].astype(np.int64)
    out = np.zeros((len(batch), int(L.max()) if len(L) else 0), dtype=np.uint8)
    row = np.repeat(np.arange(len(batch)), L)
    col = np.arange(int(L.sum())) - np.repeat(np.cumsum(L) - L, L)
    out[row, col] = residues[np.repeat(offsets[batch].astype(np.int64), L) + col]
    return out


# --- 2. MSV filter -------------------------------------------------------------------


def msv_filter(prof: FilterProfile, residues, offsets, lengths, idx=None):
    """MSV filter states for sequences ``idx`` of a packed database.

    Returns:
        (xJ, overflow): uint8 final J state and bool overflow flag per sequence,
        in the order of ``idx``.  Convert with :func:`scores.msv_score`.
    """
    idx = np.arange(len(lengths)) if idx is None else np.asarray(idx)
    lens = lengths[idx]
    xJ_out = np.zeros(len(idx), dtype=np.uint8)
    ovf_out = np.zeros(len(idx), dtype=bool)
    cost = prof.msv_cost.astype(np.int16)
    bias, base, tec = prof.bias_b, prof.base_b, prof.tec

    for local in length_batches(lens):
        batch = idx[local]
        dsq = padded_residues(residues, offsets, lengths, batch)
        L = lengths[batch]
        n_all = len(batch)
        tjbm = (prof.tjb_b(L).astype(np.int16) + prof.tbm) % 256  # byte wrap, as (int8)tjb+(int8)tbm
        xB = np.maximum(0, base - tjbm).astype(np.int16)
        xJ = np.zeros(n_all, dtype=np.int16)
        ovf = np.zeros(n_all, dtype=bool)
        dp = np.zeros((n_all, prof.M), dtype=np.int16)
        prev = np.zeros((n_all, prof.M), dtype=np.int16)
        n = n_all
        for i in range(dsq.shape[1]):
            while n > 0 and L[n - 1] <= i:
                n -= 1
            # M(i,k) = max(M(i-1,k-1), xB) + bias, capped at 255, minus cost, floored at 0
            prev[:n, 0] = 0
            prev[:n, 1:] = dp[:n, :-1]
            sv = np.maximum(prev[:n], xB[:n, None])
            sv = np.minimum(sv + bias, 255) - cost[dsq[:n, i]]
            np.maximum(sv, 0, out=sv)
            dp[:n] = sv
            xE = sv.max(axis=1)
            ovf[:n] |= xE + bias >= 255
            xJ[:n] = np.maximum(xJ[:n], np.maximum(0, xE - tec))
            xB[:n] = np.maximum(0, np.maximum(base, xJ[:n]) - tjbm[:n])
        xJ_out[local] = xJ
        ovf_out[local] = ovf
    return xJ_out, ovf_out


# --- 3. Viterbi filter ------------------------------------------------------------------


def _sat16(a):
    return np.clip(a, -32768, 32767, out=a)


def viterbi_filter(prof: FilterProfile, residues, offsets, lengths, idx=None):
    """Viterbi filter states for sequences ``idx`` of a packed database.

    D->D paths are always computed in full (a running maximum along k), which
    gives HMMER's result: its Lazy-F skips them only when they provably
    cannot change any M cell.  Since every D->D cost is <= 0, a chain of
    saturating adds equals the saturated exact sum, so the running maximum of
    ``dcv(j) - P(j)`` plus ``P(k)`` (P = prefix sums of DD) is exact.

    Returns:
        (xC, overflow): int16 final C state and bool overflow flag per
        sequence, in the order of ``idx``.  Convert with :func:`scores.viterbi_score`.
    """
    idx = np.arange(len(lengths)) if idx is None else np.asarray(idx)
    lens = lengths[idx]
    xC_out = np.full(len(idx), NEG_INF_W, dtype=np.int16)
    ovf_out = np.zeros(len(idx), dtype=bool)
    M = prof.M
    emit = prof.vit_emit.astype(np.int32)
    t = prof.vit_trans.astype(np.int32)
    # prefix sums of DD out of nodes 1..k (int64: -32768 entries may add up)
    P = np.cumsum(t[DD].astype(np.int64))
    e_move, e_loop, base_w = prof.e_move, prof.e_loop, prof.base_w

    for local in length_batches(lens, max_cells=1 << 23):
        batch = idx[local]
        dsq = padded_residues(residues, offsets, lengths, batch)
        L = lengths[batch]
        nb = len(batch)
        move = prof.move_w(L).astype(np.int64)   # N, C and J MOVE costs
        xN = np.full(nb, base_w, dtype=np.int64)
        xB = xN + move
        xJ = np.full(nb, NEG_INF_W, dtype=np.int64)
        xC = np.full(nb, NEG_INF_W, dtype=np.int64)
        ovf = np.zeros(nb, dtype=bool)
        Mx = np.full((nb, M), NEG_INF_W, dtype=np.int32)
        Ix = np.full((nb, M), NEG_INF_W, dtype=np.int32)
        Dx = np.full((nb, M), NEG_INF_W, dtype=np.int32)
        n = nb
        for i in range(dsq.shape[1]):
            while n > 0 and L[n - 1] <= i:
                n -= 1
            Mp, Ip, Dp = Mx[:n], Ix[:n], Dx[:n]
            # previous row shifted to node k-1 (node 0 is -inf)
            Msh = np.empty_like(Mp); Msh[:, 0] = NEG_INF_W; Msh[:, 1:] = Mp[:, :-1]
            Ish = np.empty_like(Ip); Ish[:, 0] = NEG_INF_W; Ish[:, 1:] = Ip[:, :-1]
            Dsh = np.empty_like(Dp); Dsh[:, 0] = NEG_INF_W; Dsh[:, 1:] = Dp[:, :-1]

            sv = _sat16(xB[:n, None].astype(np.int32) + t[BM])
            np.maximum(sv, _sat16(Msh + t[MM]), out=sv)
            np.maximum(sv, _sat16(Ish + t[IM]), out=sv)
            np.maximum(sv, _sat16(Dsh + t[DM]), out=sv)
            _sat16(np.add(sv, emit[dsq[:n, i]], out=sv))
            xE = sv.max(axis=1).astype(np.int64)

            Inew = np.maximum(_sat16(Mp + t[MI]), _sat16(Ip + t[II]))
            dcv = _sat16(sv + t[MD]).astype(np.int64)      # M->D into node k+1
            Dnext = np.maximum.accumulate(dcv - P, axis=1) + P  # D(k+1) with all D->D paths
            Dx[:n, 0] = NEG_INF_W
            Dx[:n, 1:] = np.clip(Dnext[:, :-1], -32768, 32767)
            Mx[:n] = sv
            Ix[:n] = Inew

            ovf[:n] |= xE >= 32767
            # special states (int16 in C; values stay in range)
            xC[:n] = np.maximum(xC[:n], xE + e_move)
            xJ[:n] = np.maximum(xJ[:n], xE + e_loop)
            xB[:n] = np.maximum(xJ[:n] + move[:n], xN[:n] + move[:n])
        xC_out[local] = xC.astype(np.int16)
        ovf_out[local] = ovf
    return xC_out, ovf_out


# --- 4. Bias filter -----------------------------------------------------------------------

_POOL = None


def _workers() -> int:
    import os

    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def _pool():
    """A thread pool of its own for bias-filter chunks (callers may be pool threads too)."""
    global _POOL
    if _POOL is None:
        from concurrent.futures import ThreadPoolExecutor

        _POOL = ThreadPoolExecutor(max_workers=_workers(), thread_name_prefix="bias")
    return _POOL


# residues a bias-filter chunk at least: below this a pool task's dispatch costs more than
# it saves (a few hundred MSV survivors, the usual case with many models, run inline)
BIAS_CHUNK_RESIDUES = 200_000


def _chunks(lengths: np.ndarray, parts: int):
    """Contiguous (start, stop) ranges of about equal residue counts."""
    n = len(lengths)
    if n == 0:
        return []
    cum = np.cumsum(lengths)
    cuts = np.searchsorted(cum, cum[-1] * np.arange(1, parts) / parts)
    edges = np.unique(np.concatenate([[0], cuts, [n]]))
    return list(zip(edges[:-1], edges[1:]))


def null_length_terms(lengths) -> tuple[np.ndarray, np.ndarray]:
    """(logf(p1), logf(1 - p1)) per length, float32 with the C library's logf: the length
    distribution's terms of the bias filter's score (p7_bg_FilterScore)."""
    p1 = null_p1(lengths)
    return _logf(p1), _logf(np.float32(1.0) - p1)


def bias_filter_hmm(prof: FilterProfile, bg_freq: np.ndarray, degeneracy: np.ndarray):
    """Emission odds ``eo`` (Kp, 2) and state-1 transitions of the filter HMM.

    ``p7_bg_SetFilter`` + ``esl_hmm_Configure``: state 0 emits the background,
    state 1 the model composition; degenerate residues get the summed
    emissions over the summed frequencies of what they stand for; gap,
    nonresidue and missing data get odds 1.
    """
    return bias_filter_hmms([prof], bg_freq, degeneracy)[0]


def bias_filter_hmms(profs, bg_freq: np.ndarray, degeneracy: np.ndarray) -> list:
    """:func:`bias_filter_hmm` of several models (of one alphabet) in one pass of array
    operations: each value the same float32 operations on the same operands, so the same
    bits, at a fraction of the per-model cost (a filter thread's batch asks for dozens)."""
    if not profs:
        return []
    K = profs[0].K
    Kp = degeneracy.shape[0]
    f = np.asarray(bg_freq, dtype=np.float32)[:K]
    compo = np.stack([prof.compo.astype(np.float32) for prof in profs])   # [model, x]
    eo = np.ones((len(profs), Kp, 2), dtype=np.float32)  # gap, nonresidue, missing data: 1
    eo[:, :K, 0] = f / f
    eo[:, :K, 1] = compo / f
    # degenerate codes: sums over what each stands for, added in residue order in float32
    # (a cumulative sum is sequential; the zeros it adds where a residue is not meant
    # change no sum)
    mask = np.asarray(degeneracy[K + 1:Kp - 2, :K], dtype=bool)            # [code, x]
    zero = np.float32(0.0)
    den = np.cumsum(np.where(mask, f, zero), axis=1, dtype=np.float32)[:, -1]
    num_bg = den        # (the background's own sums: the same additions)
    num = np.cumsum(np.where(mask[None], compo[:, None, :], zero), axis=2, dtype=np.float32)[:, :, -1]
    with np.errstate(divide="ignore", invalid="ignore"):
        eo[:, K + 1:Kp - 2, 0] = np.where(den > 0, num_bg / den, zero)
        eo[:, K + 1:Kp - 2, 1] = np.where(den > 0, num / den, zero)
    out = []
    for prof, eo_m in zip(profs, eo):
        L1 = np.float32(prof.M / 8.0)
        t10 = np.float32(1.0) / (L1 + np.float32(1.0))
        t11 = L1 / (L1 + np.float32(1.0))
        out.append((eo_m, t10, t11))
    return out


def bias_filter(prof: FilterProfile, bg_freq, degeneracy, residues, offsets, lengths, idx=None,
                length_terms=None):
    """Bias-filter scores (``p7_bg_FilterScore``) in nats, float32, per sequence of ``idx``.

    length_terms: :func:`null_length_terms` of every database sequence (indexed like
    ``lengths``), computed once for a search of many models; computed here if None.
    """
    from ._forward2 import filter_forward  # numba, compiled on first use

    idx = np.arange(len(lengths)) if idx is None else np.asarray(idx)
    eo, t10, t11 = bias_filter_hmm(prof, bg_freq, degeneracy)
    L = lengths[idx].astype(np.int64)
    p1 = null_p1(L)
    one_minus = np.float32(1.0) - p1
    offsets = np.asarray(offsets, dtype=np.int64)
    idx = idx.astype(np.int64)

    def score(ab):
        return filter_forward(residues, offsets, L[ab[0]:ab[1]], idx[ab[0]:ab[1]], eo,
                              p1[ab[0]:ab[1]], one_minus[ab[0]:ab[1]], t10, t11)

    # the compiled loop releases the GIL: large calls are scored in chunks on all cores
    parts = min(4 * _workers(), int(L.sum()) // BIAS_CHUNK_RESIDUES)
    if parts <= 1:
        fwd = score((0, len(L))) if len(L) else np.zeros(0, np.float32)
    else:
        fwd = np.concatenate(list(_pool().map(score, _chunks(L, parts))))
    return with_length_terms(fwd, L, idx, length_terms)


def bias_forward_interpreted(residues, offsets, lengths, idx, eo, t10, t11) -> np.ndarray:
    """The bias filter's Forward score (nats, float32, before its length terms) of each
    sequence of idx, bit for bit as ``_forward2.filter_forward`` computes it, run by the
    interpreter: numpy's float32 scalars round every product, sum and quotient as C's floats
    do, and math.log is the C library's.  For the few sequences the GPU's bias filter cannot
    score exactly (bias.cu flags them), where loading numba's compiled loop would cost a
    second; about a millisecond a sequence."""
    zero, one = np.float32(0.0), np.float32(1.0)
    eo0, eo1 = [np.float32(v) for v in eo[:, 0]], [np.float32(v) for v in eo[:, 1]]
    out = np.empty(len(idx), dtype=np.float32)
    for n, (i, L) in enumerate(zip(np.asarray(idx).tolist(), np.asarray(lengths).tolist())):
        seq = residues[offsets[i]:offsets[i] + L].tolist()
        t00 = np.float32(L) / np.float32(L + 1)            # p7_bg_SetLength: p1, 1 - p1
        t01 = one - t00
        d0, d1 = eo0[seq[0]] * np.float32(0.999), eo1[seq[0]] * np.float32(0.001)
        mx = max(zero, d0, d1)
        d0, d1 = d0 / mx, d1 / mx
        logsc = np.float32(math.log(float(mx)))
        for x in seq[1:]:
            n0 = ((zero + d0 * t00) + d1 * t10) * eo0[x]
            n1 = ((zero + d0 * t01) + d1 * t11) * eo1[x]
            mx = max(zero, n0, n1)
            d0, d1 = n0 / mx, n1 / mx
            logsc = logsc + np.float32(math.log(float(mx)))
        out[n] = logsc + np.float32(math.log(float((zero + d0 * one) + d1 * one)))
    return out


def with_length_terms(fwd: np.ndarray, L: np.ndarray, idx: np.ndarray, length_terms=None) -> np.ndarray:
    """The bias filter's score from its Forward score ``fwd`` (float32 nats) of the sequences
    idx of lengths L: the length distribution imposed, ``fwd + (float)L*logf(p1) + logf(1.-p1)``."""
    if length_terms is None:
        log_p1, log_1mp1 = null_length_terms(L)
    else:
        log_p1, log_1mp1 = length_terms[0][idx], length_terms[1][idx]
    return (fwd + L.astype(np.float32) * log_p1) + log_1mp1


class ReferenceBackend:
    """Filter backend running the numpy reference (``--device reference``).

    Exact but slow: meant for testing the cascade and the GPU kernels on
    machines without a GPU.
    """

    name = "reference"

    def __init__(self, db):
        self.db = db

    def msv(self, prof: FilterProfile, idx):
        return msv_filter(prof, self.db.residues, self.db.offsets, self.db.lengths, idx)

    def viterbi(self, prof: FilterProfile, idx):
        return viterbi_filter(prof, self.db.residues, self.db.offsets, self.db.lengths, idx)

    # the cascade's interface: a batch of models at a time (one model after another here)
    def msv_batch(self, profs, idx) -> list:
        return [self.msv(prof, idx) for prof in profs]

    def viterbi_batch(self, profs, idxs) -> list:
        return [self.viterbi(prof, idx) for prof, idx in zip(profs, idxs)]
