"""blastp's traceback stage on the GPU (``traceback.cu``): the final alignments' X-drop DP.

Most of the traceback's time is ``ALIGN_EX``, the X-drop DP with traceback of each
HSP left and right of its start point (``BLAST_GappedAlignmentWithTraceback``).
What decides which HSPs are aligned, and what is kept of them, depends on the
HSPs traced before (the containment test), so it stays on the CPU
(``traceback._traceback_kernel``, in the worker processes).  The DP itself does
not: an HSP's extensions depend only on its start point.  So the GPU aligns the
extensions of every preliminary HSP of a query's hit list ahead, one thread per
direction, and the CPU's traceback takes each HSP's from there, aligning on the
CPU only those the GPU left (status OVERFLOW: more traceback bytes than a
thread's share, TB_CAP) -- same rows.  The extensions of HSPs the containment
test then drops are aligned for nothing: the price of not waiting for the HSPs
before them.

The work is split between the processes as the data is:

1. a worker process, which has the hit list, builds the query's jobs
   (``alignment_jobs``: start points, windows, letters' addresses; no CUDA);
2. the parent's traceback launcher thread runs the jobs of several queries in
   one launch (``GpuTraceback.align_many``) on the database the ungapped stage
   uploaded, and gives each query the kernel's output for its jobs (``Aligned``);
3. a worker process traces the hit list back with them (``Aligned.ahead()``:
   ``traceback.PRE_*`` rows for ``traceback.traceback_hit_list(..., aligned=)``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..._numba import copy_into, numba
from ...gpu import is_out_of_memory, load_functions
from .. import traceback as tb
from ..output import tuple_reduce

KERNEL_FILE = Path(__file__).with_name("traceback.cu")
THREADS = 128                 # per block (the kernels' __launch_bounds__)
WARPS = THREADS // 32         # align_ex_warp: jobs a block
KERNELS = {"warp": "align_ex_warp", "thread": "align_ex"}    # a warp / a thread per job
TB_CAP = 1 << 18              # traceback bytes a job may use: longer DPs are aligned on the CPU
STATUS_DONE, STATUS_OVERFLOW = 0, 1

# traceback.cu's job fields (J_*)
(J_Q_AT, J_Q0, J_DIR, J_M, J_N, J_S_AT, J_S0, J_S_LENGTH, J_X_DROP, J_INT_AT, J_TB_AT, J_TB_CAP,
 J_STEP_AT, J_ROWS) = range(14)
JOB_FIELDS = 14
OUT_FIELDS = 5                # status, best score, a_offset, b_offset, steps


def load_kernel(device_id: int, kernel: str = "warp"):
    """traceback.cu's kernel (KERNELS) on one device."""
    return load_functions(KERNEL_FILE, (), (KERNELS[kernel],), device_id)[0]


def kernel_shapes():
    """(file, options) of the traceback.cu shape a blastp run loads (:mod:`gpu_search.gpu.compiled`)."""
    yield KERNEL_FILE, ()


# --- 1. the jobs of a hit list (a worker process) ---------------------------------------------

class AlignmentPlan(NamedTuple):
    """One query's hit list (or a piece of it) waiting for its extensions to be aligned."""
    hits: list                # (order key, subject) of the hit list (hitlist.hit_list), or the piece's
    prelims: tb.StackedPrelims    # their preliminary HSPs
    jobs: np.ndarray          # int64 (2 n, JOB_FIELDS): left and right of each preliminary HSP
    starts: np.ndarray        # int64 (n, 4): the start point and window each was aligned from (PRE_*)

    __reduce__ = tuple_reduce   # (sent back by a worker process)


class Aligned(NamedTuple):
    """A plan's HSPs with the kernel's output for their jobs, for its traceback on a worker
    process (``pipeline.traceback_stage``; ``ahead()`` makes its ``traceback.PRE_*`` rows there,
    not in the parent, whose every step holds the interpreter lock the GPU threads need)."""
    prelims: tb.StackedPrelims
    starts: np.ndarray        # the plan's
    out: np.ndarray           # (2 n, OUT_FIELDS), or no rows: nothing aligned
    steps: np.ndarray
    step_at: np.ndarray       # (2 n,) where each job's steps are in ``steps``

    __reduce__ = tuple_reduce

    def ahead(self) -> tuple[np.ndarray, np.ndarray]:
        """(pre, steps), ``traceback.traceback_hit_list``'s ``aligned``."""
        if not len(self.out):
            return tb.no_pre()
        return pre_rows(self.starts, self.out, self.step_at), self.steps


