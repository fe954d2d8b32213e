"""CUDA filter backend: HMMER's MSV, bias and Viterbi filters and its Forward parser on one or
more GPUs.

The kernels (:mod:`.kernels`) are compiled at run time for the model's
geometry (:mod:`.geometry`) and fed its profile in their layout
(:mod:`.packing`).  The Viterbi filter runs as viterbi_filter16 (two model
nodes a 32-bit word, 16-bit halves); the few sequences it hands back
(viterbi16_again: strong hits near its 16-bit ceiling, and sequences whose
every row lies below its floor) are scored again by viterbi_filter (int32
cells), which also scores everything where no 16-bit offset is safe
(viterbi16_bounds).

The database is uploaded once per GPU (split across GPUs by residues) and
reused for every model; a database larger than the memory budget streams
through in chunks (:class:`gpu_search.gpu.DeviceDatabase`), and an
out-of-memory error retries with the budget halved.  Results are the
integer states HMMER computes (xJ, xC, overflow); the host turns them into
scores exactly as HMMER does (:mod:`..scores`).
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass

import numpy as np

from ...errors import GpuMemoryError
from ...gpu import (DeviceDatabase, allow_smem, blocks_per_sm, check_gpus, device_props, is_out_of_memory,
                    longest_first, pinned_empty, to_gpu_async)
from ..profile import FilterProfile
from .geometry import BLOCK, Geometry, launch_groups, msv_geometry, viterbi_block, viterbi_geometry
from .kernels import (FILTER_SHAPES, FINISHING_SHAPES, in_smem, load_bias_kernel, load_forward_parser, load_kernel,
                      model_shapes)
from .packing import (FWDBACK_QMAX, bias_params, fwdback_params, job_table, length_table,
                      kept, msv_params, msv_states, pack_fwdback_profiles, pack_msv_profile,
                      pack_viterbi_profile, viterbi16_again, viterbi16_bounds, viterbi_params, viterbi_states)


def _cupy():
    import cupy

    return cupy


def _profile_smem(part, nbytes: int) -> tuple[bool, int]:
    """(whether a profile of nbytes goes in shared memory on the part's GPU, the dynamic shared
    memory its kernel then takes): in it where it fits beside the block's reserved 1 KiB,
    else read from global memory."""
    fits = in_smem(nbytes, device_props(part.device_id).smem_optin)
    return fits, nbytes if fits else 0


def _on_device(cache: dict, part, *host) -> tuple:
    """The host arrays (a model's packed profile) on the part's GPU, copied once per call
    and GPU (the current device), on the current stream (the cache holds the staging
    buffers: it lives until the call has waited for its results)."""
    if part.device_id not in cache:
        staged = cache.setdefault("staged", [])
        cache[part.device_id] = tuple(to_gpu_async(_cupy(), a, staged) for a in host)
    return cache[part.device_id]


@dataclass
class _Layout:
    """The database on the GPUs at one memory budget: each GPU's share (``databases``), its
    parts, and where each sequence is.  A call reads one layout from start to end; an
    out-of-memory retry builds a new one, and calls under way on other threads keep theirs
    (their arrays stay alive while they hold them)."""

    databases: dict
    parts: list
    part_of: np.ndarray            # database index -> part
    local_index: np.ndarray        # database index -> position in its part
    whole: list | None = None      # _orders of a whole-database call, kept for the next ones
    whole_idx: np.ndarray | None = None


class GpuBackend:
    """Filter backend on CUDA GPUs (``--device gpu``).

    The database is split across the GPUs in contiguous ranges of equal
    residues (each GPU's results then land in one block of the caller's
    array: a copy, not a scatter, which on two GPUs cost 1.2-1.7 ms a
    whole-database call) and, on each GPU, kept resident if
    it fits half of the free memory, else cut into parts streamed at every
    call (each GPU's share a :class:`gpu_search.gpu.DeviceDatabase`, a part one
    of its chunks).  An out-of-memory error anywhere in a call halves the
    budget, cuts the parts again and retries.

    Args:
        db: the database (uploaded now, once, when it fits).
        gpus: device ids (all visible GPUs by default).
        max_resident_residues: memory budget per GPU in residues (default:
            from the free memory); small values force streaming (tests).
    """

    name = "gpu"
    MIN_BUDGET = 1 << 16

    def __init__(self, db, gpus=None, max_resident_residues: int | None = None):
        cp = _cupy()
        gpus = check_gpus(gpus)
        self.db = db
        self.gpus = gpus
        self.max_len = int(db.lengths.max()) if db.n_seqs else 0
        self._tables = {}
        self._every_index = np.arange(db.n_seqs, dtype=np.int64)   # to recognise a whole-database call
        self.kernel_seconds = {"msv": 0.0, "bias": 0.0, "viterbi": 0.0, "forward": 0.0}   # GPU time, for benchmarks
        self.viterbi_rescored = 0    # sequences viterbi_filter16 left to viterbi_filter (last call)
        self._local = threading.local()   # each calling thread's streams, one per GPU
        self._lock = threading.Lock()     # kernel_seconds, added to by every calling thread
        self._rebuild = threading.Lock()  # one thread at a time cuts the parts again after an OOM
        self._prepared: set = set()        # (GPU, kernel shape) prepared (prepare_kernels), and the futures
        self._preparing: list = []
        self._preparing_lock = threading.Lock()
        if max_resident_residues is None:
            free = min(cp.cuda.Device(d).mem_info[0] for d in gpus)
            max_resident_residues = int(free * 0.5 / 1.1)   # residues + offsets + work space
        self.budget = max(self.MIN_BUDGET, int(max_resident_residues))
        self._build_parts()

    @staticmethod
    def batch_key(M: int):
        """Models of equal keys make full batches (hmmsearch's filter tasks): those of one MSV
        group size G, which launch_groups then puts into one or two launches."""
        return msv_geometry(M).G

    def prepare_kernels(self, Ms, threads: int | None = None, finishing: bool = False) -> None:
        """Have the kernel shapes of models of these sizes, and the shapes every model uses
        (with ``finishing``, HMMER's domain definition on the GPU too: about 4 s of NVRTC,
        for nothing where the search does not finish on the GPU), compiled ahead of their
        first launch, side by side, where this host has no cubin of them yet
        (:func:`gpu_search.gpu.loader.prepare`): a search calls it with the models it
        reads, in their order, the int32 Viterbi filter's shapes after the others: only
        models without a 16-bit offset, and the strong hits viterbi_filter16 hands back, are
        launched with them (a search with many homologs waited for them on a fresh host).
        threads: the compiling threads (the search's CPU threads)."""
        from ...gpu.loader import prepare

        with self._preparing_lock:
            for d in dict.fromkeys(self.gpus):
                each = [model_shapes(int(M), device_props(d).smem_optin) for M in Ms]    # (MSV, 16-bit, int32)
                wanted = [*FILTER_SHAPES, *(FINISHING_SHAPES if finishing else ()),
                          *(shape for shapes in each for shape in shapes[:2]), *(shapes[2] for shapes in each)]
                new = [shape for shape in dict.fromkeys(wanted) if (d, shape) not in self._prepared]
                if new:
                    self._prepared.update((d, shape) for shape in new)
                    self._preparing += [((d, shape), future) for shape, future in zip(new, prepare(new, d, threads))
                                        if future is not None]

    def stop_preparing(self) -> None:
        """The kernel shapes prepare_kernels queued and not yet started are dropped (a
        search's end: its launches are done); a later search queues them again."""
        with self._preparing_lock:
            for key, future in self._preparing:
                if future.cancel():
                    self._prepared.discard(key)
            self._preparing = []

    def _build_parts(self) -> None:
        """Cut the database into per-GPU parts within the memory budget (retrying on OOM): a
        GPU's share resident, one part, where it fits the budget, else streamed in parts of at
        most the budget's residues.  The new layout replaces the old one in one assignment."""
        db = self.db
        while True:
            databases = {}
            try:
                for dev, ids in zip(self.gpus, self._split_by_residues()):
                    if len(ids) == 0:
                        continue
                    resident = int(db.lengths[ids].astype(np.int64).sum()) <= self.budget
                    databases[dev] = DeviceDatabase(db.residues, db.offsets, dev, self.budget, resident,
                                                    first=int(ids[0]), last=int(ids[-1]) + 1, with_order=False)
                break
            except Exception as exc:
                if not is_out_of_memory(exc):
                    raise
                databases = None
                self._shrink()
        parts = [chunk for database in databases.values() for chunk in database.chunks]
        for device_id in databases:        # the uploads done before any caller's stream reads them
            _cupy().cuda.Device(device_id).synchronize()
        part_of = np.zeros(db.n_seqs, dtype=np.int32)
        local_index = np.zeros(db.n_seqs, dtype=np.int64)
        for k, part in enumerate(parts):
            part_of[part.first:part.first + part.n] = k
            local_index[part.first:part.first + part.n] = np.arange(part.n)
        self.layout = _Layout(databases, parts, part_of, local_index)

    @property
    def parts(self) -> list:
        return self.layout.parts

    def _split_by_residues(self) -> list[np.ndarray]:
        """The database's indices cut into one contiguous range per GPU, of about equal residues."""
        n = len(self.gpus)
        cum = np.cumsum(self.db.lengths, dtype=np.int64)
        total = int(cum[-1]) if len(cum) else 0
        cuts = np.searchsorted(cum, [total * k / n for k in range(1, n)], side="right")
        return np.split(np.arange(self.db.n_seqs, dtype=np.int64), cuts)

    def _shrink(self) -> None:
        _cupy().get_default_memory_pool().free_all_blocks()
        if self.budget <= self.MIN_BUDGET:
            raise GpuMemoryError(f"GPU out of memory even with {self.budget:,}-residue batches") from None
        self.budget = max(self.MIN_BUDGET, self.budget // 2)

    def _retrying(self, fn):
        """Run fn(); on a GPU out-of-memory error, halve the batches and run it again.

        Several filter threads call at once: the first to fail cuts the parts again, one
        thread at a time; a thread whose call failed on a layout already replaced only
        runs again on the new one (the budget is halved once per failure, not once per
        thread)."""
        while True:
            layout = self.layout
            try:
                return fn()
            except Exception as exc:
                if not is_out_of_memory(exc):
                    raise
                with self._rebuild:
                    if self.layout is layout:
                        self._shrink()
                        self._build_parts()

    def stream(self, device_id: int):
        """The calling thread's own stream on a GPU (non-blocking, created on first use).

        Every call runs its uploads, kernels and copies on the caller's stream, so that the
        models that several threads filter at once overlap on the GPU: one model's kernels
        over a proteome-sized database fill a fraction of an H100, and on the one default
        stream they ran one after the other.  What calls share (the length tables, the
        database's order) is made ready on the GPU before any stream reads it.
        """
        streams = self._local.__dict__.setdefault("streams", {})
        if device_id not in streams:
            with _cupy().cuda.Device(device_id):
                streams[device_id] = _cupy().cuda.Stream(non_blocking=True)
        return streams[device_id]

    # --- length-dependent tables (shared by all models) --------------------------------
    def _table(self, kind: str, prof: FilterProfile) -> dict:
        """A length-indexed cost table ('tjb' for MSV, 'move' for Viterbi), host and per-GPU copies.

        The costs depend only on the length and on scales shared by every
        profile, so one table serves all the models of a run.
        """
        key = (kind, float(prof.scale_b if kind == "tjb" else prof.scale_w), float(prof.nj))
        if key not in self._tables:
            present = np.flatnonzero(np.bincount(self.db.lengths)) if self.db.n_seqs else None
            self._tables[key] = {"host": length_table(kind, prof, self.max_len, present)}
        return self._tables[key]

    def _device_table(self, kind, prof, part):
        cp = _cupy()
        entry = self._table(kind, prof)
        if part.device_id not in entry:
            with cp.cuda.Device(part.device_id):
                table = cp.asarray(entry["host"])
                cp.cuda.get_current_stream().synchronize()     # shared: ready for every stream
                entry[part.device_id] = table
        return entry[part.device_id]

    # --- launching ---------------------------------------------------------------------------
    def _orders(self, layout: _Layout, idx):
        """Per part: the local sequence positions of idx to score (longest first), on the host
        and the device; where the results go: for the whole database, the permutation on
        the device that puts them in slot order (one block copy back), else the slot in
        idx of each scored position (a scatter on the host); and what stages the uploads.
        Cached for a search of the whole database (the usual MSV call).  Returns (per
        part, whether idx is the whole database, in order)."""
        cp = _cupy()
        if layout.whole is not None and idx is layout.whole_idx:
            return layout.whole, True
        idx = np.asarray(idx, dtype=np.int64)
        whole = len(idx) == self.db.n_seqs and (len(idx) == 0 or (idx[0] == 0 and idx[-1] == len(idx) - 1
                                                                  and np.array_equal(idx, self._every_index)))
        if whole and layout.whole is not None:
            layout.whole_idx = idx
            return layout.whole, True
        per = []
        for k, part in enumerate(layout.parts):
            local, slots, sel = self._in_part(layout, k, idx)
            local = local.astype(np.int32)
            staged = []
            with cp.cuda.Device(part.device_id), self.stream(part.device_id):
                order = to_gpu_async(cp, local, staged)
                if whole:      # kept for every later call, from any thread's stream
                    per.append((local, order, to_gpu_async(cp, np.argsort(slots), staged), sel, staged))
                    cp.cuda.get_current_stream().synchronize()
                else:
                    per.append((local, order, None, slots, staged))
        if whole:
            layout.whole, layout.whole_idx = per, idx
        return per, whole

    def _in_part(self, layout: _Layout, k: int, idx: np.ndarray):
        """The sequences of idx (database indices) that lie in part k: their positions in
        the part, longest first (the kernels' order), the slot in idx of each, and the
        slots in idx order."""
        sel = np.flatnonzero(layout.part_of[idx] == k) if len(layout.parts) > 1 else np.arange(len(idx))
        by_len = longest_first(self.db.lengths[idx[sel]])
        return layout.local_index[idx[sel]][by_len], sel[by_len], sel

    def _job_orders(self, layout: _Layout, idxs):
        """Per part, for jobs each over its own sequences idxs[j]: the jobs' local positions
        (each longest first) one after the other on the device, each job's start and count
        there, each job's slots in its idx, and what stages the upload."""
        cp = _cupy()
        # every job at once (one job at a time, each numpy operation gave the interpreter's lock
        # up and waited to take it back behind the finishing threads): the jobs' sequences one
        # after the other, each job's longest first, equal lengths in their order (as
        # longest_first orders one job)
        idxs = [np.asarray(idx, dtype=np.int64) for idx in idxs]
        sizes = np.array([len(idx) for idx in idxs], dtype=np.int64)
        every = np.concatenate(idxs) if idxs else np.zeros(0, np.int64)
        job = np.repeat(np.arange(len(idxs)), sizes)
        slot = np.arange(len(every)) - np.repeat(np.cumsum(sizes) - sizes, sizes)   # (place in its idx)
        neg_length = -self.db.lengths[every].astype(np.int64)
        per = []
        for k, part in enumerate(layout.parts):
            sel = np.flatnonzero(layout.part_of[every] == k) if len(layout.parts) > 1 else slice(None)
            order = np.lexsort((neg_length[sel], job[sel]))      # (stable)
            counts = np.bincount(job[sel], minlength=len(idxs)).astype(np.int64)
            starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
            local = layout.local_index[every[sel][order]].astype(np.int32)
            slots = np.split(slot[sel][order], starts[1:]) if idxs else []
            staged = []
            order = None
            if len(local):
                with cp.cuda.Device(part.device_id), self.stream(part.device_id):
                    order = to_gpu_async(cp, local, staged)
            per.append((local, order, starts, counts, slots, staged))
        return per

    def _grid(self, part, smem: int, block: int = BLOCK) -> int:
        """Enough blocks to fill every SM (persistent grid; blocks beyond what
        registers allow only wait, find no work left and exit)."""
        props = device_props(part.device_id)
        return props.n_sm * blocks_per_sm(block, smem, props.smem_per_sm)

    def _rows(self, part, smem: int, n_jobs: int, block: int = BLOCK) -> int:
        """Blocks a job (grid.x) of a launch of n_jobs models: the SMs filled once by all of
        them together (each job's persistent loop shares its model's work among its row)."""
        return max(1, -(-self._grid(part, smem, block) // max(1, n_jobs)))

    def _run(self, kind: str, idx, n_jobs: int, groups, out_dtype, shared: bool = False) -> list:
        """Launch the groups of a batch of n_jobs models on every part; each job's results, in
        the order of its sequences.

        idx: one array of database indices every job scores (shared: MSV), or a list of
        one per job.  groups: [(job positions, launch)], one launch each, as
        ``launch(part, residues, offsets, order, jobs, n, out)`` with the group's job table
        on the device (jobs.cuh) and n its jobs' largest count.

        Resident parts run concurrently on their GPUs.  Each part's results are copied
        back behind the kernels, on its stream: for a whole-database call put in slot
        order on the GPU and copied in one block into a page-locked array, so that one
        GPU's copy overlaps the other's kernels and the host only waits; else in the
        kernels' order into a page-locked buffer, then placed by the host.  A streamed
        part is uploaded, run and collected before the next one, so that only one streamed
        part at a time holds GPU memory.
        """
        cp = _cupy()
        pending = []
        layout = self.layout          # the whole call on one layout (an OOM elsewhere may replace it)
        try:
            if shared:
                orders, whole = self._orders(layout, idx)     # (its uploads too are waited for on a failure)
                results = np.empty((n_jobs, len(idx)), dtype=out_dtype)
            else:
                orders, whole = self._job_orders(layout, idx), False
                results = [np.empty(len(x), dtype=out_dtype) for x in idx]
            for part, po in zip(layout.parts, orders):
                if shared:
                    local, order, to_slot_order = po[0], po[1], po[2]
                    n_local = len(local)
                    starts = np.zeros(n_jobs, np.int64)
                    counts = np.full(n_jobs, n_local, np.int64)
                    out_starts = np.arange(n_jobs, dtype=np.int64) * n_local
                    total = n_local * n_jobs
                else:
                    local, order, starts, counts = po[0], po[1], po[2], po[3]
                    out_starts = starts
                    total = len(local)
                if total == 0:
                    continue
                staged = []
                with cp.cuda.Device(part.device_id), self.stream(part.device_id):
                    on_gpu = layout.databases[part.device_id].on_gpu(part)    # a streamed part: uploaded now
                    residues, offsets = on_gpu.residues, on_gpu.offsets
                    out = cp.empty(total, dtype=out_dtype)
                    start, stop = cp.cuda.Event(), cp.cuda.Event()
                    start.record()
                    for members, launch in groups:
                        members = np.asarray(members, dtype=np.int64)
                        n = counts[members]
                        if n.max(initial=0) == 0:
                            continue
                        table = job_table(starts[members], n, out_starts[members], launch.params)
                        launch(part, residues, offsets, order, to_gpu_async(cp, table, staged), int(n.max()), out)
                    stop.record()
                    if shared and whole:   # a part of the whole database is a contiguous range: one block
                        back = pinned_empty(total, out_dtype).reshape(n_jobs, n_local)
                        out.reshape(n_jobs, n_local)[:, to_slot_order].get(out=back, blocking=False)
                    else:                  # in the kernels' order, placed by the host
                        back = pinned_empty(total, out_dtype)
                        out.get(out=back, blocking=False)
                    copied = cp.cuda.Event()
                    copied.record()
                pending.append((part, po, back, start, stop, copied, staged))
                if not part.resident:
                    self._collect(pending, results, kind, shared, whole)
            self._collect(pending, results, kind, shared, whole)
        except BaseException:
            for device_id in self.gpus:        # no copy may still be landing in memory given back
                with contextlib.suppress(Exception):
                    cp.cuda.Device(device_id).synchronize()
            raise
        return list(results)

    def _collect(self, pending, results, kind, shared, whole) -> None:
        """Wait for each GPU's copy back; place each job's results (a block of the whole
        database, or a scatter from the kernels' order); add up kernel time."""
        cp = _cupy()
        longest = 0.0
        for part, po, back, start, stop, copied, _ in pending:
            with cp.cuda.Device(part.device_id), self.stream(part.device_id):
                copied.synchronize()
                if shared and whole:
                    slots = po[3]
                    results[:, slots[0]: slots[-1] + 1] = back
                elif shared:
                    slots = po[3]
                    results[:, slots] = back.reshape(len(results), -1)
                else:
                    starts, counts, slots = po[2], po[3], po[4]
                    for j, r in enumerate(results):
                        r[slots[j]] = back[starts[j]: starts[j] + counts[j]]
                longest = max(longest, cp.cuda.get_elapsed_time(start, stop) / 1e3)
        pending.clear()
        with self._lock:
            self.kernel_seconds[kind] += longest

    def _profile_launch(self, part, kernel_for, host, profiles, k: int, head: tuple, tail: tuple, out,
                        block: int = BLOCK, align: int = 1) -> None:
        """One launch of a persistent filter kernel (MSV, Viterbi filter) for
        k models: their stacked profile arrays ``host`` (on the device once per part, in
        ``profiles``; in shared memory where one model's fit, its size rounded up to
        ``align``), the kernel from ``kernel_for(in_smem)``, k rows of blocks each taking
        work from its own counter; arguments ``(*head, *profiles, *tail, counters, out)``."""
        cp = _cupy()
        nbytes = sum(h[0].nbytes for h in host)
        in_smem, smem = _profile_smem(part, nbytes + (-nbytes) % align)
        kernel = kernel_for(in_smem)
        allow_smem(kernel, smem)
        on_device = _on_device(profiles, part, *host)
        counters = cp.zeros(k, dtype=np.int32)   # one per launch: callers may be concurrent
        kernel((self._rows(part, smem, k, block), k), (block,), (*head, *on_device, *tail, counters, out),
               shared_mem=smem)

    # --- the profiles in the kernels' layouts, kept on each profile ---------------------------
    def _msv_profile(self, prof: FilterProfile, geo: Geometry) -> np.ndarray:
        return kept(prof, ("msv", geo), lambda: pack_msv_profile(prof, geo))

    def _viterbi_profile(self, prof: FilterProfile, geo: Geometry) -> tuple:
        return kept(prof, ("viterbi", geo), lambda: pack_viterbi_profile(prof, geo))

    def _viterbi16_bounds(self, prof: FilterProfile):
        return kept(prof, ("viterbi16_bounds", self.max_len), lambda: viterbi16_bounds(prof, self.max_len))

    def pack_ahead(self, profs) -> None:
        """Lay out a batch's profiles for its launches before the batch is filtered (the
        search's profile threads): in each launch group's MSV geometry, in the Viterbi
        filters' geometries of a batch where every model runs them (a launch of fewer
        models may take a smaller one, packed then), HMMER's float layout for the Forward
        parser.  Packing on the filter thread, its numpy operations each gave up the
        interpreter's lock and waited to take it back behind the finishing threads
        (2,000 models x 6.8 M residues, many homologs, one H100 host: 1.7 s of the filter
        threads' time)."""
        for geo, members in launch_groups([p.M for p in profs], msv_geometry):
            for j in members:
                self._msv_profile(profs[j], geo)
        bounds = [self._viterbi16_bounds(p) for p in profs]
        for c, members in ((2, [j for j, b in enumerate(bounds) if b is not None]),
                           (1, [j for j, b in enumerate(bounds) if b is None])):
            groups = launch_groups([profs[j].M for j in members], lambda M, c=c: viterbi_geometry(M, cells=c))
            for geo, sub in groups:
                for i in sub:
                    self._viterbi_profile(profs[members[i]], geo)
        pack_fwdback_profiles([p for p in profs if p.M <= 4 * FWDBACK_QMAX])

    # --- the filters, for a batch of models ----------------------------------------------------
    def msv(self, prof: FilterProfile, idx, geometry: Geometry | None = None):
        """(xJ uint8, overflow bool) per sequence of idx."""
        return self.msv_batch([prof], idx, geometry)[0]

    # results of one MSV call at most (models x sequences): its output on the GPU, the page-locked
    # buffer and the host array each take 2 bytes a result, and the kernels' offsets are int32
    MSV_RESULTS_PER_CALL = 1 << 26

    def msv_batch(self, profs, idx, geometry: Geometry | None = None) -> list:
        """msv for several models over the same sequences idx: one launch a geometry (in calls
        of at most MSV_RESULTS_PER_CALL results)."""
        per_call = max(1, self.MSV_RESULTS_PER_CALL // max(1, len(idx)))
        out = []
        for first in range(0, len(profs), per_call):
            chunk = profs[first:first + per_call]
            out += [msv_states(r) for r in self._retrying(lambda chunk=chunk: self._msv(chunk, idx, geometry))]
        return out

    def _msv(self, profs, idx, geometry):
        groups = ([(geometry, list(range(len(profs))))] if geometry
                  else launch_groups([p.M for p in profs], msv_geometry))
        launches = []
        for geo, members in groups:
            emis_host = np.ascontiguousarray(np.stack([self._msv_profile(profs[j], geo) for j in members]))
            profiles = {}
            tjb_prof = profs[members[0]]

            def launch(part, residues, offsets, order, jobs, most, out, geo=geo, emis_host=emis_host,
                       profiles=profiles, k=len(members), tjb_prof=tjb_prof):
                self._profile_launch(
                    part, lambda in_smem: load_kernel("msv_filter", geo.G, geo.W, in_smem, part.device_id),
                    (emis_host,), profiles, k, (residues, offsets, order, jobs),
                    (self._device_table("tjb", tjb_prof, part),), out)

            launch.params = [msv_params(profs[j]) for j in members]
            launches.append((members, launch))
        return self._run("msv", idx, len(profs), launches, np.int16, shared=True)

    def bias(self, eo: np.ndarray, t10: float, t11: float, idx) -> np.ndarray:
        """The bias filter's Forward score (nats, float32, before its length terms) per sequence
        of idx, for the filter HMM (eo, t10, t11) of ``reference.bias_filter_hmm``.

        The CPU's bit for bit, or NaN for a sequence where CUDA's log might round a row's
        scale to another float than the C library's (bias.cu): the cascade scores those on
        the CPU."""
        return self.bias_batch([(eo, t10, t11)], [idx])[0]

    def bias_batch(self, hmms, idxs) -> list:
        """bias for several filter HMMs (eo, t10, t11), each over its own sequences: one launch."""
        return self._retrying(lambda: self._bias(hmms, idxs))

    def _bias(self, hmms, idxs):
        eo_host = np.ascontiguousarray(np.stack([np.asarray(eo, np.float32) for eo, _, _ in hmms]))
        on_gpu = {}

        def launch(part, residues, offsets, order, jobs, most, out):
            kernel = load_bias_kernel(part.device_id)
            eo_dev, = _on_device(on_gpu, part, eo_host)
            block = 128
            kernel(((most + block - 1) // block, len(hmms)), (block,), (residues, offsets, order, jobs, eo_dev, out))

        launch.params = [bias_params(t10, t11) for _, t10, t11 in hmms]
        return self._run("bias", list(idxs), len(hmms), [(list(range(len(hmms))), launch)], np.float32)

    def viterbi(self, prof: FilterProfile, idx, geometry: Geometry | None = None,
                block: int | None = None):
        """(xC int16, overflow bool) per sequence of idx.

        geometry and block override the measured defaults (benchmarks, tests)."""
        return self.viterbi_batch([prof], [idx], geometry, block)[0]

    def viterbi_batch(self, profs, idxs, geometry: Geometry | None = None, block: int | None = None) -> list:
        """viterbi for several models, each over its own sequences: one launch a geometry."""
        results = self._retrying(lambda: self._viterbi(profs, list(idxs), geometry, block))
        return [viterbi_states(r) for r in results]

    def _viterbi(self, profs, idxs, geometry, block, cells: int = 2):
        """viterbi_filter's int32 results (xC or OVERFLOW_W) per sequence of each idx:
        viterbi_filter16 where a model has a safe 16-bit offset, then viterbi_filter for the
        rest and for the sequences viterbi_filter16 hands back."""
        bounds = [self._viterbi16_bounds(p) if cells == 2 else None for p in profs]
        if geometry is not None and geometry.cells_per_word == 1:
            bounds = [None] * len(profs)
        packed16 = [j for j, b in enumerate(bounds) if b is not None]
        int32 = [j for j, b in enumerate(bounds) if b is None]
        launches = []
        for members, c in ((packed16, 2), (int32, 1)):
            if not members:
                continue
            if geometry is not None:
                geos = [(geometry if geometry.cells_per_word == c
                         else viterbi_geometry(max(profs[j].M for j in members), seqs=geometry.seqs, cells=c),
                         list(range(len(members))))]
            else:
                geos = launch_groups([profs[j].M for j in members], lambda M, c=c: viterbi_geometry(M, cells=c))
            for geo, sub in geos:
                sub = [members[i] for i in sub]
                launches.append((sub, self._viterbi_launch(profs, sub, geo, bounds, block)))
        results = self._run("viterbi", idxs, len(profs), launches, np.int32)      # as the kernels write them
        again_jobs, again_idxs = [], []
        for j in packed16:
            again = viterbi16_again(results[j], profs[j], bounds[j])
            if len(again):
                again_jobs.append((j, again))
                again_idxs.append(np.asarray(idxs[j])[again])
        if again_jobs:
            redo = self._viterbi([profs[j] for j, _ in again_jobs], again_idxs, None, None, cells=1)
            for (j, again), r in zip(again_jobs, redo):
                results[j][again] = r
        self.viterbi_rescored = sum(len(again) for _, again in again_jobs)
        return results

    def _viterbi_launch(self, profs, members, geo, bounds, block):
        block = block or viterbi_block(geo)
        packed = [self._viterbi_profile(profs[j], geo) for j in members]
        vemis_host = np.ascontiguousarray(np.stack([v for v, _ in packed]))
        vtrans_host = np.ascontiguousarray(np.stack([t for _, t in packed]))
        profiles = {}
        sixteen = geo.cells_per_word == 2
        move_prof = profs[members[0]]

        def launch(part, residues, offsets, order, jobs, most, out):
            self._profile_launch(
                part, lambda in_smem: load_kernel("viterbi_filter16" if sixteen else "viterbi_filter", geo.G, geo.W,
                                                  in_smem, part.device_id, geo.seqs, geo.defines),
                (vemis_host, vtrans_host), profiles, len(members), (residues, offsets, order, jobs),
                (self._device_table("move", move_prof, part),), out, block=block, align=16)

        launch.params = [viterbi_params(profs[j], bounds[j] if sixteen else None) for j in members]
        return launch

    def forward_exact(self, prof: FilterProfile, idx) -> np.ndarray:
        """HMMER's Forward score (p7_ForwardParser; nats, float32) per sequence of idx, bit for
        bit, or NaN where the kernel leaves the sequence to the CPU (fwdback.cu: a log that
        might round apart, HMMER's range errors, models longer than the kernel holds)."""
        return self.forward_exact_batch([prof], [idx])[0]

    def forward_exact_batch(self, profs, idxs) -> list:
        """forward_exact for several models, each over its own sequences: one launch."""
        return self._retrying(lambda: self._forward_exact(profs, list(idxs)))

    def _forward_exact(self, profs, idxs):
        members = [j for j, p in enumerate(profs) if p.M <= 4 * FWDBACK_QMAX]
        launches = []
        if members:
            model_at, profiles_host = pack_fwdback_profiles([profs[j] for j in members])
            on_gpu = {}

            def launch(part, residues, offsets, order, jobs, most, out):
                kernel = load_forward_parser(part.device_id)
                at_dev, profiles_dev = _on_device(on_gpu, part, model_at, profiles_host)
                block = 128                             # four threads a sequence
                null = np.uint64(0)                     # (no segments, rows or matrix: the score alone)
                kernel(((4 * most + block - 1) // block, len(members)), (block,),
                       (residues, offsets, order, jobs, at_dev, profiles_dev, null, null, null, null, null, out))

            launch.params = [fwdback_params(profs[j]) for j in members]
            launches.append((members, launch))
        results = self._run("forward", idxs, len(profs), launches, np.float32)
        for j in set(range(len(profs))) - set(members):
            results[j][:] = np.nan
        return results
