"""The GPU's preliminary gapped kernels (blast/gpu/gapped.cu) against gapped.py, on every executor.

gapped.py's numba code (itself checked against BLAST+ in tests/blast/test_blast_gapped.py)
is the reference: every subject's rows, in the order BLAST saves them, and its
restart flag must be the same, and ``blast.gpu.gapped.collect`` must turn them
into exactly what ``gapped.preliminary_gapped_hsps_batch`` returns.  Inputs: real
init HSPs of proteome queries against the proteome, at BLAST's cutoffs and at
raised cutoffs (restricted extensions and their exact restarts), against mutated
copies with indels (long gapped extensions; a small ring or cell budget makes
them overflow to the CPU), and against a subject over 90,000 letters
(AdjustSubjectRange).

One body of tests, run by each executor (``kernels``):

* ``host``: gapped.cu's per-subject code built with g++ as plain C++
  (``prelim_gapped_host``), subject after subject as the kernel's threads do;
* ``emulated``: the CUDA kernel ``prelim_gapped_warp`` itself (a warp computes
  each DP row, 32 cells at a time: code the host build does not have) run on
  the CPU by warp_emulator.cpp, each lane a fiber; about 100x slower than the
  host build, so on the smaller cases (``kernels.small``);
* ``gpu-warp`` and ``gpu-thread``: ``prelim_gapped_warp`` and ``prelim_gapped``
  (a thread per subject) on a GPU (marked ``gpu``).
"""

from __future__ import annotations

import random
from types import SimpleNamespace

import numpy as np
import pytest
from gapped_host import CXX, EmulatedKernel, GpuKernel, build, run_batch, run_host, search

from gpu_search.blast import gapped
from gpu_search.blast.alphabet import EASEL_TO_NCBISTDAA, blast_query_codes, encode
from gpu_search.blast.gpu import gapped as gpu_gapped
from gpu_search.blast.matrix import load_matrix
from gpu_search.blast.ungapped import INIT_HSP_DTYPE

NO_CXX = pytest.mark.skipif(CXX is None, reason="no C++ compiler (g++)")
EXECUTORS = [pytest.param("host", marks=NO_CXX), pytest.param("emulated", marks=NO_CXX),
             pytest.param("gpu-warp", marks=pytest.mark.gpu), pytest.param("gpu-thread", marks=pytest.mark.gpu)]


@pytest.fixture(scope="module", params=EXECUTORS)
def kernels(request, tmp_path_factory):
    """The kernel on one executor: ``make(band, budget)`` builds it with a ring of ``band`` cells
    and a DP-cell budget (each built once); ``small``: run the smaller cases."""
    where = request.param
    if where.startswith("gpu"):
        from gpu_search.device import gpu_status

        if not gpu_status()[0]:
            pytest.skip(f"no usable GPU: {gpu_status()[1]}")
    directory = tmp_path_factory.mktemp(where)
    built = {}

    def make(band=gpu_gapped.BAND, budget=gpu_gapped.CELL_BUDGET):
        if (band, budget) not in built:
            if where == "host":
                built[band, budget] = build(directory, band, budget)
            elif where == "emulated":
                built[band, budget] = EmulatedKernel(directory, "warp", band, budget)
            else:
                built[band, budget] = GpuKernel(where[4:], band=band, cell_budget=budget)
        return built[band, budget]

    return SimpleNamespace(make=make, small=where == "emulated", where=where)


@pytest.fixture(scope="module")
def blosum62():
    return load_matrix("BLOSUM62")


