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
    4. A sequence's and its domains' scores after domain definition (null2 corrected).
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .profile import FilterProfile

LOG2 = 0.69314718055994529  # eslCONST_LOG2
F32 = np.float32

# --- 1. Filter scores ----------------------------------------------------------


def msv_score(prof: FilterProfile, xJ, tjb, overflow) -> np.ndarray:
    """MSV filter score in nats (p7_MSVFilter's last lines), +inf on overflow.

    ``((float)(xJ - tjb_b) - (float)base_b) / scale_b - 3.0``, in float32.
    """
    return msv_scores(xJ, tjb, overflow, F32(prof.base_b), prof.scale_b)


def msv_scores(xJ, tjb, overflow, base_b, scale_b) -> np.ndarray:
    """:func:`msv_score` with the model's base_b and scale_b given (float32; one value, or one
    for each sequence: several models' sequences at once)."""
    xJ = np.asarray(xJ, dtype=np.int64)
    sc = (xJ - np.asarray(tjb, dtype=np.int64)).astype(F32) - np.asarray(base_b, dtype=F32)
    sc = sc / np.asarray(scale_b, dtype=F32) - F32(3.0)
    return np.where(np.asarray(overflow, bool), F32(np.inf), sc).astype(F32)


def viterbi_score(prof: FilterProfile, xC, move_w, overflow) -> np.ndarray:
    """Viterbi filter score in nats (p7_ViterbiFilter's last lines).

    ``((float)xC + (float)xw[C][MOVE] - (float)base_w) / scale_w - 3.0``;
    -inf when xC is -32768 (no path), +inf on overflow.
    """
    return viterbi_scores(xC, move_w, overflow, F32(prof.base_w), prof.scale_w)


def viterbi_scores(xC, move_w, overflow, base_w, scale_w) -> np.ndarray:
    """:func:`viterbi_score` with the model's base_w and scale_w given (float32; one value, or
    one for each sequence: several models' sequences at once)."""
    xC = np.asarray(xC, dtype=np.int64)
    sc = (xC.astype(F32) + np.asarray(move_w).astype(F32)) - np.asarray(base_w, dtype=F32)
    sc = sc / np.asarray(scale_w, dtype=F32) - F32(3.0)
    sc = np.where(xC > -32768, sc, F32(-np.inf))
    return np.where(np.asarray(overflow, bool), F32(np.inf), sc).astype(F32)


# --- 2. Null model --------------------------------------------------------------


def null_p1(lengths) -> np.ndarray:
    """p1 = L/(L+1) in float32 (p7_bg_SetLength)."""
    L = np.asarray(lengths, dtype=np.int64)
    return L.astype(F32) / (L + 1).astype(F32)


class PerLength:
    """A value of a sequence length, computed once for each length up to the longest asked
    for and kept (a table indexed by length): with the C library's log through math.log, one
    call a value, a search's records asked for the same lengths model after model.  Length 0
    (no sequence has it) is NaN."""

    def __init__(self, value, dtype):
        self._value, self._dtype = value, dtype
        self._table = np.full(1, np.nan, dtype)
        self._lock = threading.Lock()

    def __call__(self, lengths) -> np.ndarray:
        L = np.asarray(lengths, dtype=np.int64)
        table = self._table
        if int(L.max(initial=0)) >= len(table):
            with self._lock:
                table = self._table
                n = max(int(L.max()) + 1, 2 * len(table))
                if n > len(table):
                    grown = np.empty(n, self._dtype)
                    grown[:len(table)] = table
                    grown[len(table):] = [self._value(v) for v in range(len(table), n)]
                    self._table = table = grown
        return table[L]


def _null1(n: int) -> float:
    p = float(F32(n) / F32(n + 1))                          # p1, in float (null_p1)
    return F32(float(n) * math.log(p) + math.log(1.0 - p))


# null1 score in nats: ``(float)L * log(p1) + log(1.-p1)`` (double, stored float), the C
# library's log (through math.log) as in HMMER
null_score = PerLength(_null1, F32)


