"""HMMER's MSV and Viterbi filters as the GPU computes them (``hmmer/gpu/filters.cu``) and its
bias filter (``bias.cu``), the CUDA code itself run on the CPU, against the numpy reference
and HMMER's own filters.

tests/helpers/warp_emulator.cpp runs a block's threads (two warps here) as fibers that meet at every
warp intrinsic (shuffles within the sub-warp groups of G lanes, the group's REDUX maximum, the
Lazy-F vote) and __syncthreads, checks that the lanes of a mask meet at the same one, and runs
them in a random order between meetings, one warp late, with shared memory filled with
garbage; the DPX instructions are written out as the CUDA Math API defines them.  The kernels
are built with the same compile-time constants as NVRTC builds them (``kernel_options``), fed
the same packed profiles and length tables (``pack_msv_profile``, ``pack_viterbi_profile``,
``length_table``) and read back by the same code (``msv_states``,
``viterbi_states``), so that only CuPy's launch is left out.  The same
checks run on the GPU itself in test_gpu.py; these let CI (no GPU) catch a kernel change that
breaks exactness.  The emulator is slow (~1 ms per row of a 32-lane group): small subsets.
"""

from __future__ import annotations

import ctypes
from dataclasses import replace
from pathlib import Path

import emulator_build
import numpy as np
import pytest
from conftest import PROTEIN_MODELS, assert_filter_equal, profile_of, run_filters_oracle
from edge_cases import edge_fasta, long_deletion_model, short_overflow_fasta

from gpu_search.hmmer import reference as R
from gpu_search.hmmer import scores as S
from gpu_search.hmmer.gpu import (BIAS_FILE, KERNEL_FILE, RESCORE_W, Geometry, bias_params, job_table,
                                  kernel_options, length_table, msv_geometry, msv_params, msv_states, pack_msv_profile,
                                  pack_viterbi_profile, viterbi16_again, viterbi16_bounds, viterbi_geometry,
                                  viterbi_params, viterbi_states)
from gpu_search.hmmer.models import read_hmms
from gpu_search.hmmer.profile import FilterProfile
from gpu_search.seqdb import open_database

pytestmark = pytest.mark.skipif(emulator_build.CXX is None, reason="no C++ compiler")
_P = ctypes.c_void_p


def random_profile(M: int, seed: int) -> FilterProfile:
    from pyhmmer.easel import Alphabet, Randomness
    from pyhmmer.plan7 import HMM

    hmm = HMM.sample(Alphabet.amino(), M, Randomness(seed))
    hmm.name = f"random{M}"
    return profile_of(hmm)


