"""CUDA filters against the exact reference and against HMMER (marked gpu).

Run on the GPU host: ``pytest -m gpu``.  Skipped where CuPy or a GPU is missing.
"""

from __future__ import annotations


import numpy as np
import pytest
from conftest import (PROTEIN_MODELS, TEST_DATA, assert_filter_equal, profile_of, records, run_filters_oracle,
                      tables)
from edge_cases import edge_fasta, long_deletion_model, short_overflow_fasta

from gpu_search.device import gpu_status
from gpu_search.hmmer import reference as R
from gpu_search.hmmer import scores as S
from gpu_search.hmmer import search
from gpu_search.hmmer.models import read_hmms
from gpu_search.hmmer.options import SearchOptions
from gpu_search.seqdb import open_database

pytestmark = pytest.mark.gpu
if not gpu_status()[0]:
    pytest.skip(f"no usable GPU: {gpu_status()[1]}", allow_module_level=True)

from gpu_search.hmmer.gpu import GpuBackend, msv_geometry, viterbi_geometry  # noqa: E402


def check_states(prof, db, backend, idx=None):
    """The backend's MSV and Viterbi-filter states of every sequence equal to the numpy reference's."""
    idx = np.arange(db.n_seqs) if idx is None else idx
    assert_filter_equal(f"{prof.name} M={prof.M} MSV", backend.msv(prof, idx),
                        R.msv_filter(prof, db.residues, db.offsets, db.lengths, idx))
    assert_filter_equal(f"{prof.name} M={prof.M} Viterbi", backend.viterbi(prof, idx),
                        R.viterbi_filter(prof, db.residues, db.offsets, db.lengths, idx))


@pytest.fixture(scope="module")
def gpu_proteome(proteome):
    return GpuBackend(proteome)


@pytest.mark.parametrize("model", PROTEIN_MODELS)
def test_gpu_filters_equal_hmmer(model, data_dir, proteome, proteome_path, gpu_proteome, filters_oracle):
    """Every sequence's MSV and Viterbi-filter score equal to HMMER's own."""
    path = data_dir / "hmms" / "txt" / f"{model}.hmm"
    oracle = run_filters_oracle(filters_oracle, path, proteome_path)
    for hmm in read_hmms(path):
        prof = profile_of(hmm)
        L = proteome.lengths
        xJ, ovf = gpu_proteome.msv(prof, np.arange(proteome.n_seqs))
        msv = S.msv_score(prof, xJ, prof.tjb_b(L), ovf)
        xC, vovf = gpu_proteome.viterbi(prof, np.arange(proteome.n_seqs))
        vit = S.viterbi_score(prof, xC, prof.move_w(L), vovf)
        o = oracle[hmm.name]
        assert np.array_equal(msv, o["msv"]), f"{hmm.name}: {np.sum(msv != o['msv'])} MSV scores differ"
        assert np.array_equal(vit, o["vit"]), f"{hmm.name}: {np.sum(vit != o['vit'])} Viterbi scores differ"


def test_gpu_forward_parser_equals_hmmer(data_dir, proteome, proteome_path, gpu_proteome, filters_oracle, tmp_path):
    """fwdback.cu's Forward parser: every score of the five real models against the whole
    proteome (one launch) equal to HMMER's p7_ForwardParser bit for bit, but for the few the
    kernel leaves to the CPU (NaN); then in a batch with sampled models of M 5 to 1,700 (the
    longest past the kernel's limit: all NaN), one of them over no sequence, each over its
    own sequences: HMMER's scores again."""
    from pyhmmer.easel import Alphabet, Randomness
    from pyhmmer.plan7 import HMM

    hmms, oracle = [], {}
    for model in PROTEIN_MODELS:
        path = data_dir / "hmms" / "txt" / f"{model}.hmm"
        oracle.update(run_filters_oracle(filters_oracle, path, proteome_path))
        hmms += read_hmms(path)
    profs = [profile_of(h) for h in hmms]
    every = np.arange(proteome.n_seqs)
    for hmm, got in zip(hmms, gpu_proteome.forward_exact_batch(profs, [every] * len(profs))):
        want = oracle[hmm.name]["fwd"]
        sure = ~np.isnan(got)
        assert np.array_equal(got[sure].view(np.int32), want[sure].view(np.int32)), \
            f"{hmm.name}: differs at {np.flatnonzero(sure & (got != want))[:5]}"
        assert sure.mean() >= 0.999, f"{hmm.name}: {np.sum(~sure)} flagged"
    sampled = tmp_path / "sampled.hmm"
    with open(sampled, "wb") as fh:
        for M in (5, 99, 100, 700, 1700):
            hmm = HMM.sample(Alphabet.amino(), M, Randomness(M))
            hmm.name = f"sampled{M}"
            hmm.write(fh)
    oracle.update(run_filters_oracle(filters_oracle, sampled, proteome_path))
    hmms += read_hmms(sampled)                       # the models as the oracle reads them
    profs = [profile_of(h) for h in hmms]
    rng = np.random.default_rng(5)
    idxs = [np.sort(rng.choice(proteome.n_seqs, size=int(rng.integers(20, 300)), replace=False)) for _ in profs]
    idxs[1] = np.zeros(0, dtype=np.int64)
    batch = gpu_proteome.forward_exact_batch(profs, idxs)
    for hmm, idx, got in zip(hmms[:-1], idxs, batch):
        want = oracle[hmm.name]["fwd"][idx]
        sure = ~np.isnan(got)
        assert np.array_equal(got[sure].view(np.int32), want[sure].view(np.int32)), f"{hmm.name} in a batch"
    assert np.all(np.isnan(batch[-1])) and len(batch[-1]) > 0


