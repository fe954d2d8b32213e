"""cuBLASTP's GPU phases through CuPy: hit detection, binning by diagonal, two-hit filter, ungapped extension.

The kernel (``ungapped.cu``, compiled at run time by NVRTC with the word size,
the block size and the extension variant as constants) returns the init HSPs
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
(in chunks, all resident).  A larger one is streamed: cut into chunks of a
quarter of the free memory, each uploaded, searched and freed in turn, once
per batch of queries (``ungapped_extensions_many``: every query of the batch
runs on a chunk while it is on the GPU; same rows; an out-of-memory error while
uploading halves the chunks).  Cutting it into shards (``makedb --shards``) and
searching them on separate GPUs, as the Nextflow workflow does, avoids the
repeated uploads altogether.
"""

from __future__ import annotations

import copy
import os
import threading
import time
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ...device import to_gpu
from ...errors import DeviceError
from ..lookup import Lookup
from ..ungapped import UngappedJob, _pssm, _to_records, blast_order, ungapped_extensions
from ..wordhits import diag_array_length

KERNEL_FILE = Path(__file__).with_name("ungapped.cu")
ORDER_FILE = Path(__file__).with_name("order.cu")
BLOCK = 128                     # threads per block (one subject at a time), short queries
MAX_SMEM_CELLS = 16384          # 2 x 16,384 int32 bin counters = 128 KiB of shared memory
HIT_SLOTS = 1 << 16             # hit buffer per block (global scratch), subject offsets
EXTENSIONS = ("diagonal", "hit", "window")  # cuBLASTP's ungapped-extension variants (Algorithms 3, 4, 5)
LOW_COMPLEXITY_CELL = 128       # a query whose lookup table has a cell this full: diagonal-based (extension_for)
WINDOW_LANES = (4, 8, 16, 32)   # threads per window of the window-based variant


def _cupy():
    import cupy

    return cupy


SCORES = ("auto", "pssm", "matrix")   # the query's PSSM, or the matrix in shared memory (auto: by length)


def kernel_options(word_size: int, block: int, extension: str, window_lanes: int = 8,
                   matrix_smem: bool = False, pv_smem: bool = False, prefilter: bool = False) -> tuple:
    """ungapped.cu's compile-time constants (NVRTC's options; the CPU emulator of the tests
    builds the kernel with the same)."""
    return (f"-DWORD_SIZE={int(word_size)}", f"-DBLOCK={int(block)}", f"-DHIT_BASED={int(extension == 'hit')}",
            f"-DWIN={int(window_lanes) if extension == 'window' else 0}", f"-DMATRIX_SMEM={int(matrix_smem)}",
            f"-DPV_SMEM={int(pv_smem)}", f"-DPREFILTER={int(prefilter)}")


def presence_bits(cell_start: np.ndarray) -> np.ndarray:
    """BLAST's presence vector of a lookup table: bit w of the uint32 words set where cell w
    holds query offsets (ungapped.cu's PV_SMEM)."""
    bits = np.packbits(np.diff(np.asarray(cell_start)) > 0, bitorder="little")   # 32**W cells: whole words
    return bits.view("<u4").astype(np.uint32)


# PV_SMEM by default? (GPU_SEARCH_PV_SMEM=1: the presence bits in shared memory; off: measured
# slower on an H100, docs/benchmarks.md)
PV_SMEM_DEFAULT = os.environ.get("GPU_SEARCH_PV_SMEM", "0") == "1"
PV_SMEM_MAX_WORD = 3             # the bits of word size 4 (128 KiB) do not fit beside the bins
# PREFILTER by default? (in the window-based extension, bins that cannot trigger are struck off by
# a thread each before the windows start; on: measured 5-20% faster on an H100 for queries of
# 517-2,627 aa, ~5% slower at 127 aa, docs/benchmarks.md; GPU_SEARCH_PREFILTER=0 turns it off)
PREFILTER_DEFAULT = os.environ.get("GPU_SEARCH_PREFILTER", "1") == "1"
# Queries per pass over the database (GpuUngapped.queries_per_pass).  A streamed database is
# copied to the GPU once per pass (about 40 ms per 273 M residues on an H100, docs/benchmarks.md),
# so its queries go in batches; a resident one gains nothing from them (the kernel of one query
# fills the GPU, and its results reach the gapped stage sooner alone).
# GPU_SEARCH_UNGAPPED_BATCH: for benchmarks comparing batch sizes.
STREAMED_QUERIES_PER_PASS = 32
RESIDENT_QUERIES_PER_PASS = 1


