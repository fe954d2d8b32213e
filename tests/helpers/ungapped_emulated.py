"""blast/gpu/ungapped.cu run on the CPU by warp_emulator.cpp, as ``GpuUngapped`` runs it on a GPU.

``EmulatedUngapped`` builds the kernel with the compile-time constants NVRTC gets
(``kernel_options``), its block size, window lanes and score source chosen as
``GpuUngapped`` chooses them, runs the overflow pass as ``GpuUngapped`` does, and
puts the rows in BLAST's order with order.cu (emulated too).  Used by
tests/kernels/test_blast_ungapped_emulated.py and the ThreadSanitizer test.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import emulator_build
import numpy as np

from gpu_search.blast.gpu import (HIT_SLOTS, KERNEL_FILE, MAX_SMEM_CELLS, ORDER_FILE, SLOTS_PER_HIT_X2,
                                  kernel_choice, kernel_options, order_key_bits)
from gpu_search.blast.ungapped import _pssm, _to_records
from gpu_search.blast.wordhits import diag_array_length
from gpu_search.gpu import longest_first

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

    def blast_order_many(self, lib, out, regions, ranks, rank_words, rank_at):
        """Several queries' rows in BLAST's order as GpuUngapped._chunk_many puts them: query
        j's rows at out[7 * regions[j][0]:] (regions: (first row, rows)), its rank array at
        rank_words[rank_at[j]:]; order.cu's keys of the batch (emulated), one argsort,
        order.cu's gather (emulated).  Returns each query's rows."""
        subject_bits, offset_bits = order_key_bits(self.offsets)
        rank_bits = max(max(1, len(r).bit_length()) for r in ranks)
        q_shift = subject_bits + offset_bits + rank_bits
        assert q_shift + (len(ranks) - 1).bit_length() <= 63
        first = np.concatenate([[0], np.cumsum([n for _, n in regions])]).astype(np.int64)
        region = np.array([r for r, _ in regions], np.int64)
        total = int(first[-1])
        keys = np.zeros(total, np.int64)
        packed = np.zeros(7 * total, np.int32)
        rc = lib.emulate_order_keys_many(ctypes.c_uint(self.seed), _p(out), _p(region), _p(first), len(regions),
                                         _p(rank_words), _p(np.asarray(rank_at, np.int64)), offset_bits, rank_bits,
                                         q_shift, _p(keys), _p(packed))
        assert rc == 0, lib.emulator_error().decode()
        assert len(np.unique(keys)) == total, "two rows with the same key"
        rows = np.zeros(7 * total, np.int32)
        rc = lib.emulate_gather_rows(ctypes.c_uint(self.seed), _p(packed), _p(np.argsort(keys)), total, _p(rows))
        assert rc == 0, lib.emulator_error().decode()
        rows = rows.reshape(total, 7)
        return [rows[first[j]:first[j + 1]] for j in range(len(regions))]

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
