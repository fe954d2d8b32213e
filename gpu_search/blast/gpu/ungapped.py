"""cuBLASTP's GPU phases through CuPy: hit detection, binning by diagonal, two-hit filter, ungapped extension.

The kernel (``ungapped.cu``, compiled by NVRTC with the word size, the block
size and the extension variant as constants, at run time or ahead of time:
:func:`kernel_shapes`) returns the init HSPs
of one query against the whole database;
they are put in BLAST's order on the GPU before they are copied back
(``order.cu``; ``ungapped.blast_order`` on the host where the GPU cannot), so
the result is the same array as the CPU path's ``ungapped.ungapped_extensions``.  The
database is uploaded once per run and reused for every query.

Fallbacks that keep the result exact:

* a subject with more word hits than a block's buffer holds is listed by the
  kernel and searched again with buffers big enough (on the CPU if the GPU
  has no memory for them);
* a query too long for the bin counters in shared memory (diagonal array over
  16,384 cells, i.e. longer than about 16,300 residues) is searched on the CPU,
  and so is BLAST's one-hit mode (``-window_size 0``), which has no kernel;
* an out-of-memory error for the blocks' buffers halves the grid and retries.

The whole database stays on each GPU when it fits in half the free memory
(in chunks, all resident: :class:`gpu_search.gpu.DeviceDatabase`).  A larger
one is streamed: cut into chunks of a quarter of the free memory, each
uploaded, searched and freed in turn, once per batch of queries
(``ungapped_extensions_many``: every query of the batch runs on a chunk while
it is on the GPU; same rows; an out-of-memory error while uploading halves
the chunk).  Cutting it into shards (``makedb --shards``) and searching them
on separate GPUs, as the Nextflow workflow does, avoids the repeated uploads
altogether.
"""

from __future__ import annotations

import copy
import itertools
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ...errors import DeviceError
from ...gpu import DeviceDatabase, allow_smem, blocks_per_sm, device_props, is_out_of_memory, load_functions
from ..lookup import MAX_WORD_SIZE, Lookup
from ..ungapped import UngappedJob, _pssm, _to_records, blast_order, ungapped_extensions
from ..wordhits import diag_array_length

KERNEL_FILE = Path(__file__).with_name("ungapped.cu")
ORDER_FILE = Path(__file__).with_name("order.cu")
BLOCK = 128                     # threads per block (one subject at a time), short queries
MAX_SMEM_CELLS = 16384          # 2 x 16,384 int32 bin counters = 128 KiB of shared memory
HIT_SLOTS = 1 << 16             # hit buffer per block (global scratch), subject offsets
EXTENSIONS = ("diagonal", "window")   # cuBLASTP's ungapped-extension variants (its Algorithms 3 and 5)
LOW_COMPLEXITY_CELL = 128       # a query whose lookup table has a cell this full: diagonal-based (extension_for)
WINDOW_LANES = (4, 8, 16, 32)   # threads per window of the window-based variant
SLOTS_PER_HIT_X2 = 3            # hit-buffer slots per hit, times 2 (ungapped.cu): hits + list of bins


def _cupy():
    import cupy

    return cupy


SCORES = ("auto", "pssm", "matrix")   # the query's PSSM, or the matrix in shared memory (auto: by length)


def kernel_options(word_size: int, block: int, extension: str, window_lanes: int = 8,
                   matrix_smem: bool = False, prefilter: bool = False) -> tuple:
    """ungapped.cu's compile-time constants (NVRTC's options; the CPU emulator of the tests
    builds the kernel with the same)."""
    return (f"-DWORD_SIZE={int(word_size)}", f"-DBLOCK={int(block)}",
            f"-DWIN={int(window_lanes) if extension == 'window' else 0}", f"-DMATRIX_SMEM={int(matrix_smem)}",
            f"-DPREFILTER={int(prefilter)}")


# Queries per pass over the database (GpuUngapped.queries_per_pass).  A streamed database is
# copied to the GPU once per pass (about 40 ms per 273 M residues on an H100, docs/benchmarks.md),
# so its queries go in batches.  A resident one gains from them where it is small: a query's
# kernel then takes the GPU about a millisecond, and the host's wait and copy back per launch as
# long, so a batch's kernels are launched together with one wait (GpuUngapped._chunk_many); a
# large one's kernel of one query fills the GPU, and its results reach the gapped stage sooner
# alone.  Resident: RESIDENT_PASS_RESIDUES // the database's residues, 1 to LAUNCHES_PER_SYNC.
STREAMED_QUERIES_PER_PASS = 32
RESIDENT_PASS_RESIDUES = 32 << 20
LAUNCHES_PER_SYNC = 16          # kernels launched before one wait for them all (and their counters)


