"""The GPU's traceback kernel (blast/gpu/traceback.cu) against traceback.py, on every executor.

traceback.py's numba code (itself checked against BLAST+ in tests/blast/test_blast_gapped.py
and tests/blast/test_blastp.py) is the reference: every job's ALIGN_EX (best score, its
cell, the steps of the walk back) must be align_ex's, and a hit list traced back with the
kernel's extensions must give exactly the rows, E-values and strings it gives without them.
Inputs: proteome queries against mutated copies with indels (long gapped alignments) and a
subject of 100,000 letters (AdjustSubjectRange's window), and against the proteome; two
queries in one launch; a traceback-byte cap small enough that jobs overflow to the CPU.

Executors: ``host``, traceback.cu's per-job code built with g++ as plain C++ (no GPU);
``emulated-warp`` and ``emulated-thread``, the CUDA kernels themselves (a warp per job, a
thread per job) run on the CPU by tests/helpers/warp_emulator.cpp; ``gpu-warp`` and
``gpu-thread``, the kernels on a GPU (marked ``gpu``).
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from traceback_host import CXX, EmulatedTraceback, HostTraceback, build, build_emulated

from gpu_search.blast import gapped, stats
from gpu_search.blast import traceback as tb
from gpu_search.blast.alphabet import EASEL_TO_NCBISTDAA, NCBISTDAA, blast_query_codes, encode
from gpu_search.blast.gpu import traceback as gpu_tb
from gpu_search.blast.lookup import build_lookup
from gpu_search.blast.matrix import load_matrix
from gpu_search.blast.ungapped import ungapped_extensions

GAP_OPEN, GAP_EXTEND = 11, 1
NO_CXX = pytest.mark.skipif(CXX is None, reason="no C++ compiler (g++)")
EXECUTORS = [pytest.param("host", marks=NO_CXX), pytest.param("emulated-warp", marks=NO_CXX),
             pytest.param("gpu-warp", marks=pytest.mark.gpu), pytest.param("gpu-thread", marks=pytest.mark.gpu)]


@pytest.fixture(scope="module", params=EXECUTORS)
def tracer(request, tmp_path_factory):
    """make(residues, offsets, tb_cap): a GpuTraceback on this executor for a database; ``small``:
    the emulator (about 100 times slower) takes the first query alone."""
    where = request.param
    if where.startswith("gpu"):
        from gpu_search.device import gpu_status

        if not gpu_status()[0]:
            pytest.skip(f"no usable GPU: {gpu_status()[1]}")
        from gpu_search.blast.gpu import GpuUngapped

        def make(residues, offsets, tb_cap=gpu_tb.TB_CAP):
            return gpu_tb.GpuTraceback(GpuUngapped(residues, offsets).stream_twin(), tb_cap, kernel=where[4:])
    elif where.startswith("emulated"):
        lib = build_emulated(tmp_path_factory.mktemp("traceback"))

        def make(residues, offsets, tb_cap=gpu_tb.TB_CAP):
            return EmulatedTraceback(lib, residues, tb_cap, where[9:])
    else:
        lib = build(tmp_path_factory.mktemp("traceback"))

        def make(residues, offsets, tb_cap=gpu_tb.TB_CAP):
            return HostTraceback(lib, residues, tb_cap)
    make.small = where.startswith("emulated")
    return make


@pytest.fixture(scope="module")
def blosum62():
    return load_matrix("BLOSUM62")


def mutated(letters: str, rng: random.Random, rate: float, indel: float = 0.04) -> str:
    out = []
    aa = "ACDEFGHIKLMNPQRSTVWY"
    for c in letters:
        r = rng.random()
        if r < indel / 2:
            continue
        if r < indel:
            out.append("".join(rng.choice(aa) for _ in range(rng.randint(1, 6))))
        out.append(rng.choice(aa) if rng.random() < rate else c)
    return "".join(out)


@pytest.fixture(scope="module")
def database(proteome):
    """Two proteome queries (about 130 and 500 letters) and a database of the proteome, 40
    mutated copies of each query, and one 100,000-letter subject holding a copy of each."""
    rng = random.Random(7)
    lengths = np.asarray(proteome.lengths)
    queries = []
    for target in (130, 500):
        i = int(np.argmin(np.abs(lengths - target)))
        queries.append(blast_query_codes(EASEL_TO_NCBISTDAA[proteome.residues[proteome.offsets[i]:
                                                                              proteome.offsets[i + 1]]]))
    subjects = [EASEL_TO_NCBISTDAA[proteome.residues[proteome.offsets[i]:proteome.offsets[i + 1]]]
                for i in range(proteome.n_seqs)]
    letters = ["".join(NCBISTDAA[c] for c in q) for q in queries]
    for text in letters:
        subjects += [encode(mutated(text, rng, 0.1 + 0.35 * rng.random())) for _ in range(40)]
    filler = "".join(rng.choice("ACDEFGHIKLMNPQRSTVWY") for _ in range(100_000))
    subjects.append(encode(filler[:30_000] + mutated(letters[0], rng, 0.2) + filler[30_000:70_000] +
                           mutated(letters[1], rng, 0.2) + filler[70_000:]))
    offsets = np.zeros(len(subjects) + 1, np.int64)
    offsets[1:] = np.cumsum([len(s) for s in subjects])
    return queries, np.concatenate(subjects).astype(np.uint8), offsets


def hit_list_case(q, residues, offsets, matrix, seed):
    """A query's preliminary HSPs per subject, subjects in a shuffled order, and its cutoffs."""
    gp = stats.gapped_params("BLOSUM62", GAP_OPEN, GAP_EXTEND)
    cut = stats.search_cutoffs(stats.ungapped_params(q, matrix), gp, query_len=len(q), db_length=int(offsets[-1]),
                               evalue=10.0, min_subject_len=stats.BLAST_SEQSRC_MINLENGTH)
    init = ungapped_extensions(q, build_lookup(q, matrix.scores, 3, 11), residues, offsets,
                               np.arange(len(offsets) - 1, dtype=np.int64), matrix.scores, cut.x_drop_ungapped,
                               cut.ungapped_cutoff)
    prelim_all, _ = gapped.preliminary_gapped_hsps_batch(init, q, residues, offsets, matrix.scores, GAP_OPEN,
                                                         GAP_EXTEND, cut.x_drop_gapped, cut.cutoff_score,
                                                         expect_value=10.0)
    order = sorted(set(prelim_all["subject"].tolist()))
    random.Random(seed).shuffle(order)
    prelims = [prelim_all[prelim_all["subject"] == s] for s in order]

    def e_values(scores, lengths):
        return np.array([stats.spouge_evalue(int(x), gp.kbp, gp.gbp, len(q), int(n), int(offsets[-1]))
                         for x, n in zip(scores, lengths)], dtype=float)

    return prelims, order, cut, e_values