class Emulated:
    """filters.cu and bias.cu built for one geometry with the CPU emulator; ``msv``,
    ``viterbi`` and ``bias`` return what ``GpuBackend``'s methods of those names return, for
    the sequences idx of db."""

    def __init__(self, directory: Path, geo: Geometry, profile_in_smem: bool = True, seed: int = 1,
                 threads: int = 64, defines: tuple = ()):
        options = (*kernel_options(geo.G, geo.W, profile_in_smem, geo.seqs, geo.defines), *defines)
        name = "filters" + "".join(o.replace("-D", "_").replace("=", "") for o in options if o.startswith("-D"))
        out = emulator_build.build(Path(directory) / f"{name}.so",
                                   [*options, f"-I{KERNEL_FILE.parent}", f'-DFILTERS_CU="{KERNEL_FILE}"',
                                    f'-DBIAS_CU="{BIAS_FILE}"'])
        self.lib = ctypes.CDLL(str(out))
        self.lib.emulator_error.restype = ctypes.c_char_p
        self.geo, self.in_smem, self.seed, self.threads = geo, profile_in_smem, seed, threads
        self.directory = Path(directory)

    def _check_smem(self, *arrays):
        """One model's profile arrays (each array of a batch is [models, ...])."""
        if self.in_smem:
            assert sum(a[0].nbytes for a in arrays) <= self.lib.shared_memory_bytes(), "profile too large for smem"

    def _run(self, kernel, out_dtype, db, idxs, params, *args, most: bool = False):
        """One launch over several models (jobs.cuh), job j over the sequences idxs[j] of db,
        longest first as GpuBackend orders them (neighbours share a group), the jobs' orders
        one after the other; each job's outputs back in the order of its idx."""
        orders, by_lens = [], []
        for idx in idxs:
            idx = np.asarray(idx, dtype=np.int64)
            by_len = np.argsort(-db.lengths[idx], kind="stable")
            orders.append(idx[by_len])
            by_lens.append(by_len)
        n = np.array([len(o) for o in orders], dtype=np.int64)
        start = np.concatenate([[0], np.cumsum(n)[:-1]])
        order = np.ascontiguousarray(np.concatenate(orders), dtype=np.int32)
        jobs = job_table(start, n, start, params)
        out = np.zeros(len(order), dtype=out_dtype)
        extra = (int(n.max()) if len(n) else 0,) if most else ()
        rc = kernel(ctypes.c_uint(self.seed), 2, self.threads, _p(db.residues), _p(db.offsets), _p(order),
                    _p(jobs), len(jobs), *extra, *args, _p(out))
        assert rc == 0, self.lib.emulator_error().decode()
        results = []
        for j, by_len in enumerate(by_lens):
            r = np.empty(len(by_len), dtype=out_dtype)
            r[by_len] = out[start[j]:start[j] + n[j]]
            results.append(r)
        return results

    def msv_many(self, profs, db, idxs):
        """msv for several models in one launch (one geometry)."""
        emis = np.ascontiguousarray(np.stack([pack_msv_profile(p, self.geo) for p in profs]))
        self._check_smem(emis)
        tjb = length_table("tjb", profs[0], int(db.lengths.max()))
        assert tjb.dtype == np.uint8                      # msv_filter reads uint8_t
        outs = self._run(self.lib.emulate_msv, np.int16, db, idxs, [msv_params(p) for p in profs], _p(emis),
                         _p(tjb))
        return [msv_states(o) for o in outs]

    def msv(self, prof: FilterProfile, db, idx):
        return self.msv_many([prof], db, [idx])[0]

    def viterbi_raw_many(self, profs, db, idxs, bounds=None):
        """The Viterbi-filter kernel's int32 outputs for several models in one launch:
        viterbi_filter16's (RESCORE_W where it stops near its ceiling) for a geometry of two
        nodes a word, else viterbi_filter's."""
        packed = [pack_viterbi_profile(p, self.geo) for p in profs]
        vemis = np.ascontiguousarray(np.stack([v for v, _ in packed]))
        vtrans = np.ascontiguousarray(np.stack([t for _, t in packed]))
        self._check_smem(vemis, vtrans)
        move = length_table("move", profs[0], int(db.lengths.max()))
        assert move.dtype == np.int16                     # viterbi_filter reads short
        if self.geo.cells_per_word == 1:
            return self._run(self.lib.emulate_viterbi, np.int32, db, idxs, [viterbi_params(p) for p in profs],
                             _p(vemis), _p(vtrans), _p(move))
        bounds = bounds or [viterbi16_bounds(p, int(db.lengths.max())) for p in profs]
        return self._run(self.lib.emulate_viterbi16, np.int32, db, idxs,
                         [viterbi_params(p, b) for p, b in zip(profs, bounds)], _p(vemis), _p(vtrans), _p(move))

    def viterbi_raw(self, prof: FilterProfile, db, idx, bounds=None):
        return self.viterbi_raw_many([prof], db, [idx], [bounds] if bounds else None)[0]

    def viterbi(self, prof: FilterProfile, db, idx):
        """As GpuBackend.viterbi: viterbi_filter16's stops scored again by viterbi_filter."""
        results = self.viterbi_raw(prof, db, idx)
        if self.geo.cells_per_word == 2:
            again = viterbi16_again(results, prof, viterbi16_bounds(prof, int(db.lengths.max())))
            if len(again):
                int32 = Emulated(self.directory, viterbi_geometry(prof.M, cells=1), self.in_smem, self.seed,
                                 self.threads)
                results[again] = int32.viterbi_raw(prof, db, np.asarray(idx)[again])
        return viterbi_states(results)

    def bias_many(self, hmms, db, idxs):
        """The bias filter's Forward scores (nats, float32), as GpuBackend.bias, for several
        filter HMMs (eo, t10, t11) in one launch."""
        eo = np.ascontiguousarray(np.stack([np.asarray(e, np.float32) for e, _, _ in hmms]))
        return self._run(self.lib.emulate_bias, np.float32, db, idxs, [bias_params(a, b) for _, a, b in hmms],
                         _p(eo), most=True)

    def bias(self, eo, t10, t11, db, idx):
        return self.bias_many([(eo, t10, t11)], db, [idx])[0]


