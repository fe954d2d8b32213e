"""CUDA filter backend: HMMER's MSV and Viterbi filters on one or more GPUs.

The kernels live in ``filters.cu`` next to this file and are compiled at run
time by NVRTC (``cupy.RawModule``) with the group width G and the words per
lane W as compile-time constants, so that the loops over the model unroll
into registers (CUDAMPF).  Compiled modules are cached per (G, W, where the
profile lives) for the life of the process.

The database is uploaded once per GPU (split across GPUs by residues) and
reused for every model; a database larger than the memory budget streams
through in chunks, and an out-of-memory error retries with smaller chunks.
Results are the integer states HMMER computes (xJ, xC, overflow); the host
turns them into scores exactly as HMMER does (:mod:`..scores`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from ...errors import DeviceError, GpuMemoryError
from ..profile import FilterProfile

KERNEL_FILE = Path(__file__).with_name("filters.cu")
KP = 29
BLOCK = 256
OVERFLOW_W = 0x7FFFFFFF
PAD_TRANS = -(1 << 20)    # transitions into padding nodes: far below any real score
PAD_EMIT_W = -32768


def _cupy():
    import cupy

    return cupy


# --- geometry: which kernel variant for which model ---------------------------------------


@dataclass(frozen=True)
class Geometry:
    """G lanes per sequence, W 32-bit words per lane (MSV: 2 cells a word)."""

    G: int
    W: int
    cells_per_word: int

    @property
    def nodes(self) -> int:
        return self.G * self.W * self.cells_per_word


def _pow2_at_least(x: int) -> int:
    return 1 << max(0, math.ceil(math.log2(max(1, x))))


def msv_geometry(M: int, cells_per_lane: int = 64) -> Geometry:
    """About ``cells_per_lane`` cells per lane: enough work per row to hide the
    row's fixed cost (shuffles, reduction, special states), few registers.
    W is a multiple of 4 (16-byte profile loads)."""
    G = min(32, _pow2_at_least(math.ceil(M / cells_per_lane)))
    W = 4 * math.ceil(M / (8 * G))
    return Geometry(G, W, 2)


def viterbi_geometry(M: int, cells_per_lane: int = 32) -> Geometry:
    """About 32 cells per lane (three int32 states each, in registers).

    Chosen by measurement on an H200 (docs/benchmarks.md): fewer lanes per
    sequence and more cells per lane beat the reverse for both filters.
    """
    G = min(32, _pow2_at_least(math.ceil(M / cells_per_lane)))
    W = math.ceil(M / G)
    return Geometry(G, W, 1)


# --- kernels -------------------------------------------------------------------------------


@lru_cache(maxsize=None)
def load_kernels(G: int, W: int, profile_in_smem: bool, device_id: int):
    """Compile filters.cu for (G, W) on one device; cached per process."""
    cp = _cupy()
    source = f'#line 1 "{KERNEL_FILE.name}"\n' + KERNEL_FILE.read_text()
    options = ("-std=c++17", f"-DG={G}", f"-DW={W}", f"-DPROFILE_IN_SMEM={int(profile_in_smem)}")
    with cp.cuda.Device(device_id):
        module = cp.RawModule(code=source, options=options, name_expressions=None)
        return module.get_function("msv_filter"), module.get_function("viterbi_filter")


def _set_smem(kernel, nbytes: int) -> None:
    if nbytes > 48 * 1024:
        kernel.max_dynamic_shared_size_bytes = nbytes


# --- profile packing -------------------------------------------------------------------------


def pack_msv_profile(prof: FilterProfile, geo: Geometry) -> np.ndarray:
    """emis[x][q/4][lane][q%4] = (bias - cost) of segments lane (low half) and G+lane (high half).

    Node k = s*W + q + 1 in segment s; padding nodes cost 255 (cell value 0, as in HMMER).
    """
    G, W = geo.G, geo.W
    n = 2 * G * W
    e = np.full((KP, n), prof.bias_b - 255, dtype=np.int32)
    e[:, : prof.M] = prof.bias_b - prof.msv_cost.astype(np.int32)
    seg = e.reshape(KP, 2 * G, W)                 # [x, s, q]
    lo = seg[:, :G, :].astype(np.uint16).astype(np.uint32)   # segments 0..G-1
    hi = seg[:, G:, :].astype(np.uint16).astype(np.uint32)   # segments G..2G-1
    words = lo | (hi << 16)                                   # [x, lane, q]
    words = words.reshape(KP, G, W // 4, 4)                   # [x, lane, q/4, q%4]
    return np.ascontiguousarray(words.transpose(0, 2, 1, 3))  # [x, q/4, lane, q%4]


def pack_viterbi_profile(prof: FilterProfile, geo: Geometry):
    """vemis[x][q][lane] (int16) and vtrans[q][t][lane] (int32), node k = lane*W + q + 1."""
    G, W = geo.G, geo.W
    n = G * W
    emit = np.full((KP, n), PAD_EMIT_W, dtype=np.int16)
    emit[:, : prof.M] = prof.vit_emit
    trans = np.full((8, n), PAD_TRANS, dtype=np.int32)
    trans[:, : prof.M] = prof.vit_trans
    vemis = np.ascontiguousarray(emit.reshape(KP, G, W).transpose(0, 2, 1))
    vtrans = np.ascontiguousarray(trans.reshape(8, G, W).transpose(2, 0, 1))   # [q, t, lane]
    return vemis, vtrans


# --- the backend ---------------------------------------------------------------------------


class _DeviceShare:
    """The part of the database one GPU scores: arrays resident on that GPU."""

    def __init__(self, device_id: int, db, seq_ids: np.ndarray):
        cp = _cupy()
        self.device_id = device_id
        self.seq_ids = seq_ids                      # database indices, any order
        with cp.cuda.Device(device_id):
            lens = db.lengths[seq_ids].astype(np.int64)
            offsets = np.zeros(len(seq_ids) + 1, dtype=np.int64)
            np.cumsum(lens, out=offsets[1:])
            from ...seqdb import _gather

            residues = _gather(db.residues, db.offsets[seq_ids], lens)
            self.residues = cp.asarray(residues)
            self.offsets = cp.asarray(offsets)
            props = cp.cuda.runtime.getDeviceProperties(device_id)
            self.n_sm = props["multiProcessorCount"]
            self.smem_per_sm = props.get("sharedMemPerMultiprocessor", 228 * 1024)
            self.smem_optin = props.get("sharedMemPerBlockOptin", 227 * 1024)
        self.lengths = lens


class GpuBackend:
    """Filter backend on CUDA GPUs (``--device gpu``).

    Args:
        db: the database (uploaded now, once).
        gpus: device ids (all visible GPUs by default).
    """

    name = "gpu"

    def __init__(self, db, gpus=None):
        cp = _cupy()
        try:
            n_visible = cp.cuda.runtime.getDeviceCount()
        except Exception as exc:
            raise DeviceError(f"no usable GPU: {exc}") from None
        gpus = list(range(n_visible)) if gpus is None else list(gpus)
        bad = [g for g in gpus if g >= n_visible]
        if bad:
            raise DeviceError(f"--gpus {','.join(map(str, gpus))}: only {n_visible} GPU(s) visible")
        self.db = db
        self.gpus = gpus
        self.max_len = int(db.lengths.max()) if db.n_seqs else 0
        self._tables = {}
        self._whole = None
        self.kernel_seconds = {"msv": 0.0, "viterbi": 0.0}   # GPU time, for benchmarks
        # split the database across GPUs: every k-th sequence in length order,
        # so each GPU gets the same mix of lengths and about the same residues
        order = db.length_order
        self.shares = []
        for rank, dev in enumerate(gpus):
            ids = np.sort(order[rank:: len(gpus)]).astype(np.int64)
            try:
                self.shares.append(_DeviceShare(dev, db, ids))
            except Exception as exc:
                if "OutOfMemory" in type(exc).__name__:
                    raise GpuMemoryError(f"GPU {dev}: out of memory loading {db.n_residues:,} residues") from None
                raise
        # position of each database sequence inside its share
        self.share_of = np.zeros(db.n_seqs, dtype=np.int32)
        self.local_index = np.zeros(db.n_seqs, dtype=np.int64)
        for k, share in enumerate(self.shares):
            self.share_of[share.seq_ids] = k
            self.local_index[share.seq_ids] = np.arange(len(share.seq_ids))

    # --- length-dependent tables (shared by all models) --------------------------------
    def _table(self, kind: str, prof: FilterProfile):
        key = (kind, float(prof.scale_b if kind == "tjb" else prof.scale_w), float(prof.nj))
        if key not in self._tables:
            lengths = np.arange(self.max_len + 1)
            lengths[0] = 1
            values = prof.tjb_b(lengths) if kind == "tjb" else prof.move_w(lengths)
            self._tables[key] = {}
            self._tables[key]["host"] = values
        entry = self._tables[key]
        return entry

    def _device_table(self, kind, prof, share):
        cp = _cupy()
        entry = self._table(kind, prof)
        if share.device_id not in entry:
            with cp.cuda.Device(share.device_id):
                entry[share.device_id] = cp.asarray(entry["host"])
        return entry[share.device_id]

    # --- launching ---------------------------------------------------------------------------
    def _orders(self, idx):
        """Per share: local sequence positions to score (longest first), their
        slots in idx, and the positions already on the device (cached for a
        search of the whole database, the usual MSV call)."""
        cp = _cupy()
        idx = np.asarray(idx, dtype=np.int64)
        whole = len(idx) == self.db.n_seqs and (len(idx) == 0 or (idx[0] == 0 and np.array_equal(idx, np.arange(len(idx)))))
        if whole and self._whole is not None:
            return self._whole
        per = []
        for k, share in enumerate(self.shares):
            sel = np.flatnonzero(self.share_of[idx] == k)
            local = self.local_index[idx[sel]]
            by_len = np.argsort(-share.lengths[local], kind="stable")
            local = local[by_len].astype(np.int32)
            with cp.cuda.Device(share.device_id):
                per.append((local, sel[by_len], cp.asarray(local)))
        if whole:
            self._whole = per
        return per

    def _grid(self, share, smem: int) -> int:
        blocks_per_sm = max(1, min(8, share.smem_per_sm // max(smem + 1024, 1)))
        return share.n_sm * blocks_per_sm

    def msv(self, prof: FilterProfile, idx, geometry: Geometry | None = None):
        """(xJ uint8, overflow bool) per sequence of idx."""
        cp = _cupy()
        geo = geometry or msv_geometry(prof.M)
        emis_host = pack_msv_profile(prof, geo)
        results = np.zeros(len(idx), dtype=np.int16)
        pending = []
        for share, (local, slots, order) in zip(self.shares, self._orders(idx)):
            if len(local) == 0:
                continue
            with cp.cuda.Device(share.device_id):
                smem = emis_host.nbytes
                in_smem = smem <= share.smem_optin - 1024
                msv_k, _ = load_kernels(geo.G, geo.W, in_smem, share.device_id)
                smem = smem if in_smem else 0
                _set_smem(msv_k, smem)
                emis = cp.asarray(emis_host)
                out = cp.empty(len(local), dtype=np.int16)
                counter = cp.zeros(1, dtype=np.int32)   # one per launch: callers may be concurrent
                start, stop = cp.cuda.Event(), cp.cuda.Event()
                start.record()
                msv_k((self._grid(share, smem),), (BLOCK,),
                      (share.residues, share.offsets, order, np.int32(len(local)), emis,
                       self._device_table("tjb", prof, share), np.int32(prof.tbm), np.int32(prof.tec),
                       np.int32(prof.base_b), np.int32(prof.bias_b), counter, out),
                      shared_mem=smem)
                stop.record()
                pending.append((share, out, slots, start, stop))
        self._collect(pending, results, "msv")
        overflow = results < 0
        return np.where(overflow, 0, results).astype(np.uint8), overflow

    def _collect(self, pending, results, kind) -> None:
        """Wait for each GPU, copy its results into place, add up kernel time."""
        cp = _cupy()
        longest = 0.0
        for share, out, slots, start, stop in pending:
            with cp.cuda.Device(share.device_id):
                results[slots] = out.get()
                longest = max(longest, cp.cuda.get_elapsed_time(start, stop) / 1e3)
        self.kernel_seconds[kind] += longest

    def viterbi(self, prof: FilterProfile, idx, geometry: Geometry | None = None):
        """(xC int16, overflow bool) per sequence of idx."""
        cp = _cupy()
        geo = geometry or viterbi_geometry(prof.M)
        vemis_host, vtrans_host = pack_viterbi_profile(prof, geo)
        results = np.zeros(len(idx), dtype=np.int64)
        pending = []
        for share, (local, slots, order) in zip(self.shares, self._orders(idx)):
            if len(local) == 0:
                continue
            with cp.cuda.Device(share.device_id):
                smem = vemis_host.nbytes + vtrans_host.nbytes
                smem += (-smem) % 16
                in_smem = smem <= share.smem_optin - 1024
                _, vit_k = load_kernels(geo.G, geo.W, in_smem, share.device_id)
                smem = smem if in_smem else 0
                _set_smem(vit_k, smem)
                vemis = cp.asarray(vemis_host)
                vtrans = cp.asarray(vtrans_host)
                out = cp.empty(len(local), dtype=np.int32)
                counter = cp.zeros(1, dtype=np.int32)
                start, stop = cp.cuda.Event(), cp.cuda.Event()
                start.record()
                vit_k((self._grid(share, smem),), (BLOCK,),
                      (share.residues, share.offsets, order, np.int32(len(local)), vemis, vtrans,
                       self._device_table("move", prof, share), np.int32(prof.e_move),
                       np.int32(prof.e_loop), np.int32(prof.base_w), np.int32(prof.ddbound_w),
                       counter, out),
                      shared_mem=smem)
                stop.record()
                pending.append((share, out, slots, start, stop))
        self._collect(pending, results, "viterbi")
        overflow = results == OVERFLOW_W
        xC = np.where(overflow, -32768, np.maximum(results, -32768))
        return xC.astype(np.int16), overflow