def plan_of(prelims, order, q, residues, offsets, matrix, cut):
    stacked = tb.stack_prelims(prelims)
    jobs, starts = gpu_tb.alignment_jobs(stacked, q, order, residues, offsets, matrix.scores, cut.x_drop_final)
    return gpu_tb.AlignmentPlan([], stacked, jobs, starts)


def rows_of(got):
    return [(int(j), *[int(x) for x in h.tolist()[:12]], float(h["evalue"]), qs, ss)
            for j, h, qs, ss in zip(got.subject, got.hsps, got.qseq, got.sseq)]


def test_kernel_matches_align_ex(tracer, database, blosum62):
    """Every job's best score, best cell and steps are numba align_ex's, for two queries in one
    launch; with a cap of 4,000 traceback bytes the long ones overflow and the rest still match."""
    queries, residues, offsets = database
    queries = queries[:1] if tracer.small else queries
    cases = [hit_list_case(q, residues, offsets, blosum62, seed) for seed, q in enumerate(queries)]
    plans = [plan_of(p, o, q, residues, offsets, blosum62, c) for (p, o, c, _), q in zip(cases, queries)]
    for cap in (gpu_tb.TB_CAP, 4000):
        lay = gpu_tb.layout(plans, queries, cap)
        engine = tracer(residues, offsets, cap)
        out, steps, step_at = engine._launch(plans, queries, blosum62.scores, GAP_OPEN, GAP_EXTEND)
        qp_of = {k: gapped.pad(q) for k, q in enumerate(queries)}
        owner = np.repeat(np.arange(len(plans)), [len(p.jobs) for p in plans])
        done = over = 0
        for j, job in enumerate(lay.jobs):
            m, n = int(job[gpu_tb.J_M]), int(job[gpu_tb.J_N])
            if m <= 0 or n <= 0:
                assert out[j].tolist() == [0, 0, 0, 0, 0]
                continue
            if out[j, 0] == gpu_tb.STATUS_OVERFLOW:
                over += 1
                continue
            assert out[j, 0] == gpu_tb.STATUS_DONE
            k = int(owner[j])
            q0, d, s_at = int(job[gpu_tb.J_Q0]), int(job[gpu_tb.J_DIR]), int(job[gpu_tb.J_S_AT])
            s0, s_len = int(job[gpu_tb.J_S0]), int(job[gpu_tb.J_S_LENGTH])
            sp = gapped.pad(residues[s_at:s_at + s_len])
            # align_ex's addressing, as gapped_alignment_with_traceback calls it (padded sequences)
            s_base = s0 + 2 if d < 0 else s0
            score, a, b, want = tb.align_ex(qp_of[k], q0 + 1, d, sp, s_base, d, m, n, blosum62.scores, GAP_OPEN,
                                            GAP_EXTEND, int(job[gpu_tb.J_X_DROP]))
            got = steps[step_at[j]:step_at[j] + out[j, 4]]
            assert out[j, 1:4].tolist() == [score, a, b], f"job {j}"
            assert got.tolist() == want.tolist(), f"job {j}"
            done += 1
        assert done > (200 if cap == gpu_tb.TB_CAP else 50)
        assert (over == 0) if cap == gpu_tb.TB_CAP else (over > 20)


