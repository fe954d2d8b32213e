"""The cascade's bias filter from the GPU's scores: each is the CPU's bit for bit but for the
sequences the GPU flags (NaN: where its double log might round a row's scale to another float
than the C library's, bias.cu), which the cascade scores again on the CPU; so the survivors and
counts are those of the CPU bias filter.

The GPU is stood in for by the CPU's own Forward scores with some flagged; the GPU's own
scores are checked against the CPU's in tests/kernels (emulated) and tests/hmmer/test_hmmer_gpu.py
(on the GPU).  The interpreted scorer of flagged sequences is checked against numba's loop.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from edge_cases import edge_fasta

from gpu_search.hmmer import cascade, reference
from gpu_search.hmmer.models import read_hmms
from gpu_search.hmmer.profile import FilterProfile
from gpu_search.seqdb import amino_degeneracy, open_database


class FlaggedBias(reference.ReferenceBackend):
    """The reference filters, and a bias filter whose Forward scores are the CPU's, every
    ``every``-th one flagged (NaN; none where 0) as the GPU flags a score it cannot be sure of; ``nats``
    moves the others (a backend whose unflagged scores are wrong)."""

    def __init__(self, db, bg_freq, every: int = 3, nats: float = 0.0):
        super().__init__(db)
        self.bg_freq, self.every, self.nats = bg_freq, every, nats
        self.prof = None
        self.flagged = 0

    def bias(self, eo, t10, t11, idx):
        zeros = np.zeros(self.db.n_seqs, dtype=np.float32)      # no length terms: the Forward score alone
        fwd = reference.bias_filter(self.prof, self.bg_freq, amino_degeneracy(), self.db.residues,
                                    self.db.offsets, self.db.lengths, idx, length_terms=(zeros, zeros))
        fwd = fwd + np.float32(self.nats)
        flag = np.arange(len(idx)) % self.every == 0 if self.every else np.zeros(len(idx), bool)
        self.flagged += int(flag.sum())
        return np.where(flag, np.float32(np.nan), fwd).astype(np.float32)

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


# wide thresholds: many sequences pass MSV and reach the bias filter
THRESHOLDS = [dict(F1=0.02, F2=1e-3), dict(F1=0.3, F2=0.05), dict(F1=0.5, F2=0.5)]


@pytest.mark.parametrize("thresholds", THRESHOLDS, ids=lambda t: f"F1={t['F1']},F2={t['F2']}")
@pytest.mark.parametrize("interpreted_max", [10**9, 0], ids=["interpreted", "numba"])
def test_flagged_bias_scores_scored_again_exactly(thresholds, interpreted_max, models, bg_freq, proteome,
                                                  monkeypatch):
    """Flagged scores made exact on the CPU, by the interpreter or numba's loop: the survivors
    and counts of the CPU bias filter."""
    monkeypatch.setattr(cascade.BiasScores, "INTERPRETED_MAX", interpreted_max)
    exact = cascades(reference.ReferenceBackend(proteome), models, proteome, bg_freq, **thresholds)
    flagged = FlaggedBias(proteome, bg_freq, every=3 if interpreted_max else 2)
    got = cascades(flagged, models, proteome, bg_freq, **thresholds)
    assert summary(got) == summary(exact)
    assert sum(r.n_past_msv for r in exact) > 100
    assert sum(r.n_bias_rescored for r in got) == flagged.flagged > 0


class FlaggedBiasBatch(FlaggedBias):
    """FlaggedBias for a batch of models: each filter HMM's model found by its emissions."""

    def __init__(self, db, bg_freq, profs, every: int = 3):
        super().__init__(db, bg_freq, every)
        self.by_eo = {reference.bias_filter_hmm(p, bg_freq, amino_degeneracy())[0].tobytes(): p for p in profs}

    def bias_batch(self, hmms, idxs):
        out = []
        for (eo, t10, t11), idx in zip(hmms, idxs):
            self.prof = self.by_eo[np.asarray(eo, np.float32).tobytes()]
            out.append(self.bias(eo, t10, t11, idx))
        return out


