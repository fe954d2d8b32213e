"""The filter cascade of p7_Pipeline(): MSV, bias filter, Viterbi filter.

This is the seam where the GPU plugs in.  A *filter backend* computes the
integer filter states of many sequences at once, for a batch of models (the GPU
scores the whole batch in one launch a kernel geometry):

    backend.msv_batch(profs, idx)       -> [(xJ, overflow)]   MSV filter, same sequences for all
    backend.viterbi_batch(profs, idxs)  -> [(xC, overflow)]   Viterbi filter, each model its own

and, where the backend has them, the bias filter's Forward score and HMMER's Forward score:

    backend.bias_batch([(eo, t10, t11)], idxs) -> [fwd]      (float32; the CPU's bit for bit,
                                                              NaN where the backend cannot be sure)
    backend.forward_exact_batch(profs, idxs)   -> [fwd]      (float32; p7_ForwardParser's bit for
                                                              bit, NaN where the backend cannot be sure)

(``reference.ReferenceBackend`` in numpy, ``gpu.GpuBackend`` in CUDA).
:func:`run_cascade` turns those into HMMER's scores and P-values on the host,
runs the bias filter on the MSV survivors (on the GPU, the few sequences it
flags scored again on the CPU; or on the CPU, numba) and applies HMMER's
thresholds, stage by stage, exactly as p7_Pipeline does:

    1. MSV:     P(usc - nullsc)            <= F1        (n_past_msv)
    2. bias:    P(usc - filtersc)          <= F1        (n_past_bias; skipped with --nobias)
    3. Viterbi: run only if that P > F2; P(vfsc - filtersc) <= F2   (n_past_vit)
    4. (GPU) Forward: P(fwdsc - filtersc) <= F3 on HMMER's own Forward score (fwdback.cu),
       the sequences the GPU cannot be sure of kept (pyhmmer decides those).

The survivors are then finished (Forward, domain definition, output) by
pyhmmer with Z set to the size of the whole database.  Decisions are exact:
P-values are computed in double as HMMER does, and the rare ones within a
hair of a threshold are recomputed with the C library's exp().
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from . import scores
from .profile import FilterProfile
from .reference import bias_filter as _bias_filter_cpu
from .reference import (bias_filter_hmm, bias_filter_hmms, bias_forward_interpreted, null_length_terms,
                        with_length_terms)


class LengthTables:
    """Per-sequence values that depend only on the target length, computed once per search.

    The null score, the MSV move cost tjb_b and the Viterbi move cost depend on
    L and on scales that are the same for every HMMER profile (scale_b = 3/ln2,
    scale_w = 500/ln2, nj = 1 in multihit mode); they are computed once for
    the whole database instead of once per model.
    """

    def __init__(self, db, searched: np.ndarray, prof: FilterProfile):
        self.key = (float(prof.scale_b), float(prof.scale_w), float(prof.nj))
        L = db.lengths[searched]
        # distinct lengths and each sequence's rank among them: np.unique by
        # counting (lengths are small integers; sorting 840,000 of them cost ~30 ms)
        present = np.bincount(L) > 0
        self.uniq = np.flatnonzero(present)
        self.inv = (np.cumsum(present) - 1)[L]
        self.null_u = scores.null_score(self.uniq)
        self.tjb_u = prof.tjb_b(self.uniq)
        self.null = self.null_u[self.inv]
        self.tjb = self.tjb_u[self.inv]
        self.move_db = np.zeros(db.n_seqs, dtype=np.int16)   # indexed by database index
        self.move_db[searched] = prof.move_w(self.uniq)[self.inv]
        # the bias filter's length terms, by database index (C logf calls, once per length)
        log_p1_u, log_1mp1_u = null_length_terms(self.uniq)
        self.bias_terms = (np.zeros(db.n_seqs, dtype=np.float32), np.zeros(db.n_seqs, dtype=np.float32))
        self.bias_terms[0][searched] = log_p1_u[self.inv]
        self.bias_terms[1][searched] = log_1mp1_u[self.inv]

    def msv_floor(self, prof: FilterProfile, mu: float, lam: float, threshold: float) -> np.ndarray:
        """Per sequence, an xJ below which the MSV P-value certainly exceeds ``threshold``.

        P <= threshold  <=>  bits >= x* = mu - log(-log(1 - threshold)) / lambda;
        bits = ((xJ - tjb - base) / scale_b - 3 - nullsc) / ln 2 inverted for xJ,
        less one unit for safety.  Only sequences at or above the floor get
        their exact P-value computed.
        """
        return self.msv_floors([prof], [mu], [lam], threshold)[0][self.inv]

    def msv_floors(self, profs, mus, lams, threshold: float) -> np.ndarray:
        """:meth:`msv_floor` of several models, per distinct length: [model, distinct length]."""
        if threshold >= 1.0:
            return np.zeros((len(profs), len(self.uniq)), dtype=np.int16)
        x_star = np.array([mu - math.log(-math.log1p(-threshold)) / lam for mu, lam in zip(mus, lams)])[:, None]
        base_b = np.array([prof.base_b for prof in profs], dtype=np.float64)[:, None]
        scale_b = np.array([float(prof.scale_b) for prof in profs])[:, None]
        need = (self.tjb_u.astype(np.float64) + base_b
                + scale_b * (3.0 + self.null_u.astype(np.float64) + x_star * scores.LOG2))
        return np.clip(np.floor(need) - 1, 0, 256).astype(np.int16)

    def check(self, prof: FilterProfile) -> None:
        if (float(prof.scale_b), float(prof.scale_w), float(prof.nj)) != self.key:
            raise RuntimeError("profile scales differ between models: unsupported HMMER build")


@dataclass
class CascadeResult:
    """Survivors of the filters (database indices, increasing) and the stage counts."""

    survivors: np.ndarray
    n_past_msv: int
    n_past_bias: int
    n_past_vit: int
    seconds: dict = field(default_factory=dict)   # wall time per stage (benchmarks)
    n_bias_rescored: int = 0    # sequences whose bias score the GPU left to the CPU (flagged)
    # the sequences past each filter (database indices), counted per sequence by hmmscan,
    # whose pipeline statistics are those of one query sequence against every model
    past_msv: np.ndarray | None = None
    past_bias: np.ndarray | None = None
    past_vit: np.ndarray | None = None
    # the survivors whose Forward test (F3) was not applied here (increasing) and their filter
    # scores (nats): the pairs too long for the GPU's Forward stage, or every survivor where the
    # stage did not run; the GPU's finishing tests them.  None: every survivor was tested, or
    # the test passes every sequence (F3 = 1).
    untested: np.ndarray | None = None
    untested_filt: np.ndarray | None = None


def _gumbel_surv_c(x: float, mu: float, lam: float) -> float:
    """esl_gumbel_surv() with the C library's exp (via math.exp)."""
    y = lam * (x - mu)
    try:
        ey = -math.exp(-y)
    except OverflowError:
        ey = -math.inf
    return -ey if abs(ey) < 5e-9 else 1.0 - math.exp(ey)