def compare(lib, init, query, residues, offsets, matrix, x_dropoff, cutoff, expect_value=10.0):
    """Every subject against _get_gapped_score_kernel, then collect() against the batch function.

    Returns (subjects, restarted, overflowed)."""
    group_start, group_subject, rows, counts, status = run_host(lib, init, query, residues, offsets, matrix,
                                                                x_dropoff, cutoff, expect_value)
    qp = gapped.pad(query)
    at = np.concatenate(([0], np.cumsum(counts)))
    for g, s in enumerate(group_subject):
        if status[g] & gpu_gapped.STATUS_OVERFLOW:
            assert counts[g] == 0
            continue
        ih = gapped.init_hsp_score_order(init[group_start[g]:group_start[g + 1]])
        restricted = gapped.restricted_alignment_on(int(ih["score"].max()), cutoff, expect_value)
        subject = residues[offsets[s]:offsets[s + 1]]
        ref, restarted = gapped._get_gapped_score_kernel(
            *[np.ascontiguousarray(ih[k], np.int64) for k in ("q_start", "s_start", "length", "score")],
            qp, len(query), gapped.pad(subject), len(subject), matrix, 11, 1, x_dropoff, cutoff, restricted)
        got = rows[at[g]:at[g + 1]]
        assert np.array_equal(got, ref), f"subject {s}: kernel {got.tolist()} numba {ref.tolist()}"
        assert bool(status[g] & gpu_gapped.STATUS_RESTARTED) == bool(restarted), f"subject {s}: restart"
    # the whole stage: the groups run + the CPU's share = the batch function
    on = np.ones(len(group_subject), bool)
    hsps, left = gpu_gapped.collect(init, group_start, group_subject, on, rows, counts, status)
    ref, _ = gapped.preliminary_gapped_hsps_batch(init, query, residues, offsets, matrix, 11, 1, x_dropoff,
                                                  cutoff, expect_value=expect_value)
    cpu, _ = gapped.preliminary_gapped_hsps_batch(left, query, residues, offsets, matrix, 11, 1, x_dropoff,
                                                  cutoff, expect_value=expect_value)
    both = np.concatenate([hsps, cpu])
    both = both[np.argsort(both["subject"], kind="stable")]
    assert np.array_equal(both, ref)
    overflowed = int(np.count_nonzero(status & gpu_gapped.STATUS_OVERFLOW))
    assert len(np.unique(left["subject"])) == overflowed
    return len(group_subject), int(np.count_nonzero(status & gpu_gapped.STATUS_RESTARTED)), overflowed


@pytest.fixture(scope="module")
def db_codes(proteome):
    return EASEL_TO_NCBISTDAA[np.asarray(proteome.residues)], np.asarray(proteome.offsets, np.int64)


def query_codes(db, i):
    return blast_query_codes(EASEL_TO_NCBISTDAA[np.asarray(db.sequence(i))])


@pytest.mark.parametrize("cutoff_scale", [1.0, 1.6, 2.5])
def test_kernel_matches_numba_on_the_proteome(kernels, proteome, db_codes, blosum62, cutoff_scale):
    """Queries of many lengths against the proteome; raised cutoffs force restricted extensions and
    restarts.  Without a cell budget every subject is done by the kernel; with the default one, the
    long extensions (the query against itself, true homologs) are left to the CPU.  (Emulated:
    three queries picked with the host build for their restarts, 82, 137 and 177 letters.)"""
    if kernels.small and cutoff_scale == 1.6:
        pytest.skip("emulated: BLAST's cutoff and a raised one are enough")
    residues, offsets = db_codes
    picks = (56, 1358, 868) if kernels.small else np.random.default_rng(7).choice(proteome.n_seqs, 6, replace=False)
    unlimited, kernel = kernels.make(budget=1 << 30), kernels.make()
    restarts = groups = 0
    for i in picks:
        q = query_codes(proteome, int(i))
        init, xd, cutoff = search(q, residues, offsets, blosum62, cutoff_scale)
        if not kernels.small:
            n, r, over = compare(unlimited, init, q, residues, offsets, blosum62.scores, xd, cutoff)
            assert n > 0 and over == 0
            restarts += r
        n, r, over = compare(kernel, init, q, residues, offsets, blosum62.scores, xd, cutoff)
        assert over < n / 10
        groups += n
        if kernels.small:
            restarts += r
    if kernels.small:
        assert groups > 100
    if cutoff_scale > 1:
        assert restarts > 0, "no restricted extension was restarted: the case is not exercised"


def mutated(letters: str, rng: random.Random, rate=0.25, indel=0.04) -> str:
    """Substitutions and short insertions/deletions: homologs with long gapped alignments."""
    out = []
    aa = "ACDEFGHIKLMNPQRSTVWY"
    for c in letters:
        r = rng.random()
        if r < indel / 2:
            continue                                    # deletion
        if r < indel:
            out.append("".join(rng.choice(aa) for _ in range(rng.randint(1, 6))))   # insertion
        out.append(rng.choice(aa) if rng.random() < rate else c)
    return "".join(out)