@pytest.mark.parametrize("interpreted_max", [10**9, 0], ids=["interpreted", "numba"])
def test_flagged_bias_scores_of_a_batch_are_each_models_own(interpreted_max, models, bg_freq, proteome,
                                                           monkeypatch):
    """A batch's bias scores made from the backend's scores of every model at once
    (BiasScores.of_batch), the flagged ones scored again: each model's survivors and counts
    those of the CPU bias filter for that model alone."""
    monkeypatch.setattr(cascade.BiasScores, "INTERPRETED_MAX", interpreted_max)
    thresholds = dict(F1=0.3, F2=0.05)
    exact = cascades(reference.ReferenceBackend(proteome), models, proteome, bg_freq, **thresholds)
    profs = [FilterProfile.from_hmm(hmm) for hmm in models]
    backend = FlaggedBiasBatch(proteome, bg_freq, profs, every=2)
    got = cascade.run_cascade_batch(profs, proteome, backend, bias_filter=True, bg_freq=bg_freq,
                                    degeneracy=amino_degeneracy(), **thresholds)
    assert summary(got) == summary(exact)
    assert len({r.n_past_msv for r in exact}) > 1
    assert sum(r.n_bias_rescored for r in got) == backend.flagged > 0


def test_unflagged_scores_are_trusted(models, bg_freq, proteome):
    """The cascade uses an unflagged score as it is: scores 0.3 nats off give other survivors
    (so the comparison above can fail), and none is scored again."""
    thresholds = dict(F1=0.3, F2=0.05)
    exact = cascades(reference.ReferenceBackend(proteome), models, proteome, bg_freq, **thresholds)
    off = cascades(FlaggedBias(proteome, bg_freq, every=0, nats=0.3), models, proteome, bg_freq,
                   **thresholds)
    assert summary(off) != summary(exact)
    assert sum(r.n_bias_rescored for r in off) == 0


def test_interpreted_bias_forward_is_numbas_bit_for_bit(models, bg_freq, proteome, tmp_path):
    """reference.bias_forward_interpreted against numba's loop (_forward2.filter_forward, the
    CPU's bias filter, HMMER's): proteome sequences and the edge cases (every letter alone,
    degenerate letters, X runs, the model's consensus repeated)."""
    fasta = tmp_path / "edge.faa"
    edge_fasta(fasta, models[0].consensus, long_length=3_000)
    edge = open_database(fasta)
    rng = np.random.default_rng(11)
    for db, idx in ((proteome, np.sort(rng.permutation(proteome.n_seqs)[:40])), (edge, np.arange(edge.n_seqs))):
        for hmm in models[:2]:
            prof = FilterProfile.from_hmm(hmm)
            zeros = np.zeros(db.n_seqs, dtype=np.float32)
            want = reference.bias_filter(prof, bg_freq, amino_degeneracy(), db.residues, db.offsets, db.lengths,
                                         idx, length_terms=(zeros, zeros))
            eo, t10, t11 = reference.bias_filter_hmm(prof, bg_freq, amino_degeneracy())
            got = reference.bias_forward_interpreted(db.residues, db.offsets, db.lengths[idx], idx, eo, t10, t11)
            assert np.array_equal(got.view(np.int32), want.astype(np.float32).view(np.int32)), hmm.name


class OracleForward(reference.ReferenceBackend):
    """The reference filters, and an exact Forward that gives HMMER's own p7_ForwardParser
    scores (the filters oracle's), every third one flagged (NaN) as the GPU flags a pair it
    leaves to the CPU."""

    def __init__(self, db, fwd_by_model):
        super().__init__(db)
        self.fwd_by_model = fwd_by_model
        self.flagged = set()
        self.scored = set()           # the pairs it was asked for

    def forward_exact_batch(self, profs, idxs):
        out = []
        for prof, idx in zip(profs, idxs):
            fwd = self.fwd_by_model[prof.name][idx].copy()
            fwd[::3] = np.nan
            self.flagged |= {(prof.name, int(i)) for i in idx[::3]}
            self.scored |= {(prof.name, int(i)) for i in idx}
            out.append(fwd)
        return out