# --- 3. P-values ------------------------------------------------------------------


def gumbel_surv(x, mu, lam) -> np.ndarray:
    """esl_gumbel_surv(): P(S > x) for a Gumbel with location mu, scale lambda (one value, or
    one for each x)."""
    y = np.asarray(lam, dtype=np.float64) * (np.asarray(x, dtype=np.float64) - np.asarray(mu, dtype=np.float64))
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


# --- 4. Scores after domain definition ------------------------------------------------------
# p7_Pipeline's arithmetic once domain definition has run (p7_pipeline.c): C's float and double
# as it evaluates them, the logs and exps from the C library (math.log, math.exp) on each
# distinct value, no fused multiply-adds.

OMEGA_LOG = math.log(float(np.float32(1.0 / 256.0)))      # log(bg->omega), the null2 prior, in double
LOGSUM_SCALE = F32(1000.0)                                  # p7_LOGSUM_SCALE
LOGSUM_FAR = F32(15.7)                                      # beyond it p7_FLogsum returns the larger


@lru_cache(maxsize=1)
def flogsum_table() -> np.ndarray:
    """p7_FLogsumInit's table: (float) log(1 + exp(-i / 1000)) in double, i < 16,000."""
    return np.array([math.log(1.0 + math.exp(-i / 1000.0)) for i in range(16000)], dtype=F32)


def flogsum(a, b) -> np.ndarray:
    """p7_FLogsum(a, b): log(e^a + e^b) in float through HMMER's table (the difference times
    1000 truncated to an index)."""
    a, b = np.asarray(a, F32), np.asarray(b, F32)
    hi, lo = np.where(a > b, a, b), np.where(a < b, a, b)
    with np.errstate(invalid="ignore"):
        d = hi - lo
        far = (lo == F32(-np.inf)) | ~(d < LOGSUM_FAR)
        idx = np.where(far, F32(0), d * LOGSUM_SCALE).astype(np.int64)
    return np.where(far, hi, hi + flogsum_table()[idx]).astype(F32)


def exp_logsurv(x, tau, lam) -> np.ndarray:
    """esl_exp_logsurv: log P(S > x) of the Forward score's exponential tail, in double (tau and
    lambda one model's, or each score's model's)."""
    x = np.asarray(x, dtype=np.float64)
    tau, lam = np.asarray(tau, dtype=np.float64), np.asarray(lam, dtype=np.float64)
    return np.where(x < tau, 0.0, -lam * (x - tau))


# log((float) n / (float) (n + 3)) in double, the length model's per-residue cost
_length_log = PerLength(lambda n: math.log(float(F32(n) / F32(n + 3))), np.float64)


def _bits(nats_difference) -> np.ndarray:
    """(float) ((double) x / eslCONST_LOG2) of a float difference in nats."""
    return (np.asarray(nats_difference, F32).astype(np.float64) / LOG2).astype(F32)


@dataclass
class HitScores:
    """Each sequence's scores (bits) and log P-values, each domain's, as p7_Pipeline sets
    P7_HIT and P7_DOMAIN: score, pre_score, sum_score, lnP, pre_lnP, sum_lnP a sequence;
    bitscore, dombias (nats), lnP a domain; best_domain a sequence (its first highest
    bitscore, an index among its domains)."""

    score: np.ndarray
    pre_score: np.ndarray
    sum_score: np.ndarray
    lnP: np.ndarray
    pre_lnP: np.ndarray
    sum_lnP: np.ndarray
    best_domain: np.ndarray
    dom_bitscore: np.ndarray
    dom_bias: np.ndarray
    dom_lnP: np.ndarray