def homolog_db(proteome, query_index, copies, seed, long_subject=False):
    rng = random.Random(seed)
    q = query_codes(proteome, query_index)
    from gpu_search.blast.alphabet import NCBISTDAA

    letters = "".join(NCBISTDAA[c] for c in q)
    seqs = [mutated(letters, rng, rate=0.1 + 0.3 * rng.random()) for _ in range(copies)]
    if long_subject:                                    # a homolog inside a 100,000-letter subject
        pad = "".join(rng.choice("ACDEFGHIKLMNPQRSTVWY") for _ in range(100_000))
        seqs.append(pad[:60_000] + mutated(letters, rng) + pad[60_000:])
    codes = [encode(s) for s in seqs]
    offsets = np.concatenate(([0], np.cumsum([len(c) for c in codes]))).astype(np.int64)
    return q, np.concatenate(codes).astype(np.uint8), offsets


def test_kernel_matches_numba_on_homologs(kernels, proteome, blosum62):
    """Mutated copies with indels: long, gapped extensions, a subject of 100,000 letters (no cell
    budget: all on the kernel); with the default budget, a ring of 16 cells or a budget of 3,000
    cells, subjects overflow (left to the CPU) and the others still match."""
    lengths = np.asarray(proteome.lengths)
    cases = ((130, 1), (500, 2)) if kernels.small else ((130, 1), (500, 2), (1000, 3))
    copies = 12 if kernels.small else 30
    for target, seed in cases:
        i = int(np.argmin(np.abs(lengths - target)))
        q, residues, offsets = homolog_db(proteome, i, copies, seed, long_subject=target == 500)
        init, xd, cutoff = search(q, residues, offsets, blosum62)
        n, _, over = compare(kernels.make(budget=1 << 30), init, q, residues, offsets, blosum62.scores, xd, cutoff)
        assert n >= (10 if kernels.small else 25) and over == 0
        if not kernels.small:
            compare(kernels.make(), init, q, residues, offsets, blosum62.scores, xd, cutoff)
        for lib in (kernels.make(band=16), kernels.make(budget=3000)):
            n, _, over = compare(lib, init, q, residues, offsets, blosum62.scores, xd, cutoff)
            assert over > 0


def test_no_restricted_extensions_above_evalue_10(kernels, proteome, db_codes, blosum62):
    """BLAST restricts no extension where the expect value is over 10."""
    if kernels.small:
        pytest.skip("emulated: a whole proteome search (80 s); the host build and the GPU run it")
    kernel = kernels.make()
    residues, offsets = db_codes
    q = query_codes(proteome, 11)
    init, xd, cutoff = search(q, residues, offsets, blosum62, 2.5)
    _, restarted, _ = compare(kernel, init, q, residues, offsets, blosum62.scores, xd, cutoff, expect_value=100.0)
    assert restarted == 0


def test_kernel_matches_numba_on_restricted_first_row_growth(kernels):
    """Subjects with a 28-32 letter insertion right after the start point, restricted extensions.

    s_RestrictedGappedAlign ends a row in which no gap in A may open with
    score_gap_row = the diagonal score past the band, and grows the band from
    it: in the first row (the band of the initial gap row still whole) the
    extension can then jump the insertion, which an unrestricted or exact DP
    cannot (a 29-letter gap costs more than the X-drop).  Proteome searches
    hardly reach this branch, so it gets inputs of its own."""
    blosum62 = load_matrix("BLOSUM62")
    rng = np.random.default_rng(11)
    for _ in range(20):
        query = rng.integers(1, 23, 90).astype(np.uint8)
        subjects, init = [], []
        for s in range(20):
            at = int(rng.integers(15, 30))
            insertion = rng.integers(1, 23, int(rng.integers(28, 33))).astype(np.uint8)
            insertion[27] = query[at]                       # a match where the first row's band ends
            subjects.append(np.concatenate([query[:at], insertion, query[at:]]))
            init.append((s, at - 1, at - 1, at - 1, at - 1, 1, 20))   # start point at - 1: row 1 is query[at]
        offsets = np.concatenate(([0], np.cumsum([len(x) for x in subjects]))).astype(np.int64)
        init = np.array(init, dtype=INIT_HSP_DTYPE)
        # cutoff 45: init scores below 0.68 x 45 make every extension restricted
        n, restarted, overflowed = compare(kernels.make(), init, query, np.concatenate(subjects), offsets,
                                           blosum62.scores, 38, 45)
        assert n == 20 and overflowed == 0