def test_traceback_with_the_kernels_extensions_is_the_cpus(tracer, database, blosum62):
    """traceback_hit_list with the kernel's extensions gives the rows it gives alone (subjects in
    any order, a windowed subject, E-value reaps at 10 and 1e-20); jobs that overflowed are
    aligned on the CPU, the others not."""
    queries, residues, offsets = database
    queries = queries[:1] if tracer.small else queries
    cases = [hit_list_case(q, residues, offsets, blosum62, seed) for seed, q in enumerate(queries)]
    plans = [plan_of(p, o, q, residues, offsets, blosum62, c) for (p, o, c, _), q in zip(cases, queries)]
    checked = 0
    for cap in (gpu_tb.TB_CAP, 4000):
        engine = tracer(residues, offsets, cap)
        aligned = engine.align_many(plans, queries, blosum62.scores, GAP_OPEN, GAP_EXTEND)
        for (prelims, order, cut, e_values), q, kernel_out, plan in zip(cases, queries, aligned, plans):
            pre = gpu_tb.Aligned(plan.prelims, plan.starts, *kernel_out).ahead()
            for expect in (10.0, 1e-20):
                args = (q, order, residues, offsets, blosum62.scores, GAP_OPEN, GAP_EXTEND, cut.x_drop_final)
                kw = dict(evalue=e_values, expect_value=expect, letters=NCBISTDAA)
                alone = tb.traceback_hit_list(prelims, *args, **kw)
                with_gpu = tb.traceback_hit_list(plan.prelims, *args, **kw, aligned=pre)   # (stacked)
                assert rows_of(with_gpu) == rows_of(alone)
                checked += len(alone.hsps)
                assert alone.aligned_here > 100
                if cap == gpu_tb.TB_CAP:
                    assert with_gpu.aligned_here == 0
                else:
                    assert 0 < with_gpu.aligned_here < alone.aligned_here
        assert (engine.overflowed == 0) if cap == gpu_tb.TB_CAP else (engine.overflowed > 0)
    assert checked > (150 if tracer.small else 400)