def alignment_jobs(prelims: tb.StackedPrelims, query, subjects, residues, offsets, matrix,
                   x_dropoff_final: int) -> tuple[np.ndarray, np.ndarray]:
    """The extensions to align of the preliminary HSPs of a hit list, in the order
    ``traceback.traceback_hit_list`` takes them (``prelims``, ``subjects``: its arguments).

    Returns (jobs, starts): int64 (2 n, JOB_FIELDS) rows, left then right of each HSP
    (an HSP without a start point, or without a right extension, has an empty job),
    subject letters addressed in ``residues``; (n, 4) the start point and window of each.
    The query's address (J_Q_AT) and the scratch space are the launcher's."""
    prelim, first = prelims
    query = np.asarray(query, dtype=np.uint8)
    # the offsets as a read-only view, whatever the database (as traceback_hit_list: one compilation)
    offsets = np.asarray(offsets, dtype=np.int64).view()
    offsets.flags.writeable = False
    return _alignment_jobs(prelim, first, np.asarray(subjects, dtype=np.int64), residues, offsets,
                           tb.pad(query), len(query),
                           np.ascontiguousarray(matrix, dtype=np.int32), int(x_dropoff_final))


@numba.njit(cache=True, nogil=True)
def _alignment_jobs(prelim, first, subjects, residues, offsets, qp, qlen, mat, x_dropoff):
    n = prelim.shape[0]
    jobs = np.zeros((2 * n, JOB_FIELDS), dtype=np.int64)
    starts = np.zeros((n, 4), dtype=np.int64)
    for j in range(len(subjects)):
        a = offsets[subjects[j]]
        slen = offsets[subjects[j] + 1] - a
        sp = np.empty(slen + 2, dtype=np.uint8)          # gapped.pad
        sp[0] = 0
        sp[slen + 1] = 0
        copy_into(sp, 1, residues[a:a + slen])
        for i in range(first[j], first[j + 1]):
            found, q_gs, _, s_adj, s_len_adj, shift = tb.start_point(prelim[i], qp, sp, mat, qlen, slen)
            if not found:
                continue
            starts[i, 0] = q_gs
            starts[i, 1] = s_adj
            starts[i, 2] = s_len_adj
            starts[i, 3] = shift
            # left of the start point, the start pair included (gapped_alignment_with_traceback)
            left = jobs[2 * i]
            left[J_Q0] = q_gs + 1
            left[J_DIR] = -1
            left[J_M] = q_gs + 1
            left[J_N] = s_adj + 1
            left[J_S0] = s_adj
            left[J_ROWS] = max(q_gs - prelim[i, 1] + 1, 1)
            if tb.has_right_extension(qlen, s_len_adj, q_gs, s_adj):
                right = jobs[2 * i + 1]
                right[J_Q0] = q_gs
                right[J_DIR] = 1
                right[J_M] = qlen - q_gs - 1
                right[J_N] = s_len_adj - s_adj - 1
                right[J_S0] = s_adj + 1
                right[J_ROWS] = max(prelim[i, 2] - q_gs - 1, 1)
            for d in range(2):
                job = jobs[2 * i + d]
                job[J_S_AT] = a + shift
                job[J_S_LENGTH] = s_len_adj
                job[J_X_DROP] = x_dropoff
    return jobs, starts


# --- 2. the launch (the parent's traceback launcher) ------------------------------------------

def scratch_sizes(jobs: np.ndarray, tb_cap: int = TB_CAP) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per job, (ints, traceback bytes, step bytes) it needs: best and best_gap over N + 2
    columns and row_start and row_first over M + 1 rows; the traceback bytes of the whole
    (M + 1) x (N + 3) rectangle, at most ``tb_cap``; one step per alignment column."""
    m, n = jobs[:, J_M], jobs[:, J_N]
    empty = (m <= 0) | (n <= 0)
    ints = np.where(empty, 0, 2 * (n + 2) + 2 * (m + 1))
    tb_bytes = np.where(empty, 0, np.minimum((m + 1) * (n + 3) + 2, tb_cap))
    steps = np.where(empty, 0, m + n)
    return ints, tb_bytes, steps


def _starts_at(sizes: np.ndarray) -> np.ndarray:
    at = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=at[1:])
    return at


class Layout(NamedTuple):
    """Several plans' jobs as one launch takes them."""
    jobs: np.ndarray          # int64 (n_jobs, JOB_FIELDS), every field set; J_S_AT into the whole database
    queries: np.ndarray       # the plans' queries' letters, one after the other
    n_ints: int               # the int scratch, the traceback bytes and the steps the jobs need
    n_tb: int
    n_steps: int
    step_at: np.ndarray       # (n_jobs + 1,) where each job's steps go