def _exp_surv_c(x: float, mu: float, lam: float) -> float:
    """esl_exp_surv() with the C library's exp (via math.exp)."""
    return 1.0 if x < mu else math.exp(-lam * (x - mu))


def _settle_near_ties(ok, p, bits, threshold: float, surv_c, mu, lam) -> np.ndarray:
    """numpy's exp may differ from C's in the last bit: the P-values within a hair of the
    threshold decided again with the C library's (surv_c)."""
    near = np.flatnonzero(np.abs(p - threshold) <= 1e-9 * threshold)
    each = np.ndim(mu) > 0          # (the parameters given per sequence: a batch's models at once)
    for j in near:
        ok[j] = surv_c(float(bits[j]), float(mu[j] if each else mu), float(lam[j] if each else lam)) <= threshold
    return ok


def exact_forward_pass(fwd_nats, filter_nats, tau, lam, threshold: float) -> np.ndarray:
    """p7_Pipeline's Forward test, ``esl_exp_surv(seq_score, tau, lambda) <= F3``, for each
    sequence, decided exactly as HMMER decides it; NaN scores (left to the CPU) pass."""
    bits = scores.seq_score_bits(fwd_nats, filter_nats).astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        p = np.where(bits < tau, 1.0, np.exp(-lam * (bits - tau)))
        ok = (p <= threshold) | np.isnan(bits)
    return _settle_near_ties(ok, p, bits, threshold, _exp_surv_c, tau, lam)


