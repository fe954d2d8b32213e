"""HMMER's Forward parser as the GPU computes it (``hmmer/gpu/fwdback.cu``), the CUDA code itself
run on the CPU by tests/helpers/warp_emulator.cpp, against HMMER's own p7_ForwardParser (the
filters oracle, linked to the libhmmer of pyhmmer's wheel): the same float, bit for bit.

The pairs come from real models against proteome sequences, and against sequences that
each model scores highly (its consensus, two copies of it in one sequence: HMMER's sparse
rescaling and its J state), for models on both sides of HMMER's M = 100 switch between a
fully serialised and an early-exit D->D pass, a model of M <= 8 (Q = 2 vectors with padding
nodes), the filters' edge cases and a model of long deletions; then the Backward parser and the
special-state rows of both (what domain definition starts from) against HMMER's
p7_BackwardParser (the fwdback oracle).  The same checks run on a GPU in
tests/hmmer/test_hmmer_gpu.py.
"""

from __future__ import annotations

import ctypes
import re
from pathlib import Path

import emulator_build
import numpy as np
import pytest
from conftest import X_CELLS, run_filters_oracle, run_fwdback_oracle, run_segment_oracle

from gpu_search.hmmer.gpu.kernels import FWDBACK_FILE
from gpu_search.hmmer.gpu.packing import (KP, degenerate_bits, fwdback_params, job_table, pack_fwdback_profiles,
                                          striped_q)
from gpu_search.hmmer.models import read_hmms
from gpu_search.hmmer.profile import FilterProfile
from gpu_search.seqdb import amino_degeneracy, open_database

pytestmark = pytest.mark.skipif(emulator_build.CXX is None, reason="no C++ compiler")
_P = ctypes.c_void_p


def _p(a: np.ndarray):
    assert a.flags.c_contiguous
    return a.ctypes.data_as(_P)


