"""blastp's GPU kernel for hit detection, binning, the two-hit filter and ungapped extension
(``blast/gpu/ungapped.cu``), its CUDA code run on the CPU, against the CPU path.

tests/helpers/warp_emulator.cpp runs a block's threads as fibers that meet at every ``__syncthreads``
and warp intrinsic (the block-wide scan's shuffles, the window-based extension's prefix sums,
max-scans and ballots within windows of 4 to 32 lanes), with warps drifting apart and shared
memory starting as garbage; shared-memory atomics interleave in a random order.  The kernel is
built with the compile-time constants NVRTC gets (``kernel_options``), its block size, window
lanes and score source chosen as ``GpuUngapped`` chooses them, and its rows put in BLAST's
order as the GPU puts them (``order.cu``, emulated too); the overflow pass (subjects whose hits overflow a
block's buffer, run again with a buffer that fits) is done as ``GpuUngapped._chunk`` does it.
The init HSPs must equal ``ungapped.ungapped_extensions`` (the CPU path, itself checked
against BLAST+), field for field and in order (``EmulatedUngapped``,
tests/helpers/ungapped_emulated.py).  On a GPU host the same checks run in
tests/blast/test_blast_gpu.py; these let CI (no GPU) catch a kernel change that breaks exactness.
"""

from __future__ import annotations

from pathlib import Path

import emulator_build
import numpy as np
import pytest
from blast_cases import compare, query_codes
from ungapped_emulated import EmulatedUngapped

from gpu_search.blast.alphabet import EASEL_TO_NCBISTDAA
from gpu_search.blast.gpu import extension_for
from gpu_search.blast.lookup import build_lookup
from gpu_search.blast.matrix import load_matrix

pytestmark = pytest.mark.skipif(emulator_build.CXX is None, reason="no C++ compiler (g++)")


@pytest.fixture(scope="module")
def blosum62():
    return load_matrix("BLOSUM62")


@pytest.fixture(scope="module")
def subset(proteome):
    """180 proteome sequences of every length (the longest included), NCBIstdaa."""
    by_len = np.argsort(proteome.lengths, kind="stable")
    idx = np.sort(by_len[np.linspace(0, proteome.n_seqs - 1, 180).astype(int)])
    db = proteome.subset(idx)
    return EASEL_TO_NCBISTDAA[np.asarray(db.residues)], np.asarray(db.offsets, np.int64)


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("emulated_ungapped")


@pytest.mark.parametrize("extension,lanes,scores,prefilter", [("window", 8, "auto", False),
                                                              ("window", None, "auto", True),
                                                              ("window", 4, "pssm", False),
                                                              ("window", 32, "matrix", True),
                                                              ("diagonal", None, "pssm", False),
                                                              ("diagonal", None, "matrix", False)])
def test_extension_variants(extension, lanes, scores, prefilter, build_dir, subset, proteome, blosum62):
    """cuBLASTP's window-based extension (the default's for ordinary queries, with 4 to 32 lanes a
    window; with the bins that cannot trigger struck off first or not) and its diagonal-based one,
    scores from the PSSM or the matrix in shared memory: the CPU path's init HSPs, with every
    extension kept (cutoff 0) and with BLAST's cutoffs."""
    engine = EmulatedUngapped(build_dir, *subset, extension=extension, window_lanes=lanes, scores=scores,
                              prefilter=prefilter)
    n = 0
    for i in (10, 500, 1000):
        n += compare(engine, subset, query_codes(proteome, i), blosum62, cutoff=0)
        compare(engine, subset, query_codes(proteome, i), blosum62)
    assert n > 500, "too few extensions to compare"


def test_long_query_block_sizes_and_word_sizes(build_dir, subset, proteome, blosum62):
    """The longest proteome query (more threads a block, 16 window lanes, the matrix in shared
    memory), word sizes 2 and 4 with other windows, a short X-drop."""
    longest = int(np.argmax(np.diff(np.asarray(proteome.offsets))))
    engine = EmulatedUngapped(build_dir, *subset)
    assert compare(engine, subset, query_codes(proteome, longest), blosum62, cutoff=0) > 100
    compare(engine, subset, query_codes(proteome, 7), blosum62, 2, 9, 40, cutoff=0)
    compare(engine, subset, query_codes(proteome, 7), blosum62, 4, 13, 80, cutoff=0)
    compare(engine, subset, query_codes(proteome, 200), blosum62, x_drop=4, cutoff=0)
    compare(EmulatedUngapped(build_dir, *subset, block=256), subset, query_codes(proteome, 200), blosum62, cutoff=0)
    struck = EmulatedUngapped(build_dir, *subset, prefilter=True)
    assert compare(struck, subset, query_codes(proteome, longest), blosum62, cutoff=0) > 100
    for word_size, threshold, window in ((2, 9, 40), (3, 11, 20), (4, 13, 80)):
        compare(struck, subset, query_codes(proteome, 7), blosum62, word_size, threshold, window, cutoff=0)