def test_gpu_backward_parser_and_regions_equal_hmmer(data_dir, proteome, fwdback_oracle, tmp_path):
    """fwdback.cu's three kernels launched on the GPU as the emulated test launches them (four
    threads a sequence for the parsers, one for the decoding): the Forward's and the
    Backward's rows, p7_DomainDecoding's posteriors and the expected number of domains equal
    to HMMER's bit for bit, and as many regions, as many judged multidomain, as HMMER's domain
    definition; on 400 proteome sequences and the models' consensus sequences once and twice
    (rescaled rows, two-domain regions), but for the scores the kernels leave to the CPU (NaN)."""
    import cupy as cp
    from conftest import X_CELLS, run_fwdback_oracle

    from gpu_search.gpu import load_functions
    from gpu_search.hmmer.gpu import FWDBACK_FILE, fwdback_params, job_table, pack_fwdback_profiles

    hmms = [read_hmms(data_dir / "hmms" / "txt" / f"{m}.hmm")[0] for m in ("Thioesterase", "LuxC", "RREFam")]
    hmm_path = tmp_path / "models.hmm"
    with open(hmm_path, "wb") as fh:
        for h in hmms:
            h.write(fh)
    hmms = read_hmms(hmm_path)
    rng = np.random.default_rng(9)
    picked = np.sort(rng.choice(proteome.n_seqs, size=400, replace=False))
    fasta = tmp_path / "targets.faa"
    cons = [h.consensus.upper() for h in hmms]
    fasta.write_text("".join(f">{proteome.name(i)}\n{proteome.text(i)}\n" for i in picked)
                     + "".join(f">cons{j}\n{c}\n>twice{j}\n{c}GGSGGSGGS{c}\n" for j, c in enumerate(cons)))
    db = open_database(fasta)
    oracle = run_fwdback_oracle(fwdback_oracle, hmm_path, fasta)
    profs = [profile_of(h) for h in hmms]
    n = db.n_seqs
    order = np.argsort(-db.lengths, kind="stable").astype(np.int32)          # longest first
    order_all = np.tile(order, len(profs))
    starts = [j * n for j in range(len(profs))]
    jobs = job_table(starts, [n] * len(profs), starts, [fwdback_params(p) for p in profs])
    rows = (db.lengths[order_all].astype(np.int64) + 1) * X_CELLS
    rows_at = np.concatenate([[0], np.cumsum(rows)[:-1]]).astype(np.int64)
    model_at, profiles = pack_fwdback_profiles(profs)
    forward, backward, regions_kernel = load_functions(FWDBACK_FILE, (), ("forward_parser", "backward_parser",
                                                                          "domain_regions"), 0)
    d = {k: cp.asarray(v) for k, v in dict(residues=db.residues, offsets=db.offsets.astype(np.int64), order=order_all,
                                           jobs=jobs, model_at=model_at, profiles=profiles, rows_at=rows_at).items()}
    fwd_rows, bck_rows, post = (cp.zeros(int(rows.sum()), cp.float32) for _ in range(3))
    regions = cp.zeros(int(rows.sum()), cp.int32)
    fwd_out, bck_out, nexpected = (cp.zeros(len(order_all), cp.float32) for _ in range(3))
    own, n_regions = cp.zeros(len(order_all), cp.int32), cp.zeros(len(order_all), cp.int32)
    grid = ((4 * n + 127) // 128, len(profs))
    common = (d["residues"], d["offsets"], d["order"], d["jobs"], d["model_at"], d["profiles"], d["rows_at"])
    null = np.uint64(0)                               # (whole sequences, no whole matrices)
    forward(grid, (128,), (*common[:6], null, common[6], fwd_rows, null, null, fwd_out))
    backward(grid, (128,), (*common[:6], null, common[6], fwd_rows, bck_rows, null, null, own, bck_out))
    regions_kernel(((n + 127) // 128, len(profs)), (128,), (d["jobs"], d["offsets"], d["order"], d["rows_at"],
                                                            fwd_rows, bck_rows, own, post, regions, n_regions,
                                                            nexpected))
    fwd_rows, bck_rows, post, regions, fwd_out, bck_out, nexpected, own, n_regions = (
        a.get() for a in (fwd_rows, bck_rows, post, regions, fwd_out, bck_out, nexpected, own, n_regions))
    unsure = rescaled = clustered = 0
    for k in range(len(order_all)):
        j, s = divmod(k, n)
        s = int(order[s])
        name = hmms[j].name
        want = oracle[name][s]
        cut = slice(rows_at[k], rows_at[k] + rows[k])
        for got_rows, want_rows, what in ((fwd_rows, want["fwd_rows"], "Forward"), (bck_rows, want["bck_rows"],
                                                                                    "Backward")):
            assert np.array_equal(got_rows[cut].view(np.int32), want_rows.reshape(-1).view(np.int32)), \
                f"{name} x {s}: {what} rows"
        got_post = post[cut].reshape(-1, X_CELLS)[:, :3]
        assert np.array_equal(got_post.view(np.int32), want["post"].view(np.int32)), f"{name} x {s}: posteriors"
        assert nexpected[k].view(np.int32) == want["nexpected"].view(np.int32) and own[k] == want["own"]
        flags = regions[rows_at[k]:rows_at[k] + 3 * n_regions[k]].reshape(-1, 3)[:, 2]
        assert n_regions[k] == want["nregions"] and flags.sum() == want["nclustered"], f"{name} x {s}: regions"
        clustered += want["nclustered"]
        rescaled += int((want["bck_rows"][:, X_CELLS - 1] > 1.0).any())
        if np.isnan(fwd_out[k]) or np.isnan(bck_out[k]):
            unsure += 1
            continue
        assert fwd_out[k].view(np.int32) == want["fwd"].view(np.int32), f"{name} x {s}: Forward score"
        assert bck_out[k].view(np.int32) == want["bck"].view(np.int32), f"{name} x {s}: Backward score"
    assert unsure <= len(order_all) // 100 and rescaled >= 2 * len(profs) and clustered >= 1, \
        (unsure, rescaled, clustered)


def test_gpu_segment_matrices_equal_hmmer(data_dir, proteome, fwdback_oracle, tmp_path):
    """The two parsers on the GPU over a window of each sequence, the model unihit and
    configured to the whole sequence's length (HMMER's envelope rescoring), keeping the whole
    matrices: every cell of p7_Forward's and p7_Backward's, bit for bit, then p7_Decoding's
    posteriors in place of the Backward's, p7_OptimalAccuracy's matrix and score and
    p7_OATrace's alignment, then p7_Null2_ByExpectation's odds, each residue's logf of them
    and the domain's correction, on 60 proteome sequences, the model's consensus once and
    twice, and the consensus with degenerate codes."""
    import cupy as cp
    from conftest import X_CELLS, run_segment_oracle

    from gpu_search.gpu import load_functions
    from gpu_search.hmmer.gpu import FWDBACK_FILE, fwdback_params, job_table, pack_fwdback_profiles
    from gpu_search.hmmer.gpu.packing import KP, degenerate_bits, striped_q
    from gpu_search.seqdb import amino_degeneracy

    path = data_dir / "hmms" / "txt" / "Thioesterase.hmm"
    hmm = read_hmms(path)[0]
    rng = np.random.default_rng(4)
    picked = np.sort(rng.choice(proteome.n_seqs, size=60, replace=False))
    c = hmm.consensus.upper()
    fasta = tmp_path / "targets.faa"
    fasta.write_text("".join(f">{proteome.name(i)}\n{proteome.text(i)}\n" for i in picked)
                     + f">cons\n{c}\n>twice\n{c}GGSGGSGGS{c}\n"
                     + ">degenerate\n" + "".join("BJZOUX"[j % 6] if j % 5 == 2 else a for j, a in enumerate(c)) + "\n")
    db = open_database(fasta)
    segments = [(1 + int(L) // 4, min(50, int(L) - int(L) // 4)) for L in db.lengths]
    oracle = run_segment_oracle(fwdback_oracle, path, fasta, segments, "uni", tmp_path)[hmm.name]
    prof = profile_of(hmm)
    Q, n = striped_q(prof.M), db.n_seqs
    seg = np.asarray(segments, dtype=np.int32)
    rows = (seg[:, 1].astype(np.int64) + 1) * X_CELLS
    cells = (seg[:, 1].astype(np.int64) + 1) * Q * 12
    rows_at = np.concatenate([[0], np.cumsum(rows)[:-1]]).astype(np.int64)
    matrix_at = np.concatenate([[0], np.cumsum(cells)[:-1]]).astype(np.int64)
    model_at, profiles = pack_fwdback_profiles([prof])
    jobs = job_table([0], [n], [0], [fwdback_params(prof, multihit=False)])
    d = {k: cp.asarray(v) for k, v in dict(residues=db.residues, offsets=db.offsets.astype(np.int64),
                                           order=np.arange(n, dtype=np.int32), jobs=jobs, model_at=model_at,
                                           profiles=profiles, seg=seg.reshape(-1), rows_at=rows_at,
                                           matrix_at=matrix_at).items()}
    fwd_rows, bck_rows = cp.zeros(int(rows.sum()), cp.float32), cp.zeros(int(rows.sum()), cp.float32)
    fwd_mx, bck_mx = cp.zeros(int(cells.sum()), cp.float32), cp.zeros(int(cells.sum()), cp.float32)
    fwd_out, bck_out, own = cp.zeros(n, cp.float32), cp.zeros(n, cp.float32), cp.zeros(n, cp.int32)
    forward, backward, decoding, accuracy, trace, null2_fn = load_functions(
        FWDBACK_FILE, (), ("forward_parser", "backward_parser", "posterior_decoding", "optimal_accuracy",
                           "oa_trace", "null2_by_expectation"), 0)
    common = (d["residues"], d["offsets"], d["order"], d["jobs"], d["model_at"], d["profiles"], d["seg"], d["rows_at"])
    grid = ((4 * n + 127) // 128, 1)
    forward(grid, (128,), (*common, fwd_rows, d["matrix_at"], fwd_mx, fwd_out))
    backward(grid, (128,), (*common, fwd_rows, bck_rows, d["matrix_at"], bck_mx, own, bck_out))
    bck_rows_kept, bck_mx_kept = bck_rows.get(), bck_mx.get()
    range_error = cp.zeros(n, cp.int32)
    decoding(grid, (128,), (d["jobs"], d["offsets"], d["order"], d["seg"], d["rows_at"], fwd_rows, bck_rows,
                            d["matrix_at"], fwd_mx, bck_mx, own, range_error))
    oa_rows, oa_mx, oasc = cp.zeros_like(bck_rows), cp.zeros_like(bck_mx), cp.zeros(n, cp.float32)
    accuracy(grid, (128,), (d["jobs"], d["offsets"], d["order"], d["seg"], d["model_at"], d["profiles"], d["rows_at"],
                            bck_rows, oa_rows, d["matrix_at"], bck_mx, oa_mx, oasc))
    cap = (seg[:, 1] + prof.M + 8).astype(np.int32)
    trace_at = np.concatenate([[0], np.cumsum(cap)[:-1]]).astype(np.int64)
    st, kk, ii = (cp.zeros(int(cap.sum()), cp.int32) for _ in range(3))
    tpp, trace_n = cp.zeros(int(cap.sum()), cp.float32), cp.zeros(n, cp.int32)
    trace(((n + 127) // 128, 1), (128,), (d["jobs"], d["offsets"], d["order"], d["seg"], d["model_at"], d["profiles"],
                                          d["rows_at"], bck_rows, oa_rows, d["matrix_at"], bck_mx, oa_mx,
                                          cp.asarray(trace_at), cp.asarray(cap), st, kk, ii, tpp, trace_n))
    null2, n2sc, domcorrection = cp.zeros(n * KP, cp.float32), cp.zeros(int(rows.sum()) // X_CELLS, cp.float32), \
        cp.zeros(n, cp.float32)
    null2_fn(grid, (128,), (d["residues"], d["offsets"], d["order"], d["jobs"], d["seg"], d["model_at"],
                            d["profiles"], cp.asarray(degenerate_bits(amino_degeneracy())), d["rows_at"], bck_rows,
                            d["matrix_at"], bck_mx, null2, n2sc, domcorrection))
    null2, n2sc, domcorrection = null2.get(), n2sc.get(), domcorrection.get()
    st, kk, ii, tpp, trace_n = (a.get() for a in (st, kk, ii, tpp, trace_n))
    oa_rows, oa_mx, oasc = oa_rows.get(), oa_mx.get(), oasc.get()
    pp_rows, pp_mx, range_error = bck_rows.get(), bck_mx.get(), range_error.get()
    fwd_rows, fwd_mx, fwd_out, bck_out = (a.get() for a in (fwd_rows, fwd_mx, fwd_out, bck_out))
    bck_rows, bck_mx = bck_rows_kept, bck_mx_kept
    for k, want in enumerate(oracle):
        Lr = int(seg[k, 1])
        mx = slice(matrix_at[k], matrix_at[k] + cells[k])
        xr = slice(rows_at[k], rows_at[k] + rows[k])
        assert np.array_equal(fwd_rows[xr].view(np.int32), want["fwd_rows"].reshape(-1).view(np.int32)), k
        assert np.array_equal(bck_rows[xr].view(np.int32), want["bck_rows"].reshape(-1).view(np.int32)), k
        assert np.array_equal(fwd_mx[mx].view(np.int32), want["fwd_mx"].reshape(-1).view(np.int32)), k
        got_bck = bck_mx[mx].reshape(Lr + 1, -1)[1:]
        assert np.array_equal(got_bck.view(np.int32), want["bck_mx"].reshape(Lr, -1).view(np.int32)), k
        for got, key in ((fwd_out[k], "fwd"), (bck_out[k], "bck")):
            assert np.isnan(got) or got.view(np.int32) == want[key].view(np.int32), (k, key)
        assert np.array_equal(pp_mx[mx].view(np.int32), want["pp_mx"].reshape(-1).view(np.int32)), k
        got_pp_rows = pp_rows[xr].reshape(-1, X_CELLS)[:, :X_CELLS - 1]
        assert np.array_equal(got_pp_rows.view(np.int32), want["pp_rows"][:, :X_CELLS - 1].view(np.int32)), k
        assert range_error[k] == want["range"], k
        assert np.array_equal(oa_mx[mx].view(np.int32), want["oa_mx"].reshape(-1).view(np.int32)), k
        got_oa_rows = oa_rows[xr].reshape(-1, X_CELLS)[:, :X_CELLS - 1]
        assert np.array_equal(got_oa_rows.view(np.int32), want["oa_rows"][:, :X_CELLS - 1].view(np.int32)), k
        assert oasc[k].view(np.int32) == want["oasc"].view(np.int32), k
        z = slice(trace_at[k], trace_at[k] + trace_n[k])
        got_trace = np.stack([st[z], kk[z], ii[z], tpp[z].view(np.int32).astype(np.int64) & 0xFFFFFFFF], axis=1)
        assert np.array_equal(got_trace, want["trace"]), f"{k}: trace"
        assert np.array_equal(null2[k * KP:(k + 1) * KP].view(np.int32), want["null2"].view(np.int32)), f"{k}: null2"
        at = rows_at[k] // X_CELLS
        assert np.array_equal(n2sc[at + 1:at + 1 + Lr].view(np.int32), want["n2sc"].view(np.int32)), f"{k}: n2sc"
        assert domcorrection[k].view(np.int32) == want["domcorrection"].view(np.int32), f"{k}: domcorrection"


@pytest.mark.parametrize("M", [1, 2, 5, 16, 31, 33, 64, 65, 97, 129, 300, 385, 511, 700, 705, 1024, 1184, 1500,
                               2500])
def test_gpu_filters_equal_reference_random_models(M, proteome):
    """Random models of every geometry (G, W) against the numpy reference."""
    from pyhmmer.easel import Alphabet, Randomness
    from pyhmmer.plan7 import HMM

    hmm = HMM.sample(Alphabet.amino(), M, Randomness(M))
    hmm.name = f"random{M}"
    prof = profile_of(hmm)
    sub = proteome.subset(np.arange(M % 7, proteome.n_seqs, 7 if M < 1000 else 29))
    check_states(prof, sub, GpuBackend(sub))
    assert msv_geometry(M).nodes >= M and viterbi_geometry(M).nodes >= M


@pytest.mark.parametrize("model", ["Thioesterase", "PF02826", "LuxC"])
def test_gpu_edge_cases(model, data_dir, tmp_path, filters_oracle):
    """Length 1, runs of X, '*' and gaps, overflowing scores, a 99,000-residue sequence: the
    filters' states as the reference's, the Forward scores HMMER's bit for bit."""
    hmm = read_hmms(data_dir / "hmms" / "txt" / f"{model}.hmm")[0]
    fasta = tmp_path / "edge.faa"
    edge_fasta(fasta, hmm.consensus, long_length=99_000)
    db = open_database(fasta)
    prof = profile_of(hmm)
    backend = GpuBackend(db)
    check_states(prof, db, backend)
    want = run_filters_oracle(filters_oracle, data_dir / "hmms" / "txt" / f"{model}.hmm", fasta)[hmm.name]["fwd"]
    got = backend.forward_exact(prof, np.arange(db.n_seqs))
    sure = ~np.isnan(got)
    assert np.array_equal(got[sure].view(np.int32), want[sure].view(np.int32)) and sure.mean() > 0.9


def test_gpu_viterbi16_ceiling_and_floor(data_dir, tmp_path):
    """Short sequences only: consensus fragments that overflow HMMER's Viterbi filter below the
    unclamped 16-bit ceiling, and '*'/'~' sequences below the floor; the states equal the
    reference's, and viterbi_filter16 handed those sequences to the int32 kernel."""
    from gpu_search.hmmer.gpu import viterbi16_bounds

    hmm = read_hmms(data_dir / "hmms" / "txt" / "RREFam.hmm")[0]
    fasta = tmp_path / "short.faa"
    short_overflow_fasta(fasta, hmm.consensus)
    db = open_database(fasta)
    prof = profile_of(hmm)
    assert viterbi16_bounds(prof, int(db.lengths.max()))[1] == 32766
    backend = GpuBackend(db)
    check_states(prof, db, backend)
    _, overflow = R.viterbi_filter(prof, db.residues, db.offsets, db.lengths, np.arange(db.n_seqs))
    assert overflow.any() and backend.viterbi_rescored >= overflow.sum() + 3


def test_gpu_long_deletions(tmp_path):
    """Best paths that delete 160 nodes: the Lazy-F D->D chain carried across 20 lanes."""
    hmm, seqs = long_deletion_model()
    fasta = tmp_path / "deletions.faa"
    fasta.write_text("".join(f">{name}\n{seq}\n" for name, seq in seqs))
    db = open_database(fasta)
    check_states(profile_of(hmm), db, GpuBackend(db))


def test_gpu_subset_and_order(proteome, gpu_proteome):
    """Scoring any subset, in any order, gives each sequence its own score."""
    hmm = read_hmms(TEST_DATA / "PF02826.hmm")[0]
    prof = profile_of(hmm)
    rng = np.random.default_rng(3)
    idx = rng.permutation(proteome.n_seqs)[:333]
    check_states(prof, proteome, gpu_proteome, idx)


@pytest.mark.parametrize("model", ["Thioesterase", "LuxC", "RREFam"])
def test_gpu_bias_filter_is_the_cpus(model, data_dir, proteome, gpu_proteome, tmp_path):
    """The bias filter on the GPU (bias.cu) against the CPU's (numba, HMMER's), over the whole
    proteome and the edge cases (degenerate letters, X runs, a 99,000-residue sequence): every
    score bit for bit the CPU's, but for the sequences it flags (NaN: a row's double log near a
    float rounding boundary, where CUDA's and the C library's might round apart), which the
    cascade scores on the CPU and which must be rare."""
    from pyhmmer.plan7 import Background

    from gpu_search.seqdb import amino_degeneracy

    hmm = read_hmms(data_dir / "hmms" / "txt" / f"{model}.hmm")[0]
    prof = profile_of(hmm)
    bg_freq = np.asarray(Background(hmm.alphabet).residue_frequencies, dtype=np.float32)
    eo, t10, t11 = R.bias_filter_hmm(prof, bg_freq, amino_degeneracy())
    fasta = tmp_path / "edge.faa"
    edge_fasta(fasta, hmm.consensus, long_length=99_000)
    edge = open_database(fasta)
    rng = np.random.default_rng(5)
    subset = rng.permutation(proteome.n_seqs)[:257]          # a subset in another order
    for db, backend, idx in ((proteome, gpu_proteome, np.arange(proteome.n_seqs)), (proteome, gpu_proteome, subset),
                             (edge, GpuBackend(edge), np.arange(edge.n_seqs))):
        zeros = np.zeros(db.n_seqs, dtype=np.float32)        # the Forward score alone
        ref = R.bias_filter(prof, bg_freq, amino_degeneracy(), db.residues, db.offsets, db.lengths, idx,
                            length_terms=(zeros, zeros)).astype(np.float32)
        got = backend.bias(eo, t10, t11, idx)
        sure = ~np.isnan(got)
        assert np.array_equal(got[sure].view(np.int32), ref[sure].view(np.int32)), \
            f"{hmm.name}: differs at {np.flatnonzero(sure & (got != ref))[:5]}"
        assert sure.mean() >= 0.999, f"{hmm.name}: {np.sum(~sure)} of {len(idx)} flagged"


def test_gpu_batches_of_models_equal_reference(data_dir, proteome, gpu_proteome):
    """Several models of different M in each launch (launch_groups: padded to a group's
    largest geometry; 16-bit and int32 Viterbi kernels in one batch), each over its own
    sequences, one over none: every model's MSV and Viterbi states equal to the reference's,
    its bias scores equal to the same model's alone."""
    from pyhmmer.easel import Alphabet, Randomness
    from pyhmmer.plan7 import HMM, Background

    from gpu_search.seqdb import amino_degeneracy

    hmms = [h for m in ("Thioesterase", "PF02826", "RREFam") for h in read_hmms(data_dir / "hmms" / "txt" / f"{m}.hmm")]
    for M in (12, 70, 150, 161, 300, 420):
        hmm = HMM.sample(Alphabet.amino(), M, Randomness(M))
        hmm.name = f"random{M}"
        hmms.append(hmm)
    profs = [profile_of(h) for h in hmms]
    rng = np.random.default_rng(3)
    idxs = [np.sort(rng.choice(proteome.n_seqs, size=int(rng.integers(50, 400)), replace=False)) for _ in profs]
    idxs[2] = np.zeros(0, dtype=np.int64)
    args = (proteome.residues, proteome.offsets, proteome.lengths)
    every = np.arange(proteome.n_seqs)
    for p, got in zip(profs, gpu_proteome.msv_batch(profs, every)):
        assert_filter_equal(f"{p.name} M={p.M} MSV in a batch", got, R.msv_filter(p, *args, every))
    for p, idx, got in zip(profs, idxs, gpu_proteome.viterbi_batch(profs, idxs)):
        assert_filter_equal(f"{p.name} M={p.M} Viterbi in a batch", got, R.viterbi_filter(p, *args, idx))
    bg_freq = np.asarray(Background(hmms[0].alphabet).residue_frequencies, dtype=np.float32)
    filters = [R.bias_filter_hmm(p, bg_freq, amino_degeneracy()) for p in profs]
    for f, idx, got in zip(filters, idxs, gpu_proteome.bias_batch(filters, idxs)):
        assert np.array_equal(got, gpu_proteome.bias(*f, idx))


def test_gpu_search_of_many_models_equals_cpu(proteome, monkeypatch):
    """Forty single-sequence models of the proteome (M 40 to 900: batches of several kernel
    geometries, models started out of order to fill them) with HMMER's defaults and with the
    filters opened, finished on the CPU threads, on the GPU, and by "auto" with any backlog
    sending a batch to the GPU: hits, tables and pipeline counts equal
    to the CPU's, in model order."""
    hmms = proteome_models(proteome, 40, 0.05, 0.97)
    monkeypatch.setattr(search, "BACKLOG_SECONDS", 0.0)
    for opts, on_gpu in (({}, False), ({}, True), ({}, "auto"), ({"F2": 1.0, "F3": 1.0, "E": 1e6}, True),
                         ({"F2": 1.0, "F3": 1.0, "E": 1e6}, "auto")):
        options = SearchOptions(**opts)
        cpu = list(search.hmmsearch(hmms, proteome, options, device="cpu"))
        gpu = list(search.hmmsearch(hmms, proteome, options, device="gpu", gpu_finishing=on_gpu))
        assert [r.hmm.name for r in gpu] == [h.name for h in hmms]
        assert tables(gpu) == tables(cpu)
        assert records(gpu) == records(cpu)          # (domains finished on the GPU: alignments too)
        assert [(r.stats.n_past_msv, r.stats.n_past_bias, r.stats.n_past_vit, r.stats.n_past_fwd) for r in gpu] \
            == [(r.stats.n_past_msv, r.stats.n_past_bias, r.stats.n_past_vit, r.stats.n_past_fwd) for r in cpu]


def test_finishing_matrix_budget_counts_the_pools_free_blocks():
    """The envelopes' matrix budget counts memory CuPy's pool keeps for reuse as free: a GiB
    allocated and freed (back to the pool, still used to the driver) leaves it unchanged."""
    import cupy as cp

    from gpu_search.hmmer.gpu.domaindef import CupyKernels

    kernels = CupyKernels(0)
    cp.get_default_memory_pool().free_all_blocks()   # (the GiB below then comes from the driver)
    before = kernels.matrix_floats()
    block = cp.zeros(1 << 28, dtype=cp.float32)     # 1 GiB
    del block
    assert cp.get_default_memory_pool().free_bytes() >= 1 << 30
    assert abs(kernels.matrix_floats() - before) < (64 << 20) // 12, "the pool's free GiB left out of the budget"


def test_gpu_finishing_tests_the_pairs_the_cascade_left(proteome, monkeypatch):
    """Pairs over cascade.FORWARD_MAX_CELLS leave the filters with their Forward test (F3)
    untested; the GPU's finishing takes them (MAX_GPU_CELLS raised), tests them on its own
    parser's score and drops those failing it, as p7_Pipeline does: hits, tables and pipeline
    counts equal to the CPU's, with HMMER's thresholds and a wider F3."""
    from gpu_search.hmmer import cascade
    from gpu_search.hmmer.gpufinish import GpuFinishing

    hmms = proteome_models(proteome, 30, 0.05, 0.97)
    monkeypatch.setattr(cascade, "FORWARD_MAX_CELLS", 20_000)
    monkeypatch.setattr(GpuFinishing, "MAX_GPU_CELLS", 10**8)
    made = []
    real_init = GpuFinishing.__init__

    def init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(GpuFinishing, "__init__", init)
    for opts in ({}, {"F3": 1e-3, "E": 1e6}):
        options = SearchOptions(**opts)
        cpu = list(search.hmmsearch(hmms, proteome, options, device="cpu"))
        gpu = list(search.hmmsearch(hmms, proteome, options, device="gpu", gpu_finishing=True))
        assert tables(gpu) == tables(cpu)
        assert records(gpu) == records(cpu)
        assert [(r.stats.n_past_vit, r.stats.n_past_fwd) for r in gpu] == \
            [(r.stats.n_past_vit, r.stats.n_past_fwd) for r in cpu]
    assert len(made) == 2 and all(f.pairs_failed > 0 and f.pairs_on_gpu > 0 for f in made), \
        [(f.pairs_failed, f.pairs_on_gpu, f.pairs_left) for f in made]


def proteome_models(proteome, n: int, low: float, high: float):
    """n single-sequence models built by pyhmmer from proteome proteins spread over the length
    quantiles [low, high]."""
    from pyhmmer.plan7 import Background, Builder

    alphabet = read_hmms(TEST_DATA / "PF02826.hmm")[0].alphabet
    builder, background = Builder(alphabet), Background(alphabet)
    block = proteome.digital_block(None, alphabet)
    order = np.argsort(proteome.lengths)
    picks = order[np.linspace(len(order) * low, len(order) * high, n).astype(int)]
    return [builder.build(block[int(i)], background)[0] for i in picks]


def test_kernels_compiled_ahead_of_time_need_no_nvrtc(proteome, tmp_path, monkeypatch):
    """`python -m gpu_search.gpu.compiled` builds every kernel shape a search of models up to
    --max-m asks for: the search then loads them all from cubins, never calling NVRTC, and
    gives the CPU's hits."""
    import cupy

    from gpu_search.gpu import compiled, loader

    hmms = [h for h in proteome_models(proteome, 30, 0.0, 0.6) if h.M <= 300]
    assert len(hmms) >= 20 and len({h.M for h in hmms}) >= 15
    monkeypatch.setattr(compiled, "FOLDER", tmp_path / "compiled")
    assert compiled.main(["--arch", cupy.cuda.Device().compute_capability, "--max-m", "300",
                          "--searches", "hmmsearch"]) == 0
    real = cupy.RawModule

    def no_nvrtc(*args, code=None, **kwargs):
        assert code is None, "NVRTC called for a kernel shape built ahead of time"
        return real(*args, **kwargs)

    loader.clear_cache()
    monkeypatch.setattr(cupy, "RawModule", no_nvrtc)
    try:
        gpu = list(search.hmmsearch(hmms, proteome, SearchOptions(), device="gpu", backend=GpuBackend(proteome)))
    finally:
        loader.clear_cache()
    cpu = list(search.hmmsearch(hmms, proteome, SearchOptions(), device="cpu"))
    assert tables(gpu) == tables(cpu)


@pytest.mark.parametrize("gpu_finishing", [False, True])
@pytest.mark.parametrize("opts", [{}, {"F3": 1.0}, {"F2": 1.0, "F3": 1.0, "E": 1e6}, {"nobias": True, "F3": 1.0}])
def test_gpu_search_equals_cpu(opts, gpu_finishing, proteome):
    """Four models, HMMER's defaults and filters opened, HMMER's finishing on the CPU threads
    or on the GPU where exact: the reported hits' records (scores, domains, alignments),
    tables and pipeline counts equal to the CPU's."""
    hmms = read_hmms(TEST_DATA / "four-models.hmm")
    options = SearchOptions(**opts)
    cpu = list(search.hmmsearch(hmms, proteome, options, device="cpu"))
    gpu = list(search.hmmsearch(hmms, proteome, options, device="gpu", gpu_finishing=gpu_finishing))
    assert tables(gpu) == tables(cpu)
    assert records(gpu) == records(cpu)
    assert [(r.stats.n_past_msv, r.stats.n_past_bias, r.stats.n_past_vit, r.stats.n_past_fwd) for r in gpu] == \
           [(r.stats.n_past_msv, r.stats.n_past_bias, r.stats.n_past_vit, r.stats.n_past_fwd) for r in cpu]


def cli_table_lines(tmp_path, dev, *extra):
    """The tblout and domtblout rows of `gpu-search hmmsearch --device dev` (four models vs the proteome)."""
    import subprocess
    import sys

    tbl, dom = tmp_path / f"{dev}.tbl", tmp_path / f"{dev}.dom"
    subprocess.run([sys.executable, "-m", "gpu_search", "hmmsearch", "--device", dev, *extra, "--tblout", str(tbl),
                    "--domtblout", str(dom), "-o", str(tmp_path / f"{dev}.out"),
                    str(TEST_DATA / "four-models.hmm"), str(TEST_DATA / "proteome.faa")], check=True)
    return [l for f in (tbl, dom) for l in f.read_text().splitlines() if not l.startswith("#")]


def test_cli_gpu_equals_cpu(tmp_path):
    cpu, gpu = cli_table_lines(tmp_path, "cpu"), cli_table_lines(tmp_path, "gpu")
    assert gpu == cpu and len(cpu) > 10


def test_two_gpus_equal_reference_and_cpu(proteome, tmp_path):
    """The database split across two GPUs (--gpus 0,1): every sequence's filter states equal
    to the reference, and the search's hits, tblout and domtblout equal to the CPU's."""
    if len(gpu_status()[2]) < 2:
        pytest.skip("fewer than two GPUs")
    two = GpuBackend(proteome, gpus=[0, 1])
    for name in ("PF02826", "Thioesterase"):
        check_states(profile_of(read_hmms(TEST_DATA / f"{name}.hmm")[0]), proteome, two)
    hmms = read_hmms(TEST_DATA / "four-models.hmm")
    cpu = list(search.hmmsearch(hmms, proteome, SearchOptions(), device="cpu"))
    gpu = list(search.hmmsearch(hmms, proteome, SearchOptions(), device="gpu", backend=two))
    assert tables(gpu) == tables(cpu)
    cpu, gpu = cli_table_lines(tmp_path, "cpu"), cli_table_lines(tmp_path, "gpu", "--gpus", "0,1")
    assert gpu == cpu and len(cpu) > 10


def test_streamed_database_gives_identical_results(proteome):
    """A database larger than the memory budget streams through in parts, same results."""
    hmm = read_hmms(TEST_DATA / "PF02826.hmm")[0]
    small = GpuBackend(proteome, max_resident_residues=70_000)
    assert len(small.parts) >= 9 and not any(p.resident for p in small.parts)
    check_states(profile_of(hmm), proteome, small)
    hmms = read_hmms(TEST_DATA / "four-models.hmm")
    cpu = list(search.hmmsearch(hmms, proteome, SearchOptions(), device="cpu"))
    gpu = list(search.hmmsearch(hmms, proteome, SearchOptions(), device="gpu", backend=small))
    assert tables(gpu) == tables(cpu)


def test_out_of_memory_retries_with_smaller_batches(proteome, monkeypatch):
    """A GPU out-of-memory error halves the batches and the call still succeeds."""
    import cupy

    from gpu_search.gpu import DeviceDatabase

    backend = GpuBackend(proteome, gpus=[0], max_resident_residues=400_000)   # one GPU: parts streamed
    before = backend.budget
    real_upload = DeviceDatabase._upload
    calls = {"n": 0}

    def flaky(self, chunk):
        calls["n"] += 1
        if calls["n"] == 1:
            raise cupy.cuda.memory.OutOfMemoryError(1 << 40, 0)
        return real_upload(self, chunk)

    monkeypatch.setattr(DeviceDatabase, "_upload", flaky)
    prof = profile_of(read_hmms(TEST_DATA / "Thioesterase.hmm")[0])
    check_states(prof, proteome, backend)
    assert backend.budget == before // 2 and calls["n"] > 1


def test_out_of_memory_on_several_threads_at_once(proteome, monkeypatch):
    """Filter threads hit out-of-memory errors at the same time (hmmsearch runs four): the parts
    are cut again one thread at a time, calls under way finish on the layout they started
    on, and every thread's scores are still exact."""
    import threading

    import cupy

    from gpu_search.gpu import DeviceDatabase

    backend = GpuBackend(proteome, gpus=[0], max_resident_residues=400_000)
    before = backend.budget
    real_upload = DeviceDatabase._upload
    lock, calls = threading.Lock(), {"n": 0}

    def flaky(self, chunk):
        with lock:
            calls["n"] += 1
            n = calls["n"]
        if n in (3, 4, 9):
            raise cupy.cuda.memory.OutOfMemoryError(1 << 40, 0)
        return real_upload(self, chunk)

    monkeypatch.setattr(DeviceDatabase, "_upload", flaky)
    profs = [profile_of(h) for m in ("Thioesterase", "PF02826") for h in read_hmms(TEST_DATA / f"{m}.hmm")]
    failures = []

    def work(prof):
        try:
            check_states(prof, proteome, backend)
        except BaseException as exc:        # (reported by the main thread)
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(profs[k % len(profs)],)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    assert before // 8 <= backend.budget < before


@pytest.mark.parametrize("M", [3, 40, 243, 700])
@pytest.mark.parametrize("seqs,block", [(1, 128), (2, 64), (2, 128), (2, 256)])
@pytest.mark.parametrize("cells", [1, 2])
def test_viterbi_variants_equal_reference(M, seqs, block, cells, proteome, gpu_proteome):
    """Each Viterbi-filter variant (int32 or two nodes a word, sequences per group, lanes per group,
    block size, transitions of none, some or all nodes in registers, REDUX or shuffles
    for the row maximum) against the numpy reference, on an odd count of
    sequences so that a group of two gets one sequence at the end."""
    from dataclasses import replace

    from pyhmmer.easel import Alphabet, Randomness
    from pyhmmer.plan7 import HMM

    from gpu_search.hmmer.gpu import Geometry

    hmm = HMM.sample(Alphabet.amino(), M, Randomness(100 + M))
    hmm.name = f"random{M}"
    prof = profile_of(hmm)
    idx = np.arange(0, proteome.n_seqs, 3)[: 401 if M < 500 else 151]
    rC, rO = R.viterbi_filter(prof, proteome.residues, proteome.offsets, proteome.lengths, idx)
    geo = viterbi_geometry(M, seqs=seqs, cells=cells)
    half = Geometry(max(1, geo.G // 2), -(-M // (max(1, geo.G // 2) * cells)), cells, seqs)
    for g in dict.fromkeys((geo, replace(geo, redux=False, trans_regs=0),
                            replace(geo, redux=True, trans_regs=geo.W),
                            replace(geo, trans_regs=max(1, geo.W // 2)), half, replace(half, redux=True))):
        gC, gO = gpu_proteome.viterbi(prof, idx, g, block=block)
        assert np.array_equal(gO, rO), f"{g}: overflow flags differ"
        bad = np.flatnonzero(~rO & (gC != rC))
        assert len(bad) == 0, f"{g} block={block}: xC differs for {len(bad)} sequences"


def test_gpu_domain_definition_equals_hmmer(data_dir, proteome):
    """HMMER's domain definition on the GPU (hmmer/gpu/domaindef.py) for every sequence of the
    proteome with five real models, each pair through it as HMMER with every filter open:
    the envelopes, their scores, null2 corrections, alignments' ends, and the sequences' and
    domains' scores (scores.hit_scores) equal to pyhmmer's hits, bit for bit."""
    import pyhmmer
    from domaindef_check import EVERY_SEQUENCE, check_against_hmmer
    from pyhmmer.easel import SequenceFile

    from gpu_search.hmmer.gpu.domaindef import CupyKernels, define_domains
    from gpu_search.seqdb import amino_degeneracy

    hmms = [read_hmms(data_dir / "hmms" / "txt" / f"{name}.hmm")[0] for name in PROTEIN_MODELS]
    profs = [profile_of(h) for h in hmms]
    with SequenceFile(str(data_dir / "seqs" / "938293.PRJEB85.HG003687.faa"), digital=True,
                      alphabet=hmms[0].alphabet) as sf:
        block = sf.read_block()
    want = {h.name: {hit.name: hit for hit in hits} for h, hits in
            zip(hmms, pyhmmer.hmmsearch(hmms, block, **EVERY_SEQUENCE))}
    models = np.repeat(np.arange(len(hmms)), proteome.n_seqs)
    seqs = np.tile(np.arange(proteome.n_seqs), len(hmms))
    pairs, env = define_domains(CupyKernels(0), profs, proteome.residues, proteome.offsets, models, seqs,
                                amino_degeneracy(), max_matrix_floats=1 << 26)
    checked, domains = check_against_hmmer(pairs, env, proteome, hmms, profs, want)
    # (every model of the five has some multidomain regions: 84% of the pairs are simple)
    assert checked >= 5000 and domains >= 5000 and pairs.simple.mean() > 0.75, (checked, domains,
                                                                                  pairs.simple.mean())