def exact_pass(score_nats, null_nats, mu, lam, threshold: float) -> np.ndarray:
    """``P <= threshold`` for each sequence, decided exactly as HMMER decides it (mu and lam one
    model's, or each sequence's own)."""
    bits = scores.seq_score_bits(score_nats, null_nats)
    p = scores.gumbel_surv(bits, mu, lam)
    return _settle_near_ties(p <= threshold, p, bits, threshold, _gumbel_surv_c, mu, lam)


class BiasScores:
    """The bias filter's scores (p7_bg_FilterScore, nats, float32) of a model's MSV survivors, exact.

    From a backend with a bias filter (the GPU) each score is the CPU's bit for bit, but for
    the sequences the backend flags (NaN: where its double log might round to another float
    than the C library's, bias.cu), scored here again on the CPU: by the interpreter where
    they are few, which spares loading numba's compiled loop (about a second), else by it.
    Without one, every score is the CPU's.
    """

    INTERPRETED_MAX = 64

    def __init__(self, scores: np.ndarray, n_rescored: int = 0):
        self.scores = scores
        self.n_rescored = n_rescored

    @classmethod
    def on_cpu(cls, prof, db, idx, tables, bg_freq, degeneracy) -> "BiasScores":
        return cls(_bias_filter_cpu(prof, bg_freq, degeneracy, db.residues, db.offsets, db.lengths, idx,
                                    length_terms=tables.bias_terms).astype(np.float32))

    @classmethod
    def of_batch(cls, profs, idxs, fwds, db, tables, bg_freq, degeneracy) -> list:
        """Each model's scores of its sequences idxs[j] from the backend's Forward scores fwds[j]
        (``backend.bias_batch``): the length terms for the whole batch at once (one model at a
        time, each numpy operation gave up the interpreter's lock and waited to take it back
        behind the finishing threads), the flagged ones scored again model by model."""
        sizes = np.array([len(i) for i in idxs], dtype=np.int64)
        ends = np.cumsum(sizes)
        idx = np.concatenate(idxs) if len(idxs) else np.zeros(0, np.int64)
        fwd = np.concatenate(fwds) if len(fwds) else np.zeros(0, np.float32)
        L = db.lengths[idx].astype(np.int64)
        scores = with_length_terms(fwd, L, idx, tables.bias_terms).astype(np.float32)
        flagged = np.flatnonzero(np.isnan(fwd))
        cuts = np.searchsorted(flagged, np.concatenate([[0], ends]))
        out = []
        for j, prof in enumerate(profs):
            first = ends[j] - sizes[j]
            mine = cls(scores[first:ends[j]])
            if cuts[j + 1] > cuts[j]:
                mine.rescore(prof, db, idxs[j], flagged[cuts[j]:cuts[j + 1]] - first, tables, bg_freq, degeneracy)
            out.append(mine)
        return out

    def rescore(self, prof, db, idx, flagged, tables, bg_freq, degeneracy) -> None:
        """The scores at positions ``flagged`` (of idx) on the CPU."""
        again = idx[flagged]
        L = db.lengths[again].astype(np.int64)
        if len(flagged) <= self.INTERPRETED_MAX:
            eo, t10, t11 = bias_filter_hmm(prof, bg_freq, degeneracy)
            raw = bias_forward_interpreted(db.residues, db.offsets, L, again, eo, t10, t11)
            self.scores[flagged] = with_length_terms(raw, L, again, tables.bias_terms)
        else:
            self.scores[flagged] = _bias_filter_cpu(prof, bg_freq, degeneracy, db.residues, db.offsets, db.lengths,
                                                    again, length_terms=tables.bias_terms)
        self.n_rescored = len(flagged)