def hit_scores(fwdsc, lengths, null2_sum, dom_start, envsc, domcorrection, ienv, jenv, tau, lam) -> HitScores:
    """The null2-corrected scores of sequences after domain definition (tau and lambda the
    Forward tail's of their model, or each sequence's model's), null2 on (HMMER's default).

    fwdsc: each sequence's Forward score (nats); lengths: their lengths; null2_sum: the Kahan
    sum of each whole sequence's n2sc; each sequence's domains are dom_start[s] ..
    dom_start[s+1]-1 of envsc, domcorrection, ienv, jenv (nats, and the envelopes)."""
    fwdsc, null2_sum = np.asarray(fwdsc, F32), np.asarray(null2_sum, F32)
    n = np.asarray(lengths, dtype=np.int64)
    dom_start = np.asarray(dom_start, dtype=np.int64)
    envsc, domcorrection = np.asarray(envsc, F32), np.asarray(domcorrection, F32)
    env_len = np.asarray(jenv, np.int64) - np.asarray(ienv, np.int64) + 1
    nullsc = null_score(n)
    length_log = _length_log(n)
    seqbias = flogsum(F32(0.0), (OMEGA_LOG + null2_sum.astype(np.float64)).astype(F32))
    pre_score = _bits(fwdsc - nullsc)
    seq_score = _bits(fwdsc - (nullsc + seqbias))
    # the reconstruction score: the domains whose envelope outscores their null2, in order
    ndom = np.diff(dom_start)
    sum_score = np.zeros(len(n), F32)
    bias_sum = np.zeros(len(n), F32)
    Ld = np.zeros(len(n), np.int64)
    for d in range(int(ndom.max(initial=0))):
        has = ndom > d
        e = np.where(has, dom_start[:-1] + d, 0)
        counted = has & ((envsc[e] - domcorrection[e]) > F32(0.0))
        sum_score = np.where(counted, sum_score + envsc[e], sum_score).astype(F32)
        bias_sum = np.where(counted, bias_sum + domcorrection[e], bias_sum).astype(F32)
        Ld = np.where(counted, Ld + env_len[e], Ld)
    bias_sum = flogsum(F32(0.0), (OMEGA_LOG + bias_sum.astype(np.float64)).astype(F32))
    sum_score = (sum_score.astype(np.float64) + (n - Ld).astype(np.float64) * length_log).astype(F32)
    pre2_score = _bits(sum_score - nullsc)
    sum_score = _bits(sum_score - (nullsc + bias_sum))
    better = (Ld > 0) & (sum_score > seq_score)
    seq_score = np.where(better, sum_score, seq_score).astype(F32)
    pre_score = np.where(better, pre2_score, pre_score).astype(F32)
    # each domain: its envelope's score with the length model outside it, less its null2
    owner = np.repeat(np.arange(len(n)), ndom)
    bitscore = (envsc.astype(np.float64) + (n[owner] - env_len).astype(np.float64) * length_log[owner]).astype(F32)
    dombias = flogsum(F32(0.0), (OMEGA_LOG + domcorrection.astype(np.float64)).astype(F32))
    bitscore = _bits(bitscore - (nullsc[owner] + dombias))
    best = np.zeros(len(n), np.int64)
    for d in range(1, int(ndom.max(initial=0))):
        has = ndom > d
        e = np.where(has, dom_start[:-1] + d, 0)
        b = np.where(has, dom_start[:-1] + best, 0)
        best = np.where(has & (bitscore[e] > bitscore[b]), d, best)
    tau, lam = np.asarray(tau, dtype=np.float64), np.asarray(lam, dtype=np.float64)
    dom_tau, dom_lam = (tau[owner], lam[owner]) if tau.ndim else (tau, lam)
    return HitScores(score=seq_score, pre_score=pre_score, sum_score=sum_score,
                     lnP=exp_logsurv(seq_score, tau, lam), pre_lnP=exp_logsurv(pre_score, tau, lam),
                     sum_lnP=exp_logsurv(sum_score, tau, lam), best_domain=best, dom_bitscore=bitscore,
                     dom_bias=dombias, dom_lnP=exp_logsurv(bitscore, dom_tau, dom_lam))
