"""blastp's GPU kernel for hit detection, binning, the two-hit filter and ungapped extension
(``blast/gpu/ungapped.cu``), its CUDA code run on the CPU, against the CPU path.

tests/warp_emulator.cpp runs a block's threads as fibers that meet at every ``__syncthreads``
and warp intrinsic (the block-wide scan's shuffles, the window-based extension's prefix sums,
max-scans and ballots within windows of 4 to 32 lanes), with warps drifting apart and shared
memory starting as garbage; shared-memory atomics interleave in a random order.  The kernel is
built with the compile-time constants NVRTC gets (``kernel_options``), its block size, window
lanes and score source chosen as ``GpuUngapped`` chooses them, and its rows put in BLAST's
order as the GPU puts them (``order.cu``, emulated too); the overflow pass (subjects whose hits overflow a
block's buffer, run again with a buffer that fits) is done as ``GpuUngapped._chunk`` does it.
The init HSPs must equal ``ungapped.ungapped_extensions`` (the CPU path, itself checked
against BLAST+), field for field and in order.  On a GPU host the same checks run in
test_blast_gpu.py; these let CI (no GPU) catch a kernel change that breaks exactness.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import emulator_build
import numpy as np
import pytest
from blast_cases import compare, query_codes

from gpu_search.blast.alphabet import EASEL_TO_NCBISTDAA
from gpu_search.blast.gpu import (HIT_SLOTS, KERNEL_FILE, MAX_SMEM_CELLS, ORDER_FILE, SLOTS_PER_HIT_X2,
                                  extension_for, kernel_choice, kernel_options, order_key_bits)
from gpu_search.blast.lookup import build_lookup
from gpu_search.blast.matrix import load_matrix
from gpu_search.blast.ungapped import _pssm, _to_records
from gpu_search.blast.wordhits import diag_array_length
from gpu_search.gpu import longest_first

pytestmark = pytest.mark.skipif(emulator_build.CXX is None, reason="no C++ compiler")
_P = ctypes.c_void_p
_int = ctypes.c_int


def _p(a: np.ndarray):
    assert a.flags.c_contiguous
    return a.ctypes.data_as(_P)


class EmulatedUngapped:
    """``GpuUngapped.ungapped_extensions`` with the kernel run by the CPU emulator (the whole
    database one chunk)."""

    def __init__(self, directory: Path, residues, offsets, extension: str = "auto", window_lanes=None,
                 scores: str = "auto", block=None, hit_slots: int = HIT_SLOTS, seed: int = 1,
                 prefilter: bool = False):
        self.directory = Path(directory)
        self.residues = np.ascontiguousarray(residues, np.uint8)
        self.offsets = np.ascontiguousarray(offsets, np.int64)
        self.extension, self.window_lanes, self.scores, self.block = extension, window_lanes, scores, block
        self.hit_slots, self.seed, self.prefilter = hit_slots, seed, prefilter
        self.order = longest_first(np.diff(self.offsets))
        self.overflowed = 0

    def _lib(self, options: tuple):
        # the emulator defines the dynamic shared array itself: `extern __shared__` -> `extern`
        source = self.directory / "ungapped_emulated.cu"
        if not source.exists():
            text = KERNEL_FILE.read_text()
            patched = text.replace("extern __shared__ int smem[];", "extern int smem[];")
            assert patched != text
            source.write_text(patched)
        name = "ungapped" + "".join(o.replace("-D", "_").replace("=", "") for o in options)
        out = emulator_build.build(self.directory / f"{name}.so",
                                   [*options, f'-DUNGAPPED_CU="{source}"', f'-DORDER_CU="{ORDER_FILE}"'])
        lib = ctypes.CDLL(str(out))
        lib.emulator_error.restype = ctypes.c_char_p
        return lib

    def ungapped_extensions(self, query_codes, lookup, matrix_scores, x_drop: int, cutoff: int,
                            window: int = 40) -> np.ndarray:
        query_codes = np.ascontiguousarray(query_codes, dtype=np.uint8)
        qlen = lookup.query_length
        n_cells = diag_array_length(qlen, window)
        assert n_cells <= MAX_SMEM_CELLS and lookup.n_entries and window, "a case GpuUngapped leaves to the CPU"
        choice = kernel_choice(lookup, window, self.extension, self.block, self.window_lanes, self.scores,
                               self.prefilter)
        lib = self._lib(kernel_options(lookup.word_size, choice.block, choice.extension, choice.lanes,
                                       choice.matrix_smem, choice.prefilter))
        assert 2 * n_cells * 4 <= lib.shared_memory_bytes()
        query = (np.ascontiguousarray(lookup.cell_start, np.int32), np.ascontiguousarray(lookup.offsets, np.int32),
                 _pssm(query_codes, matrix_scores), query_codes, np.ascontiguousarray(matrix_scores, np.int32))
        args = (qlen, n_cells - 1, window, x_drop, cutoff)
        rows, over = self._launch(lib, query, args, self.order, self.hit_slots)
        parts = [rows]
        self.overflowed = len(over)
        if len(over):                     # second pass, buffers sized for the overflowing subjects
            slots = int(over[:, 1].max()) * SLOTS_PER_HIT_X2 // 2 + 64
            rows2, over2 = self._launch(lib, query, args, np.ascontiguousarray(over[:, 0], np.int32), slots)
            assert len(over2) == 0, "hit buffer overflow in the second pass"
            parts.append(rows2)
        return _to_records(self._blast_order(lib, np.concatenate(parts), lookup.query_rank))

    def _blast_order(self, lib, rows, rank):
        """The rows in BLAST's order as GpuUngapped._blast_order puts them: order.cu's keys
        (emulated), an argsort, order.cu's gather (emulated)."""
        n = len(rows)
        subject_bits, offset_bits = order_key_bits(self.offsets)
        rank_bits = max(1, len(rank).bit_length())
        assert subject_bits + offset_bits + rank_bits <= 63
        if n <= 1:
            return rows
        rows = np.ascontiguousarray(rows, np.int32)
        keys = np.zeros(n, np.int64)
        rc = lib.emulate_order_keys(ctypes.c_uint(self.seed), _p(rows), n, _p(np.ascontiguousarray(rank, np.int32)),
                                    offset_bits, rank_bits, _p(keys))
        assert rc == 0, lib.emulator_error().decode()
        assert len(np.unique(keys)) == n, "two rows with the same key"
        order = np.argsort(keys)
        out = np.zeros_like(rows)
        rc = lib.emulate_gather_rows(ctypes.c_uint(self.seed), _p(rows), _p(order), n, _p(out))
        assert rc == 0, lib.emulator_error().decode()
        return out

    def _launch(self, lib, query, args, order, slots: int, n_blocks: int = 2, out_cap: int = 1 << 17):
        scratch = np.zeros(n_blocks * slots, np.int32)
        counters = np.zeros(3, np.int32)                   # next job, rows out, overflow
        out = np.zeros(7 * out_cap, np.int32)
        overflow = np.zeros(2 * max(len(order), 1), np.int32)
        cells, offs, pssm, codes, matrix = query
        rc = lib.emulate_ungapped(ctypes.c_uint(self.seed), n_blocks, _p(self.residues), _p(self.offsets),
                                  _p(order), len(order), _p(cells), _p(offs), _p(pssm), _p(codes), _p(matrix),
                                  *[_int(int(a)) for a in args], _p(scratch), slots, _p(counters[0:1]), _p(out),
                                  out_cap, _p(counters[1:2]), _p(overflow), _p(counters[2:3]))
        assert rc == 0, lib.emulator_error().decode()
        n_rows = int(counters[1])
        assert n_rows <= out_cap
        return out[:7 * n_rows].reshape(n_rows, 7), overflow[:2 * int(counters[2])].reshape(-1, 2)


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