def _p(a: np.ndarray):
    assert a.flags.c_contiguous
    return a.ctypes.data_as(_P)


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("emulated_filters")


def check_msv(lib: Emulated, prof, db, idx):
    got = lib.msv(prof, db, idx)
    assert_filter_equal(f"{prof.name} {lib.geo} MSV", got, R.msv_filter(prof, db.residues, db.offsets, db.lengths, idx))
    return got


def check_viterbi(lib: Emulated, prof, db, idx):
    got = lib.viterbi(prof, db, idx)
    assert_filter_equal(f"{prof.name} {lib.geo} Viterbi", got,
                        R.viterbi_filter(prof, db.residues, db.offsets, db.lengths, idx))
    return got


def spread(db, n: int) -> np.ndarray:
    """n sequences of db spread over its lengths (shortest to longest), in database order."""
    by_len = np.argsort(db.lengths, kind="stable")
    return np.sort(by_len[np.linspace(0, db.n_seqs - 1, n).astype(int)])


@pytest.mark.parametrize("model", PROTEIN_MODELS[:3])
def test_real_models_equal_hmmer(model, data_dir, proteome, build_dir, tmp_path, filters_oracle):
    """Real Pfam-like models (M 97 to 1,184 across the five; three here) on 40 proteome sequences
    of every length: MSV and Viterbi-filter scores equal to HMMER's own filters."""
    hmm = read_hmms(data_dir / "hmms" / "txt" / f"{model}.hmm")[0]
    prof = profile_of(hmm)
    idx = spread(proteome, 40)
    fasta = tmp_path / "subset.faa"
    with open(fasta, "w") as fh:
        for i in idx:
            fh.write(f">{proteome.name(i)}\n{proteome.text(i)}\n")
    oracle = run_filters_oracle(filters_oracle, data_dir / "hmms" / "txt" / f"{model}.hmm", fasta)[hmm.name]
    L = proteome.lengths[idx]
    xJ, ovf = check_msv(Emulated(build_dir, msv_geometry(prof.M)), prof, proteome, idx)
    xC, vovf = check_viterbi(Emulated(build_dir, viterbi_geometry(prof.M)), prof, proteome, idx)
    assert np.array_equal(S.msv_score(prof, xJ, prof.tjb_b(L), ovf), oracle["msv"])
    assert np.array_equal(S.viterbi_score(prof, xC, prof.move_w(L), vovf), oracle["vit"])


@pytest.mark.parametrize("M", [1, 16, 65, 130, 300, 700])
def test_msv_geometries(M, proteome, build_dir):
    """MSV with groups of 1 to 32 lanes (msv_geometry), profile in shared memory or read
    through L1, on random models."""
    prof = random_profile(M, M)
    idx = spread(proteome, 48)
    geo = msv_geometry(M)
    check_msv(Emulated(build_dir, geo), prof, proteome, idx)
    if M in (65, 700):
        check_msv(Emulated(build_dir, geo, profile_in_smem=False), prof, proteome, idx)


