"""Host-side score arithmetic of HMMER's filter cascade (p7_pipeline.c).

The filters (numpy reference or CUDA kernels) return integers only: the MSV
state xJ, the Viterbi-filter state xC, and an overflow flag.  Everything in
floating point happens here, on the CPU, in the order and precision HMMER
uses, so that the host C library takes part in the result exactly as it does
in HMMER.

Contents:
    1. Filter scores in nats from the integer states.
    2. Null model (null1) scores.
    3. P-values (esl_gumbel_surv) and the pass/fail decision.
"""

from __future__ import annotations

import math

import numpy as np

from .profile import FilterProfile

LOG2 = 0.69314718055994529  # eslCONST_LOG2
F32 = np.float32

# --- 1. Filter scores ----------------------------------------------------------


def msv_score(prof: FilterProfile, xJ, tjb, overflow) -> np.ndarray:
    """MSV filter score in nats (p7_MSVFilter's last lines), +inf on overflow.

    ``((float)(xJ - tjb_b) - (float)base_b) / scale_b - 3.0``, in float32.
    """
    xJ = np.asarray(xJ, dtype=np.int64)
    sc = (xJ - np.asarray(tjb, dtype=np.int64)).astype(F32) - F32(prof.base_b)
    sc = sc / prof.scale_b - F32(3.0)
    return np.where(np.asarray(overflow, bool), F32(np.inf), sc).astype(F32)


def viterbi_score(prof: FilterProfile, xC, move_w, overflow) -> np.ndarray:
    """Viterbi filter score in nats (p7_ViterbiFilter's last lines).

    ``((float)xC + (float)xw[C][MOVE] - (float)base_w) / scale_w - 3.0``;
    -inf when xC is -32768 (no path), +inf on overflow.
    """
    xC = np.asarray(xC, dtype=np.int64)
    sc = (xC.astype(F32) + np.asarray(move_w).astype(F32)) - F32(prof.base_w)
    sc = sc / prof.scale_w - F32(3.0)
    sc = np.where(xC > -32768, sc, F32(-np.inf))
    return np.where(np.asarray(overflow, bool), F32(np.inf), sc).astype(F32)


# --- 2. Null model --------------------------------------------------------------


def null_p1(lengths) -> np.ndarray:
    """p1 = L/(L+1) in float32 (p7_bg_SetLength)."""
    L = np.asarray(lengths, dtype=np.int64)
    return L.astype(F32) / (L + 1).astype(F32)


def null_score(lengths) -> np.ndarray:
    """null1 score in nats: ``(float)L * log(p1) + log(1.-p1)`` (double, stored float).

    Uses the C library's ``log`` (through :func:`math.log`) on each distinct
    length, as HMMER does.
    """
    L = np.asarray(lengths, dtype=np.int64)
    uniq, inverse = np.unique(L, return_inverse=True)
    p1 = null_p1(uniq)
    out = np.array(
        [F32(float(n) * math.log(float(p)) + math.log(1.0 - float(p))) for n, p in zip(uniq, p1)],
        dtype=F32,
    )
    return out[inverse].reshape(L.shape)


# --- 3. P-values ------------------------------------------------------------------


def gumbel_surv(x, mu, lam) -> np.ndarray:
    """esl_gumbel_surv(): P(S > x) for a Gumbel with location mu, scale lambda."""
    y = float(lam) * (np.asarray(x, dtype=np.float64) - float(mu))
    with np.errstate(over="ignore"):
        ey = -np.exp(-y)
    return np.where(np.abs(ey) < 5e-9, -ey, 1.0 - np.exp(ey))


def seq_score_bits(score_nats, null_nats) -> np.ndarray:
    """``seq_score = (usc - nullsc) / eslCONST_LOG2`` as C evaluates it.

    usc and nullsc are floats: their difference is a float subtraction; the
    division by the double constant is done in double; the result is stored
    in a float.
    """
    with np.errstate(invalid="ignore"):
        diff = np.asarray(score_nats, F32) - np.asarray(null_nats, F32)
        return (diff.astype(np.float64) / LOG2).astype(F32)


def pvalue(score_nats, null_nats, mu, lam) -> np.ndarray:
    """P-value of a filter score against a null score, as p7_Pipeline computes it."""
    return gumbel_surv(seq_score_bits(score_nats, null_nats), mu, lam)


# Survivors are a superset of HMMER's: a threshold is widened by this relative
# margin so that a last-ulp difference between C's exp() and numpy's can only
# let a sequence *through*; pyhmmer then re-runs every filter on the survivors
# and makes HMMER's exact decision.
THRESHOLD_SLACK = 1e-6


def passes(p, threshold: float) -> np.ndarray:
    return np.asarray(p) <= threshold * (1.0 + THRESHOLD_SLACK)