class HostPrelim(gpu_gapped.GpuPrelim):
    """GpuPrelim with the executor's kernel in place of its launch (``max_queries``: a batch of more
    queries "runs out of GPU memory")."""

    def __init__(self, lib, residues, offsets, max_queries=None, **kwargs):
        class Resident:                                 # what GpuPrelim reads of a GpuUngapped
            streamed = False

        super().__init__(Resident(), **kwargs)
        self.lib, self.residues, self.offsets, self.max_queries = lib, residues, offsets, max_queries
        self.batches = []

    def _launch(self, batch, matrix_scores, gap_open, gap_extend):
        n_queries = len(batch.query_start) - 1
        if self.max_queries is not None and n_queries > self.max_queries:
            return None
        self.batches.append(n_queries)
        rows, counts, status = run_batch(self.lib, batch, self.residues, self.offsets, matrix_scores,
                                         gap_open, gap_extend)
        on = np.repeat(batch.on_gpu, counts)
        return rows[on], np.where(batch.on_gpu, counts, 0), np.where(batch.on_gpu, status, 0)


@pytest.mark.parametrize("max_queries", [None, 2, 0])
def test_several_queries_per_launch(kernels, proteome, db_codes, blosum62, max_queries):
    """run_many: queries of different lengths and cutoffs in one launch give each query's
    preliminary gapped HSPs as the CPU path; batches the "GPU" has no memory for are halved
    until they fit (max_queries 2), or left to the CPU (0)."""
    if kernels.small:
        pytest.skip("emulated: the other cases cover the kernel; this one is GpuPrelim's batching")
    kernel = kernels.make()
    residues, offsets = db_codes
    rng = np.random.default_rng(5)
    jobs, refs = [], []
    for i, scale in zip(rng.choice(proteome.n_seqs, 5, replace=False), (1.0, 2.5, 1.0, 1.6, 1.0)):
        q = query_codes(proteome, int(i))
        init, xd, cutoff = search(q, residues, offsets, blosum62, scale)
        jobs.append(gpu_gapped.PrelimJob(init, q, xd, cutoff))
        refs.append(gapped.preliminary_gapped_hsps_batch(init, q, residues, offsets, blosum62.scores, 11, 1,
                                                         xd, cutoff)[0])
    prelim = HostPrelim(kernel, residues, offsets, max_queries, max_gpu_group=8)
    results = prelim.run_many(jobs, blosum62.scores, 11, 1)
    for job, ref, (hsps, left) in zip(jobs, refs, results):
        cpu, _ = gapped.preliminary_gapped_hsps_batch(left, job.query_codes, residues, offsets, blosum62.scores,
                                                      11, 1, job.x_dropoff, job.cutoff)
        both = np.concatenate([hsps, cpu])
        assert np.array_equal(both[np.argsort(both["subject"], kind="stable")], ref)
        if max_queries != 0:
            assert len(hsps) > 0
    assert prelim.batches == {None: [5], 2: [2, 1, 2], 0: []}[max_queries]
    assert prelim.out_of_memory == (5 if max_queries == 0 else 0)


def test_ring_sizes_the_kernels_take():
    """The warp kernel's rings are static shared memory: a ring over 1,024 cells is refused with a
    clear error (nvcc would fail to build the module); the thread kernel takes it (local memory)."""
    assert gpu_gapped.GpuPrelim(object(), band=1024).band == 1024
    with pytest.raises(ValueError, match="shared memory"):
        gpu_gapped.GpuPrelim(object(), band=2048)
    assert gpu_gapped.GpuPrelim(object(), band=2048, kernel="thread").kernel == "thread"
    with pytest.raises(ValueError, match="unknown gapped kernel"):
        gpu_gapped.GpuPrelim(object(), kernel="block")