@pytest.mark.parametrize("M", [3, 40, 243])
@pytest.mark.parametrize("seqs", [1, 2])
@pytest.mark.parametrize("cells", [1, 2])
def test_viterbi_variants(M, seqs, cells, proteome, build_dir):
    """Each Viterbi-filter variant (int32 or two nodes a word; one or two sequences a group;
    transitions of none, some or all nodes in registers; REDUX or shuffles for the row maximum;
    groups of 16 lanes) on an odd count of sequences, so that a group of two gets one sequence
    at the end."""
    prof = random_profile(M, 100 + M)
    idx = spread(proteome, 17)
    geo = viterbi_geometry(M, seqs=seqs, cells=cells)
    half = Geometry(16, -(-M // (16 * cells)), cells, seqs)
    variants = (geo, replace(geo, redux=False, trans_regs=0), replace(geo, redux=True, trans_regs=geo.W),
                replace(geo, trans_regs=max(1, geo.W // 2)), half)
    for g in dict.fromkeys(variants):
        check_viterbi(Emulated(build_dir, g), prof, proteome, idx)


def test_viterbi_profile_through_l1(proteome, build_dir):
    """The Viterbi filter with its profile read from global memory (models too large for
    shared memory), against the reference."""
    prof = random_profile(200, 7)
    check_viterbi(Emulated(build_dir, viterbi_geometry(200), profile_in_smem=False), prof, proteome,
                  spread(proteome, 12))


def test_edge_cases(data_dir, tmp_path, build_dir):
    """Length 1 (every letter), runs of X, degenerate letters, '*' and '~', the model's consensus
    repeated (MSV's 8-bit and the Viterbi filter's 16-bit overflow), a 3,000-residue sequence."""
    hmm = read_hmms(data_dir / "hmms" / "txt" / "Thioesterase.hmm")[0]
    fasta = tmp_path / "edge.faa"
    edge_fasta(fasta, hmm.consensus, long_length=3_000)
    db = open_database(fasta)
    prof = profile_of(hmm)
    idx = np.arange(db.n_seqs)
    _, msv_overflow = check_msv(Emulated(build_dir, msv_geometry(prof.M)), prof, db, idx)
    packed = Emulated(build_dir, viterbi_geometry(prof.M))
    _, vit_overflow = check_viterbi(packed, prof, db, idx)
    assert msv_overflow.any() and vit_overflow.any(), "the overflow cases were not reached"
    # viterbi_filter16 stopped them near its 16-bit ceiling; viterbi_filter scored them again
    assert (packed.viterbi_raw(prof, db, idx) == RESCORE_W).sum() >= vit_overflow.sum()


def test_long_deletions_across_lanes(tmp_path, build_dir):
    """Best paths that delete 160 nodes (D->D across 20 lanes of 8 nodes): the Lazy-F pass's
    max-plus scan over the group's lanes, against the reference and HMMER's own filter."""
    hmm, seqs = long_deletion_model()
    fasta = tmp_path / "deletions.faa"
    fasta.write_text("".join(f">{name}\n{seq}\n" for name, seq in seqs))
    db = open_database(fasta)
    prof = profile_of(hmm)
    idx = np.arange(db.n_seqs)
    geo = viterbi_geometry(prof.M, cells=1)
    assert geo.G == 32 and geo.W == 8
    packed = viterbi_geometry(prof.M)
    assert packed.cells_per_word == 2 and packed.W == 4
    for g in (geo, replace(geo, redux=False, trans_regs=0), Geometry(16, 16, 1, 1),
              packed, replace(packed, redux=False, trans_regs=0), Geometry(16, 8, 2, 1), Geometry(8, 16, 2, 1)):
        check_viterbi(Emulated(build_dir, g), prof, db, idx)


def test_viterbi16_ceiling_and_floor(data_dir, tmp_path, build_dir):
    """viterbi_filter16 at both ends of its 16-bit range, against the reference.  A database of
    short sequences puts its floor high: fragments of an RRE model's consensus then overflow
    (HMMER's xE >= 32767) below where off + 32767 - the largest emission would put the ceiling,
    so the ceiling must hold at 32766; and sequences of '*' or '~' score every row below the
    floor (their xC must come from viterbi_filter, not read off + e_move)."""
    hmm = read_hmms(data_dir / "hmms" / "txt" / "RREFam.hmm")[0]
    prof = profile_of(hmm)
    fasta = tmp_path / "short.faa"
    short_overflow_fasta(fasta, hmm.consensus)
    db = open_database(fasta)
    idx = np.arange(db.n_seqs)
    off, ceiling = viterbi16_bounds(prof, int(db.lengths.max()))
    assert ceiling == 32766 and off + 32767 - int(prof.vit_emit.max()) > 32767, "the case is not reached"
    lib = Emulated(build_dir, viterbi_geometry(prof.M))
    _, overflow = check_viterbi(lib, prof, db, idx)
    assert overflow.any()
    raw = lib.viterbi_raw(prof, db, idx)
    assert np.array_equal(np.flatnonzero(raw == RESCORE_W), np.flatnonzero(overflow))
    assert (raw[-3:] == off + prof.e_move).all()            # the '*' and '~' rows, left to viterbi_filter


def test_viterbi16_costly_deletions(proteome, tmp_path, build_dir):
    """D->D costs so high (about -5,000 a node) that Lazy-F's sums across lanes pass -32768:
    viterbi_filter16's scan holds them there, and must still floor where the true sums would."""
    from pyhmmer.easel import Alphabet, Randomness
    from pyhmmer.plan7 import HMM

    hmm = HMM.sample(Alphabet.amino(), 243, Randomness(11))
    t = np.asarray(hmm.transition_probabilities)          # MM MI MD IM II DM DD
    t[:, 0:3] = (0.5, 0.01, 0.49)
    t[:, 5:7] = (0.999, 0.001)
    hmm.name = "costlyDD"
    prof = profile_of(hmm)
    assert prof.vit_trans[7][: prof.M - 1].max() < -4000
    rng = np.random.default_rng(0)
    seqs = ["".join(rng.choice(list("ACDEFGHIKLMNPQRSTVWY"), size=n)) for n in (50, 120, 243, 300, 30)]
    seqs.append(hmm.consensus.upper()[:200])
    fasta = tmp_path / "costly.faa"
    fasta.write_text("".join(f">s{i}\n{seq}\n" for i, seq in enumerate(seqs)))
    db = open_database(fasta)
    for g in (viterbi_geometry(prof.M), Geometry(8, 16, 2, 1)):
        check_viterbi(Emulated(build_dir, g), prof, db, np.arange(db.n_seqs))


@pytest.mark.parametrize("model", ["Thioesterase", "LuxC"])
def test_bias_filter(model, data_dir, proteome, build_dir, tmp_path):
    """The bias filter (bias.cu) bit for bit the CPU's (numba, equal to HMMER's in
    tests/hmmer/test_filters.py) on proteome sequences of every length and the edge cases
    (degenerate letters, X runs, length 1), but for the sequences it flags (NaN: a row's
    double log near a float rounding boundary), which must be rare.  Built with a guard that
    covers every row, it flags every sequence: the host then scores all of them.  (The
    emulator takes the C library's log, as the CPU does; tests/hmmer/test_hmmer_gpu.py runs
    the same checks with CUDA's on a GPU.)"""
    from pyhmmer.plan7 import Background

    from gpu_search.seqdb import amino_degeneracy

    hmm = read_hmms(data_dir / "hmms" / "txt" / f"{model}.hmm")[0]
    prof = profile_of(hmm)
    bg_freq = np.asarray(Background(hmm.alphabet).residue_frequencies, dtype=np.float32)
    eo, t10, t11 = R.bias_filter_hmm(prof, bg_freq, amino_degeneracy())
    lib = Emulated(build_dir, msv_geometry(prof.M))
    every_row = Emulated(build_dir, msv_geometry(prof.M), defines=("-DLOG_GUARD=1.0",))
    fasta = tmp_path / "edge.faa"
    edge_fasta(fasta, hmm.consensus, long_length=3_000)
    for db, idx in ((proteome, spread(proteome, 200)), (open_database(fasta), None)):
        idx = np.arange(db.n_seqs) if idx is None else idx
        zeros = np.zeros(db.n_seqs, dtype=np.float32)        # the Forward score alone
        ref = R.bias_filter(prof, bg_freq, amino_degeneracy(), db.residues, db.offsets, db.lengths, idx,
                            length_terms=(zeros, zeros))
        got = lib.bias(eo, t10, t11, db, idx)
        assert np.all(np.isfinite(ref))
        sure = ~np.isnan(got)
        assert sure.mean() >= 0.99, f"{prof.name}: {np.sum(~sure)} of {len(idx)} flagged"
        assert np.array_equal(got[sure].view(np.int32), ref[sure].astype(np.float32).view(np.int32)), \
            f"{prof.name}: bias filter differs at {np.flatnonzero(sure & (got != ref))[:5]}"
        assert np.isnan(every_row.bias(eo, t10, t11, db, idx)).all(), f"{prof.name}: not every sequence flagged"


def test_several_models_a_launch(proteome, build_dir):
    """One launch of each kernel over several models of different M (padded as launch_groups
    pads them: the largest model's geometry for all), each job over its own sequences, one
    job over none: every model's results equal to the reference's (the bias filter's bit for
    bit)."""
    from pyhmmer.plan7 import Background

    from gpu_search.seqdb import amino_degeneracy

    profs = [random_profile(M, 40 + M) for M in (30, 9, 23, 14)]
    idxs = [spread(proteome, 9), spread(proteome, 5)[::-1], np.zeros(0, dtype=np.int64), spread(proteome, 7)[1:]]
    args = (proteome.residues, proteome.offsets, proteome.lengths)

    lib = Emulated(build_dir, msv_geometry(30))
    for p, idx, got in zip(profs, idxs, lib.msv_many(profs, proteome, idxs)):
        assert_filter_equal(f"{p.name} in a launch, MSV", got, R.msv_filter(p, *args, idx))

    for cells in (1, 2):
        lib = Emulated(build_dir, viterbi_geometry(30, cells=cells))
        raws = lib.viterbi_raw_many(profs, proteome, idxs)
        for p, idx, raw in zip(profs, idxs, raws):
            ref_xC, ref_ovf = R.viterbi_filter(p, *args, idx)
            keep = np.ones(len(idx), dtype=bool)
            if cells == 2:       # what viterbi_filter16 hands back is scored again elsewhere
                keep[viterbi16_again(raw, p, viterbi16_bounds(p, int(proteome.lengths.max())))] = False
            xC, ovf = viterbi_states(raw)
            assert np.array_equal(xC[keep], ref_xC[keep]) and np.array_equal(ovf[keep], ref_ovf[keep]), \
                f"{p.name} in a launch, Viterbi ({cells} nodes a word)"

    lib = Emulated(build_dir, msv_geometry(30))

    bg_freq = np.asarray(Background(hmm_alphabet()).residue_frequencies, dtype=np.float32)
    hmms = [R.bias_filter_hmm(p, bg_freq, amino_degeneracy()) for p in profs]
    zeros = np.zeros(proteome.n_seqs, dtype=np.float32)
    for p, idx, got in zip(profs, idxs, lib.bias_many(hmms, proteome, idxs)):
        ref = R.bias_filter(p, bg_freq, amino_degeneracy(), *args, idx, length_terms=(zeros, zeros))
        assert np.array_equal(got.view(np.int32), ref.astype(np.float32).view(np.int32)), f"{p.name}: bias"


def hmm_alphabet():
    from pyhmmer.easel import Alphabet

    return Alphabet.amino()


def test_emulator_reports_a_lane_outside_its_group(build_dir, proteome):
    """The emulator is strict: a kernel whose shuffle reads a lane outside its group's mask fails
    with the reason, rather than passing on a value the GPU would not give."""
    source = KERNEL_FILE.read_text()
    broken_src = source.replace("__shfl_up_sync(gmask, last, 1, G)", "__shfl_up_sync(gmask, last, 1, 32)")
    assert broken_src != source
    broken = build_dir / "broken_filters.cu"
    broken.write_text(broken_src)
    geo = msv_geometry(65)                        # groups of 2 lanes
    options = kernel_options(geo.G, geo.W, True, geo.seqs, geo.defines)
    out = emulator_build.build(build_dir / "broken.so",
                               [*options, f"-I{KERNEL_FILE.parent}", f'-DFILTERS_CU="{broken}"'])
    lib = Emulated.__new__(Emulated)
    lib.lib = ctypes.CDLL(str(out))
    lib.lib.emulator_error.restype = ctypes.c_char_p
    lib.geo, lib.in_smem, lib.seed, lib.threads = geo, True, 1, 64
    with pytest.raises(AssertionError, match="outside the mask"):
        lib.msv(random_profile(65, 65), proteome, spread(proteome, 8))


@pytest.mark.parametrize("max_len", [1, 100, 5_000, 100_000])
def test_viterbi16_bounds_hold_for_every_length(max_len, data_dir):
    """viterbi16_bounds' floor lies at or below every sequence's B->M entries (xB >= base_w +
    move(L) for every length L up to the longest), the first row's xB fits under the ceiling,
    and the ceiling stays below HMMER's overflow, for real models and a large random one."""
    profs = [profile_of(h) for m in PROTEIN_MODELS for h in read_hmms(data_dir / "hmms" / "txt" / f"{m}.hmm")]
    profs.append(random_profile(2500, 3))
    lengths = np.unique(np.linspace(1, max_len, 400).astype(int))
    for prof in profs:
        bounds = viterbi16_bounds(prof, max_len)
        assert bounds is not None, f"{prof.name}: no safe offset for lengths up to {max_len}"
        off, ceiling = bounds
        entries = prof.base_w + prof.move_w(lengths).astype(int)[:, None] + prof.vit_trans[0].astype(int)[None, :]
        assert entries.min() >= off, prof.name
        e_max = max(int(prof.vit_emit.max()), 0)
        assert prof.base_w + int(prof.move_w(np.array([1]))[0]) - off <= 32767 - e_max, prof.name
        assert ceiling <= 32766 and ceiling + e_max - off <= 32767, prof.name