def layout(plans: list, query_codes: list, tb_cap: int = TB_CAP) -> Layout:
    """The jobs of ``plans`` (each with its query's codes) with their query's address and
    their share of the scratch space set."""
    jobs = np.concatenate([p.jobs for p in plans]).astype(np.int64, copy=True).reshape(-1, JOB_FIELDS)
    q_len = np.array([len(q) for q in query_codes], dtype=np.int64)
    jobs[:, J_Q_AT] = np.repeat(_starts_at(q_len)[:-1], [len(p.jobs) for p in plans])
    ints, tb_bytes, step_bytes = scratch_sizes(jobs, tb_cap)
    int_at, tb_at, step_at = _starts_at(ints), _starts_at(tb_bytes), _starts_at(step_bytes)
    jobs[:, J_INT_AT] = int_at[:-1]
    jobs[:, J_TB_AT] = tb_at[:-1]
    jobs[:, J_TB_CAP] = tb_bytes
    jobs[:, J_STEP_AT] = step_at[:-1]
    queries = np.concatenate([np.asarray(q, np.uint8) for q in query_codes]) if query_codes else \
        np.zeros(0, np.uint8)
    return Layout(jobs, queries, int(int_at[-1]), int(tb_at[-1]), int(step_at[-1]), step_at)


def pre_rows(starts: np.ndarray, out: np.ndarray, step_at: np.ndarray) -> np.ndarray:
    """The ``traceback.PRE_*`` rows of one query: its HSPs' start points (``starts``), the
    kernel's output for their left and right jobs (``out``, (2 n, OUT_FIELDS)) and where their
    steps are (``step_at``, (2 n,), in the query's steps)."""
    n = len(starts)
    pre = np.zeros((n, tb.PRE_FIELDS), dtype=np.int64)
    pre[:, tb.PRE_Q_START:tb.PRE_SHIFT + 1] = starts
    pre[:, tb.PRE_LEFT:tb.PRE_LEFT + OUT_FIELDS] = out[0::2]
    pre[:, tb.PRE_RIGHT:tb.PRE_RIGHT + OUT_FIELDS] = out[1::2]
    pre[:, tb.PRE_STEPS_AT] = step_at[0::2]
    pre[:, tb.PRE_STEPS_AT + 1] = step_at[1::2]
    return pre


NOT_ALIGNED = (np.empty((0, OUT_FIELDS), dtype=np.int32), np.empty(0, dtype=np.uint8), np.empty(0, dtype=np.int64))


def split_results(plans: list, out: np.ndarray, steps: np.ndarray, step_at: np.ndarray) -> list:
    """Each plan's (out, steps, step_at) from one launch's output (jobs plan after plan)."""
    results = []
    j = 0
    for plan in plans:
        k = len(plan.jobs)
        s0, s1 = int(step_at[j]), int(step_at[j + k])
        results.append((out[j:j + k], steps[s0:s1], step_at[j:j + k] - s0) if k else NOT_ALIGNED)
        j += k
    return results


