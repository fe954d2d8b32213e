"""The cascade's bias filter from an inexact backend (the GPU's): scores near a threshold are
settled on the CPU, so the survivors and counts are those of the exact CPU bias filter.

An inexact backend is stood in for by the CPU's own Forward score pushed up or down by up to
the margin the cascade allows; the GPU's own scores are checked against the CPU's in
tests/kernels (emulated) and tests/hmmer/test_hmmer_gpu.py (on the GPU).
"""

from __future__ import annotations

import numpy as np
import pytest

from gpu_search.hmmer import cascade, reference
from gpu_search.hmmer.models import read_hmms
from gpu_search.hmmer.profile import FilterProfile
from gpu_search.seqdb import amino_degeneracy


class NudgedBias(reference.ReferenceBackend):
    """The reference filters, and a bias filter whose Forward scores are the CPU's moved by
    ``fraction`` of the cascade's margin, alternately up and down (or by ``nats``)."""

    def __init__(self, db, fraction: float = 0.0, nats: float = 0.0):
        super().__init__(db)
        self.fraction, self.nats = fraction, nats
        self.prof = None

    def bias(self, eo, t10, t11, idx):
        zeros = np.zeros(self.db.n_seqs, dtype=np.float32)      # no length terms: the Forward score alone
        fwd = reference.bias_filter(self.prof, self._bg, amino_degeneracy(), self.db.residues, self.db.offsets,
                                    self.db.lengths, idx, length_terms=(zeros, zeros)).astype(np.float64)
        L = self.db.lengths[idx]
        margin = cascade.bias_margin(fwd, L)
        sign = np.where(np.arange(len(idx)) % 2 == 0, 1.0, -1.0)
        return (fwd + sign * (self.fraction * margin + self.nats)).astype(np.float32)

    def bias_batch(self, hmms, idxs):
        return [self.bias(*hmm, idx) for hmm, idx in zip(hmms, idxs)]


def cascades(backend, hmms, db, bg_freq, **thresholds):
    out = []
    searched = np.arange(db.n_seqs)
    for hmm in hmms:
        prof = FilterProfile.from_hmm(hmm)
        backend.prof = prof
        tables = cascade.LengthTables(db, searched, prof)
        out.append(cascade.run_cascade(prof, db, backend, bias_filter=True, bg_freq=bg_freq,
                                       degeneracy=amino_degeneracy(), tables=tables, **thresholds))
    return out


def summary(results):
    return [(r.survivors.tolist(), r.n_past_msv, r.n_past_bias, r.n_past_vit) for r in results]


@pytest.fixture(scope="module")
def models(data_dir):
    return read_hmms(data_dir / "hmms" / "txt" / "RREFam.hmm")[:3] + read_hmms(data_dir / "hmms" / "txt"
                                                                                / "Thioesterase.hmm")


@pytest.fixture(scope="module")
def bg_freq(models):
    from pyhmmer.plan7 import Background

    return np.asarray(Background(models[0].alphabet).residue_frequencies, dtype=np.float32)


# wide thresholds: many sequences pass MSV, so that many bias scores lie near a threshold
THRESHOLDS = [dict(F1=0.02, F2=1e-3), dict(F1=0.3, F2=0.05), dict(F1=0.5, F2=0.5)]


@pytest.mark.parametrize("thresholds", THRESHOLDS, ids=lambda t: f"F1={t['F1']},F2={t['F2']}")
def test_inexact_bias_scores_settled_exactly(thresholds, models, bg_freq, proteome):
    exact = cascades(reference.ReferenceBackend(proteome), models, proteome, bg_freq, **thresholds)
    nudged = NudgedBias(proteome, fraction=0.95)
    nudged._bg = bg_freq
    got = cascades(nudged, models, proteome, bg_freq, **thresholds)
    assert summary(got) == summary(exact)
    assert sum(r.n_past_msv for r in exact) > 100
    assert sum(r.n_bias_settled for r in got) > 0      # some scores were near a threshold


def test_settling_is_what_keeps_it_exact(models, bg_freq, proteome, monkeypatch):
    """Scores 0.3 nats off: exact with a margin that covers them (many settled on the CPU),
    different without one (so the comparison above can fail)."""
    thresholds = dict(F1=0.3, F2=0.05)
    exact = cascades(reference.ReferenceBackend(proteome), models, proteome, bg_freq, **thresholds)
    nudged = NudgedBias(proteome, nats=0.3)
    nudged._bg = bg_freq
    monkeypatch.setattr(cascade, "BIAS_SETTLE_NATS", 0.31)
    covered = cascades(nudged, models, proteome, bg_freq, **thresholds)
    assert summary(covered) == summary(exact)
    assert sum(r.n_bias_settled for r in covered) > 0
    monkeypatch.setattr(cascade, "BIAS_SETTLE_NATS", 0.0)
    monkeypatch.setattr(cascade, "BIAS_SETTLE_ULPS", 0.0)
    uncovered = cascades(nudged, models, proteome, bg_freq, **thresholds)
    assert summary(uncovered) != summary(exact)
    assert sum(r.n_bias_settled for r in uncovered) == 0


def test_forward_prefilter_settles_bias_scores_near_its_cutoff(models, bg_freq, proteome, monkeypatch):
    """The Forward prefilter's drop test uses the bias score too: with scores 1 nat off, no
    prefilter margin and a bias margin that covers them, the survivors are those of exact
    bias scores; without settling at the prefilter they differ."""

    class ExactForward(reference.ReferenceBackend):
        def forward(self, prof, idx):
            return reference.forward_score(prof, self.db.residues, self.db.offsets, self.db.lengths, idx)

        def forward_batch(self, profs, idxs):
            return [self.forward(prof, idx) for prof, idx in zip(profs, idxs)]

    class NudgedForward(NudgedBias):
        forward = ExactForward.forward
        forward_batch = ExactForward.forward_batch

    thresholds = dict(F1=0.3, F2=0.05, F3=1e-3)
    monkeypatch.setattr(cascade, "FORWARD_MARGIN_BITS", 0.0)
    exact = cascades(ExactForward(proteome), models, proteome, bg_freq, **thresholds)
    nudged = NudgedForward(proteome, nats=1.0)
    nudged._bg = bg_freq
    monkeypatch.setattr(cascade, "BIAS_SETTLE_NATS", 1.01)
    assert summary(cascades(nudged, models, proteome, bg_freq, **thresholds)) == summary(exact)
    settle_at = cascade.BiasScores.settle_at

    def not_at_the_prefilter(self, positions, score_nats, cutoff_nats, slack_nats=0.0):
        if slack_nats == 0.0:                 # (the prefilter's call passes a slack)
            settle_at(self, positions, score_nats, cutoff_nats)

    monkeypatch.setattr(cascade.BiasScores, "settle_at", not_at_the_prefilter)
    assert summary(cascades(nudged, models, proteome, bg_freq, **thresholds)) != summary(exact)
