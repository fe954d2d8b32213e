"""CUDA filter backend: HMMER's MSV, bias and Viterbi filters (and the float Forward
prefilter) on one or more GPUs.

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

import numpy as np

from ...errors import GpuMemoryError
from ...gpu import (DeviceDatabase, allow_smem, blocks_per_sm, check_gpus, device_props, is_out_of_memory,
                    longest_first, pinned_empty, to_gpu_async)
from ..profile import FilterProfile
from .geometry import BLOCK, Geometry, forward_geometry, msv_geometry, viterbi_block, viterbi_geometry
from .kernels import load_bias_kernel, load_forward_kernel, load_kernel
from .packing import (length_table, msv_states, pack_forward_profile, pack_msv_profile, pack_viterbi_profile,
                      viterbi16_again, viterbi16_bounds, viterbi_states)


def _cupy():
    import cupy

    return cupy


def _profile_smem(part, nbytes: int) -> tuple[bool, int]:
    """(whether a profile of nbytes goes in shared memory on the part's GPU, the dynamic shared
    memory its kernel then takes): in it where it fits beside the block's reserved 1 KiB,
    else read from global memory."""
    in_smem = nbytes <= device_props(part.device_id).smem_optin - 1024
    return in_smem, nbytes if in_smem else 0


def _on_device(cache: dict, part, *host) -> tuple:
    """The host arrays (a model's packed profile) on the part's GPU, copied once per call
    and GPU (the current device), on the current stream (the cache holds the staging
    buffers: it lives until the call has waited for its results)."""
    if part.device_id not in cache:
        staged = cache.setdefault("staged", [])
        cache[part.device_id] = tuple(to_gpu_async(_cupy(), a, staged) for a in host)
    return cache[part.device_id]


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
        self._whole = None
        self._whole_idx = None
        self._every_index = np.arange(db.n_seqs, dtype=np.int64)   # to recognise a whole-database call
        self.kernel_seconds = {"msv": 0.0, "bias": 0.0, "viterbi": 0.0, "forward": 0.0}   # GPU time, for benchmarks
        self.viterbi_rescored = 0    # sequences viterbi_filter16 left to viterbi_filter (last call)
        self._local = threading.local()   # each calling thread's streams, one per GPU
        if max_resident_residues is None:
            free = min(cp.cuda.Device(d).mem_info[0] for d in gpus)
            max_resident_residues = int(free * 0.5 / 1.1)   # residues + offsets + work space
        self.budget = max(self.MIN_BUDGET, int(max_resident_residues))
        self._build_parts()

    def _build_parts(self) -> None:
        """Cut the database into per-GPU parts within the memory budget (retrying on OOM): a
        GPU's share resident, one part, where it fits the budget, else streamed in parts of at
        most the budget's residues."""
        db = self.db
        while True:
            try:
                self.databases = {}
                for dev, ids in zip(self.gpus, self._split_by_residues()):
                    if len(ids) == 0:
                        continue
                    resident = int(db.lengths[ids].astype(np.int64).sum()) <= self.budget
                    self.databases[dev] = DeviceDatabase(db.residues, db.offsets, dev, self.budget, resident,
                                                         first=int(ids[0]), last=int(ids[-1]) + 1, with_order=False)
                break
            except Exception as exc:
                if not is_out_of_memory(exc):
                    raise
                self._shrink(exc)
        self.parts = [chunk for database in self.databases.values() for chunk in database.chunks]
        for device_id in self.databases:   # the uploads done before any caller's stream reads them
            _cupy().cuda.Device(device_id).synchronize()
        self.part_of = np.zeros(db.n_seqs, dtype=np.int32)
        self.local_index = np.zeros(db.n_seqs, dtype=np.int64)
        for k, part in enumerate(self.parts):
            self.part_of[part.first:part.first + part.n] = k
            self.local_index[part.first:part.first + part.n] = np.arange(part.n)
        self._whole = None
        self._whole_idx = None

    def _split_by_residues(self) -> list[np.ndarray]:
        """The database's indices cut into one contiguous range per GPU, of about equal residues."""
        n = len(self.gpus)
        cum = np.cumsum(self.db.lengths, dtype=np.int64)
        total = int(cum[-1]) if len(cum) else 0
        cuts = np.searchsorted(cum, [total * k / n for k in range(1, n)], side="right")
        return np.split(np.arange(self.db.n_seqs, dtype=np.int64), cuts)

    def _shrink(self, exc) -> None:
        self.parts = []
        self.databases = {}
        _cupy().get_default_memory_pool().free_all_blocks()
        if self.budget <= self.MIN_BUDGET:
            raise GpuMemoryError(f"GPU out of memory even with {self.budget:,}-residue batches") from None
        self.budget = max(self.MIN_BUDGET, self.budget // 2)

    def _retrying(self, fn):
        """Run fn(); on a GPU out-of-memory error, halve the batches and run it again."""
        while True:
            try:
                return fn()
            except Exception as exc:
                if not is_out_of_memory(exc):
                    raise
                self._shrink(exc)
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
            self._tables[key] = {"host": length_table(kind, prof, self.max_len)}
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
    def _orders(self, idx):
        """Per part: the local sequence positions to score (longest first), on the host
        and the device; where the results go: for the whole database, the permutation on
        the device that puts them in slot order (one block copy back), else the slot in
        idx of each scored position (a scatter on the host); and what stages the uploads.
        Cached for a search of the whole database (the usual MSV call).  Returns (per
        part, whether idx is the whole database, in order)."""
        cp = _cupy()
        if self._whole is not None and idx is self._whole_idx:
            return self._whole, True
        idx = np.asarray(idx, dtype=np.int64)
        whole = len(idx) == self.db.n_seqs and (len(idx) == 0 or (idx[0] == 0 and idx[-1] == len(idx) - 1
                                                                  and np.array_equal(idx, self._every_index)))
        if whole and self._whole is not None:
            self._whole_idx = idx
            return self._whole, True
        per = []
        for k, part in enumerate(self.parts):
            sel = np.flatnonzero(self.part_of[idx] == k) if len(self.parts) > 1 else np.arange(len(idx))
            local = self.local_index[idx[sel]]
            by_len = longest_first(self.db.lengths[idx[sel]])
            local = local[by_len].astype(np.int32)
            staged = []
            with cp.cuda.Device(part.device_id), self.stream(part.device_id):
                order = to_gpu_async(cp, local, staged)
                if whole:      # kept for every later call, from any thread's stream
                    per.append((local, order, to_gpu_async(cp, np.argsort(sel[by_len]), staged), sel, staged))
                    cp.cuda.get_current_stream().synchronize()
                else:
                    per.append((local, order, None, sel[by_len], staged))
        if whole:
            self._whole, self._whole_idx = per, idx
        return per, whole

    def _grid(self, part, smem: int, block: int = BLOCK) -> int:
        """Enough blocks to fill every SM (persistent grid; blocks beyond what
        registers allow only wait, find no work left and exit)."""
        props = device_props(part.device_id)
        return props.n_sm * blocks_per_sm(block, smem, props.smem_per_sm)

    def _run(self, kind: str, idx, launch, out_dtype) -> np.ndarray:
        """Launch ``launch(part, residues, offsets, order, out)`` on every part; the results of idx.

        Resident parts run concurrently on their GPUs.  Each part's results are
        copied back behind the kernel, on its stream: for a whole-database call
        put in slot order on the GPU and copied straight into their block of a
        page-locked results array, so that one GPU's copy overlaps the other's
        kernel and the host only waits (on two GPUs the host's copies and
        placing were a tenth of a small model's MSV call); for a subset, in the
        kernel's order into a page-locked buffer, then placed by the host.  A streamed part is
        uploaded, run and collected before the next one, so that only one
        streamed part at a time holds GPU memory.
        """
        cp = _cupy()
        pending = []
        try:
            orders, whole = self._orders(idx)     # (its uploads too are waited for on a failure)
            results = pinned_empty(len(idx), out_dtype) if whole else np.empty(len(idx), dtype=out_dtype)
            for part, (local, order, to_slot_order, slots, _) in zip(self.parts, orders):
                if len(local) == 0:
                    continue
                with cp.cuda.Device(part.device_id), self.stream(part.device_id):
                    on_gpu = self.databases[part.device_id].on_gpu(part)    # a streamed part: uploaded now
                    residues, offsets = on_gpu.residues, on_gpu.offsets
                    out = cp.empty(len(local), dtype=out_dtype)
                    start, stop = cp.cuda.Event(), cp.cuda.Event()
                    start.record()
                    launch(part, residues, offsets, order, out)
                    stop.record()
                    if whole:     # a part of the whole database is a contiguous range: one block
                        out[to_slot_order].get(out=results[slots[0]: slots[-1] + 1], blocking=False)
                        back = None
                    else:         # in the kernel's order, placed by the host
                        back = pinned_empty(len(local), out_dtype)
                        out.get(out=back, blocking=False)
                    copied = cp.cuda.Event()
                    copied.record()
                pending.append((part, back, slots, start, stop, copied))
                if not part.resident:
                    self._collect(pending, results, kind)
                    pending = []
            self._collect(pending, results, kind)
        except BaseException:
            for device_id in self.gpus:        # no copy may still be landing in memory given back
                with contextlib.suppress(Exception):
                    cp.cuda.Device(device_id).synchronize()
            raise
        return results

    def _collect(self, pending, results, kind) -> None:
        """Wait for each GPU's copy back; place the results of a subset of the database
        (a scatter from the kernel's order); add up kernel time."""
        cp = _cupy()
        longest = 0.0
        for part, back, slots, start, stop, copied in pending:
            with cp.cuda.Device(part.device_id), self.stream(part.device_id):
                copied.synchronize()
                if back is not None:
                    results[slots] = back
                longest = max(longest, cp.cuda.get_elapsed_time(start, stop) / 1e3)
        pending.clear()
        self.kernel_seconds[kind] += longest

    def msv(self, prof: FilterProfile, idx, geometry: Geometry | None = None):
        """(xJ uint8, overflow bool) per sequence of idx."""
        return self._retrying(lambda: self._msv(prof, idx, geometry))

    def _msv(self, prof, idx, geometry):
        cp = _cupy()
        geo = geometry or msv_geometry(prof.M)
        emis_host = pack_msv_profile(prof, geo)
        profiles = {}

        def launch(part, residues, offsets, order, out):
            in_smem, smem = _profile_smem(part, emis_host.nbytes)
            kernel = load_kernel("msv_filter", geo.G, geo.W, in_smem, part.device_id)
            allow_smem(kernel, smem)
            emis, = _on_device(profiles, part, emis_host)
            counter = cp.zeros(1, dtype=np.int32)   # one per launch: callers may be concurrent
            kernel((self._grid(part, smem),), (BLOCK,),
                   (residues, offsets, order, np.int32(len(order)), emis,
                    self._device_table("tjb", prof, part), np.int32(prof.tbm), np.int32(prof.tec),
                    np.int32(prof.base_b), np.int32(prof.bias_b), counter, out),
                   shared_mem=smem)

        return msv_states(self._run("msv", idx, launch, np.int16))

    def bias(self, eo: np.ndarray, t10: float, t11: float, idx) -> np.ndarray:
        """The bias filter's Forward score (nats, float32, before its length terms) per sequence
        of idx, for the filter HMM (eo, t10, t11) of ``reference.bias_filter_hmm``.

        Within a few float ulps of the CPU's (bias.cu says why): the cascade settles the
        sequences near a threshold on the CPU."""
        return self._retrying(lambda: self._bias(eo, t10, t11, idx))

    def _bias(self, eo, t10, t11, idx):
        eo_host = np.ascontiguousarray(eo, dtype=np.float32)
        on_gpu = {}

        def launch(part, residues, offsets, order, out):
            kernel = load_bias_kernel(part.device_id)
            eo_dev, = _on_device(on_gpu, part, eo_host)
            block = 128
            kernel(((len(order) + block - 1) // block,), (block,),
                   (residues, offsets, order, np.int32(len(order)), eo_dev, np.float32(t10), np.float32(t11), out))

        return self._run("bias", idx, launch, np.float32)

    def viterbi(self, prof: FilterProfile, idx, geometry: Geometry | None = None,
                block: int | None = None):
        """(xC int16, overflow bool) per sequence of idx.

        geometry and block override the measured defaults (benchmarks, tests)."""
        return viterbi_states(self._retrying(lambda: self._viterbi(prof, idx, geometry, block)))

    def _viterbi(self, prof, idx, geometry, block):
        """viterbi_filter's int32 results (xC or OVERFLOW_W) per sequence of idx."""
        cp = _cupy()
        geo = geometry or viterbi_geometry(prof.M)
        bounds = None
        self.viterbi_rescored = 0
        if geo.cells_per_word == 2:
            bounds = viterbi16_bounds(prof, self.max_len)
            if bounds is None:                       # no safe 16-bit offset: int32 kernel
                geo = viterbi_geometry(prof.M, seqs=geo.seqs if geometry else None, cells=1)
        block = block or viterbi_block(geo)
        vemis_host, vtrans_host = pack_viterbi_profile(prof, geo)
        profiles = {}
        extra = () if bounds is None else (np.int32(bounds[0]), np.int32(bounds[1]))

        def launch(part, residues, offsets, order, out):
            smem = vemis_host.nbytes + vtrans_host.nbytes
            in_smem, smem = _profile_smem(part, smem + (-smem) % 16)
            kernel = load_kernel("viterbi_filter" if bounds is None else "viterbi_filter16", geo.G, geo.W,
                                 in_smem, part.device_id, geo.seqs, geo.defines)
            allow_smem(kernel, smem)
            vemis, vtrans = _on_device(profiles, part, vemis_host, vtrans_host)
            counter = cp.zeros(1, dtype=np.int32)
            kernel((self._grid(part, smem, block),), (block,),
                   (residues, offsets, order, np.int32(len(order)), vemis, vtrans,
                    self._device_table("move", prof, part), np.int32(prof.e_move),
                    np.int32(prof.e_loop), np.int32(prof.base_w), np.int32(prof.ddbound_w),
                    *extra, counter, out),
                   shared_mem=smem)

        results = self._run("viterbi", idx, launch, np.int32)      # as the kernels write them
        if bounds is not None:
            again = viterbi16_again(results, prof, bounds)
            if len(again):
                results[again] = self._viterbi(prof, np.asarray(idx)[again], viterbi_geometry(prof.M, cells=1),
                                               None)
            self.viterbi_rescored = len(again)
        return results

    def forward(self, prof: FilterProfile, idx, geometry: Geometry | None = None):
        """Approximate Forward scores (nats, float64; NaN where not finite) per sequence of idx.

        Not bit-exact (see forward.cu): use only with a safety margin.
        """
        return self._retrying(lambda: self._forward(prof, idx, geometry))

    def _forward(self, prof, idx, geometry):
        cp = _cupy()
        geo = geometry or forward_geometry(prof.M)
        femis_host, ftrans_host = pack_forward_profile(prof, geo)
        profiles = {}

        def launch(part, residues, offsets, order, out):
            in_smem, smem = _profile_smem(part, femis_host.nbytes + ftrans_host.nbytes)
            kernel = load_forward_kernel(geo.G, geo.W, in_smem, part.device_id)
            allow_smem(kernel, smem)
            femis, ftrans = _on_device(profiles, part, femis_host, ftrans_host)
            counter = cp.zeros(1, dtype=np.int32)
            kernel((self._grid(part, smem),), (BLOCK,),
                   (residues, offsets, order, np.int32(len(order)), femis, ftrans,
                    np.float32(prof.fwd_e_move), np.float32(prof.fwd_e_loop), np.float32(prof.nj),
                    counter, out),
                   shared_mem=smem)

        return self._run("forward", idx, launch, np.float64)
