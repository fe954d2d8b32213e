"""blastp's preliminary gapped stage on the GPU (``gapped.cu``), score only.

For several queries at once (one kernel launch; a single query's subjects
fill only a few dozen blocks of the GPU): the init HSPs of the ungapped stage
go in (already on the host, in BLAST's order, subject by subject), the
preliminary gapped HSPs of every subject come out, purged and in score
order -- for each query the same rows as the CPU path's
``gapped.preliminary_gapped_hsps_batch``.  One GPU warp (``kernel="warp"``,
the default: its 32 lanes compute each DP row together) or one GPU thread
(``kernel="thread"``) replays ``BLAST_GetGappedScore`` for one subject of one
query; the database is the one the ungapped stage uploaded
(``GpuUngapped``'s resident chunks).

What stays on the CPU (same results, the engine's threads run it):

* subjects with more than ``MAX_GPU_GROUP`` init HSPs (a thread's work grows
  with the square of their number: the containment test and the sort),
  subjects whose DP band outgrew the kernel's ring, and subjects whose
  extensions need more than ``CELL_BUDGET`` DP cells (status OVERFLOW: the
  long alignments of true homologs, serial work that a CPU core does many
  times faster than one GPU thread, while the kernel would wait for it): all
  are returned as init HSPs for ``gapped.preliminary_gapped_hsps_batch``;
* everything when the database is streamed (not resident on the GPU), and a
  query's subjects when the GPU has no memory left for its buffers.

The purge of HSPs with common endpoints and the sort by score run on the host
(``gapped.purge_and_sort_groups``): the kernel returns few rows.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ...gpu import is_out_of_memory, load_functions
from .. import gapped

KERNEL_FILE = Path(__file__).with_name("gapped.cu")
BAND = 256                 # DP cells per row kept by a thread (a ring): wider bands go to the CPU
CELL_BUDGET = 1 << 18      # DP cells a thread may compute for a subject: longer work goes to the CPU
#                            (smaller budgets were slower end to end on an H100: docs/benchmarks.md)
MAX_GPU_GROUP = 64         # subjects with more init HSPs go to the CPU
THREADS = 128              # per block (the kernels' __launch_bounds__)
WARPS = THREADS // 32      # prelim_gapped_warp: subjects a block
WARP_SMEM_LIMIT = 48 * 1024    # bytes of static shared memory: the warp kernel's rings and matrix (gapped.cu)
KERNELS = {"warp": "prelim_gapped_warp", "thread": "prelim_gapped"}    # one subject per warp / thread
STATUS_RESTARTED = 1
STATUS_OVERFLOW = 2


def kernel_options(band: int = BAND, cell_budget: int = CELL_BUDGET) -> tuple:
    """gapped.cu's compile-time constants (NVRTC's options): both kernels (KERNELS) are in
    the one file, so the kernel is not among them."""
    return f"-DBAND={int(band)}", f"-DCELL_BUDGET={int(cell_budget)}", f"-DWARPS={WARPS}"


def load_kernel(device_id: int, band: int = BAND, cell_budget: int = CELL_BUDGET, kernel: str = "warp"):
    """gapped.cu's kernel (KERNELS) compiled for a ring size and cell budget on one device."""
    return load_functions(KERNEL_FILE, kernel_options(band, cell_budget), (KERNELS[kernel],), device_id)[0]


def kernel_shapes():
    """(file, options) of the gapped.cu shape a blastp run loads (:mod:`gpu_search.gpu.compiled`
    builds it ahead of time): the ring BAND (the engines' only one) and the default cell
    budget CELL_BUDGET, with either kernel.  A budget given with --gpu-gapped-cells is a
    shape of its own (any number from 1 to 2^30: too many to build), compiled at run time."""
    yield KERNEL_FILE, kernel_options()