# The most results (models x sequences) the MSV stage compares with the floors at once (the
# temporaries of a batch of models over a database of hundreds of thousands of sequences)
MSV_STAGE_RESULTS = 1 << 23


def msv_stage(models, states, searched, tables, F1) -> None:
    """1. MSV for a batch's models at once: each model's sequences at or above its floor found in
    one pass over the batch's results, their scores and exact P-values computed together, each
    model given its survivors (idx1, usc1, null1).  One model at a time, each numpy operation
    over the database gave up the interpreter's lock and waited to take it back behind the
    finishing threads (2,000 models x 6.8 M residues on an H200 host: 1.8 ms a model)."""
    if not models:
        return
    mus = [m.m_mu for m in models]
    lams = [m.m_lambda for m in models]
    floors = tables.msv_floors([m.prof for m in models], mus, lams, F1)
    rows_per = max(1, MSV_STAGE_RESULTS // max(1, len(searched)))
    rows, cand, xJ_c, ovf_c = [], [], [], []
    for first in range(0, len(models), rows_per):
        part = states[first:first + rows_per]
        xJ = np.stack([x for x, _ in part])
        ovf = np.stack([o for _, o in part])
        r, c = np.nonzero(ovf | (xJ >= floors[first:first + len(part)][:, tables.inv]))
        rows.append(r + first)
        cand.append(c)
        xJ_c.append(xJ[r, c])
        ovf_c.append(ovf[r, c])
    rows, cand = np.concatenate(rows), np.concatenate(cand)
    xJ_c, ovf_c = np.concatenate(xJ_c), np.concatenate(ovf_c)
    # p7_MSVFilter's score, each with its model's base_b and scale_b
    base_b = np.array([m.prof.base_b for m in models], dtype=np.float32)[rows]
    scale_b = np.array([m.prof.scale_b for m in models], dtype=np.float32)[rows]
    usc = scores.msv_scores(xJ_c, tables.tjb[cand], ovf_c, base_b, scale_b)
    null = tables.null[cand]
    ok = exact_pass(usc, null, np.array(mus)[rows], np.array(lams)[rows], F1)
    rows, idx, usc, null = rows[ok], searched[cand[ok]], usc[ok], null[ok]
    bounds = np.searchsorted(rows, np.arange(len(models) + 1))
    for j, m in enumerate(models):
        at = slice(bounds[j], bounds[j + 1])
        m.idx1, m.usc1, m.null1 = idx[at], usc[at], null[at]


def _exact_passes(arrays, params, threshold: float) -> list:
    """:func:`exact_pass` of each model's (scores, null or filter scores) with its (mu, lambda),
    in one pass over the values of all: a mask a model."""
    sizes = [len(sc) for sc, _ in arrays]
    if sum(sizes) == 0:
        return [np.zeros(0, bool) for _ in arrays]
    mu = np.repeat([p[0] for p in params], sizes)
    lam = np.repeat([p[1] for p in params], sizes)
    ok = exact_pass(np.concatenate([sc for sc, _ in arrays]), np.concatenate([nl for _, nl in arrays]),
                    mu, lam, threshold)
    return np.split(ok, np.cumsum(sizes)[:-1])


def bias_stage(models, F1, F2) -> None:
    """2. The bias filter for a batch's models (each model's ``bias``: its scores, or None with
    --nobias): its score replaces the null score from here on; then which sequences need the
    Viterbi filter (those not already at P <= F2).  P-values as in :func:`msv_stage`."""
    biased = [m for m in models if m.bias is not None]
    for m, ok in zip(biased, _exact_passes([(m.usc1, m.bias.scores) for m in biased],
                                           [(m.m_mu, m.m_lambda) for m in biased], F1)):
        pos2 = np.flatnonzero(ok)
        m.idx2, m.usc2, m.filt2 = m.idx1[pos2], m.usc1[pos2], m.bias.scores[pos2]
    for m in models:
        if m.bias is None:
            m.idx2, m.usc2, m.filt2 = m.idx1, m.usc1, m.null1
    # 3. the Viterbi filter runs only for sequences not already at P <= F2
    for m, ok in zip(models, _exact_passes([(m.usc2, m.filt2) for m in models],
                                           [(m.m_mu, m.m_lambda) for m in models], F2)):
        m.need_vit = ~ok
        m.vit_idx = m.idx2[m.need_vit]
        m.passed = [m.idx2[ok]]
        m.passed_filt = [m.filt2[ok]]


def viterbi_stage(models, states: dict, tables, F2) -> None:
    """3. The Viterbi filter's survivors of a batch's models joined to those that needed none
    (states: the Viterbi filter's (xC, overflow) of each model that ran it, by id): the scores
    and exact P-values of every model at once, as in :func:`msv_stage`."""
    ran = [m for m in models if len(m.vit_idx)]
    if ran:
        sizes = [len(m.vit_idx) for m in ran]
        vit_idx = np.concatenate([m.vit_idx for m in ran])
        filt = np.concatenate([m.filt2[m.need_vit] for m in ran])
        base_w = np.repeat(np.array([m.prof.base_w for m in ran], dtype=np.float32), sizes)
        scale_w = np.repeat(np.array([m.prof.scale_w for m in ran], dtype=np.float32), sizes)
        vfsc = scores.viterbi_scores(np.concatenate([states[id(m)][0] for m in ran]), tables.move_db[vit_idx],
                                     np.concatenate([states[id(m)][1] for m in ran]), base_w, scale_w)
        ok = exact_pass(vfsc, filt, np.repeat([m.v_mu for m in ran], sizes),
                        np.repeat([m.v_lambda for m in ran], sizes), F2)
        kept, kept_filt = _split_kept(ok, sizes, vit_idx, filt)
        for m, idx, f in zip(ran, kept, kept_filt):
            m.passed.append(idx)
            m.passed_filt.append(f)
    for m in models:
        m.survivors = m.past_vit = np.concatenate(m.passed)
        m.survivor_filt = np.concatenate(m.passed_filt)
        m.n_past_vit = len(m.survivors)
        m.untested = np.ones(len(m.survivors), bool)      # (by the Forward test, F3)


def _split_kept(ok: np.ndarray, sizes, *arrays) -> list:
    """Of arrays holding several models' values one model after the other (sizes[j] each),
    the values where ok: for each array, a list of each model's kept values (views)."""
    model_of = np.repeat(np.arange(len(sizes)), sizes)
    bounds = np.concatenate([[0], np.cumsum(np.bincount(model_of[ok], minlength=len(sizes)))])
    out = []
    for a in arrays:
        kept = a[ok]
        out.append([kept[bounds[j]:bounds[j + 1]] for j in range(len(sizes))])
    return out


def forward_stage(models, fwds, short, F3) -> None:
    """4. Forward: HMMER's own test on HMMER's own score, for each model's survivors where
    ``short`` (one mask over the batch's survivors, model after model; fwds theirs, a list a
    model), for the whole batch at once.  A NaN score (unsure) passes, left to the CPU; the
    survivors not scored pass untested, kept with their filter scores."""
    sizes = [len(m.survivors) for m in models]
    every = np.full(int(sum(sizes)), np.nan, np.float32)
    every[short] = np.concatenate(fwds)
    filt = np.concatenate([m.survivor_filt for m in models])
    ok = exact_forward_pass(every, filt, np.repeat([float(m.prof.evparam[4]) for m in models], sizes),
                            np.repeat([float(m.prof.evparam[5]) for m in models], sizes), F3)
    survivors, survivor_filt, untested = _split_kept(ok, sizes, np.concatenate([m.survivors for m in models]),
                                                     filt, ~short)
    for m, s, f, u in zip(models, survivors, survivor_filt, untested):
        m.survivors, m.survivor_filt, m.untested = s, f, u


class _ModelCascade:
    """One model's way through the filters: what each stage leaves for the next (set for a
    batch of models at once by :func:`msv_stage`, :func:`bias_stage`, :func:`viterbi_stage`)."""

    def __init__(self, prof: FilterProfile, tables: "LengthTables"):
        tables.check(prof)
        self.prof = prof
        self.m_mu, self.m_lambda, self.v_mu, self.v_lambda = (float(v) for v in prof.evparam[:4])
        self.bias = None

    def result(self, seconds, F3: float = 1.0) -> CascadeResult:
        order = np.argsort(self.survivors, kind="stable")      # (the survivors increasing)
        survivors, untested = self.survivors[order], self.untested[order]
        untested_filt = None
        if F3 < 1.0 and untested.any():
            untested, untested_filt = survivors[untested], self.survivor_filt[order][untested]
        else:
            untested = None
        return CascadeResult(survivors, len(self.idx1), len(self.idx2), self.n_past_vit, seconds,
                             self.bias.n_rescored if self.bias is not None else 0,
                             self.idx1, self.idx2, self.past_vit, untested, untested_filt)


# The Forward parser on the GPU scores pairs of at most this many DP cells (length x M): a
# launch lasts as long as its longest pair's chain of rows (length x M / 4 steps a thread), and
# a few long sequences held every batch's filter thread waiting.  The longer pairs are tested
# by the finishing (the GPU's, whose calls no filter thread waits for, or pyhmmer's), on the
# same Forward score (CascadeResult.untested).  Measured in one process (bench/probes/finish_split.py
# --ab --modes auto --forward-max-cells, 2,000 models x 6.8 M residues, one H200 host with 16
# cores), seconds and the Forward kernels' GPU seconds with no limit / 1 M / 250,000 cells:
# many homologs 15.0 (2.0) / 12.6 (1.4) / 11.7 (0.8); few 6.2 (1.5) / 5.4-6.8 (1.1) / 6.2 (0.6).
FORWARD_MAX_CELLS = 250_000


def pair_cells(lengths: np.ndarray, idx: np.ndarray, M) -> np.ndarray:
    """The DP cells (length x M) of a model of M nodes against each sequence idx (M one
    model's, or each pair's own)."""
    return lengths[idx].astype(np.int64) * M


class Stopped(Exception):
    """The search was stopped (an error elsewhere, Ctrl-C, a caller that stopped early): a batch
    ends at the next stage instead of running through every filter."""


def run_cascade(prof: FilterProfile, db, backend, **kwargs) -> CascadeResult:
    """:func:`run_cascade_batch` for one model."""
    return run_cascade_batch([prof], db, backend, **kwargs)[0]


def run_cascade_batch(profs, db, backend, *, F1: float, F2: float, bias_filter: bool,
                      bg_freq, degeneracy, searched: np.ndarray | None = None,
                      tables: LengthTables | None = None, F3: float = 1.0,
                      should_stop=None) -> list:
    """Run MSV, bias and Viterbi filters of several models over ``searched`` sequences of ``db``.

    Stage by stage for the whole batch: each stage's kernels score every model of
    the batch at once (one launch a geometry on the GPU), then the host applies
    each model's thresholds.  Returns a :class:`CascadeResult` per model.

    Args:
        profs: the models' integer filter profiles.
        db: the :class:`~gpu_search.seqdb.SequenceDB`.
        backend: a filter backend (see module docstring).
        F1, F2: HMMER's MSV and Viterbi P-value thresholds.
        F3: HMMER's Forward threshold; with a backend that has HMMER's Forward,
            survivors that fail it are dropped before pyhmmer finishes the rest
            (n_past_vit unchanged).
        bias_filter: False for --nobias.
        bg_freq, degeneracy: background frequencies and degeneracy table (bias filter).
        searched: database indices to search (all by default).
        tables: length-dependent values for ``searched`` (computed if None).
        should_stop: called between stages; where it returns True, :class:`Stopped` is
            raised (the search's kill switch).
    """
    searched = np.arange(db.n_seqs) if searched is None else np.asarray(searched)
    if F1 >= 1.0 and F2 >= 1.0 and F3 >= 1.0 and not bias_filter:
        # --max: every P-value is <= 1, nothing is filtered
        n, every = len(searched), np.sort(searched)
        return [CascadeResult(every, n, n, n, past_msv=every, past_bias=every, past_vit=every) for _ in profs]
    if tables is None:
        tables = LengthTables(db, searched, profs[0])
    models = [_ModelCascade(prof, tables) for prof in profs]

    clock = [time.perf_counter()]
    seconds = {}

    def lap(stage):      # a stage's wall time for the batch, shared equally by its models
        now = time.perf_counter()
        seconds[stage] = (now - clock[0]) / len(profs)
        clock[0] = now
        if should_stop is not None and should_stop():
            raise Stopped()

    # 1. MSV filter
    msv_stage(models, backend.msv_batch(profs, searched), searched, tables, F1)
    lap("msv")

    # 2. bias filter
    if bias_filter:
        todo = [m for m in models if len(m.idx1)]
        if todo and hasattr(backend, "bias_batch"):
            profs_todo, idxs = [m.prof for m in todo], [m.idx1 for m in todo]
            fwds = backend.bias_batch(bias_filter_hmms(profs_todo, bg_freq, degeneracy), idxs)
            biases = BiasScores.of_batch(profs_todo, idxs, fwds, db, tables, bg_freq, degeneracy)
        else:
            biases = [BiasScores.on_cpu(m.prof, db, m.idx1, tables, bg_freq, degeneracy) for m in todo]
        for m, bias in zip(todo, biases):
            m.bias = bias
    bias_stage(models, F1, F2)
    lap("bias")

    # 3. Viterbi filter
    todo = [m for m in models if len(m.vit_idx)]
    results = backend.viterbi_batch([m.prof for m in todo], [m.vit_idx for m in todo]) if todo else []
    viterbi_stage(models, {id(m): r for m, r in zip(todo, results)}, tables, F2)
    lap("viterbi")

    # 4. (GPU only) Forward: HMMER's own score and test, for the pairs of at most
    # FORWARD_MAX_CELLS; the longer ones are kept untested, for the finishing to test
    if hasattr(backend, "forward_exact_batch") and F3 < 1.0:
        todo = [m for m in models if len(m.survivors)]
        sizes = [len(m.survivors) for m in todo]
        survivors = np.concatenate([m.survivors for m in todo]) if todo else np.zeros(0, np.int64)
        M = np.repeat(np.array([m.prof.M for m in todo], dtype=np.int64), sizes)
        short = pair_cells(db.lengths, survivors, M) <= FORWARD_MAX_CELLS
        if short.any():
            (asked,) = _split_kept(short, sizes, survivors)
            fwds = backend.forward_exact_batch([m.prof for m in todo], asked)
            forward_stage(todo, fwds, short, F3)
            lap("forward")
    return [m.result(dict(seconds), F3) for m in models]