class EmulatedForwardParser:
    """fwdback.cu's forward_parser on the CPU: ``scores`` returns, per model, the scores of its
    sequences (float32, NaN where the kernel leaves a pair to the CPU), as the GPU backend
    lays out the models and their sequences (``job_table``, ``pack_fwdback_profiles``)."""

    def __init__(self, directory: Path, defines: tuple = ()):
        name = "fwdback" + "".join(d.replace("-D", "_").replace("=", "_") for d in defines) + ".so"
        path = emulator_build.build(directory / name, [f'-DFWDBACK_CU="{FWDBACK_FILE}"', *defines])
        self.lib = ctypes.CDLL(str(path))
        self.lib.emulator_error.restype = ctypes.c_char_p

    def _layout(self, profs, db, idxs):
        order, starts, counts = [], [], []
        for idx in idxs:                                  # each model's sequences longest first
            idx = np.asarray(idx, dtype=np.int64)
            starts.append(sum(counts))
            counts.append(len(idx))
            order.append(idx[np.argsort(-db.lengths[idx], kind="stable")])
        order_all = np.concatenate(order).astype(np.int32)
        jobs = job_table(starts, counts, starts, [fwdback_params(p) for p in profs])
        # each pair's special-state rows (0..L, X_CELLS floats each), in the order of out
        rows = (db.lengths[order_all].astype(np.int64) + 1) * X_CELLS
        rows_at = np.concatenate([[0], np.cumsum(rows)[:-1]]).astype(np.int64)
        common = (_p(np.ascontiguousarray(db.residues)), _p(np.ascontiguousarray(db.offsets, dtype=np.int64)),
                  _p(order_all), _p(jobs), ctypes.c_int(len(profs)), ctypes.c_int(max(counts)))
        model_at, profiles = pack_fwdback_profiles(profs)
        keep = (order_all, jobs, model_at, profiles)        # (alive through the calls)
        return common, keep, order, starts, rows_at, int(rows.sum())

    def _back(self, idxs, order, starts, out):
        got = []
        for idx, o, start in zip(idxs, order, starts):    # back into each idx's order
            place = {int(s): start + j for j, s in enumerate(o)}
            got.append(out[[place[int(s)] for s in idx]])
        return got

    def scores(self, profs, db, idxs, seed: int = 1) -> list:
        """forward_parser's scores alone (no rows written)."""
        common, keep, order, starts, _, _ = self._layout(profs, db, idxs)
        out = np.full(len(keep[0]), -1.0, dtype=np.float32)
        rc = self.lib.emulate_forward_parser(ctypes.c_uint(seed), *common, _p(keep[2]), _p(keep[3]), None, None,
                                             None, None, None, _p(out))
        assert rc == 0, self.lib.emulator_error().decode()
        return self._back(idxs, order, starts, out)

    def forward_backward(self, profs, db, idxs, seed: int = 1) -> list:
        """Per model, per sequence, a dict: the Forward and Backward scores (fwd, bck) and rows
        (fwd_rows, bck_rows: (L+1, X_CELLS) float32), the Backward's own-scales flag (own), the
        posteriors (post: (L+1, 3) mocc, btot, etot), nexpected, and the regions ((n, 3) int:
        i, j, multidomain)."""
        common, keep, order, starts, rows_at, n_rows = self._layout(profs, db, idxs)
        n = len(keep[0])
        fwd_out, bck_out, nexpected = (np.full(n, -1.0, dtype=np.float32) for _ in range(3))
        own, n_regions = np.full(n, -1, dtype=np.int32), np.full(n, -1, dtype=np.int32)
        fwd_rows, bck_rows, post = (np.full(n_rows, -1.0, dtype=np.float32) for _ in range(3))
        regions = np.full(n_rows, -1, dtype=np.int32)
        rc = self.lib.emulate_forward_parser(ctypes.c_uint(seed), *common, _p(keep[2]), _p(keep[3]), None,
                                             _p(rows_at), _p(fwd_rows), None, None, _p(fwd_out))
        assert rc == 0, self.lib.emulator_error().decode()
        rc = self.lib.emulate_backward_parser(ctypes.c_uint(seed + 1), *common, _p(keep[2]), _p(keep[3]), None,
                                              _p(rows_at), _p(fwd_rows), _p(bck_rows), None, None, _p(own),
                                              _p(bck_out))
        assert rc == 0, self.lib.emulator_error().decode()
        offsets = np.ascontiguousarray(db.offsets, dtype=np.int64)
        rc = self.lib.emulate_domain_regions(ctypes.c_uint(seed + 2), common[3], common[4], common[5], _p(offsets),
                                             common[2], _p(rows_at), _p(fwd_rows), _p(bck_rows), _p(own), _p(post),
                                             _p(regions), _p(n_regions), _p(nexpected))
        assert rc == 0, self.lib.emulator_error().decode()
        lengths = db.lengths[keep[0]].astype(np.int64)

        def cut(rows, j, width=X_CELLS):
            return rows[rows_at[j]:rows_at[j] + (lengths[j] + 1) * X_CELLS].reshape(-1, X_CELLS)[:, :width]

        per_pair = [dict(fwd=fwd_out[j], bck=bck_out[j], fwd_rows=cut(fwd_rows, j), bck_rows=cut(bck_rows, j),
                         own=int(own[j]), post=cut(post, j, 3), nexpected=nexpected[j],
                         regions=regions[rows_at[j]:rows_at[j] + 3 * n_regions[j]].reshape(-1, 3))
                    for j in range(n)]
        got = []
        for idx, o, start in zip(idxs, order, starts):
            place = {int(s): start + j for j, s in enumerate(o)}
            got.append([per_pair[place[int(s)]] for s in idx])
        return got


    def segment_matrices(self, profs, db, idxs, segments, multihit: bool, seed: int = 1) -> list:
        """p7_Forward and p7_Backward as HMMER's domain definition runs them: over a segment of
        each sequence (segments[m][j] = (first residue, length) for idxs[m][j]), the model
        configured to the whole sequence's length, multihit (a region's stochastic traces) or
        unihit (an envelope's rescoring), keeping the whole matrices; then p7_Decoding's
        posteriors.  Per model, per sequence, a dict: fwd, bck (scores), fwd_rows, bck_rows
        ((Lr+1, X_CELLS)), fwd_mx, bck_mx ((Lr+1, Q, 3, 4): P7_OMX's dpf rows, vectors of M, D,
        I, lane last), pp_rows, pp_mx (the posteriors, the same shapes), range (1 where the
        decoding's scale product overflowed), the optimal accuracy's oa_rows, oa_mx and oasc,
        and its trace ((n, 4): state, node, residue, the posterior's float bits); then null2 by
        expectation: null2 (the KP odds), n2sc (logf of the segment's residues') and
        domcorrection (their sum)."""
        order, starts, counts, segs = [], [], [], []
        for idx, seg in zip(idxs, segments):
            idx = np.asarray(idx, dtype=np.int64)
            by_len = np.argsort(-db.lengths[idx], kind="stable")
            starts.append(sum(counts))
            counts.append(len(idx))
            order.append(idx[by_len])
            segs.append(np.asarray(seg, dtype=np.int32).reshape(-1, 2)[by_len])
        order_all = np.concatenate(order).astype(np.int32)
        seg_all = np.ascontiguousarray(np.concatenate(segs).astype(np.int32))
        jobs = job_table(starts, counts, starts, [fwdback_params(p, multihit) for p in profs])
        model_at, profiles = pack_fwdback_profiles(profs)
        Qs = np.concatenate([np.full(c, striped_q(p.M)) for p, c in zip(profs, counts)]).astype(np.int64)
        Lr = seg_all[:, 1].astype(np.int64)
        rows = (Lr + 1) * X_CELLS
        rows_at = np.concatenate([[0], np.cumsum(rows)[:-1]]).astype(np.int64)
        cells = (Lr + 1) * Qs * 12
        matrix_at = np.concatenate([[0], np.cumsum(cells)[:-1]]).astype(np.int64)
        n = len(order_all)
        fwd_out, bck_out = np.full(n, -1.0, np.float32), np.full(n, -1.0, np.float32)
        own = np.full(n, -1, np.int32)
        fwd_rows, bck_rows = np.full(rows.sum(), -1.0, np.float32), np.full(rows.sum(), -1.0, np.float32)
        fwd_mx, bck_mx = np.full(cells.sum(), -1.0, np.float32), np.full(cells.sum(), -1.0, np.float32)
        common = (_p(np.ascontiguousarray(db.residues)), _p(np.ascontiguousarray(db.offsets, dtype=np.int64)),
                  _p(order_all), _p(jobs), ctypes.c_int(len(profs)), ctypes.c_int(max(counts)), _p(model_at),
                  _p(profiles), _p(seg_all), _p(rows_at))
        rc = self.lib.emulate_forward_parser(ctypes.c_uint(seed), *common, _p(fwd_rows), _p(matrix_at), _p(fwd_mx),
                                             _p(fwd_out))
        assert rc == 0, self.lib.emulator_error().decode()
        rc = self.lib.emulate_backward_parser(ctypes.c_uint(seed + 1), *common, _p(fwd_rows), _p(bck_rows),
                                              _p(matrix_at), _p(bck_mx), _p(own), _p(bck_out))
        assert rc == 0, self.lib.emulator_error().decode()
        bck_rows_kept, bck_mx_kept = bck_rows.copy(), bck_mx.copy()
        range_error = np.full(n, -1, np.int32)
        rc = self.lib.emulate_posterior_decoding(ctypes.c_uint(seed + 2), _p(jobs), ctypes.c_int(len(profs)),
                                                 ctypes.c_int(max(counts)),
                                                 _p(np.ascontiguousarray(db.offsets, dtype=np.int64)), _p(order_all),
                                                 _p(seg_all), _p(rows_at), _p(fwd_rows), _p(bck_rows), _p(matrix_at),
                                                 _p(fwd_mx), _p(bck_mx), _p(own), _p(range_error))
        assert rc == 0, self.lib.emulator_error().decode()
        pp_rows, pp_mx, bck_rows, bck_mx = bck_rows, bck_mx, bck_rows_kept, bck_mx_kept
        oa_rows, oa_mx = np.full(rows.sum(), -1.0, np.float32), np.full(cells.sum(), -1.0, np.float32)
        oasc = np.full(n, -1.0, np.float32)
        rc = self.lib.emulate_optimal_accuracy(ctypes.c_uint(seed + 3), _p(jobs), ctypes.c_int(len(profs)),
                                               ctypes.c_int(max(counts)),
                                               _p(np.ascontiguousarray(db.offsets, dtype=np.int64)), _p(order_all),
                                               _p(seg_all), _p(model_at), _p(profiles), _p(rows_at), _p(pp_rows),
                                               _p(oa_rows), _p(matrix_at), _p(pp_mx), _p(oa_mx), _p(oasc))
        assert rc == 0, self.lib.emulator_error().decode()
        cap = (Lr + np.array([p.M for p, c in zip(profs, counts) for _ in range(c)]) + 8).astype(np.int32)
        trace_at = np.concatenate([[0], np.cumsum(cap)[:-1]]).astype(np.int64)
        st, kk, ii = (np.full(cap.sum(), -1, np.int32) for _ in range(3))
        tpp, trace_n = np.full(cap.sum(), -1.0, np.float32), np.full(n, -2, np.int32)
        rc = self.lib.emulate_oa_trace(ctypes.c_uint(seed + 4), _p(jobs), ctypes.c_int(len(profs)),
                                       ctypes.c_int(max(counts)), _p(np.ascontiguousarray(db.offsets, dtype=np.int64)),
                                       _p(order_all), _p(seg_all), _p(model_at), _p(profiles), _p(rows_at),
                                       _p(pp_rows), _p(oa_rows), _p(matrix_at), _p(pp_mx), _p(oa_mx), _p(trace_at),
                                       _p(cap), _p(st), _p(kk), _p(ii), _p(tpp), _p(trace_n))
        assert rc == 0, self.lib.emulator_error().decode()

        null2, n2sc = np.full(n * KP, -1.0, np.float32), np.full(rows.sum() // X_CELLS, -1.0, np.float32)
        domcorrection = np.full(n, -1.0, np.float32)
        degenerate = degenerate_bits(amino_degeneracy())
        rc = self.lib.emulate_null2_by_expectation(ctypes.c_uint(seed + 5), *common[:6], _p(seg_all), _p(model_at),
                                                   _p(profiles), _p(degenerate), _p(rows_at), _p(pp_rows),
                                                   _p(matrix_at), _p(pp_mx), _p(null2), _p(n2sc), _p(domcorrection))
        assert rc == 0, self.lib.emulator_error().decode()

        def trace(j):
            z = slice(trace_at[j], trace_at[j] + max(trace_n[j], 0))
            return np.stack([st[z], kk[z], ii[z], tpp[z].view(np.int32).astype(np.int64) & 0xFFFFFFFF], axis=1)

        per_pair = []
        for j in range(n):
            shape = (Lr[j] + 1, Qs[j], 3, 4)
            per_pair.append(dict(
                fwd=fwd_out[j], bck=bck_out[j],
                fwd_rows=fwd_rows[rows_at[j]:rows_at[j] + rows[j]].reshape(-1, X_CELLS),
                bck_rows=bck_rows[rows_at[j]:rows_at[j] + rows[j]].reshape(-1, X_CELLS),
                fwd_mx=fwd_mx[matrix_at[j]:matrix_at[j] + cells[j]].reshape(shape),
                bck_mx=bck_mx[matrix_at[j]:matrix_at[j] + cells[j]].reshape(shape),
                pp_rows=pp_rows[rows_at[j]:rows_at[j] + rows[j]].reshape(-1, X_CELLS),
                pp_mx=pp_mx[matrix_at[j]:matrix_at[j] + cells[j]].reshape(shape), range=int(range_error[j]),
                oa_rows=oa_rows[rows_at[j]:rows_at[j] + rows[j]].reshape(-1, X_CELLS),
                oa_mx=oa_mx[matrix_at[j]:matrix_at[j] + cells[j]].reshape(shape), oasc=oasc[j], trace=trace(j),
                null2=null2[j * KP:(j + 1) * KP],
                n2sc=n2sc[rows_at[j] // X_CELLS + 1:rows_at[j] // X_CELLS + 1 + Lr[j]],
                domcorrection=domcorrection[j]))
        got = []
        for idx, o, start in zip(idxs, order, starts):
            place = {int(s): start + j for j, s in enumerate(o)}
            got.append([per_pair[place[int(s)]] for s in idx])
        return got


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("emulated_fwdback")


def _profile(hmm) -> FilterProfile:
    from pyhmmer.plan7 import Background, Profile

    gm = Profile(hmm.M, hmm.alphabet)
    gm.configure(hmm, Background(hmm.alphabet), 100)
    return FilterProfile.from_optimized(gm.to_optimized())


def _sampled_hmm(M: int, seed: int):
    from pyhmmer.easel import Alphabet, Randomness
    from pyhmmer.plan7 import HMM

    hmm = HMM.sample(Alphabet.amino(), M, Randomness(seed))
    hmm.name = f"sampled{M}".encode() if isinstance(hmm.name, bytes) else f"sampled{M}"
    return hmm


def _consensus(hmm) -> str:
    c = hmm.consensus
    return (c.decode() if isinstance(c, bytes) else c).upper()


def _targets(hmms, proteome, n_proteome: int, rng) -> list[tuple[str, str]]:
    """(name, sequence): proteome sequences of every length, then for each model its consensus
    and two copies of it with random linkers and flanks."""
    by_len = np.argsort(proteome.lengths, kind="stable")
    picked = np.sort(by_len[np.linspace(0, proteome.n_seqs - 1, n_proteome).astype(int)])
    out = [(proteome.name(i), proteome.text(i)) for i in picked]
    letters = np.array(list("ACDEFGHIKLMNPQRSTVWY"))
    for j, hmm in enumerate(hmms):
        cons = _consensus(hmm)
        linker = lambda n: "".join(rng.choice(letters, n))    # noqa: E731
        out.append((f"cons{j}", cons))
        out.append((f"twice{j}", linker(30) + cons + linker(45) + cons + linker(20)))
    return out


def _check(hmms, hmm_path, targets, tmp_path, build_dir, filters_oracle, defines=()):
    fasta = tmp_path / "targets.faa"
    fasta.write_text("".join(f">{n}\n{s}\n" for n, s in targets))
    db = open_database(fasta)
    oracle = run_filters_oracle(filters_oracle, hmm_path, fasta)
    profs = [_profile(h) for h in read_hmms(hmm_path)]     # the models as the oracle reads them
    idx = np.arange(db.n_seqs)
    got = EmulatedForwardParser(build_dir, defines).scores(profs, db, [idx] * len(profs))
    for hmm, scores in zip(hmms, got):
        name = hmm.name.decode() if isinstance(hmm.name, bytes) else hmm.name
        want = oracle[name]["fwd"]
        yield name, scores, want, oracle[name]["names"]


@pytest.mark.parametrize("models", [["Thioesterase", "PF02826"], ["LuxC", "KR", "RREFam"]])
def test_forward_parser_equals_hmmer(models, data_dir, proteome, tmp_path, build_dir, filters_oracle):
    """Real models (M 97 to 1,184) against proteome sequences and their own consensus: every
    Forward score equal to HMMER's p7_ForwardParser, bit for bit; the high-scoring targets
    go through sparse rescaling (they score far above e^10)."""
    hmms = [read_hmms(data_dir / "hmms" / "txt" / f"{m}.hmm")[0] for m in models]
    hmm_path = tmp_path / "models.hmm"
    with open(hmm_path, "wb") as fh:
        for h in hmms:
            h.write(fh)
    rng = np.random.default_rng(7)
    targets = _targets(hmms, proteome, 12, rng)
    for name, got, want, names in _check(hmms, hmm_path, targets, tmp_path, build_dir, filters_oracle):
        bad = np.flatnonzero(got.view(np.int32) != want.view(np.int32))
        assert len(bad) == 0, f"{name}: {[(names[i], got[i], want[i]) for i in bad[:5]]}"
        assert np.max(want) > 30.0, f"{name}: no target scored high enough to rescale"


def test_forward_parser_small_and_switch_models(tmp_path, proteome, build_dir, filters_oracle):
    """Sampled models of M 5 (Q = 2, padding nodes in three lanes), 99, 100 and 101: both of
    HMMER's D->D pass variants run (fully serialised below M = 100, with the early exit from
    100; they differ only where a pass that changed no cell is followed by one that would,
    which none of these inputs has)."""
    hmms = [_sampled_hmm(M, seed) for M, seed in ((5, 1), (99, 2), (100, 3), (101, 4))]
    hmm_path = tmp_path / "sampled.hmm"
    with open(hmm_path, "wb") as fh:
        for h in hmms:
            h.write(fh)
    targets = _targets(hmms, proteome, 8, np.random.default_rng(11))
    for name, got, want, names in _check(hmms, hmm_path, targets, tmp_path, build_dir, filters_oracle):
        bad = np.flatnonzero(got.view(np.int32) != want.view(np.int32))
        assert len(bad) == 0, f"{name}: {[(names[i], got[i], want[i]) for i in bad[:5]]}"


def test_forward_parser_guard_leaves_unsure_pairs_to_the_cpu(data_dir, proteome, tmp_path, build_dir,
                                                             filters_oracle):
    """With the log guard raised to 1 every score that took a log is flagged (NaN), so the host
    scores it again on the CPU: the flag reaches the output."""
    hmms = [read_hmms(data_dir / "hmms" / "txt" / "Thioesterase.hmm")[0]]
    hmm_path = data_dir / "hmms" / "txt" / "Thioesterase.hmm"
    targets = _targets(hmms, proteome, 3, np.random.default_rng(3))
    for name, got, want, names in _check(hmms, hmm_path, targets, tmp_path, build_dir, filters_oracle,
                                         defines=("-DLOG_GUARD=1.0",)):
        assert np.all(np.isnan(got)), f"{name}: {got}"


def test_forward_parser_edge_cases_and_long_deletions(data_dir, tmp_path, build_dir, filters_oracle):
    """Length 1 (every letter), runs of X, degenerate letters, '*' and '~', the consensus
    repeated twelve times (rescaled again and again), a 3,000-residue random sequence; and a
    model whose best paths delete 160 nodes (D->D chains carried across all four lanes, pass
    after pass): HMMER's scores bit for bit."""
    from edge_cases import edge_fasta, long_deletion_model

    hmm = read_hmms(data_dir / "hmms" / "txt" / "Thioesterase.hmm")[0]
    deletion, seqs = long_deletion_model()
    hmm_path = tmp_path / "edge.hmm"
    with open(hmm_path, "wb") as fh:
        hmm.write(fh)
        deletion.write(fh)
    edge = tmp_path / "edge_cases.faa"
    edge_fasta(edge, _consensus(hmm), long_length=3_000)
    targets = []
    name = None
    for line in edge.read_text().splitlines():
        if line.startswith(">"):
            name = line[1:].split()[0]
            targets.append([name, ""])
        else:
            targets[-1][1] += line
    targets += [list(s) for s in seqs]
    for name, got, want, names in _check(read_hmms(hmm_path), hmm_path, targets, tmp_path, build_dir,
                                         filters_oracle):
        bad = np.flatnonzero(got.view(np.int32) != want.view(np.int32))
        assert len(bad) == 0, f"{name}: {[(names[i], got[i], want[i]) for i in bad[:5]]}"


def _same(a, b) -> bool:
    return np.array_equal(np.asarray(a, np.float32).view(np.int32), np.asarray(b, np.float32).view(np.int32))


def hmmer_regions(post) -> list:
    """The regions of p7_domaindef_ByPosteriorHeuristics from HMMER's posteriors (mocc, btot,
    etot rows): its loop and is_multidomain_region in float32, written from HMMER's C here
    (the kernel's own transcription is what is checked)."""
    f = np.float32
    mocc, btot, etot = post[:, 0], post[:, 1], post[:, 2]
    regions, i, triggered = [], -1, False
    for j in range(1, len(mocc)):
        if not triggered:
            if f(mocc[j] - f(btot[j] - btot[j - 1])) < f(0.10):
                i = j
            elif i == -1:
                i = j
            if mocc[j] >= f(0.25):
                triggered = True
        elif f(mocc[j] - f(etot[j] - etot[j - 1])) < f(0.10):
            best = f(-1.0)
            for z in range(i, j + 1):
                best = max(best, min(f(etot[z] - etot[i - 1]), f(btot[j] - btot[z - 1])))
            regions.append((i, j, int(best >= f(0.20))))
            i, triggered = -1, False
    return regions


@pytest.mark.parametrize("models", [["Thioesterase", "PF02826"], ["LuxC", "RREFam"]])
def test_backward_parser_and_regions_equal_hmmer(models, data_dir, proteome, tmp_path, build_dir, fwdback_oracle):
    """The Forward parser's special-state rows and the Backward parser's rows and score (what
    HMMER's domain definition starts from) equal to HMMER's p7_ForwardParser and
    p7_BackwardParser bit for bit, row by row; then p7_DomainDecoding's posteriors (mocc,
    btot, etot) and the expected number of domains bit for bit, and the regions of HMMER's
    domain definition: as many, as many judged multidomain, and the same bounds as HMMER's
    loop gives on HMMER's posteriors.  On proteome sequences and each model's consensus once
    and twice (rescaled rows, two-domain regions)."""
    hmms = [read_hmms(data_dir / "hmms" / "txt" / f"{m}.hmm")[0] for m in models]
    hmm_path = tmp_path / "models.hmm"
    with open(hmm_path, "wb") as fh:
        for h in hmms:
            h.write(fh)
    targets = _targets(hmms, proteome, 8, np.random.default_rng(17))
    fasta = tmp_path / "targets.faa"
    fasta.write_text("".join(f">{n}\n{s}\n" for n, s in targets))
    db = open_database(fasta)
    oracle = run_fwdback_oracle(fwdback_oracle, hmm_path, fasta)
    hmms = read_hmms(hmm_path)
    profs = [_profile(h) for h in hmms]
    idx = np.arange(db.n_seqs)
    got = EmulatedForwardParser(build_dir).forward_backward(profs, db, [idx] * len(profs))
    rescaled = regions = clustered = 0
    for hmm, pairs in zip(hmms, got):
        name = hmm.name.decode() if isinstance(hmm.name, bytes) else hmm.name
        for target, want, have in zip(targets, oracle[name], pairs):
            what = f"{name} x {target[0]}"
            for rows in ("fwd_rows", "bck_rows", "post"):
                first = _first_row(have[rows], want[rows])
                assert first == -1, f"{what}: {rows} differ from row {first}"
            for value in ("fwd", "bck", "nexpected"):
                assert _same(have[value], want[value]), f"{what}: {value} {have[value]} against {want[value]}"
            assert have["own"] == want["own"], what
            assert [tuple(r) for r in have["regions"]] == hmmer_regions(want["post"]), what
            assert len(have["regions"]) == want["nregions"], what
            assert int(have["regions"][:, 2].sum()) == want["nclustered"], what
            rescaled += int((want["bck_rows"][:, X_CELLS - 1] > 1.0).any())
            regions += want["nregions"]
            clustered += want["nclustered"]
    assert rescaled >= 2 * len(hmms) and regions > 2 * len(hmms) and clustered >= 1, (rescaled, regions, clustered)


def _first_row(a, b) -> int:
    differs = np.flatnonzero((np.asarray(a, np.float32).view(np.int32) != np.asarray(b, np.float32).view(np.int32))
                             .any(axis=1))
    return int(differs[0]) if len(differs) else -1


@pytest.mark.parametrize("mode", ["uni", "multi"])
def test_segment_matrices_equal_hmmer(mode, data_dir, proteome, tmp_path, build_dir, fwdback_oracle):
    """The two parsers over a segment of each sequence with the model configured to the whole
    sequence's length, unihit (an envelope's rescoring) or multihit (a region's traces),
    keeping every row of M, D and I: HMMER's p7_Forward and p7_Backward bit for bit, cell by
    cell, their special-state rows and scores too; then the posteriors of each cell and row
    as HMMER's p7_Decoding gives them, and (unihit, as HMMER aligns an envelope) the optimal
    accuracy matrix and score of p7_OptimalAccuracy and the alignment p7_OATrace traces."""
    hmms = [read_hmms(data_dir / "hmms" / "txt" / "Thioesterase.hmm")[0],
            read_hmms(data_dir / "hmms" / "txt" / "RREFam.hmm")[0]]
    hmm_path = tmp_path / "models.hmm"
    with open(hmm_path, "wb") as fh:
        for h in hmms:
            h.write(fh)
    hmms = read_hmms(hmm_path)
    targets = _targets(hmms, proteome, 6, np.random.default_rng(23))
    cons = _consensus(hmms[0])          # degenerate codes through a scoring window: null2's averages
    targets.append(("degenerate", "".join("BJZOUX"[j % 6] if j % 5 == 2 else c for j, c in enumerate(cons))))
    fasta = tmp_path / "targets.faa"
    fasta.write_text("".join(f">{n}\n{s}\n" for n, s in targets))
    db = open_database(fasta)
    segments = []
    for _, seq in targets:                  # a window of at most 40 residues from a quarter in
        first = 1 + len(seq) // 4
        segments.append((first, min(40, len(seq) - first + 1)))
    oracle = run_segment_oracle(fwdback_oracle, hmm_path, fasta, segments, mode, tmp_path)
    profs = [_profile(h) for h in hmms]
    idx = np.arange(db.n_seqs)
    got = EmulatedForwardParser(build_dir).segment_matrices(profs, db, [idx] * len(profs), [segments] * len(profs),
                                                            multihit=mode == "multi")
    for hmm, pairs in zip(hmms, got):
        for target, want, have in zip(targets, oracle[hmm.name], pairs):
            what = f"{hmm.name} x {target[0]} ({mode})"
            for rows in ("fwd_rows", "bck_rows"):
                first = _first_row(have[rows], want[rows])
                assert first == -1, f"{what}: {rows} differ from row {first}"
            assert _same(have["fwd_mx"], want["fwd_mx"]), f"{what}: Forward matrix"
            assert _same(have["bck_mx"][1:], want["bck_mx"]), f"{what}: Backward matrix"
            assert _same(have["fwd"], want["fwd"]) and _same(have["bck"], want["bck"]), what
            # the posteriors (p7_Decoding): every cell and the rows' N, J, C (E and B zero)
            assert _same(have["pp_mx"], want["pp_mx"]), f"{what}: posterior matrix"
            assert _same(have["pp_rows"][:, :X_CELLS - 1], want["pp_rows"][:, :X_CELLS - 1]), f"{what}: posterior rows"
            assert have["range"] == want["range"] == 0, what
            # the optimal accuracy (p7_OptimalAccuracy) from those posteriors: every cell, E N J B C, the score
            if mode == "uni":
                assert _same(have["oa_mx"], want["oa_mx"]), f"{what}: optimal accuracy matrix"
                first = _first_row(have["oa_rows"][:, :X_CELLS - 1], want["oa_rows"][:, :X_CELLS - 1])
                assert first == -1, f"{what}: optimal accuracy rows differ from row {first}"
                assert _same(have["oasc"], want["oasc"]), f"{what}: oasc {have['oasc']} against {want['oasc']}"
                assert np.array_equal(have["trace"], want["trace"]), f"{what}: trace {have['trace']} {want['trace']}"
            # null2 by expectation from the posteriors, each residue's logf of it, their sum
            assert _same(have["null2"], want["null2"]), f"{what}: null2 {have['null2']} against {want['null2']}"
            assert _same(have["n2sc"], want["n2sc"]), f"{what}: n2sc"
            assert _same(have["domcorrection"], want["domcorrection"]), f"{what}: domcorrection"


def _glibc_at_least(major: int, minor: int) -> bool:
    import platform

    name, version = platform.libc_ver()
    parts = version.split(".")
    return name == "glibc" and len(parts) >= 2 and (int(parts[0]), int(parts[1])) >= (major, minor)


@pytest.mark.skipif(not _glibc_at_least(2, 27), reason="the C library's logf is not glibc's (2.27 or later)")
def test_glibc_logf_port_equals_the_c_library(build_dir):
    """fwdback.cu's logf (null2's n2sc) against the logf of this process's C library, the one
    HMMER's null2 calls through pyhmmer: floats of every exponent, subnormals, the values next
    to 1 and to each table entry's boundary, zero, infinity, NaN and negative numbers."""
    import ctypes.util

    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    libm.logf.restype, libm.logf.argtypes = ctypes.c_float, [ctypes.c_float]
    rng = np.random.default_rng(5)
    bits = [rng.integers(1, 0x7F800000, 150_000, dtype=np.uint32),        # every positive float
            rng.integers(0x3F000000, 0x40000000, 50_000, dtype=np.uint32),   # 0.5 .. 2, where null2 lies
            rng.integers(1, 0x00800000, 5_000, dtype=np.uint32),             # subnormals
            np.arange(0x3F800000 - 2000, 0x3F800000 + 2000, dtype=np.uint32),
            (0x3F330000 + (np.arange(-64, 64, dtype=np.int64)[:, None] + (np.arange(32) << 19)[None, :]))
            .ravel().astype(np.uint32),                                       # the table's subinterval edges
            np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xBF800000, 1, 0x007FFFFF, 0x00800000,
                      0x7F7FFFFF], dtype=np.uint32)]
    x = np.concatenate(bits).view(np.float32)
    got = np.empty_like(x)
    EmulatedForwardParser(build_dir).lib.emulate_glibc_logf(_p(x), _p(got), ctypes.c_long(len(x)))
    want = np.array([libm.logf(float(v)) for v in x], dtype=np.float32)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    differ = np.flatnonzero(got[~nan].view(np.uint32) != want[~nan].view(np.uint32))
    assert len(differ) == 0, f"{len(differ)} floats, e.g. logf({x[~nan][differ[0]]!r})"
    # and the port is not merely the correctly rounded log, which glibc's is not
    with np.errstate(divide="ignore"):
        rounded = np.log(x[~nan].astype(np.float64)).astype(np.float32)
    assert (rounded.view(np.uint32) != got[~nan].view(np.uint32)).any()


def test_forward_parser_alone_is_the_whole_files_forward_parser():
    """With FORWARD_PARSER_ONLY (the filter cascade's Forward stage) fwdback.cu holds
    forward_parser, as the whole file has it (tested above), and no other kernel: the guard
    opens after it, before every other kernel and helper, and closes at the file's end."""
    text = FWDBACK_FILE.read_text()
    guard = text.index("#ifndef FORWARD_PARSER_ONLY")
    kernels = [m.start() for m in re.finditer(r'extern "C" __global__', text)]
    names = re.findall(r'extern "C" __global__ void __launch_bounds__\(\d+\)\s+(\w+)', text)
    from gpu_search.hmmer.gpu.domaindef import THREADS_PER_PAIR

    assert len(names) == len(kernels) and sorted(names) == sorted(THREADS_PER_PAIR) and names[0] == "forward_parser"
    assert kernels[0] < guard < kernels[1]
    assert text.count("#ifndef FORWARD_PARSER_ONLY") == 1
    assert text.rstrip().endswith("#endif /* FORWARD_PARSER_ONLY */")