@pytest.mark.parametrize("F3, max_cells", [(1e-5, 10**12), (0.02, 10**12), (1e-5, 60_000), (1e-5, 0)])
def test_exact_forward_keeps_hmmers_passers(F3, max_cells, models, bg_freq, proteome, proteome_path, data_dir,
                                            filters_oracle, monkeypatch):
    """With an exact Forward the cascade keeps, of the Viterbi filter's survivors, exactly those
    that pass HMMER's Forward test on HMMER's own scores (esl_exp_surv of (fwd - filtersc) /
    log 2 against F3, here from the oracle's columns), every flagged one and every pair over
    FORWARD_MAX_CELLS (length x M), which is not scored: those are the result's ``untested``,
    with their filter scores (every survivor where no pair of the batch is short enough)."""
    from conftest import run_filters_oracle

    monkeypatch.setattr(cascade, "FORWARD_MAX_CELLS", max_cells)
    oracle = {}
    for name in ("RREFam", "Thioesterase"):
        oracle.update(run_filters_oracle(filters_oracle, data_dir / "hmms" / "txt" / f"{name}.hmm", proteome_path))
    thresholds = dict(F1=0.3, F2=0.05, F3=F3)
    backend = OracleForward(proteome, {name: o["fwd"] for name, o in oracle.items()})
    got = cascades(backend, models, proteome, bg_freq, **thresholds)
    kept = kept_long = 0
    for hmm, r in zip(models, got):
        o = oracle[hmm.name]
        f_tau, f_lambda = float(hmm.evalue_parameters.f_tau), float(hmm.evalue_parameters.f_lambda)
        want = []
        for i in r.past_vit:
            bits = float(np.float32(float(np.float32(o["fwd"][i] - o["bias"][i])) / 0.69314718055994529))
            p = 1.0 if bits < f_tau else math.exp(-f_lambda * (bits - f_tau))
            long = int(proteome.lengths[i]) * hmm.M > max_cells
            assert long != ((hmm.name, int(i)) in backend.scored)
            if p <= F3 or (hmm.name, int(i)) in backend.flagged or long:
                want.append(int(i))
            kept_long += long and p > F3
        assert r.survivors.tolist() == sorted(want), hmm.name
        kept += len(want)
        # the long pairs' test left to the finishing, with their filter scores
        long_ids = sorted(int(i) for i in r.past_vit if int(proteome.lengths[i]) * hmm.M > max_cells)
        assert (r.untested.tolist() if r.untested is not None else []) == long_ids
        if long_ids:
            assert np.array_equal(r.untested_filt, np.asarray(o["bias"], dtype=np.float32)[long_ids])
    # (with no pair short enough, none is tested: every one kept)
    assert 0 < kept and (kept < sum(len(r.past_vit) for r in got)) == (max_cells > 0)
    assert (kept_long > 0) == (max_cells < 10**12)        # (long pairs that fail the test, kept)