@lru_cache(maxsize=None)
def load_kernel(word_size: int, block: int, extension: str, device_id: int, window_lanes: int = 8,
                matrix_smem: bool = False, pv_smem: bool = False, prefilter: bool = False):
    """Compile ungapped.cu for a word size, block size and extension variant on one device;
    cached per process."""
    cp = _cupy()
    source = f'#line 1 "{KERNEL_FILE.name}"\n' + KERNEL_FILE.read_text()
    options = ("-std=c++17",
               *kernel_options(word_size, block, extension, window_lanes, matrix_smem, pv_smem, prefilter))
    with cp.cuda.Device(device_id):
        return cp.RawModule(code=source, options=options).get_function("two_hit_ungapped")


def order_key_bits(offsets: np.ndarray) -> tuple[int, int]:
    """Bits of a row's subject index and of its subject offset in order.cu's sort keys, for a
    database with these sequence boundaries."""
    subject_bits = max(1, (len(offsets) - 2).bit_length())
    offset_bits = max(1, (int(np.diff(offsets).max(initial=1)) - 1).bit_length())
    return subject_bits, offset_bits


@lru_cache(maxsize=None)
def load_order_kernels(device_id: int):
    """order.cu's two kernels (the rows' keys in BLAST's order, the rows gathered by a
    permutation) on one device; cached per process."""
    cp = _cupy()
    with cp.cuda.Device(device_id):
        module = cp.RawModule(code=f'#line 1 "{ORDER_FILE.name}"\n' + ORDER_FILE.read_text(),
                              options=("-std=c++17",))
        return module.get_function("blast_order_keys"), module.get_function("gather_rows")


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
            diagonal extends its hits in order), "hit" (one thread per hit
            extends it, the two-hit pass reads the results) or "window"
            (``window_lanes`` threads per diagonal extend each hit together,
            default: :func:`window_lanes_for` the query); same results.  The
            default, "auto", takes window, measured fastest, or diagonal for
            low-complexity queries (:func:`extension_for`).
        pv_smem: a bit per lookup-table cell in shared memory, tested before the
            table's cell starts are read (word sizes up to 3); same results.
            Default: ``GPU_SEARCH_PV_SMEM=1`` in the environment (off: measured 2-10% slower).
        prefilter: window-based extension only: a thread per bin of two hits or more
            sorts it and strikes it off when no two of its hits are W to A - 1 apart
            (the two-hit rule cannot trigger there), before the windows take the
            rest; same results.  Default: on, unless ``GPU_SEARCH_PREFILTER=0``
            in the environment (measured faster, docs/benchmarks.md).
        length_order: the subjects longest first (``SequenceDB.length_order``, which a
            .gsdb stores), for a chunk that holds the whole database; otherwise
            each chunk's order is computed (an argsort: 0.09 s for 840,000 subjects).
    """

    def __init__(self, residues, offsets, device_id: int = 0, max_chunk_residues: int | None = None,
                 hit_slots: int = HIT_SLOTS, block: int | None = None, extension: str = "auto",
                 window_lanes: int | None = None, streamed: bool | None = None, scores: str = "auto",
                 pv_smem: bool | None = None, prefilter: bool | None = None,
                 length_order: np.ndarray | None = None):
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
        self.pv_smem = PV_SMEM_DEFAULT if pv_smem is None else bool(pv_smem)
        self.prefilter = PREFILTER_DEFAULT if prefilter is None else bool(prefilter)
        self.cp = cp
        self.device_id = device_id
        self.hit_slots = int(hit_slots)
        self.host_residues = np.ascontiguousarray(residues, dtype=np.uint8)
        self.host_offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        self.length_order = length_order
        self.subject_bits, self.offset_bits = order_key_bits(self.host_offsets)
        self.order_on_gpu = True               # (False: on the host, as before; for bench/blastp_profile.py)
        self.last_extension = None             # the variant the last GPU query of a call took (auto resolved)
        self.overflowed = 0                    # subjects of the last call that needed a second pass
        with cp.cuda.Device(device_id):
            props = cp.cuda.runtime.getDeviceProperties(device_id)
            self.n_sm = int(props["multiProcessorCount"])
            self.smem_per_sm = int(props.get("sharedMemPerMultiprocessor", 228 * 1024))
            free, _ = cp.cuda.runtime.memGetInfo()
            need = len(self.host_residues) + 9 * len(offsets)      # residues, offsets, order
            if streamed is None:
                streamed = need > free // 2
            if max_chunk_residues is None:
                max_chunk_residues = max(1 << 20, int((free // 4 if streamed else free // 2) - 9 * len(offsets)))
            self.streamed = False
            self.chunks = []
            if not streamed:
                try:
                    self.chunks = [self._upload(dict(first=a, n=b - a))
                                   for a, b in _chunks(self.host_offsets, max_chunk_residues)]
                except cp.cuda.memory.OutOfMemoryError:
                    self.chunks, streamed = [], True                    # then stream it
                    max_chunk_residues = max(1 << 20, int(cp.cuda.runtime.memGetInfo()[0] // 4))
            if streamed:
                self.streamed = True
                self.chunks = [dict(first=a, n=b - a) for a, b in _chunks(self.host_offsets, max_chunk_residues)]
                for c in self.chunks:                                  # longest first, computed once
                    c["host_order"] = _longest_first(self.host_offsets[c["first"]:c["first"] + c["n"] + 1])
            self.n_out_cap = 1 << 20
            self._alloc_buffers()
        wanted = os.environ.get("GPU_SEARCH_UNGAPPED_BATCH")
        self.queries_per_pass = max(1, int(wanted)) if wanted else \
            STREAMED_QUERIES_PER_PASS if self.streamed else RESIDENT_QUERIES_PER_PASS

    def _new_clock(self):
        """Where this engine's host thread spent its time, summed over queries (the run's
        timings line): its inputs to the GPU, waiting for the kernels (their GPU time apart),
        the rows put in order and copied back."""
        self.seconds = dict.fromkeys(("inputs", "kernel wait", "kernel (GPU time)", "order and copy back"), 0.0)

    def _upload(self, chunk: dict) -> dict:
        """The chunk's subjects on the GPU, with their order (longest first, for load balance)."""
        cp = self.cp
        a, b = chunk["first"], chunk["first"] + chunk["n"]
        off = self.host_offsets[a:b + 1]
        order = chunk.get("host_order")
        if order is None and self.length_order is not None and b - a == len(self.host_offsets) - 1:
            order = np.ascontiguousarray(self.length_order, dtype=np.int32)    # the whole database
        if order is None:
            order = _longest_first(off)
        return dict(chunk, residues=to_gpu(cp, self.host_residues[off[0]:off[-1]]),
                    offsets=to_gpu(cp, off - off[0]), order=to_gpu(cp, order))

    def _resident(self, chunk: dict) -> dict:
        """A chunk's arrays on the GPU: the resident ones, or a streamed chunk uploaded
        now (an out-of-memory error halves the streamed chunks and says so)."""
        if not self.streamed:
            return chunk
        try:
            return self._upload(chunk)
        except self.cp.cuda.memory.OutOfMemoryError:
            if chunk["n"] <= 1:
                raise DeviceError(f"GPU {self.device_id}: out of memory for one database sequence") from None
            raise _HalveChunks() from None

    def _halve(self, k: int) -> None:
        """Replace streamed chunk k by its two halves (by subjects)."""
        c = self.chunks[k]
        mid = c["n"] // 2
        halves = [dict(first=c["first"], n=mid), dict(first=c["first"] + mid, n=c["n"] - mid)]
        for h in halves:
            h["host_order"] = _longest_first(self.host_offsets[h["first"]:h["first"] + h["n"] + 1])
        self.chunks[k:k + 1] = halves

    def _alloc_buffers(self):
        cp = self.cp
        with cp.cuda.Device(self.device_id):
            self.grid = self.n_sm * 16
            self.scratch = None
            while True:
                try:
                    self.scratch = cp.empty(self.grid * self.hit_slots, dtype=np.int32)
                    self.out = cp.empty(7 * self.n_out_cap, dtype=np.int32)
                    break
                except cp.cuda.memory.OutOfMemoryError:
                    self.scratch = None
                    if self.grid <= self.n_sm:
                        raise DeviceError("GPU out of memory for the blastp buffers") from None
                    self.grid //= 2
            self._new_clock()
            self.events = (cp.cuda.Event(), cp.cuda.Event())      # around a query's kernels (its GPU time)
            self.counters = cp.zeros(3, dtype=np.int32)            # next job, rows out, overflow
            self.overflow = cp.empty(2 * max([c["n"] for c in self.chunks] + [1]), dtype=np.int32)
            self.stream = cp.cuda.Stream(non_blocking=True)       # this engine's queries run on it

    def worker(self) -> "GpuUngapped":
        """Another engine on the same GPU and the same resident database, with its own
        buffers and CUDA stream: one host thread each, several queries in flight per GPU
        (the kernels of one overlap the host work and kernels of another)."""
        if self.streamed:
            raise ValueError("a streamed database has one engine per GPU")
        twin = copy.copy(self)
        twin.chunks = list(self.chunks)
        twin._alloc_buffers()
        return twin

    def stream_twin(self) -> "GpuUngapped":
        """The same GPU and resident database with a CUDA stream of its own and none of the
        ungapped stage's buffers (~0.6 GB on an H100): for work that only reads the
        database, the preliminary gapped kernel (blast/gpu/gapped.py)."""
        if self.streamed:
            raise ValueError("a streamed database has one engine per GPU")
        twin = copy.copy(self)
        twin.chunks = list(self.chunks)
        twin.scratch = twin.out = twin.overflow = twin.counters = None
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
            c = 0
            while queries and c < len(self.chunks):
                try:
                    chunk = self._resident(self.chunks[c])
                except _HalveChunks:                   # streamed: cut this chunk in two, go on
                    self._halve(c)
                    continue
                first = self.chunks[c]["first"]
                for query in queries.values():
                    rows, left = self._chunk(chunk, query)
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
        on the GPU, and the lists its rows are gathered in (called on the engine's device and stream)."""
        t0 = time.perf_counter()
        lookup = job.lookup
        choice = kernel_choice(lookup, job.window, self.extension, self.block, self.window_lanes, self.scores,
                               self.pv_smem, self.prefilter)
        block, pv_smem = choice.block, choice.pv_smem
        self.last_extension = choice.extension
        kernel = load_kernel(lookup.word_size, block, choice.extension, self.device_id, choice.lanes,
                             choice.matrix_smem, pv_smem, choice.prefilter)
        presence = presence_bits(lookup.cell_start) if pv_smem else None
        smem = 2 * n_cells * 4 + (presence.nbytes if pv_smem else 0)
        _allow_smem(kernel, smem)
        rank_bits = max(1, len(lookup.query_rank).bit_length())
        on_gpu_order = self.order_on_gpu and self.subject_bits + self.offset_bits + rank_bits <= 63
        query = _upload_inputs(self.cp, cells=lookup.cell_start, offsets=lookup.offsets,
                               rank=lookup.query_rank if on_gpu_order else None,
                               presence=presence, pssm=_pssm(job.query_codes, job.matrix_scores),
                               matrix=job.matrix_scores, codes=job.query_codes)
        if presence is None:
            query["presence"] = query["cells"]                   # (not read without PV_SMEM)
        # blocks that can be resident at once: enough to fill the GPU, no more (scratch per block)
        per_sm = max(1, min(2048 // block, self.smem_per_sm // (smem + 1024)))
        query.update(kernel=kernel, block=block, smem=smem, grid=min(self.grid, self.n_sm * per_sm),
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
            self._launch(kernel, block, c, c["order"], c["n"], query, grid, smem, self.scratch, self.hit_slots)
            end.record()
            counts = self.counters.get()
            left = []
            if counts[2]:                                  # second pass: the overflowing subjects
                over = self.overflow[:2 * int(counts[2])].get().reshape(-1, 2)
                self.overflowed += len(over)
                per_hit_x2 = 15 if query["extension"] == "hit" else 3      # as SLOTS_PER_HIT_X2
                slots = int(over[:, 1].max()) * per_hit_x2 // 2 + 64
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
        except self.cp.cuda.memory.OutOfMemoryError:
            return None

    def _blast_order(self, rows, n_rows: int, rank, rank_bits: int):
        """The chunk's rows in BLAST's order (ungapped.blast_order), sorted on the GPU:
        a 63-bit key per row (order.cu), CuPy's argsort, the rows gathered."""
        cp = self.cp
        make_keys, gather = load_order_kernels(self.device_id)
        keys = cp.empty(n_rows, dtype=np.int64)
        make_keys(((n_rows + 255) // 256,), (256,),
                  (rows, np.int32(n_rows), rank, np.int32(self.offset_bits), np.int32(rank_bits), keys))
        order = cp.argsort(keys)                 # keys are distinct: one row per triggering hit
        ordered = cp.empty(7 * n_rows, dtype=np.int32)
        gather(((7 * n_rows + 255) // 256,), (256,), (rows, order, np.int32(n_rows), ordered))
        return ordered

    def _launch(self, kernel, block, c, order, n_order, query, grid, smem, scratch, slots):
        kernel((grid,), (block,),
               (c["residues"], c["offsets"], order, np.int32(n_order), query["cells"], query["offsets"],
                query["presence"], query["pssm"], query["codes"], query["matrix"], *query["args"], scratch, np.int32(slots), self.counters[0:1], self.out,
                np.int32(self.n_out_cap), self.counters[1:2], self.overflow, self.counters[2:3]),
               shared_mem=smem)

    def _cpu(self, job: UngappedJob, ids):
        """A query's init HSPs against the subjects ids, on the CPU."""
        return ungapped_extensions(job.query_codes, job.lookup, self.host_residues, self.host_offsets, ids,
                                   job.matrix_scores, job.x_drop, job.cutoff, job.window, method="scan")


def _upload_inputs(cp, **arrays) -> dict:
    """A query's arrays on the GPU in one copy (views of one buffer, int32 words; uint8 arrays
    packed four to a word; None stays None): each CUDA call waits for the interpreter's lock
    when the CPU threads are busy, and the GPU threads' inputs took 3.3 s of their 6.2 s for
    100 queries in the pipeline as six copies (docs/benchmarks.md)."""
    words, n_bytes = {}, {}
    for name, a in arrays.items():
        if a is None:
            continue
        a = np.ascontiguousarray(a).ravel()
        if a.dtype == np.uint8:
            n_bytes[name] = len(a)
            words[name] = np.concatenate([a, np.zeros(-len(a) % 4, np.uint8)]).view(np.int32)
        elif a.dtype == np.uint32:
            words[name] = a.view(np.int32)
        else:
            words[name] = a.astype(np.int32, copy=False)
    at = np.cumsum([0] + [len(w) for w in words.values()])
    device = cp.asarray(np.concatenate(list(words.values())))
    views = dict.fromkeys(arrays)
    for k, name in enumerate(words):
        view = device[at[k]:at[k + 1]]
        views[name] = view.view(np.uint8)[:n_bytes[name]] if name in n_bytes else view
    return views


_SMEM_ALLOWED: dict = {}
_SMEM_LOCK = threading.Lock()


def _allow_smem(kernel, nbytes: int) -> None:
    """Let the kernel take nbytes of dynamic shared memory (the limit only ever rises: the
    engines of a GPU share compiled kernels, and queries of different lengths run at once)."""
    if nbytes <= 48 * 1024:
        return
    with _SMEM_LOCK:
        if _SMEM_ALLOWED.get(id(kernel), 0) < nbytes:
            kernel.max_dynamic_shared_size_bytes = nbytes
            _SMEM_ALLOWED[id(kernel)] = nbytes


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
    pv_smem: bool
    prefilter: bool


def kernel_choice(lookup: Lookup, window: int, extension: str = "auto", block: int | None = None,
                  window_lanes: int | None = None, scores: str = "auto", pv_smem: bool = False,
                  prefilter: bool = False) -> KernelChoice:
    """What GpuUngapped builds for a query from its settings (None / "auto": chosen by the
    query, as measured); the emulated kernel tests build the same."""
    qlen = lookup.query_length
    extension = extension_for(lookup) if extension == "auto" else extension
    window_based = extension == "window"
    return KernelChoice(extension=extension, block=block or block_size(qlen, window),
                        lanes=(window_lanes or window_lanes_for(qlen)) if window_based else 0,
                        matrix_smem=scores == "matrix" or (scores == "auto" and matrix_in_smem_for(qlen)),
                        pv_smem=pv_smem and lookup.word_size <= PV_SMEM_MAX_WORD,
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


class _HalveChunks(Exception):
    """A streamed chunk did not fit in GPU memory."""


def _longest_first(offsets: np.ndarray) -> np.ndarray:
    """Subjects of a chunk (its offsets) in decreasing length, for load balance."""
    return np.argsort(-np.diff(offsets), kind="stable").astype(np.int32)


def _chunks(offsets: np.ndarray, max_residues: int) -> list[tuple[int, int]]:
    """Contiguous subject ranges of at most max_residues residues (at least one subject each)."""
    n = len(offsets) - 1
    bounds, a = [], 0
    while a < n:
        b = int(np.searchsorted(offsets, offsets[a] + max_residues, side="right")) - 1
        b = max(b, a + 1)
        bounds.append((a, min(b, n)))
        a = min(b, n)
    return bounds