@pytest.mark.parametrize("extension,prefilter", [("window", False), ("window", True), ("diagonal", False)])
def test_overflowing_subjects_run_again(extension, prefilter, build_dir, subset, proteome, blosum62):
    """Blocks' hit buffers of 64 slots: subjects with more hits are listed by the kernel and
    run again with buffers that fit; same init HSPs."""
    engine = EmulatedUngapped(build_dir, *subset, extension=extension, hit_slots=64, prefilter=prefilter)
    compare(engine, subset, query_codes(proteome, 10), blosum62, cutoff=0)
    assert engine.overflowed > 10


LOW_COMPLEXITY_QUERY = 863          # a proteome protein with lookup cells of up to 284 query offsets
ITS_SUBJECTS = [1437, 1388, 1538]   # proteome proteins with 96,000-143,000 word hits each for it


@pytest.mark.parametrize("extension,prefilter", [("auto", True), ("window", True), ("window", False)])
def test_low_complexity_query(extension, prefilter, build_dir, proteome, blosum62):
    """A low-complexity query against low-complexity subjects: lookup cells of hundreds of
    query offsets (the default extension then diagonal-based), bins of hundreds of hits
    (sorted with Shell's passes first; by a thread per bin, or by the PREFILTER threads, or
    by each window's first lane), subjects over the block's buffer run again.  Same init
    HSPs as the CPU path."""
    by_len = np.argsort(proteome.lengths, kind="stable")
    idx = np.union1d(by_len[np.linspace(0, proteome.n_seqs - 1, 20).astype(int)], ITS_SUBJECTS)
    db = proteome.subset(idx)
    codes = EASEL_TO_NCBISTDAA[np.asarray(db.residues)], np.asarray(db.offsets, np.int64)
    q = query_codes(proteome, LOW_COMPLEXITY_QUERY)
    lookup = build_lookup(q, blosum62.scores, 3, 11)
    assert extension_for(lookup) == "diagonal" and extension_for(build_lookup(
        query_codes(proteome, 10), blosum62.scores, 3, 11)) == "window"
    engine = EmulatedUngapped(build_dir, *codes, extension=extension, hit_slots=1 << 17, prefilter=prefilter)
    assert compare(engine, codes, q, blosum62, cutoff=0) > 500
    assert engine.overflowed >= 3


def test_rows_of_a_batch_put_in_order_together(build_dir, subset, proteome, blosum62):
    """Several queries' rows, each query's in a region of its own as a batch of launches
    leaves them (GpuUngapped._chunk_many): order.cu's keys of the batch, one sort and its
    gather give each query's rows in BLAST's order, as the CPU path returns them (shuffled
    here, with garbage between the regions and between the queries' rank arrays)."""
    from blast_cases import cutoffs

    from gpu_search.blast.gpu import kernel_choice, kernel_options
    from gpu_search.blast.ungapped import ungapped_extensions

    residues, offsets = subset
    rng = np.random.default_rng(11)
    engine = EmulatedUngapped(build_dir, *subset, extension="window", window_lanes=8)
    refs, ranks = [], []
    for i in (10, 200, 3, 1000):            # a query with no rows among them, none with one row
        q = query_codes(proteome, i)
        lookup = build_lookup(q, blosum62.scores, 3, 11)
        x_drop, cutoff = cutoffs(q, blosum62, int(offsets[-1]))
        ref = ungapped_extensions(q, lookup, residues, offsets, np.arange(len(offsets) - 1), blosum62.scores,
                                  x_drop, 0 if i != 3 else 10**6, 40, method="scan")
        refs.append(np.stack([ref[name] for name in ref.dtype.names], axis=1).astype(np.int32))
        ranks.append(np.asarray(lookup.query_rank, np.int32))
    assert [len(r) == 0 for r in refs] == [False, False, True, False] and sum(map(len, refs)) > 300
    cap = max(map(len, refs)) + 5
    out = rng.integers(-9, 9, 7 * cap * len(refs), dtype=np.int32)
    regions, words, rank_at = [], [], []
    at = 0
    for j, (ref, rank) in enumerate(zip(refs, ranks)):
        out[7 * cap * j:7 * (cap * j + len(ref))] = ref[rng.permutation(len(ref))].ravel()
        regions.append((cap * j, len(ref)))
        words += [rng.integers(0, 99, 3, dtype=np.int32), rank]
        rank_at.append(at + 3)
        at += 3 + len(rank)
    choice = kernel_choice(build_lookup(query_codes(proteome, 10), blosum62.scores, 3, 11), 40, "window", None, 8)
    lib = engine._lib(kernel_options(3, choice.block, choice.extension, choice.lanes, choice.matrix_smem,
                                     choice.prefilter))
    got = engine.blast_order_many(lib, out, regions, ranks, np.concatenate(words), rank_at)
    for j, (g, ref) in enumerate(zip(got, refs)):
        assert np.array_equal(g, ref), f"query {j}"
