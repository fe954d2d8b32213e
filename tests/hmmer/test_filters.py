"""The numpy/numba filter reference against HMMER's own C filters.

Every MSV, null, bias-filter and Viterbi-filter score of every sequence must
be bit-identical to HMMER 3.4's (p7_MSVFilter, p7_bg_NullOne,
p7_bg_FilterScore, p7_ViterbiFilter, run by tests/helpers/oracle/filters_oracle.c).
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import PROTEIN_MODELS, run_filters_oracle
from edge_cases import edge_fasta

from gpu_search.hmmer import reference as R
from gpu_search.hmmer import scores as S
from gpu_search.hmmer.models import read_hmms
from gpu_search.hmmer.profile import FilterProfile, xw_move_from_record
from gpu_search.seqdb import amino_degeneracy, open_database


def optimized(hmm):
    from pyhmmer.plan7 import Background, Profile

    bg = Background(hmm.alphabet)
    gm = Profile(hmm.M, hmm.alphabet)
    gm.configure(hmm, bg, 100)
    return gm.to_optimized(), bg


def reference_scores(hmm, db):
    om, bg = optimized(hmm)
    prof = FilterProfile.from_optimized(om)
    L = db.lengths
    xJ, ovf = R.msv_filter(prof, db.residues, db.offsets, L)
    xC, vovf = R.viterbi_filter(prof, db.residues, db.offsets, L)
    return {
        "msv": S.msv_score(prof, xJ, prof.tjb_b(L), ovf),
        "vit": S.viterbi_score(prof, xC, prof.move_w(L), vovf),
        "null": S.null_score(L),
        "bias": R.bias_filter(prof, bg.residue_frequencies, amino_degeneracy(),
                              db.residues, db.offsets, L),
        "overflow": ovf,
    }


def assert_same(ours, hmmer, names, what):
    same = ours == hmmer
    if not same.all():
        bad = np.flatnonzero(~same)[:10]
        detail = "; ".join(f"{names[i]}: ours {ours[i]!r} HMMER {hmmer[i]!r}" for i in bad)
        pytest.fail(f"{what}: {len(np.flatnonzero(~same))} of {len(same)} differ: {detail}")


@pytest.mark.parametrize("model", PROTEIN_MODELS)
def test_reference_filters_equal_hmmer_on_proteome(model, data_dir, proteome, proteome_path, filters_oracle):
    hmm_path = data_dir / "hmms" / "txt" / f"{model}.hmm"
    oracle = run_filters_oracle(filters_oracle, hmm_path, proteome_path)
    hmms = read_hmms(hmm_path)
    assert len(oracle) == len(hmms)
    for hmm in hmms:
        ref = reference_scores(hmm, proteome)
        o = oracle[hmm.name]
        for what in ("msv", "null", "bias", "vit"):
            assert_same(ref[what], o[what], o["names"], f"{hmm.name} {what}")


@pytest.mark.parametrize("model", ["Thioesterase", "PF02826", "LuxC"])
def test_reference_filters_equal_hmmer_on_edge_cases(model, data_dir, tmp_path, filters_oracle):
    hmm_path = data_dir / "hmms" / "txt" / f"{model}.hmm"
    hmm = read_hmms(hmm_path)[0]
    fasta = tmp_path / "edge.faa"
    edge_fasta(fasta, hmm.consensus, long_length=99_000 if model == "PF02826" else 5_000)
    db = open_database(fasta)
    o = run_filters_oracle(filters_oracle, hmm_path, fasta)[hmm.name]
    ref = reference_scores(hmm, db)
    for what in ("msv", "null", "bias", "vit"):
        assert_same(ref[what], o[what], o["names"], f"{hmm.name} {what}")
    # the repeated consensus must really have overflowed, or the case tests nothing
    assert np.isinf(o["msv"][o["names"].index("consensus_x12")])
    assert ref["overflow"][o["names"].index("consensus_x12")]


def test_random_hmms_equal_hmmer(tmp_path, filters_oracle, proteome):
    """Random models from pyhmmer (M from 1 to 1200) against a slice of the proteome."""
    from pyhmmer.easel import Alphabet, Randomness
    from pyhmmer.plan7 import HMM

    abc = Alphabet.amino()
    rng = Randomness(7)
    sub = proteome.subset(np.arange(0, proteome.n_seqs, 25))
    fasta = tmp_path / "sub.faa"
    with open(fasta, "w") as fh:
        for i in range(sub.n_seqs):
            fh.write(f">{sub.name(i)}\n{sub.text(i)}\n")
    for M in (1, 2, 17, 129, 1200):
        hmm = HMM.sample(abc, M, rng)
        hmm.name = f"random{M}"
        path = tmp_path / f"random{M}.hmm"
        with open(path, "wb") as fh:
            hmm.write(fh)
        hmm = read_hmms(path)[0]
        o = run_filters_oracle(filters_oracle, path, fasta)[hmm.name]
        ref = reference_scores(hmm, sub)
        for what in ("msv", "null", "bias", "vit"):
            assert_same(ref[what], o[what], o["names"], f"M={M} {what}")


def test_length_dependent_costs_equal_hmmer(data_dir):
    """tjb_b(L) and the N/C/J move cost word, against what HMMER sets for each L."""
    hmm = read_hmms(data_dir / "hmms" / "txt" / "LuxC.hmm")[0]
    om, _ = optimized(hmm)
    prof = FilterProfile.from_optimized(om)
    lengths = list(range(1, 400)) + [1000, 4097, 33_333, 65_535, 99_999, 100_000]
    tjb = prof.tjb_b(lengths)
    move = prof.move_w(lengths)
    for L, t, m in zip(lengths, tjb, move):
        om.L = L
        assert om.tjb == t, f"tjb_b differs at L={L}"
        if L % 37 == 0 or L > 999:  # serializing the profile is slow: a sample
            assert xw_move_from_record(om) == m, f"move_w differs at L={L}"


def test_bias_filter_hmms_of_a_batch_are_each_models_own(data_dir):
    """The filter HMMs of several models built in one pass (a filter thread's batch) are each
    model's own, bit for bit: against p7_bg_SetFilter's sums written out one residue at a time
    in float32 (the degenerate codes' odds), and against the model built alone."""
    from pyhmmer.plan7 import Background

    hmms = [h for name in PROTEIN_MODELS for h in read_hmms(data_dir / "hmms" / "txt" / f"{name}.hmm")]
    bg = Background(hmms[0].alphabet)
    profs = [FilterProfile.from_hmm(h, bg) for h in hmms]
    assert len({p.M for p in profs}) > 1
    f = np.asarray(bg.residue_frequencies, dtype=np.float32)
    deg = amino_degeneracy()
    batch = R.bias_filter_hmms(profs, f, deg)
    K, Kp = profs[0].K, deg.shape[0]
    for prof, (eo, t10, t11) in zip(profs, batch):
        alone = R.bias_filter_hmms([prof], f, deg)[0]
        assert eo.tobytes() == alone[0].tobytes() and (t10, t11) == alone[1:]
        compo = prof.compo.astype(np.float32)
        for x in range(Kp):
            if x < K:
                want = (np.float32(1.0), compo[x] / f[x])
            elif K < x < Kp - 2:
                num, den = np.float32(0.0), np.float32(0.0)
                for y in range(K):
                    if deg[x, y]:
                        num, den = np.float32(num + compo[y]), np.float32(den + f[y])
                want = (np.float32(1.0), num / den) if den > 0 else (np.float32(0.0), np.float32(0.0))
            else:
                want = (np.float32(1.0), np.float32(1.0))
            assert eo[x].tobytes() == np.array(want, dtype=np.float32).tobytes(), (prof.name, x)
        L1 = np.float32(prof.M / 8.0)
        assert (t10, t11) == (np.float32(1.0) / (L1 + np.float32(1.0)), L1 / (L1 + np.float32(1.0)))


def test_profile_layout_matches_pyhmmer(data_dir):
    """Unstriping is right: node k's MSV cost at rbv[x, q*16+z] with k = z*Q+q+1."""
    hmm = read_hmms(data_dir / "hmms" / "txt" / "PF02826.hmm")[0]
    om, _ = optimized(hmm)
    prof = FilterProfile.from_optimized(om)
    rbv = np.asarray(om.rbv)
    Q = rbv.shape[1] // 16
    for k in (1, 2, Q, Q + 1, hmm.M):
        q, z = (k - 1) % Q, (k - 1) // Q
        assert (prof.msv_cost[:, k - 1] == rbv[:, q * 16 + z]).all()
    assert prof.vit_emit.shape == (29, hmm.M) and prof.vit_trans.shape == (8, hmm.M)


@pytest.mark.parametrize("n_gpus", [1, 2, 3, 8])
def test_database_split_across_gpus(n_gpus, proteome):
    """GpuBackend's split of the database over GPUs: contiguous ranges in database order (so
    each GPU's results are one block of the caller's array) covering every sequence once, each
    within one sequence of an equal share of the residues."""
    from types import SimpleNamespace

    from gpu_search.hmmer.gpu import GpuBackend

    ranges = GpuBackend._split_by_residues(SimpleNamespace(gpus=list(range(n_gpus)), db=proteome))
    assert len(ranges) == n_gpus
    assert np.array_equal(np.concatenate(ranges), np.arange(proteome.n_seqs))
    share = proteome.lengths.sum() / n_gpus
    for ids in ranges:
        assert len(ids) and np.all(np.diff(ids) == 1)
        assert abs(int(proteome.lengths[ids].sum()) - share) <= proteome.lengths.max()


@pytest.mark.parametrize("n_parts", [1, 3])
def test_job_orders_put_each_jobs_sequences_longest_first(n_parts, proteome, monkeypatch):
    """GpuBackend._job_orders, every job of a launch ordered at once: for each part, each job's
    sequences of that part longest first, equal lengths in the job's order (as longest_first
    orders one job alone), the jobs one after the other, and each one's places in its idx."""
    import contextlib
    from types import SimpleNamespace

    from gpu_search.hmmer.gpu import GpuBackend
    from gpu_search.hmmer.gpu import backend as B

    nothing = contextlib.nullcontext
    monkeypatch.setattr(B, "_cupy", lambda: SimpleNamespace(cuda=SimpleNamespace(Device=lambda d: nothing())))
    monkeypatch.setattr(B, "to_gpu_async", lambda cp, a, staged: a)
    n = proteome.n_seqs
    cuts = np.linspace(0, n, n_parts + 1).astype(int)
    part_of = np.repeat(np.arange(n_parts), np.diff(cuts)).astype(np.int32)
    local_index = np.arange(n) - cuts[:-1][part_of]
    layout = SimpleNamespace(parts=[SimpleNamespace(device_id=0) for _ in range(n_parts)], part_of=part_of,
                             local_index=local_index)
    rng = np.random.default_rng(7)
    idxs = [rng.choice(n, size, replace=False) for size in (50, 0, 400, 1, 1200)]
    idxs.append(np.flatnonzero(proteome.lengths == np.bincount(proteome.lengths).argmax()))   # one length
    this = SimpleNamespace(db=proteome, stream=lambda d: nothing())
    per = GpuBackend._job_orders(this, layout, idxs)
    assert len(per) == n_parts
    for k, (local, _, starts, counts, slots, _) in enumerate(per):
        assert len(slots) == len(idxs) and local.dtype == np.int32
        for j, idx in enumerate(idxs):
            sel = np.flatnonzero(part_of[idx] == k)
            by_len = np.argsort(-proteome.lengths[idx[sel]], kind="stable")
            assert counts[j] == len(sel)
            assert np.array_equal(local[starts[j]:starts[j] + counts[j]], local_index[idx[sel]][by_len])
            assert np.array_equal(slots[j], sel[by_len])


def test_profiles_packed_ahead_are_those_the_launches_use(monkeypatch):
    """GpuBackend.pack_ahead (the search's profile threads) lays a batch's profiles out in every
    geometry its MSV, Viterbi-filter and Forward launches then take: with the packers made to
    fail, the launches' host side finds each layout kept, equal to one packed now.  Models of
    several MSV groups, some sharing one, both Viterbi filters (one model with no safe 16-bit offset), and one
    too long for the Forward kernel."""
    import dataclasses

    from pyhmmer.easel import Alphabet, Randomness
    from pyhmmer.plan7 import HMM, Background

    from gpu_search.hmmer.gpu import GpuBackend
    from gpu_search.hmmer.gpu import backend as B
    from gpu_search.hmmer.gpu import packing as P

    abc, rng = Alphabet.amino(), Randomness(11)
    bg = Background(abc)
    profs = [FilterProfile.from_hmm(HMM.sample(abc, M, rng), bg) for M in (17, 40, 70, 100, 125, 129, 300, 700, 1700)]
    t = profs[3].vit_trans.copy()
    t[1, 0] = 5                                    # a positive transition: no 16-bit offset
    profs[3] = dataclasses.replace(profs[3], vit_trans=t)
    this = GpuBackend.__new__(GpuBackend)
    this.max_len = 3000
    assert P.viterbi16_bounds(profs[3], this.max_len) is None
    this.pack_ahead(profs)
    assert any(p.packed.get(("msv", B.msv_geometry(p.M))) is None for p in profs)    # (a group's geometry)

    for prof in profs:
        for key, value in prof.packed.items():
            if key == "fwdback":
                assert prof.M <= 4 * P.FWDBACK_QMAX and np.array_equal(value, P.fwdback_block(prof))
            elif key[0] == "viterbi16_bounds":
                assert value == P.viterbi16_bounds(prof, this.max_len)
            elif key[0] == "msv":
                assert np.array_equal(value, P.pack_msv_profile(prof, key[1]))
            else:
                emis, trans = P.pack_viterbi_profile(prof, key[1])
                assert np.array_equal(value[0], emis) and np.array_equal(value[1], trans)
    assert not any("fwdback" in p.packed for p in profs if p.M > 4 * P.FWDBACK_QMAX)

    def fail(*args):
        raise AssertionError("packed on the filter thread")

    for name in ("pack_msv_profile", "pack_viterbi_profile", "viterbi16_bounds"):
        monkeypatch.setattr(B, name, fail)
    monkeypatch.setattr(P, "fwdback_block", fail)

    def run(kind, idx, n_jobs, groups, out_dtype, shared=False):      # the launches' host side only
        return np.zeros((n_jobs, len(idx)), out_dtype) if shared else [np.zeros(len(x), out_dtype) for x in idx]

    this._run = run
    idx = np.arange(10)
    this._msv(profs, idx, None)
    this._viterbi(profs, [idx] * len(profs), None, None)
    this._forward_exact(profs, [idx] * len(profs))