class GpuTraceback:
    """The extensions of several queries' hit lists aligned in one launch, on the GPU of a
    ``GpuUngapped`` (its resident database and a stream of its own: ``stream_twin()``).

    Args:
        ungapped: the GpuUngapped holding the database.
        tb_cap: traceback bytes a job may use (longer ones are left to the CPU).
        kernel: "warp" (a warp per job) or "thread" (a thread per job).
    """

    def __init__(self, ungapped, tb_cap: int = TB_CAP, kernel: str = "warp"):
        if kernel not in KERNELS:
            raise ValueError(f"unknown traceback kernel {kernel!r} (one of {', '.join(KERNELS)})")
        self.kernel = kernel
        self.ungapped = ungapped
        self.tb_cap = int(tb_cap)
        self.overflowed = 0          # jobs left to the CPU, this run
        self.out_of_memory = 0       # queries left to the CPU for want of GPU memory
        self.kernel_seconds = 0.0
        self.seconds = dict.fromkeys(("inputs and launch", "kernel and copy back"), 0.0)

    @property
    def available(self) -> bool:
        """False when the database is streamed (not resident): the CPU aligns everything."""
        return not self.ungapped.streamed

    def align_many(self, plans: list, query_codes: list, matrix_scores, gap_open: int,
                   gap_extend: int) -> list:
        """(out, steps, step_at) for each plan (``AlignmentPlan``; its query's codes in
        ``query_codes``): the kernel's output for its jobs, ``Aligned``'s fields; NOT_ALIGNED for a
        plan the GPU could not take (the CPU aligns it: same rows)."""
        if not self.available or not plans:
            return [NOT_ALIGNED for _ in plans]
        launched = self._launch(plans, query_codes, matrix_scores, gap_open, gap_extend)
        if launched is None:                              # out of GPU memory
            if len(plans) > 1:
                half = len(plans) // 2
                return (self.align_many(plans[:half], query_codes[:half], matrix_scores, gap_open, gap_extend) +
                        self.align_many(plans[half:], query_codes[half:], matrix_scores, gap_open, gap_extend))
            self.out_of_memory += 1
            return [NOT_ALIGNED]
        out, steps, step_at = launched
        self.overflowed += int(np.count_nonzero(out[:, 0] == STATUS_OVERFLOW))
        return split_results(plans, out, steps, step_at)

    def _launch(self, plans, query_codes, matrix_scores, gap_open, gap_extend):
        """The kernel over every job of ``plans``, chunk by chunk of the resident database.

        Returns (out (n_jobs, OUT_FIELDS), steps, step_at (n_jobs + 1,): where each job's
        steps are) on the host, or None when the GPU has no memory for the buffers."""
        import cupy as cp

        with cp.cuda.Device(self.ungapped.device_id), self.ungapped.stream:
            try:
                return self._launch_on_device(cp, plans, query_codes, matrix_scores, gap_open, gap_extend)
            except Exception as exc:
                if not is_out_of_memory(exc):
                    raise
                cp.get_default_memory_pool().free_all_blocks()
                return None

    def _launch_on_device(self, cp, plans, query_codes, matrix_scores, gap_open, gap_extend):
        u = self.ungapped
        t0 = time.perf_counter()
        kernel = load_kernel(u.device_id, self.kernel)
        per_block = WARPS if self.kernel == "warp" else THREADS
        lay = layout(plans, query_codes, self.tb_cap)
        jobs = lay.jobs
        # each job's chunk of the resident database, its subject addressed from the chunk's start
        bases = np.array([int(u.host_offsets[c.first]) for c in u.chunks], dtype=np.int64)
        chunk = np.searchsorted(bases, jobs[:, J_S_AT], side="right") - 1
        jobs[:, J_S_AT] -= bases[chunk]
        n_jobs = len(jobs)
        # the longest jobs first: a warp's threads take similar work (the warp lasts as long
        # as its longest job), and the longest start first
        order = np.argsort(-jobs[:, J_ROWS], kind="stable")
        jobs, chunk = jobs[order], chunk[order]
        # one upload (jobs, matrix, queries) and one download (out, steps): every CUDA call
        # gives the interpreter lock up and waits for it back
        matrix = np.ascontiguousarray(matrix_scores, dtype=np.int32)
        host_in = np.concatenate([jobs.view(np.uint8).ravel(), matrix.view(np.uint8).ravel(), lay.queries])
        d_in = cp.asarray(host_in)
        d_jobs = d_in[:jobs.nbytes].view(np.int64)
        d_matrix = d_in[jobs.nbytes:jobs.nbytes + matrix.nbytes].view(np.int32)
        d_queries = d_in[jobs.nbytes + matrix.nbytes:]
        d_ints = cp.empty(max(1, lay.n_ints), dtype=np.int32)
        d_tb = cp.empty(max(1, lay.n_tb), dtype=np.uint8)     # (the kernels read back only what they wrote)
        d_back = cp.empty(n_jobs * OUT_FIELDS * 4 + max(1, lay.n_steps), dtype=np.uint8)
        d_out = d_back[:n_jobs * OUT_FIELDS * 4].view(np.int32)
        d_steps = d_back[n_jobs * OUT_FIELDS * 4:]
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for k, c in enumerate(u.chunks):
            mine = np.flatnonzero(chunk == k)
            if not len(mine):
                continue
            if len(mine) == n_jobs:                 # (one chunk: the jobs as they are)
                part_jobs, part_out = d_jobs, d_out
            else:
                part_jobs = d_jobs[cp.asarray(mine)]
                part_out = cp.empty(len(mine) * OUT_FIELDS, dtype=np.int32)
            kernel(((len(mine) + per_block - 1) // per_block,), (THREADS,),
                   (part_jobs, np.int32(len(mine)), d_queries, c.residues, d_matrix, np.int32(gap_open),
                    np.int32(gap_extend), d_ints, d_tb, d_steps, part_out))
            if part_out is not d_out:
                d_out.reshape(n_jobs, OUT_FIELDS)[cp.asarray(mine)] = part_out.reshape(-1, OUT_FIELDS)
        end.record()
        t1 = time.perf_counter()
        back = d_back.get()
        out = np.empty((n_jobs, OUT_FIELDS), dtype=np.int32)
        out[order] = back[:n_jobs * OUT_FIELDS * 4].view(np.int32).reshape(n_jobs, OUT_FIELDS)
        steps = back[n_jobs * OUT_FIELDS * 4:]
        t2 = time.perf_counter()
        self.kernel_seconds += cp.cuda.get_elapsed_time(start, end) / 1000
        self.seconds["inputs and launch"] += t1 - t0
        self.seconds["kernel and copy back"] += t2 - t1
        return out, steps, lay.step_at
