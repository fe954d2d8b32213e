"""blast/gpu/gapped.cu built for the CPU with a C++ compiler, and run as the kernel's threads would.

gapped.cu's per-subject code compiles as plain C++ when ``__CUDACC__`` is not
defined; ``prelim_gapped_host`` then runs every subject group in turn.  The
CPU-only tests use it to check the kernel's code against gapped.py without a GPU.
``EmulatedKernel`` runs the CUDA kernels themselves (the warp kernel too) on the
CPU through tests/helpers/warp_emulator.cpp; ``GpuKernel`` runs them on a GPU.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import emulator_build
import numpy as np

from gpu_search.blast import stats
from gpu_search.blast.gpu import gapped as gpu_gapped
from gpu_search.blast.lookup import build_lookup
from gpu_search.blast.ungapped import ungapped_extensions

CXX = shutil.which("g++") or shutil.which("c++")
_P = ctypes.c_void_p


def build(directory: Path, band: int = gpu_gapped.BAND, cell_budget: int = gpu_gapped.CELL_BUDGET):
    """gapped.cu as a shared library (ctypes) with a ring of ``band`` cells and a cell budget."""
    out = Path(directory) / f"gapped{band}_{cell_budget}.so"
    subprocess.run([CXX, "-O2", "-std=c++17", "-shared", "-fPIC", "-x", "c++", f"-DBAND={band}",
                    f"-DCELL_BUDGET={cell_budget}", "-o", str(out), str(gpu_gapped.KERNEL_FILE)],
                   check=True, capture_output=True)
    lib = ctypes.CDLL(str(out))
    lib.prelim_gapped_host.restype = None
    return lib


class GpuKernel:
    """A kernel of gapped.cu on the GPU in place of the host build, for the same tests (every group
    of a batch on the GPU; the database uploaded once per residues array)."""

    def __init__(self, kernel: str = "warp", band: int = gpu_gapped.BAND,
                 cell_budget: int = gpu_gapped.CELL_BUDGET):
        self.kernel, self.band, self.cell_budget = kernel, band, cell_budget
        self._db = None                                 # (residues, offsets, GpuUngapped)

    def run_batch(self, batch, residues, offsets, matrix, gap_open=11, gap_extend=1):
        import dataclasses

        import cupy as cp

        from gpu_search.blast.gpu import GpuUngapped

        if self._db is None or self._db[0] is not residues or self._db[1] is not offsets:
            self._db = (residues, offsets, GpuUngapped(np.ascontiguousarray(residues, np.uint8),
                                                       np.ascontiguousarray(offsets, np.int64)))
        engine = self._db[2]
        prelim = gpu_gapped.GpuPrelim(engine, band=self.band, cell_budget=self.cell_budget,
                                      max_gpu_group=1 << 30, kernel=self.kernel)
        batch = dataclasses.replace(batch, on_gpu=np.ones(len(batch.group_subject), bool))
        with cp.cuda.Device(engine.device_id), engine.stream:
            return prelim._launch_on_device(cp, batch, np.ascontiguousarray(matrix, np.int32), gap_open,
                                            gap_extend)


def _p(a):
    return a.ctypes.data_as(_P)




class EmulatedKernel:
    """A kernel of gapped.cu, the CUDA code itself, run on the CPU by tests/helpers/warp_emulator.cpp
    (the warp's lanes as fibers meeting at every warp intrinsic): ``prelim_gapped_warp``
    (``which="warp"``) or ``prelim_gapped`` (``"thread"``).  Used like ``build``'s library."""

    def __init__(self, directory: Path, which: str = "warp", band: int = gpu_gapped.BAND,
                 cell_budget: int = gpu_gapped.CELL_BUDGET, seed: int = 1):
        out = emulator_build.build(Path(directory) / f"emulated{band}_{cell_budget}.so",
                                   [f"-DWARPS={gpu_gapped.WARPS}", f"-DBAND={band}", f"-DCELL_BUDGET={cell_budget}",
                                    f'-DGAPPED_CU="{gpu_gapped.KERNEL_FILE}"'], optimize="-O2")
        self.lib = ctypes.CDLL(str(out))
        self.lib.emulator_error.restype = ctypes.c_char_p
        self.which, self.seed = which, seed

    def run_batch(self, batch, residues, offsets, matrix, gap_open=11, gap_extend=1):
        n_groups = len(batch.group_subject)
        jobs = np.arange(n_groups, dtype=np.int32)
        lead = (ctypes.c_int(0 if self.which == "warp" else 1), ctypes.c_uint(self.seed), _p(jobs),
                ctypes.c_int(n_groups))
        rows, counts, status, failed = _call(self.lib.emulate_prelim, lead, batch, residues, offsets, matrix,
                                             gap_open, gap_extend)
        assert not failed, self.lib.emulator_error().decode()
        return rows, counts, status


def _call(fn, lead, batch, residues, offsets, matrix, gap_open, gap_extend):
    """fn(*lead, <prelim_gapped_host's arguments after n_groups>) over a batch: (rows of the groups
    one after the other, counts, status, fn's return value)."""
    init = batch.init
    cols = [np.ascontiguousarray(init[k], np.int32) for k in ("q_start", "s_start", "length", "score")]
    n, n_groups = len(init), len(batch.group_subject)
    order, tree, out = np.zeros(n, np.int32), np.zeros(6 * n, np.int32), np.zeros(7 * n, np.int32)
    counts, status = np.zeros(n_groups, np.int32), np.zeros(n_groups, np.int32)
    res = np.ascontiguousarray(residues, np.uint8)
    off = np.ascontiguousarray(offsets, np.int64)
    mat = np.ascontiguousarray(matrix, np.int32)
    params = np.ascontiguousarray(batch.params, np.int32)
    c_int = ctypes.c_int
    rc = fn(*lead, _p(batch.group_start), _p(batch.group_subject), _p(batch.group_query), *[_p(c) for c in cols],
            _p(batch.queries), _p(batch.query_start), _p(params), _p(res), _p(off), _p(mat), c_int(gap_open),
            c_int(gap_extend), _p(order), _p(tree), _p(out), _p(counts), _p(status))
    rows = out.reshape(-1, 7)[gpu_gapped.row_index(batch.group_start, counts)]
    return rows, counts, status, rc


def run_batch(lib, batch, residues, offsets, matrix, gap_open=11, gap_extend=1):
    """prelim_gapped_host over every group of a ``gpu_gapped.PrelimBatch`` (on_gpu ignored).

    Returns (rows, counts, status): rows of the groups one after the other (as
    GpuPrelim gathers them from the kernel).  ``lib`` may also be a ``GpuKernel`` (the kernel on a GPU)."""
    if isinstance(lib, (GpuKernel, EmulatedKernel)):
        return lib.run_batch(batch, residues, offsets, matrix, gap_open, gap_extend)
    rows, counts, status, _ = _call(lib.prelim_gapped_host, (ctypes.c_int(len(batch.group_subject)),), batch,
                                    residues, offsets, matrix, gap_open, gap_extend)
    return rows, counts, status


def run_host(lib, init, query, residues, offsets, matrix, x_dropoff, cutoff, expect_value=10.0,
             gap_open=11, gap_extend=1):
    """prelim_gapped_host over every subject group of one query's ``init``.

    Returns (group_start, group_subject, rows, counts, status).
    """
    batch = gpu_gapped.make_batch([gpu_gapped.PrelimJob(init, np.ascontiguousarray(query, np.uint8),
                                                        x_dropoff, cutoff, expect_value)])
    rows, counts, status = run_batch(lib, batch, residues, offsets, matrix, gap_open, gap_extend)
    return batch.group_start, batch.group_subject, rows, counts, status


def search(query, residues, offsets, matrix, cutoff_scale=1.0):
    """Init HSPs of a query (CPU path), and BLAST's gapped X-drop and cutoff (the cutoff scaled)."""
    kbp = stats.ungapped_params(query, matrix)
    g = stats.gapped_params(matrix.name, 11, 1)
    cut = stats.search_cutoffs(kbp, g, len(query), stats.BLAST_SEQSRC_MINLENGTH, int(offsets[-1]), evalue=10.0)
    lookup = build_lookup(query, matrix.scores, 3, 11)
    init = ungapped_extensions(query, lookup, residues, offsets, np.arange(len(offsets) - 1), matrix.scores,
                               cut.x_drop_ungapped, cut.ungapped_cutoff, 40,
                               method="scan")
    return init, cut.x_drop_gapped, int(cut.cutoff_score * cutoff_scale)