def resident_queries_per_pass(n_residues: int) -> int:
    """Queries per pass over a resident database of n_residues (above)."""
    return int(min(LAUNCHES_PER_SYNC, max(1, RESIDENT_PASS_RESIDUES // max(1, int(n_residues)))))


def load_kernel(word_size: int, block: int, extension: str, device_id: int, window_lanes: int = 8,
                matrix_smem: bool = False, prefilter: bool = False):
    """ungapped.cu compiled for a word size, block size and extension variant on one device."""
    return load_functions(KERNEL_FILE, kernel_options(word_size, block, extension, window_lanes, matrix_smem,
                                                      prefilter), ("two_hit_ungapped",), device_id)[0]


def order_key_bits(offsets: np.ndarray) -> tuple[int, int]:
    """Bits of a row's subject index and of its subject offset in order.cu's sort keys, for a
    database with these sequence boundaries."""
    subject_bits = max(1, (len(offsets) - 2).bit_length())
    offset_bits = max(1, (int(np.diff(offsets).max(initial=1)) - 1).bit_length())
    return subject_bits, offset_bits


ORDER_OPTIONS = ()              # order.cu has no compile-time constants


def load_order_kernels(device_id: int):
    """order.cu's kernels (the rows' keys in BLAST's order, the rows gathered by a
    permutation, the keys of a batch of queries' rows) on one device."""
    return load_functions(ORDER_FILE, ORDER_OPTIONS, ("blast_order_keys", "gather_rows", "blast_order_keys_many"),
                          device_id)


def gpu_block_sizes() -> list[int]:
    """Every block size :func:`block_size` gives a query the GPU takes: its diagonal array
    (query length + window, rounded up to a power of two) is at most MAX_SMEM_CELLS cells
    (longer queries are searched on the CPU)."""
    # block_size(n, 0): the block of a diagonal array of n cells
    return sorted({block_size(1 << k, 0) for k in range(MAX_SMEM_CELLS.bit_length())})


def kernel_shapes():
    """(file, options) of every ungapped.cu and order.cu shape a blastp run can load
    (:mod:`gpu_search.gpu.compiled` builds them ahead of time), as :func:`kernel_choice`
    and :func:`load_kernel` make them: each word size the lookup table takes (-word_size
    2 to MAX_WORD_SIZE), block size (:func:`gpu_block_sizes`), extension variant
    (--gpu-extension; auto: :func:`extension_for`) with each of its WINDOW_LANES
    (--gpu-window-lanes; auto: :func:`window_lanes_for`), scores from the PSSM or the
    matrix in shared memory (auto: :func:`matrix_in_smem_for`) and, window-based, the
    prefilter on or off (``BlastSettings.prefilter``).  A block size given to GpuUngapped
    itself (``block=``, the benchmarks') may be any other: compiled at run time."""
    yield ORDER_FILE, ORDER_OPTIONS
    variants = [("diagonal", 0, False)] + [("window", lanes, prefilter) for lanes in WINDOW_LANES
                                           for prefilter in (False, True)]
    for word_size, block, (extension, lanes, prefilter), matrix_smem in itertools.product(
            range(2, MAX_WORD_SIZE + 1), gpu_block_sizes(), variants, (False, True)):
        yield KERNEL_FILE, kernel_options(word_size, block, extension, lanes, matrix_smem, prefilter)


class GpuUngapped:
    """The database on one GPU, and the word finder run against it query after query, or
    batch after batch (``ungapped_extensions_many``; ``queries_per_pass``: the batch size the
    search pipeline gives it, larger for a streamed database).

    Args:
        residues: uint8 NCBIstdaa residues of the database, packed.
        offsets: int64 (n + 1,) sequence boundaries.
        device_id: the CUDA device.
        max_chunk_residues: cut the database into chunks of at most this many
            residues (default: what fits in half the free GPU memory).
        hit_slots: hit buffer per block (subjects with more hits run again with more).
        block: threads per block (default: ``block_size`` of the query).
        extension: cuBLASTP's ungapped-extension variant, "diagonal" (one thread per
            diagonal extends its hits in order) or "window" (``window_lanes``
            threads per diagonal extend each hit together, default:
            :func:`window_lanes_for` the query); same results.  The default,
            "auto", takes window, measured fastest, or diagonal for
            low-complexity queries (:func:`extension_for`).
        streamed: stream the database through the GPU chunk by chunk (default:
            where it does not fit in half the free GPU memory).
        scores: "pssm", "matrix" or "auto" (:data:`SCORES`).
        prefilter: window-based extension only: a thread per bin of two hits or more
            sorts it and strikes it off when no two of its hits are W to A - 1 apart
            (the two-hit rule cannot trigger there), before the windows take the
            rest; same results.  On by default: measured 5-20% faster on an H100 for
            queries of 517-2,627 aa, about 5% slower at 127 aa (docs/benchmarks.md).
        length_order: the subjects longest first (``SequenceDB.length_order``, which a
            .gsdb stores), for a chunk that holds the whole database; otherwise
            each chunk's order is computed (an argsort: 0.09 s for 840,000 subjects).
        queries_per_pass: queries per pass over the database (default:
            STREAMED_QUERIES_PER_PASS for a streamed database, else
            :func:`resident_queries_per_pass`).
    """

    def __init__(self, residues, offsets, device_id: int = 0, max_chunk_residues: int | None = None,
                 hit_slots: int = HIT_SLOTS, block: int | None = None, extension: str = "auto",
                 window_lanes: int | None = None, streamed: bool | None = None, scores: str = "auto",
                 prefilter: bool = True, length_order: np.ndarray | None = None,
                 queries_per_pass: int | None = None):
        if extension not in ("auto", *EXTENSIONS):
            raise ValueError(f"extension must be auto or one of {EXTENSIONS}, not {extension!r}")
        if scores not in SCORES:
            raise ValueError(f"scores must be one of {SCORES}, not {scores!r}")
        if window_lanes is not None and window_lanes not in WINDOW_LANES:
            raise ValueError(f"window_lanes must be one of {WINDOW_LANES}, not {window_lanes!r}")
        cp = _cupy()
        self.block = block
        self.extension = extension
        self.window_lanes = window_lanes
        self.scores = scores
        self.prefilter = bool(prefilter)
        self.cp = cp
        self.device_id = device_id
        self.hit_slots = int(hit_slots)
        self.host_residues = np.ascontiguousarray(residues, dtype=np.uint8)
        self.host_offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        self.length_order = length_order
        self.subject_bits, self.offset_bits = order_key_bits(self.host_offsets)
        self.last_extension = None             # the variant the last GPU query of a call took (auto resolved)
        self.overflowed = 0                    # subjects of the last call that needed a second pass
        self.props = device_props(device_id)
        with cp.cuda.Device(device_id):
            free, _ = cp.cuda.runtime.memGetInfo()
            need = len(self.host_residues) + 9 * len(offsets)      # residues, offsets, order
            if streamed is None:
                streamed = need > free // 2
            if max_chunk_residues is None:
                max_chunk_residues = max(1 << 20, int((free // 4 if streamed else free // 2) - 9 * len(offsets)))
            self.database = None
            if not streamed:
                try:
                    self.database = self._database(max_chunk_residues, resident=True)
                except Exception as exc:
                    if not is_out_of_memory(exc):
                        raise
                    streamed = True                                     # then stream it
                    max_chunk_residues = max(1 << 20, int(cp.cuda.runtime.memGetInfo()[0] // 4))
            if streamed:
                self.database = self._database(max_chunk_residues, resident=False)
            self.streamed = bool(streamed)
            self.n_out_cap = 1 << 20
            self._alloc_buffers()
        self.queries_per_pass = max(1, int(queries_per_pass)) if queries_per_pass is not None else \
            STREAMED_QUERIES_PER_PASS if self.streamed else resident_queries_per_pass(len(self.host_residues))

    def _database(self, max_chunk_residues: int, resident: bool) -> DeviceDatabase:
        return DeviceDatabase(self.host_residues, self.host_offsets, self.device_id, max_chunk_residues, resident,
                              length_order=self.length_order)

    @property
    def chunks(self) -> list:
        """The database's chunks (:class:`gpu_search.gpu.Chunk`), in order."""
        return self.database.chunks

    def _new_clock(self):
        """Where this engine's host thread spent its time, summed over queries (the run's
        timings line): its inputs to the GPU, waiting for the kernels (their GPU time apart),
        the rows put in order and copied back."""
        self.seconds = dict.fromkeys(("inputs", "kernel wait", "kernel (GPU time)", "order and copy back"), 0.0)

    def _on_gpu(self, k: int):
        """Chunk k with its arrays on the GPU: a resident chunk, or a streamed one uploaded
        now.  A streamed chunk the GPU has no memory for is cut in two and its first half
        uploaded instead (the second half is chunk k + 1)."""
        while True:
            try:
                return self.database.on_gpu(self.chunks[k])
            except Exception as exc:
                if not is_out_of_memory(exc):
                    raise
                if self.chunks[k].n <= 1:
                    raise DeviceError(f"GPU {self.device_id}: out of memory for one database sequence") from None
                self.database.halve(k)

    def _alloc_buffers(self):
        cp = self.cp
        with cp.cuda.Device(self.device_id):
            self.grid = self.props.n_sm * 16
            self.scratch = None
            while True:
                try:
                    self.scratch = cp.empty(self.grid * self.hit_slots, dtype=np.int32)
                    self.out = cp.empty(7 * self.n_out_cap, dtype=np.int32)
                    break
                except Exception as exc:
                    if not is_out_of_memory(exc):
                        raise
                    self.scratch = None
                    if self.grid <= self.props.n_sm:
                        raise DeviceError("GPU out of memory for the blastp buffers") from None
                    self.grid //= 2
            self._new_clock()
            self.batch_buffer = None                               # _batch_buffers
            self.events = (cp.cuda.Event(), cp.cuda.Event())      # around a query's kernels (its GPU time)
            self.counters = cp.zeros(3, dtype=np.int32)            # next job, rows out, overflow
            self.overflow = cp.empty(2 * max([c.n for c in self.chunks] + [1]), dtype=np.int32)
            self.stream = cp.cuda.Stream(non_blocking=True)       # this engine's queries run on it

    def worker(self) -> "GpuUngapped":
        """Another engine on the same GPU and the same resident database, with its own
        buffers and CUDA stream: one host thread each, several queries in flight per GPU
        (the kernels of one overlap the host work and kernels of another)."""
        if self.streamed:
            raise ValueError("a streamed database has one engine per GPU")
        twin = copy.copy(self)                 # (the resident database shared: it never changes)
        twin._alloc_buffers()
        return twin

    def stream_twin(self) -> "GpuUngapped":
        """The same GPU and resident database with a CUDA stream of its own and none of the
        ungapped stage's buffers (~0.6 GB on an H100): for work that only reads the
        database, the preliminary gapped kernel (blast/gpu/gapped.py)."""
        if self.streamed:
            raise ValueError("a streamed database has one engine per GPU")
        twin = copy.copy(self)
        twin.scratch = twin.out = twin.overflow = twin.counters = twin.batch_buffer = None
        twin._new_clock()
        with self.cp.cuda.Device(self.device_id):
            twin.stream = self.cp.cuda.Stream(non_blocking=True)
        return twin

    def ungapped_extensions(self, query_codes, lookup: Lookup, matrix_scores, x_drop: int, cutoff: int,
                            window: int = 40) -> np.ndarray:
        """The init HSPs of one query, as ``ungapped.ungapped_extensions`` returns them (subject = database index)."""
        return self.ungapped_extensions_many([UngappedJob(query_codes, lookup, matrix_scores, x_drop, cutoff,
                                                          window)])[0]

    def ungapped_extensions_many(self, jobs: list[UngappedJob]) -> list[np.ndarray]:
        """The init HSPs of several queries in one pass over the database.

        Each chunk of the database is made resident once (a streamed chunk: uploaded
        once) and every query's kernels run on it before the next chunk: a streamed
        database is copied to the GPU once per batch of queries, not once per query.
        Same rows, query by query, as ``ungapped_extensions``.
        """
        jobs = [job._replace(query_codes=np.ascontiguousarray(job.query_codes, dtype=np.uint8)) for job in jobs]
        results: list = [None] * len(jobs)
        queries, on_cpu = {}, []
        self.overflowed = 0
        cp = self.cp
        with cp.cuda.Device(self.device_id), self.stream:
            for k, job in enumerate(jobs):
                n_cells = diag_array_length(job.lookup.query_length, job.window)
                # one-hit mode (window 0) has no GPU kernel: BLAST's loop on the CPU
                if n_cells > MAX_SMEM_CELLS or job.lookup.n_entries == 0 or job.window == 0:
                    on_cpu.append(k)
                else:
                    queries[k] = self._query_inputs(job, n_cells)
            self._upload(list(queries.values()))
            c = 0
            while queries and c < len(self.chunks):
                chunk = self._on_gpu(c)
                first = chunk.first
                group = list(queries.values())
                for at in range(0, len(group), LAUNCHES_PER_SYNC):
                    for query, (rows, left) in zip(group[at:at + LAUNCHES_PER_SYNC],
                                                   self._chunk_many(chunk, group[at:at + LAUNCHES_PER_SYNC])):
                        rows[:, 0] += first
                        query["parts"].append(rows)
                        query["leftover"].extend(int(i) + first for i in left)
                del chunk                              # a streamed chunk leaves the GPU here
                c += 1
        for k, query in queries.items():
            results[k] = self._finish(jobs[k], query)
        for k in on_cpu:         # (after the pass: the batch's GPU work first)
            results[k] = self._cpu(jobs[k], np.arange(len(self.host_offsets) - 1, dtype=np.int64))
        return results

    def _query_inputs(self, job: UngappedJob, n_cells: int) -> dict:
        """A query's kernel (chosen by kernel_choice and compiled), launch geometry and arrays
        (uploaded by ``_upload``), and the lists its rows are gathered in (called on the
        engine's device and stream)."""
        t0 = time.perf_counter()
        lookup = job.lookup
        choice = kernel_choice(lookup, job.window, self.extension, self.block, self.window_lanes, self.scores,
                               self.prefilter)
        block = choice.block
        self.last_extension = choice.extension
        kernel = load_kernel(lookup.word_size, block, choice.extension, self.device_id, choice.lanes,
                             choice.matrix_smem, choice.prefilter)
        smem = 2 * n_cells * 4                                   # the bins' starts and fills
        allow_smem(kernel, smem)
        rank_bits = max(1, len(lookup.query_rank).bit_length())
        on_gpu_order = self.subject_bits + self.offset_bits + rank_bits <= 63    # else on the host
        query = dict(arrays=dict(cells=lookup.cell_start, offsets=lookup.offsets,
                                 rank=lookup.query_rank if on_gpu_order else None,
                                 pssm=_pssm(job.query_codes, job.matrix_scores),
                                 matrix=job.matrix_scores, codes=job.query_codes))
        # blocks that can be resident at once: enough to fill the GPU, no more (scratch per block)
        per_sm = blocks_per_sm(block, smem, self.props.smem_per_sm)
        query.update(kernel=kernel, block=block, smem=smem, grid=min(self.grid, self.props.n_sm * per_sm),
                     extension=choice.extension, rank_bits=rank_bits, parts=[], leftover=[],
                     args=(np.int32(lookup.query_length), np.int32(n_cells - 1), np.int32(job.window),
                           np.int32(job.x_drop), np.int32(job.cutoff)))
        self.seconds["inputs"] += time.perf_counter() - t0
        return query

    def _finish(self, job: UngappedJob, query: dict) -> np.ndarray:
        """A query's rows from every chunk, with the subjects left to the CPU, in BLAST's order."""
        parts, leftover = query["parts"], query["leftover"]
        if leftover:             # no GPU memory for a big enough buffer: the CPU does these subjects
            extra = self._cpu(job, np.sort(np.array(leftover, dtype=np.int64)))
            parts.append(np.stack([extra[name] for name in extra.dtype.names], axis=1).astype(np.int32)
                         if len(extra) else np.empty((0, 7), np.int32))
        rows = np.concatenate(parts) if parts else np.empty((0, 7), np.int32)
        if leftover or query["rank"] is None:    # (each chunk's rows are in order, the chunks too)
            rows = blast_order(rows, job.lookup.query_rank)
        return _to_records(rows)

    def _upload(self, queries: list[dict]) -> None:
        """The queries' arrays on the GPU in one copy (``_upload_inputs``): each query's
        ``arrays`` replaced by device views, and ``rank_at``, where its rank array starts
        in the batch's buffer (``buffer``)."""
        if not queries:
            return
        t0 = time.perf_counter()
        buffer, views, at = _upload_inputs(self.cp, [query.pop("arrays") for query in queries])
        for query, view, rank_at in zip(queries, views, at):
            query.update(view, buffer=buffer, rank_at=rank_at["rank"])
        self.seconds["inputs"] += time.perf_counter() - t0

    def _batch_buffers(self, n_queries: int, n_subjects: int):
        """Counters (next job, rows out, overflow) and overflow lists for n_queries launches
        against a chunk of n_subjects, or None where the GPU has no memory for them."""
        need = n_queries * (3 + 2 * max(n_subjects, 1))
        if self.batch_buffer is None or len(self.batch_buffer) < need:
            self.batch_buffer = None
            try:
                self.batch_buffer = self.cp.empty(need, dtype=np.int32)
            except Exception as exc:
                if not is_out_of_memory(exc):
                    raise
                return None
        return self.batch_buffer[:3 * n_queries], self.batch_buffer[3 * n_queries:need]

    def _chunk_many(self, c, queries: list[dict]) -> list:
        """Several queries against one database chunk: their kernels launched one after the
        other, each with its own counters and region of the output, with one wait for them
        all, then every query's rows put in BLAST's order by one sort and copied back at once
        (``order.cu``'s ``blast_order_keys_many``).  Against a small database a query's kernel
        takes the GPU about a millisecond, and each wait and copy of a query at a time costs
        its host thread as much (docs/benchmarks.md).  A query whose hits overflowed a
        block's buffer, or whose rows overflowed its region, runs again alone (``_chunk``).

        Returns ``_chunk``'s (rows, subjects left to the CPU) per query.
        """
        n = len(queries)
        buffers = self._batch_buffers(n, c.n) if n > 1 else None
        if buffers is None:
            return [self._chunk(c, query) for query in queries]
        cp = self.cp
        counters, overflow = buffers
        cap = self.n_out_cap // n                        # rows per query
        t0 = time.perf_counter()
        counters.fill(0)
        start, end = self.events
        start.record()
        for j, query in enumerate(queries):
            self._launch(query["kernel"], query["block"], c, c.order, c.n, query, query["grid"], query["smem"],
                         self.scratch, self.hit_slots, counters[3 * j:3 * j + 3], self.out[7 * cap * j:],
                         cap, overflow[2 * c.n * j:])
        end.record()
        counts = counters.get().reshape(n, 3)
        self.seconds["kernel wait"] += time.perf_counter() - t0
        self.seconds["kernel (GPU time)"] += cp.cuda.get_elapsed_time(start, end) / 1000
        results: list = [None] * n
        alone = [j for j in range(n) if counts[j, 2] or counts[j, 1] > cap]    # (after the others' copy)
        t0 = time.perf_counter()
        batch = [j for j in range(n) if j not in alone and counts[j, 1]]
        sort = [j for j in batch if queries[j]["rank"] is not None and counts[j, 1] > 1]
        rank_bits = max([queries[j]["rank_bits"] for j in sort], default=1)
        q_shift = self.subject_bits + self.offset_bits + rank_bits
        if len(sort) <= 1 or q_shift + (len(sort) - 1).bit_length() > 63:
            sort = []                                  # copied back as they are, ordered below
        first = np.concatenate([[0], np.cumsum(counts[sort, 1])]).astype(np.int64)
        if sort:
            total = int(first[-1])
            _, gather, make_keys = load_order_kernels(self.device_id)
            meta = cp.asarray(np.concatenate([first, np.multiply(sort, cap),
                                              [queries[j]["rank_at"] for j in sort]]).astype(np.int64))
            keys = cp.empty(total, dtype=np.int64)
            packed = cp.empty(7 * total, dtype=np.int32)
            m = len(sort)
            make_keys(((total + 255) // 256,), (256,),
                      (self.out, meta[m + 1:2 * m + 1], meta[:m + 1], np.int32(m), queries[sort[0]]["buffer"],
                       meta[2 * m + 1:], np.int32(self.offset_bits), np.int32(rank_bits), np.int32(q_shift),
                       keys, packed))
            ordered = cp.empty(7 * total, dtype=np.int32)
            gather(((7 * total + 255) // 256,), (256,), (packed, cp.argsort(keys), np.int32(total), ordered))
            rows = ordered.get().reshape(total, 7)
            for k, j in enumerate(sort):
                results[j] = (rows[first[k]:first[k + 1]], [])
        for j in batch:
            if results[j] is None:                     # one row, or no order on the GPU
                rows = self.out[7 * cap * j:7 * (cap * j + int(counts[j, 1]))]
                if queries[j]["rank"] is not None and counts[j, 1] > 1:
                    rows = self._blast_order(rows, int(counts[j, 1]), queries[j]["rank"], queries[j]["rank_bits"])
                results[j] = (rows.get().reshape(-1, 7), [])
        self.seconds["order and copy back"] += time.perf_counter() - t0
        for j in alone:                                # (the output's regions are free again)
            results[j] = self._chunk(c, queries[j])
        for j in range(n):
            if results[j] is None:                     # no rows
                results[j] = (np.empty((0, 7), np.int32), [])
        return results

    def _chunk(self, c, query):
        """One database chunk: the query's kernel over every subject, then again over the
        subjects whose hits overflowed the blocks' buffers, with buffers sized for them.

        Returns the rows (subject index within the chunk), in BLAST's order where
        ``query["rank"]`` is given, and the subjects left to the CPU.
        """
        cp = self.cp
        kernel, block, grid, smem = query["kernel"], query["block"], query["grid"], query["smem"]
        while True:
            t0 = time.perf_counter()
            self.counters.fill(0)
            start, end = self.events
            start.record()
            self._launch(kernel, block, c, c.order, c.n, query, grid, smem, self.scratch, self.hit_slots)
            end.record()
            counts = self.counters.get()
            left = []
            if counts[2]:                                  # second pass: the overflowing subjects
                over = self.overflow[:2 * int(counts[2])].get().reshape(-1, 2)
                self.overflowed += len(over)
                slots = int(over[:, 1].max()) * SLOTS_PER_HIT_X2 // 2 + 64
                n_blocks = int(min(len(over), grid, (1 << 30) // (4 * slots)))
                scratch = self._second_pass_scratch(n_blocks * slots) if n_blocks >= 1 else None
                if scratch is None:
                    left = over[:, 0].tolist()
                else:
                    self.counters[0] = 0
                    self.counters[2] = 0
                    order = cp.asarray(np.ascontiguousarray(over[:, 0], dtype=np.int32))
                    self._launch(kernel, block, c, order, len(over), query, n_blocks, smem, scratch, slots)
                    end.record()                           # (GPU time: both passes and the copies between)
                    del scratch
                    counts = self.counters.get()
                    if counts[2]:                          # cannot happen: the buffers fit
                        raise DeviceError("blastp GPU kernel: hit buffer overflow in the second pass")
            n_rows = int(counts[1])
            self.seconds["kernel wait"] += time.perf_counter() - t0
            self.seconds["kernel (GPU time)"] += cp.cuda.get_elapsed_time(start, end) / 1000
            if n_rows <= self.n_out_cap:
                break
            self.n_out_cap = 2 * n_rows                    # rare: grow and run the chunk again
            self.out = cp.empty(7 * self.n_out_cap, dtype=np.int32)
        t0 = time.perf_counter()
        rows = self.out[:7 * n_rows]
        if query["rank"] is not None and n_rows > 1:
            rows = self._blast_order(rows, n_rows, query["rank"], query["rank_bits"])
        rows = rows.get().reshape(n_rows, 7)
        self.seconds["order and copy back"] += time.perf_counter() - t0
        return rows, left

    def _second_pass_scratch(self, n_ints: int):
        """The second pass's hit buffers, or None where the GPU has no memory for them (the
        CPU then takes those subjects)."""
        try:
            return self.cp.empty(n_ints, dtype=np.int32)
        except Exception as exc:
            if not is_out_of_memory(exc):
                raise
            return None

    def _blast_order(self, rows, n_rows: int, rank, rank_bits: int):
        """The chunk's rows in BLAST's order (ungapped.blast_order), sorted on the GPU:
        a 63-bit key per row (order.cu), CuPy's argsort, the rows gathered."""
        cp = self.cp
        make_keys, gather, _ = load_order_kernels(self.device_id)
        keys = cp.empty(n_rows, dtype=np.int64)
        make_keys(((n_rows + 255) // 256,), (256,),
                  (rows, np.int32(n_rows), rank, np.int32(self.offset_bits), np.int32(rank_bits), keys))
        order = cp.argsort(keys)                 # keys are distinct: one row per triggering hit
        ordered = cp.empty(7 * n_rows, dtype=np.int32)
        gather(((7 * n_rows + 255) // 256,), (256,), (rows, order, np.int32(n_rows), ordered))
        return ordered

    def _launch(self, kernel, block, c, order, n_order, query, grid, smem, scratch, slots, counters=None,
                out=None, out_cap=None, overflow=None):
        """One launch of the query's kernel over the subjects ``order`` of chunk c (counters:
        next job, rows out, overflow; the engine's own unless given)."""
        counters = self.counters if counters is None else counters
        kernel((grid,), (block,),
               (c.residues, c.offsets, order, np.int32(n_order), query["cells"], query["offsets"],
                query["pssm"], query["codes"], query["matrix"], *query["args"], scratch, np.int32(slots),
                counters[0:1], self.out if out is None else out,
                np.int32(self.n_out_cap if out_cap is None else out_cap), counters[1:2],
                self.overflow if overflow is None else overflow, counters[2:3]),
               shared_mem=smem)

    def _cpu(self, job: UngappedJob, ids):
        """A query's init HSPs against the subjects ids, on the CPU."""
        return ungapped_extensions(job.query_codes, job.lookup, self.host_residues, self.host_offsets, ids,
                                   job.matrix_scores, job.x_drop, job.cutoff, job.window, method="scan")


def _upload_inputs(cp, queries: list[dict]):
    """Several queries' arrays on the GPU in one copy (int32 words of one buffer; uint8 arrays
    packed four to a word; None stays None): each CUDA call waits for the interpreter's lock
    when the CPU threads are busy, and the GPU threads' inputs took 3.3 s of their 6.2 s for
    100 queries in the pipeline as six copies a query (docs/benchmarks.md).

    Returns the buffer, each query's {name: view} and {name: the view's first word}.
    """
    words, spans = [], []
    at = 0
    for arrays in queries:
        span = {}
        for name, a in arrays.items():
            if a is None:
                span[name] = None
                continue
            a = np.ascontiguousarray(a).ravel()
            n_bytes = None
            if a.dtype == np.uint8:
                n_bytes = len(a)
                a = np.concatenate([a, np.zeros(-len(a) % 4, np.uint8)]).view(np.int32)
            elif a.dtype == np.uint32:
                a = a.view(np.int32)
            else:
                a = a.astype(np.int32, copy=False)
            words.append(a)
            span[name] = (at, at + len(a), n_bytes)
            at += len(a)
        spans.append(span)
    device = cp.asarray(np.concatenate(words)) if words else None
    views, starts = [], []
    for span in spans:
        view, start = {}, {}
        for name, s in span.items():
            if s is None:
                view[name] = start[name] = None
                continue
            v = device[s[0]:s[1]]
            view[name] = v.view(np.uint8)[:s[2]] if s[2] is not None else v
            start[name] = s[0]
        views.append(view)
        starts.append(start)
    return device, views, starts


def block_size(query_length: int, window: int = 40) -> int:
    """Threads per block, from the query's diagonal array (its bins in shared memory).

    Measured on an H200 (bench/blastp_profile.py, 136M residues): 128 threads
    are best up to 1,024 bins (queries up to ~980 residues: 3.3 ms for 127 aa,
    11.9 ms for 517 aa, against 4.8 and 15.0 ms with 256); beyond, fewer and
    larger blocks leave more of each multiprocessor's L1 cache to the lookup
    table: 1038 aa 29.2 -> 26.8 ms with 256 threads, 2627 aa 117 -> 80 ms with 512.
    """
    return min(512, max(BLOCK, diag_array_length(query_length, window) // 8))


def matrix_in_smem_for(query_length: int) -> bool:
    """Scores from the matrix in shared memory rather than the query's PSSM.

    Measured on an H100 (bench/blastp_profile.py --scores pssm,matrix, 136M
    residues, best of 4): equal within 2% up to 1054 aa (3.41/3.47 ms for
    127 aa, 26.11/25.76 ms for 1054 aa), the matrix 7% faster for 2627 aa
    (81.84 -> 76.23 ms), where the PSSM (290 KB) no longer stays in L1.
    """
    return query_length >= 1000


class KernelChoice(NamedTuple):
    """The ungapped kernel built for a query (kernel_options' arguments beside the word size)."""
    extension: str
    block: int
    lanes: int            # threads per window (0 unless window-based)
    matrix_smem: bool
    prefilter: bool


def kernel_choice(lookup: Lookup, window: int, extension: str = "auto", block: int | None = None,
                  window_lanes: int | None = None, scores: str = "auto", prefilter: bool = False) -> KernelChoice:
    """What GpuUngapped builds for a query from its settings (None / "auto": chosen by the
    query, as measured); the emulated kernel tests build the same."""
    qlen = lookup.query_length
    extension = extension_for(lookup) if extension == "auto" else extension
    window_based = extension == "window"
    return KernelChoice(extension=extension, block=block or block_size(qlen, window),
                        lanes=(window_lanes or window_lanes_for(qlen)) if window_based else 0,
                        matrix_smem=scores == "matrix" or (scores == "auto" and matrix_in_smem_for(qlen)),
                        prefilter=prefilter and window_based)       # a step of that variant only


def extension_for(lookup: Lookup) -> str:
    """cuBLASTP's ungapped-extension variant for a query (``extension="auto"``): window-based,
    or diagonal-based where the query's lookup table has a cell of LOW_COMPLEXITY_CELL query
    offsets or more (a low-complexity query: a run of one or two residues repeats its words).

    Their bins hold up to hundreds of hits against low-complexity subjects, and the two-hit
    rule walks a bin's hits in order: a thread per bin (diagonal-based) has more bins
    walked at once than a window of lanes per bin.  Measured on an H200
    (bench/blastp_profile.py, best of 4, alternated twice): 14 of the proteome's 2,100
    proteins have such a cell (231-505 offsets; every other protein's largest has at most
    62); the 8 timed were 1.6-2.3x faster diagonal-based against 68 M residues (457 aa:
    29.1-31.5 -> 13.5-14.6 ms; 538 aa: 38.5-39.5 -> 22.5-24.2 ms; 301 aa: 23.9-24.2 ->
    10.3-10.5 ms) and 1.5-1.7x against the 273 M of the benchmarks (457 aa: 71.1-71.7 ->
    46.0-46.1 ms; 538 aa: 106.0-106.2 -> 62.2; 301 aa: 54.8-54.9 -> 36.1-36.2).  Ordinary
    queries are faster window-based (68 M residues: 1,038 aa 7.6 ms against 8.9; 4,560 aa,
    largest cell 62: 45.7 against 52.9 ms).

    (Cells grow with the query's length: ordinary proteins joined into one query of
    16,242 aa reach 130 offsets, and are then taken diagonal-based too; untimed so near
    the GPU's length limit, and the same init HSPs either way.)
    """
    biggest = int(np.diff(lookup.cell_start).max(initial=0))
    return "diagonal" if biggest >= LOW_COMPLEXITY_CELL else "window"


def window_lanes_for(query_length: int) -> int:
    """Threads per window of the window-based extension.

    Measured on an H100 with PREFILTER on (bench/blastp_profile.py --copies 99,
    68M residues, best of 4, 8/16/32 lanes alternated twice): 32 lanes are best
    below 800 aa (127 aa 1.63-1.68 ms against 1.99-2.09 with 8 lanes, 300 aa
    3.10-3.14 against 3.74, 517 aa 4.68-4.79 against 5.11-5.13); from 800 aa
    16 and 32 take turns (802 aa 7.68-7.71 vs 8.29-8.30, 1,038 aa 8.31-8.34 vs
    7.78-7.79, 1,425 aa 9.64-9.66 vs 10.26-10.29, 2,627 aa 25.18-25.98 vs
    24.72-25.11), so 16 stays there.  (Before PREFILTER, 8 lanes were best
    below 800 aa: windows then also walked the bins that cannot trigger.)
    """
    return 32 if query_length < 800 else 16