def test_filters_opened_still_leave_the_forward_test(models, proteome):
    """F1 = F2 = 1 with --nobias lets every sequence through the filters, but a Forward threshold
    below 1 still applies: with a backend that has no Forward stage each sequence is handed on
    with its test left (``untested``) and its filter score, HMMER's null score (p7_bg_NullOne:
    no bias filter); with F3 = 1 no test is left."""
    from gpu_search.hmmer.reference import ReferenceBackend

    prof = FilterProfile.from_hmm(models[0])
    searched = np.arange(0, proteome.n_seqs, 40)
    for F3 in (1e-5, 1.0):
        r = cascade.run_cascade(prof, proteome, ReferenceBackend(proteome), F1=1.0, F2=1.0, F3=F3, bias_filter=False,
                                bg_freq=None, degeneracy=amino_degeneracy(), searched=searched)
        assert r.survivors.tolist() == searched.tolist()
        if F3 >= 1.0:
            assert r.untested is None
            continue
        assert r.untested.tolist() == searched.tolist()
        L = proteome.lengths[searched].astype(np.int64)
        p1 = (np.float32(L) / np.float32(L + 1)).astype(np.float64)     # (p7_bg_SetLength's float)
        null = (L * np.log(p1) + np.log(1.0 - p1)).astype(np.float32)
        assert np.allclose(r.untested_filt, null, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("F1", [0.02, 0.3, 1.0])
@pytest.mark.parametrize("stride", [1, 3])
def test_msv_stage_gives_each_model_of_a_batch_its_own_survivors(F1, stride, models, proteome, monkeypatch):
    """The MSV stage of a batch (all models' floors, scores and P-values at once, its rows taken
    two models at a time here) keeps for each model exactly the sequences whose MSV P-value
    passes, scored as HMMER scores them one model alone, over the whole database and over a part."""
    from gpu_search.hmmer import scores

    monkeypatch.setattr(cascade, "MSV_STAGE_RESULTS", 2 * proteome.n_seqs)
    searched = np.arange(0, proteome.n_seqs, stride)
    profs = [FilterProfile.from_hmm(hmm) for hmm in models]
    assert len({p.M for p in profs}) == len(profs)
    tables = cascade.LengthTables(proteome, searched, profs[0])
    states = [reference.msv_filter(p, proteome.residues, proteome.offsets, proteome.lengths, searched) for p in profs]
    batch = [cascade._ModelCascade(p, tables) for p in profs]
    cascade.msv_stage(batch, states, searched, tables, F1)
    for prof, (xJ, ovf), m in zip(profs, states, batch):
        usc = scores.msv_score(prof, xJ, tables.tjb, ovf)
        mu, lam = float(prof.evparam[0]), float(prof.evparam[1])
        passing = np.flatnonzero(cascade.exact_pass(usc, tables.null, mu, lam, F1))
        assert 0 < len(passing) < len(searched) or F1 == 1.0
        assert np.array_equal(m.idx1, searched[passing])
        assert m.usc1.tobytes() == usc[passing].tobytes()
        assert m.null1.tobytes() == tables.null[passing].tobytes()


@pytest.mark.parametrize("F3, max_cells", [(1e-5, 10**12), (0.02, 60_000)])
def test_viterbi_and_forward_stages_of_a_batch_are_each_models_own(F3, max_cells, models, bg_freq, proteome,
                                                                   proteome_path, data_dir, filters_oracle,
                                                                   monkeypatch):
    """The Viterbi filter's and the Forward test's scores and P-values of a batch's models
    computed at once (viterbi_stage, forward_stage) give each model the survivors, untested
    pairs and filter scores it gets alone (the Forward scores HMMER's own, some flagged; long
    pairs left untested)."""
    from conftest import run_filters_oracle

    monkeypatch.setattr(cascade, "FORWARD_MAX_CELLS", max_cells)
    oracle = {}
    for name in ("RREFam", "Thioesterase"):
        oracle.update(run_filters_oracle(filters_oracle, data_dir / "hmms" / "txt" / f"{name}.hmm", proteome_path))
    fwd = {name: o["fwd"] for name, o in oracle.items()}
    thresholds = dict(F1=0.3, F2=0.05, F3=F3)
    alone = cascades(OracleForward(proteome, fwd), models, proteome, bg_freq, **thresholds)
    profs = [FilterProfile.from_hmm(hmm) for hmm in models]
    assert len({(p.evparam[2], p.evparam[4]) for p in profs}) == len(profs)    # (each its own mu and tau)
    batch = cascade.run_cascade_batch(profs, proteome, OracleForward(proteome, fwd), bias_filter=True,
                                      bg_freq=bg_freq, degeneracy=amino_degeneracy(), **thresholds)
    assert sum(len(r.survivors) for r in alone) > 0
    assert any(r.n_past_vit > len(r.survivors) for r in alone)          # (the Forward test drops some)
    for a, b in zip(alone, batch):
        assert summary([a]) == summary([b])
        assert np.array_equal(a.past_vit, b.past_vit)
        for x, y in ((a.untested, b.untested), (a.untested_filt, b.untested_filt)):
            assert (x is None and y is None) or x.tobytes() == y.tobytes()