def subject_groups(init: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(group_start (n_groups + 1,), group_subject (n_groups,)) of init HSPs stored subject by subject."""
    subj = np.asarray(init["subject"])
    if not len(subj):
        return np.zeros(1, np.int32), np.zeros(0, np.int32)
    starts = np.flatnonzero(subj[1:] != subj[:-1]) + 1
    group_start = np.concatenate(([0], starts, [len(subj)])).astype(np.int32)
    return group_start, subj[group_start[:-1]].astype(np.int32)


class PrelimJob(NamedTuple):
    """One query's share of a batch: its init HSPs (subject by subject) and its parameters."""
    init: np.ndarray
    query_codes: np.ndarray
    x_dropoff: int
    cutoff: int
    expect_value: float = 10.0


@dataclass
class PrelimBatch:
    """The subject groups of several queries, one after the other, as one kernel launch takes them."""
    init: np.ndarray             # every query's init HSPs, query after query
    group_start: np.ndarray      # (n_groups + 1,) into init
    group_subject: np.ndarray    # (n_groups,)
    group_query: np.ndarray      # (n_groups,) the query of the batch each group belongs to
    query_groups: np.ndarray     # (n_queries + 1,) each query's first group
    queries: np.ndarray          # every query's letters, concatenated (uint8)
    query_start: np.ndarray      # (n_queries + 1,) into queries
    params: np.ndarray           # (n_queries, 4) int32: X-drop, cutoff, restricted cutoff, restricted allowed
    on_gpu: np.ndarray           # bool per group: the groups the kernel runs


def make_batch(jobs: list[PrelimJob], max_gpu_group: int = MAX_GPU_GROUP) -> PrelimBatch:
    """The kernel's inputs for ``jobs`` (at least one); groups with more than ``max_gpu_group`` init
    HSPs stay off the GPU."""
    starts, subjects, owners, n_groups = [], [], [], [0]
    base = 0
    for k, job in enumerate(jobs):
        gs, gsub = subject_groups(job.init)
        starts.append(gs[:-1] + base)
        subjects.append(gsub)
        owners.append(np.full(len(gsub), k, np.int32))
        n_groups.append(n_groups[-1] + len(gsub))
        base += len(job.init)
    group_start = np.concatenate(starts + [[base]]).astype(np.int32)
    lengths = [len(job.query_codes) for job in jobs]
    params = np.array([(job.x_dropoff, job.cutoff, gapped.restricted_cutoff(job.cutoff),
                        int(job.expect_value <= gapped.RESTRICTED_ALIGNMENT_WORST_EVALUE)) for job in jobs],
                      np.int32).reshape(-1, 4)
    return PrelimBatch(
        init=np.concatenate([job.init for job in jobs]),
        group_start=group_start,
        group_subject=np.concatenate(subjects).astype(np.int32),
        group_query=np.concatenate(owners).astype(np.int32),
        query_groups=np.asarray(n_groups, np.int64),
        queries=np.concatenate([np.asarray(job.query_codes, np.uint8) for job in jobs]),
        query_start=np.concatenate(([0], np.cumsum(lengths))).astype(np.int32),
        params=params,
        on_gpu=np.diff(group_start) <= max_gpu_group)


class GpuPrelim:
    """The preliminary gapped stage of several queries at a time, on the GPU of a ``GpuUngapped``.

    Args:
        ungapped: the GpuUngapped holding the database (its device, chunks
            and stream).
        band: DP ring cells per row (a power of two).
        max_gpu_group: subjects with more init HSPs are left to the CPU.
        cell_budget: DP cells a thread may compute for one subject before
            leaving it to the CPU (long extensions: true homologs).
        kernel: "warp" (one warp per subject) or "thread" (one thread per subject).
    """

    def __init__(self, ungapped, band: int = BAND, max_gpu_group: int = MAX_GPU_GROUP,
                 cell_budget: int = CELL_BUDGET, kernel: str = "warp"):
        if kernel not in KERNELS:
            raise ValueError(f"unknown gapped kernel {kernel!r} (one of {', '.join(KERNELS)})")
        if kernel == "warp" and (WARPS * 2 * band + 28 * 28) * 4 > WARP_SMEM_LIMIT:     # as WARP_SMEM_BYTES
            raise ValueError(f"a ring of {band} cells does not fit the warp kernel's shared memory (at most 1024)")
        self.kernel = kernel
        self.ungapped = ungapped
        self.band = int(band)
        self.cell_budget = int(cell_budget)
        self.max_gpu_group = int(max_gpu_group)
        self.overflowed = 0          # subjects sent back to the CPU by the ring or the budget, this run
        self.out_of_memory = 0       # queries whose subjects all went to the CPU for want of GPU memory
        self.kernel_seconds = 0.0    # GPU time of the kernel launches, this run
        self.seconds = dict.fromkeys(("inputs and launch", "kernel and copy back", "results"), 0.0)

    @property
    def available(self) -> bool:
        """False when the database is streamed (not resident): then the CPU does the stage."""
        return not self.ungapped.streamed

    def run(self, init: np.ndarray, query_codes, matrix_scores, gap_open: int, gap_extend: int,
            x_dropoff: int, cutoff: int, expect_value: float = 10.0) -> tuple[np.ndarray, np.ndarray]:
        """Preliminary gapped HSPs of the subjects of ``init`` (INIT_HSP rows, subject by subject).

        Returns:
            (hsps, left): ``hsps`` PRELIM_BATCH_DTYPE rows of the subjects done
            on the GPU (subjects in input order, each purged and in score
            order, as ``gapped.preliminary_gapped_hsps_batch``); ``left`` the
            init HSPs of the subjects the CPU must do (whole subjects).
        """
        return self.run_many([PrelimJob(init, query_codes, x_dropoff, cutoff, expect_value)],
                             matrix_scores, gap_open, gap_extend)[0]

    def run_many(self, jobs: list[PrelimJob], matrix_scores, gap_open: int,
                 gap_extend: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """``run`` for several queries in one kernel launch: (hsps, left) of each job, in order.

        A batch the GPU has no memory for is split in two and retried; a single
        query's subjects then go to the CPU (same HSPs)."""
        empty = np.empty(0, dtype=gapped.PRELIM_BATCH_DTYPE)
        if not self.available or not jobs:
            return [(empty, job.init) for job in jobs]
        batch = make_batch(jobs, self.max_gpu_group)
        n_groups = len(batch.group_subject)
        counts = np.zeros(n_groups, np.int32)
        status = np.zeros(n_groups, np.int32)
        rows = np.empty((0, 7), np.int32)
        if batch.on_gpu.any():
            launched = self._launch(batch, matrix_scores, gap_open, gap_extend)
            if launched is None:                          # out of GPU memory
                if len(jobs) > 1:
                    half = len(jobs) // 2
                    return (self.run_many(jobs[:half], matrix_scores, gap_open, gap_extend) +
                            self.run_many(jobs[half:], matrix_scores, gap_open, gap_extend))
                self.out_of_memory += 1
                status += STATUS_OVERFLOW
            else:
                rows, counts, status = launched
        self.overflowed += int(np.count_nonzero(batch.on_gpu & (status & STATUS_OVERFLOW != 0)))
        # each query's groups and rows (rows are group after group)
        t0 = time.perf_counter()
        row_at = np.concatenate(([0], np.cumsum(counts, dtype=np.int64)))
        results = []
        for k, job in enumerate(jobs):
            g0, g1 = batch.query_groups[k], batch.query_groups[k + 1]
            results.append(collect(job.init, batch.group_start[g0:g1 + 1] - batch.group_start[g0],
                                   batch.group_subject[g0:g1], batch.on_gpu[g0:g1],
                                   rows[row_at[g0]:row_at[g1]], counts[g0:g1], status[g0:g1]))
        self.seconds["results"] += time.perf_counter() - t0
        return results

    def _launch(self, batch: PrelimBatch, matrix_scores, gap_open, gap_extend):
        """The kernel over the batch's GPU groups, chunk by chunk of the resident database.

        Returns (rows of every group in group order, counts, status) on the
        host, or None when the GPU has no memory for the batch's buffers."""
        import cupy as cp

        with cp.cuda.Device(self.ungapped.device_id), self.ungapped.stream:
            try:
                return self._launch_on_device(cp, batch, matrix_scores, gap_open, gap_extend)
            except Exception as exc:
                if not is_out_of_memory(exc):
                    raise
                cp.get_default_memory_pool().free_all_blocks()
                return None

    def _launch_on_device(self, cp, batch: PrelimBatch, matrix_scores, gap_open, gap_extend):
        u = self.ungapped
        t0 = time.perf_counter()
        kernel = load_kernel(u.device_id, self.band, self.cell_budget, self.kernel)
        per_block = WARPS if self.kernel == "warp" else THREADS     # jobs (subjects) a block
        init, group_start, group_subject = batch.init, batch.group_start, batch.group_subject
        n, n_groups = len(init), len(group_subject)
        sizes = np.diff(group_start)
        # each resident chunk's jobs, most init HSPs first (a warp's threads get similar work)
        launches = []
        for c in u.chunks:
            first, last = c.first, c.first + c.n
            jobs = np.flatnonzero(batch.on_gpu & (group_subject >= first) & (group_subject < last))
            if len(jobs):
                launches.append((c, jobs[np.argsort(-sizes[jobs], kind="stable")], group_subject - first))
        # every int input in one upload, every result in one buffer: few copies, and few waits for
        # the GIL when the CPU threads are busy
        parts = {"group_start": group_start, "group_query": batch.group_query, "q_start": init["q_start"],
                 "s_start": init["s_start"], "length": init["length"], "score": init["score"],
                 "query_start": batch.query_start, "params": batch.params, "matrix": matrix_scores}
        for k, (_, jobs, local_subject) in enumerate(launches):
            parts[f"jobs{k}"], parts[f"subject{k}"] = jobs, local_subject
        host = [np.ascontiguousarray(x, dtype=np.int32).ravel() for x in parts.values()]
        at = np.concatenate(([0], np.cumsum([len(x) for x in host])))
        inputs = cp.asarray(np.concatenate(host))
        d = {name: inputs[at[k]:at[k + 1]] for k, name in enumerate(parts)}
        cols = [d[name] for name in ("q_start", "s_start", "length", "score")]
        queries = cp.asarray(batch.queries)
        scratch = cp.empty(7 * n, np.int32)                   # order, tree
        results = cp.zeros(2 * n_groups + 7 * n, np.int32)    # counts, status, out
        d_counts, d_status, out = results[:n_groups], results[n_groups:2 * n_groups], results[2 * n_groups:]
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for k, (c, jobs, _) in enumerate(launches):
            kernel(((len(jobs) + per_block - 1) // per_block,), (THREADS,),
                   (d[f"jobs{k}"], np.int32(len(jobs)), d["group_start"], d[f"subject{k}"], d["group_query"],
                    *cols, queries, d["query_start"], d["params"], c.residues, c.offsets, d["matrix"],
                    np.int32(gap_open), np.int32(gap_extend), scratch[:n], scratch[n:], out, d_counts, d_status))
        end.record()
        t1 = time.perf_counter()
        back = results.get()
        t2 = time.perf_counter()
        self.kernel_seconds += cp.cuda.get_elapsed_time(start, end) / 1000
        self.seconds["inputs and launch"] += t1 - t0
        self.seconds["kernel and copy back"] += t2 - t1
        counts, status = back[:n_groups], back[n_groups:2 * n_groups]
        rows = back[2 * n_groups:].reshape(-1, 7)[row_index(group_start, counts)]
        return rows, counts, status


def row_index(group_start: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Where the kernel left each group's rows (from the group's first init slot), group after group."""
    counts = np.asarray(counts, np.int64)
    return np.repeat(np.asarray(group_start[:-1], np.int64) - np.cumsum(counts) + counts, counts) + \
        np.arange(int(counts.sum()))


def collect(init, group_start, group_subject, on_gpu, rows, counts, status):
    """The kernel's output as ``gapped.preliminary_gapped_hsps_batch`` returns it, and what is left.

    Args:
        init: the query's init HSPs; group_start, group_subject: ``subject_groups(init)``.
        on_gpu: bool per group, the groups the kernel ran.
        rows: int32 (n, 7) rows of the groups, group after group (``row_index``).
        counts, status: the kernel's per-group outputs.

    Returns:
        (hsps, left): PRELIM_BATCH rows of the groups done (purged, score order);
        the init HSPs of the groups not run or overflowed, for the CPU.
    """
    done = on_gpu & (status & STATUS_OVERFLOW == 0)
    counts = np.asarray(counts, np.int64)
    assert not counts[~done].any(), "the kernel writes no rows for groups it left to the CPU"
    hsps_rows, out_counts = gapped.purge_and_sort_groups(np.ascontiguousarray(rows, np.int32), counts)
    hsps = np.empty(len(hsps_rows), dtype=gapped.PRELIM_BATCH_DTYPE)
    hsps["subject"] = np.repeat(group_subject, out_counts)
    for k, name in enumerate(gapped.PRELIM_HSP_DTYPE.names):
        hsps[name] = hsps_rows[:, k]
    return hsps, init[np.repeat(~done, np.diff(group_start))]
