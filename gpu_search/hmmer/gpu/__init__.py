"""CUDA filter backend: HMMER's MSV and Viterbi filters on one or more GPUs.

The kernels live in ``filters.cu`` next to this file and are compiled at run
time by NVRTC (``cupy.RawModule``) with the group width G and the words per
lane W as compile-time constants, so that the loops over the model unroll
into registers (CUDAMPF).  Compiled modules are cached per (G, W, where the
profile lives, sequences a group, switches) for the life of the process.

The Viterbi filter runs as viterbi_filter16 (two model nodes a 32-bit word,
16-bit halves); the few sequences it hands back (viterbi16_again: strong hits
near its 16-bit ceiling, and sequences whose every row lies below its floor)
are scored again by viterbi_filter (int32 cells), which also scores everything
where no 16-bit offset is safe (viterbi16_bounds).

The database is uploaded once per GPU (split across GPUs by residues) and
reused for every model; a database larger than the memory budget streams
through in chunks, and an out-of-memory error retries with smaller chunks.
Results are the integer states HMMER computes (xJ, xC, overflow); the host
turns them into scores exactly as HMMER does (:mod:`..scores`).
"""

from __future__ import annotations

import contextlib
import math
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from ...device import to_gpu
from ...errors import DeviceError, GpuMemoryError
from ..profile import FilterProfile

KERNEL_FILE = Path(__file__).with_name("filters.cu")
FORWARD_FILE = Path(__file__).with_name("forward.cu")
KP = 29
BLOCK = 256
VITERBI_BLOCK = 128
VITERBI_DEFINES: tuple = ()
OVERFLOW_W = 0x7FFFFFFF
RESCORE_W = 0x7FFFFFFE    # viterbi_filter16: near its 16-bit ceiling, score again in int32
PAD_TRANS = -(1 << 20)    # transitions into padding nodes: far below any real score
PAD_EMIT_W = -32768


def _cupy():
    import cupy

    return cupy


# --- geometry: which kernel variant for which model ---------------------------------------


@dataclass(frozen=True)
class Geometry:
    """G lanes per sequence, W 32-bit words per lane (MSV: 2 cells a word);
    the Viterbi filter's group may score ``seqs`` sequences at once."""

    G: int
    W: int
    cells_per_word: int          # Viterbi filter: 2 = viterbi_filter16 (two nodes a word)
    seqs: int = 1
    redux: bool = False          # the group's row maximum in one REDUX instruction (G = 32)
    trans_regs: int = 0          # nodes a lane whose Viterbi transitions stay in registers

    @property
    def nodes(self) -> int:
        return self.G * self.W * self.cells_per_word

    @property
    def defines(self) -> tuple:
        """filters.cu's compile-time switches for this geometry."""
        return (f"-DREDUX={int(self.redux)}", f"-DTRANS_REGS={min(self.W, int(self.trans_regs))}")


def _pow2_at_least(x: int) -> int:
    return 1 << max(0, math.ceil(math.log2(max(1, x))))


def msv_geometry(M: int, cells_per_lane: int = 64) -> Geometry:
    """About ``cells_per_lane`` cells per lane: enough work per row to hide the
    row's fixed cost (shuffles, reduction, special states), few registers.
    W is a multiple of 4 (16-byte profile loads)."""
    G = min(32, _pow2_at_least(math.ceil(M / cells_per_lane)))
    W = 4 * math.ceil(M / (8 * G))
    return Geometry(G, W, 2)


def viterbi_geometry(M: int, seqs: int | None = None, cells: int = 2) -> Geometry:
    """G lanes a group (8 or 32), ``seqs`` sequences per group, the kernel
    switches, and ``cells`` nodes a 32-bit word: 2 for viterbi_filter16 (16-bit
    halves, W = ceil(M / 64) words a lane, 8 lanes a group up to M = 160), 1 for
    viterbi_filter (int32, W = ceil(M / 32)), which scores what viterbi_filter16
    cannot (viterbi16_bounds, RESCORE_W).  ``seqs`` given (tests): that many
    sequences a group.

    Chosen by measurement (bench/viterbi_sweep.py, docs/benchmarks.md).
    viterbi_filter, H100, the 20 benchmark models and random ones:

        W        seqs  nodes a lane with     row max    GCUPS
                       transitions in regs
        1-3      2     all                   REDUX      810-928 (M 83-93)
        4-12     1     all                   REDUX      766-1,251 (M 100-360)
        13-18    1     8                     REDUX    1,065-1,162 (M 400-576)
        19-32    1     16                    REDUX    1,089-1,166 (M 696-960)
        33-40    1     12                    REDUX    1,064-1,082 (M 1,152-1,184)
        41-48    1     8                     REDUX      975-992 (M 1,344-1,536)
        > 48     1     none                  shuffles   686 (M 2,485: the DP row spills)

    Transitions in registers spare the shared-memory loads; how many nodes'
    worth pays depends on the registers left beside the DP row (3 per node):
    past these counts the SM holds fewer blocks (W=13: all 13 nodes 962 vs 8
    nodes 1,119).  REDUX replaces the row maximum's five shuffles; it lost
    with a sub-warp group and for W > 48.

    viterbi_filter16, H200, the same models and random ones (W in words of two
    nodes; 34 M residues; the int32 kernel's GCUPS on the same run in brackets):

        M          G   W      seqs  words a lane with      GCUPS
                                    transitions in regs
        <= 160     8   1-10   1     all (no REDUX)         971-1,263 (793-1,122)
        161-448    32  3-7    2     none                   1,161-1,493 (988-1,117)
        449-768    32  8-12   1     all                    1,626-1,831 (1,196-1,201)
        769-1,536  32  13-24  2     8                      1,732-1,807 (944-1,106)
        > 1,536    32  > 24   1     12 (8 past 40, none    1,940 (M 2,485; 688)
                                    past 48)

    Below M = 161 a sub-warp group of 8 lanes gives each lane up to 20 nodes
    over which to spread the row's fixed cost (shuffles, maximum, Lazy-F):
    at M = 83-155 groups of 8 lanes gave 971-1,263 GCUPS, of 16 lanes
    888-1,242, of 4 lanes 856-1,209 (68 M residues).
    """
    if cells == 2:
        if M <= 160:
            W = math.ceil(M / 16)
            return Geometry(8, W, cells, seqs or 1, trans_regs=W)
        W = math.ceil(M / 64)
        if seqs is None:
            seqs = 2 if W <= 7 or 13 <= W <= 24 else 1
        # (unlike the int32 kernel, REDUX stays past W = 48: not measured there)
        words_in_regs = 0 if W <= 7 else W if W <= 12 else 8 if W <= 24 else 12 if W <= 40 else 8 if W <= 48 else 0
        return Geometry(32, W, cells, seqs, redux=True, trans_regs=words_in_regs)
    W = math.ceil(M / 32)
    if seqs is None:
        seqs = 2 if W <= 3 else 1
    if W > 48:
        return Geometry(32, W, cells, seqs)
    if seqs > 1:
        nodes_in_regs = W if W <= 3 else 0
    else:
        nodes_in_regs = W if W <= 12 else 8 if W <= 18 else 16 if W <= 32 else 12 if W <= 40 else 8
    return Geometry(32, W, cells, seqs, redux=True, trans_regs=nodes_in_regs)


def viterbi_block(geo: Geometry) -> int:
    """Threads a block for the Viterbi filter: 128 (256 would leave an SM one
    block of the register-heavy variants: M=300 901 vs 708 GCUPS), 256 where
    the profile leaves shared memory for at most two blocks an SM (int32
    kernel from W = 37, M=1,344: 930 vs 603): measured on an H100."""
    bytes_per_word = (KP * 2 + 8 * 4) if geo.cells_per_word == 1 else (KP + 8) * 4
    return BLOCK if bytes_per_word * geo.W * geo.G > 104 * 1024 else VITERBI_BLOCK


def viterbi16_bounds(prof: FilterProfile, max_len: int):
    """viterbi_filter16's (off, ceiling) for sequences up to max_len, or None where no
    offset is safe (then viterbi_filter scores them).

    off: the floor, the lowest B->M entry any such sequence can have,
    base_w + move(max_len) + min tBM (xB >= base_w + move(L), move falls with L),
    so that a cell held at the floor never beats the B->M path into an M cell.
    ceiling: the highest xE that keeps every half below 32768 on the next row,
    off + 32767 - the largest emission, and at most 32766, so that HMMER's own
    overflow (xE >= 32767) always lies above it and goes to viterbi_filter.
    The floor must leave room for the first row's xB under the ceiling
    (base_w - off <= 32767 - largest emission).
    """
    t = prof.vit_trans.astype(np.int64)
    if prof.M == 0 or (t > 0).any():
        return None
    e_max = max(int(prof.vit_emit.max()), 0)
    move = int(prof.move_w(np.array([max(1, max_len)]))[0])
    off = prof.base_w + move + int(t[0].min())          # row 0 of vit_trans: BM
    if off < prof.base_w + e_max - 32767:
        return None
    return off, min(off + 32767 - e_max, 32766)


def viterbi16_again(results: np.ndarray, prof: FilterProfile, bounds) -> np.ndarray:
    """Where viterbi_filter16's results need viterbi_filter: RESCORE_W (a sequence
    stopped near the ceiling), and xC = off + e_move, which is also what a sequence
    gets whose every row's true xE lies below the floor (its M cells read off
    there; rows of '*' or '~', say).  An xC above it comes from a row whose xE is
    above the floor, which is exact."""
    return np.flatnonzero((results == RESCORE_W) | (results == bounds[0] + prof.e_move))


def forward_geometry(M: int) -> Geometry:
    """About 16 float cells per lane, one sequence a group (forward.cu)."""
    G = min(32, _pow2_at_least(math.ceil(M / 16)))
    return Geometry(G, math.ceil(M / G), 1)


# --- kernels -------------------------------------------------------------------------------


def kernel_options(G: int, W: int, profile_in_smem: bool, seqs: int = 1, defines: tuple = ()) -> tuple:
    """filters.cu's compile-time constants (NVRTC's options; the CPU emulator of the tests
    builds the kernels with the same)."""
    return (f"-DG={G}", f"-DW={W}", f"-DPROFILE_IN_SMEM={int(profile_in_smem)}", f"-DSEQS={seqs}", *defines,
            f"-I{KERNEL_FILE.parent}")


@lru_cache(maxsize=None)
def load_kernels(G: int, W: int, profile_in_smem: bool, device_id: int, seqs: int = 1,
                 defines: tuple = ()):
    """Compile filters.cu for (G, W) on one device; cached per process.

    seqs: sequences per group of the Viterbi filter (filters.cu)."""
    cp = _cupy()
    source = f'#line 1 "{KERNEL_FILE.name}"\n' + KERNEL_FILE.read_text()
    options = ("-std=c++17", *kernel_options(G, W, profile_in_smem, seqs, defines))
    with cp.cuda.Device(device_id):
        module = cp.RawModule(code=source, options=options, name_expressions=None)
        return (module.get_function("msv_filter"), module.get_function("viterbi_filter"),
                module.get_function("viterbi_filter16"))


@lru_cache(maxsize=None)
def load_forward_kernel(G: int, W: int, profile_in_smem: bool, device_id: int):
    """Compile forward.cu for (G, W) on one device; cached per process."""
    cp = _cupy()
    source = f'#line 1 "{FORWARD_FILE.name}"\n' + FORWARD_FILE.read_text()
    options = ("-std=c++17", f"-DG={G}", f"-DW={W}", f"-DPROFILE_IN_SMEM={int(profile_in_smem)}",
               f"-I{FORWARD_FILE.parent}")
    with cp.cuda.Device(device_id):
        return cp.RawModule(code=source, options=options).get_function("forward_filter")


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


def pack_forward_profile(prof: FilterProfile, geo: Geometry):
    """femis[x][q][lane] and ftrans[q][t][lane] (float32), node k = lane*W + q + 1; padding 0."""
    G, W = geo.G, geo.W
    n = G * W
    emit = np.zeros((KP, n), dtype=np.float32)
    emit[:, : prof.M] = prof.fwd_emit
    trans = np.zeros((8, n), dtype=np.float32)
    trans[:, : prof.M] = prof.fwd_trans
    femis = np.ascontiguousarray(emit.reshape(KP, G, W).transpose(0, 2, 1))
    ftrans = np.ascontiguousarray(trans.reshape(8, G, W).transpose(2, 0, 1))
    return femis, ftrans


def length_table(kind: str, prof: FilterProfile, max_len: int) -> np.ndarray:
    """The kernels' length-indexed costs for lengths 0..max_len: 'tjb' (MSV, uint8) or 'move'
    (Viterbi filter, int16); length 0 (no sequence) as length 1."""
    lengths = np.arange(max_len + 1)
    lengths[0] = 1
    return prof.tjb_b(lengths) if kind == "tjb" else prof.move_w(lengths)


def msv_states(results: np.ndarray):
    """msv_filter's int16 outputs as (xJ uint8, overflow bool), views without a pass over them:
    the kernel writes xJ (0-254) or MSV_OVERFLOW (256, HMMER's overflow), so the low byte of
    each is xJ (0 on overflow) and the high byte the overflow flag (0 or 1)."""
    assert sys.byteorder == "little"
    halves = results.view(np.uint8)
    return halves[0::2], halves[1::2].view(np.bool_)


def viterbi_states(results: np.ndarray):
    """viterbi_filter's int32 outputs as (xC int16, overflow bool): xC saturates at -32768 as
    HMMER's 16-bit words do, OVERFLOW_W is HMMER's overflow."""
    overflow = results == OVERFLOW_W
    xC = np.where(overflow, -32768, np.maximum(results, -32768))
    return xC.astype(np.int16), overflow


def pack_viterbi_profile(prof: FilterProfile, geo: Geometry):
    """vemis[x][q][lane] and vtrans[q][t][lane] of the geometry's kernel.

    viterbi_filter (one node a word): int16 emissions and int32 transitions,
    node k = lane*W + q + 1.  viterbi_filter16 (two): uint32 words of two int16
    halves, node k = lane*W + q + 1 (low) and (G + lane)*W + q + 1 (high).
    Padding nodes: emissions and transitions minus infinity.
    """
    G, W, c = geo.G, geo.W, geo.cells_per_word
    n = c * G * W
    emit = np.full((KP, n), PAD_EMIT_W, dtype=np.int16)
    emit[:, : prof.M] = prof.vit_emit
    trans = np.full((8, n), PAD_TRANS if c == 1 else -32768, dtype=np.int32)
    trans[:, : prof.M] = prof.vit_trans
    if c == 1:
        vemis = emit.reshape(KP, G, W)
        vtrans = trans.reshape(8, G, W)
    else:
        def words(a):                                   # [rows, n] -> [rows, lane, q]
            v = a.reshape(len(a), 2 * G, W).astype(np.int16).view(np.uint16).astype(np.uint32)
            return v[:, :G, :] | (v[:, G:, :] << 16)
        vemis, vtrans = words(emit), words(trans)
    return (np.ascontiguousarray(vemis.transpose(0, 2, 1)),       # [x, q, lane]
            np.ascontiguousarray(vtrans.transpose(2, 0, 1)))      # [q, t, lane]


# --- the backend ---------------------------------------------------------------------------


class _Part:
    """Sequences one GPU scores in one launch: resident on the GPU, or streamed.

    A part whose residues fit the memory budget is uploaded once and reused
    for every model; otherwise the database is cut into several parts that are
    uploaded in turn at every call (same results, more transfers).
    """

    def __init__(self, device_id: int, db, seq_ids: np.ndarray, resident: bool):
        cp = _cupy()
        self.device_id = device_id
        self.db = db
        self.seq_ids = seq_ids                      # database indices, increasing
        self.lengths = db.lengths[seq_ids].astype(np.int64)
        self.n_residues = int(self.lengths.sum())
        self.resident = resident
        self._arrays = None
        with cp.cuda.Device(device_id):
            props = cp.cuda.runtime.getDeviceProperties(device_id)
            self.n_sm = props["multiProcessorCount"]
            self.smem_per_sm = props.get("sharedMemPerMultiprocessor", 228 * 1024)
            self.smem_optin = props.get("sharedMemPerBlockOptin", 227 * 1024)
            if resident:
                self._arrays = self._upload()

    def _upload(self):
        from ...seqdb import _gather

        cp = _cupy()
        offsets = np.zeros(len(self.seq_ids) + 1, dtype=np.int64)
        np.cumsum(self.lengths, out=offsets[1:])
        residues = _gather(self.db.residues, self.db.offsets[self.seq_ids], self.lengths)
        return to_gpu(cp, residues), to_gpu(cp, offsets)

    def arrays(self):
        """(residues, offsets) on the device; uploaded now for a streamed part."""
        return self._arrays if self.resident else self._upload()


def _pinned_empty(n: int, dtype) -> np.ndarray:
    """A page-locked host array, from CuPy's pinned-memory pool (a whole-database call asks
    for the same size every time, so the pool hands back the same blocks)."""
    dtype = np.dtype(dtype)
    memory = _cupy().cuda.alloc_pinned_memory(max(1, n * dtype.itemsize))
    return np.ndarray((n,), dtype=dtype, buffer=memory)    # (as cupyx.empty_pinned; it holds the memory)


def place_results(results: np.ndarray, slots: np.ndarray, values: np.ndarray) -> None:
    """One part's values into the caller's array at its slots (increasing, not empty): one
    block copy where they are contiguous (a whole database split by GpuBackend, or a sorted
    subset of it), else a scatter."""
    if slots[-1] - slots[0] + 1 == len(slots):
        results[slots[0]: slots[-1] + 1] = values
    else:
        results[slots] = values


def _is_oom(exc: BaseException) -> bool:
    return "OutOfMemory" in type(exc).__name__ or "out of memory" in str(exc).lower()


class GpuBackend:
    """Filter backend on CUDA GPUs (``--device gpu``).

    The database is split across the GPUs in contiguous ranges of equal
    residues (each GPU's results then land in one block of the caller's
    array: a copy, not a scatter, which on two GPUs cost 1.2-1.7 ms a
    whole-database call) and, on each GPU, kept resident if
    it fits half of the free memory, else cut into parts streamed at every
    call.  An out-of-memory error halves the budget and retries.

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
        try:
            n_visible = cp.cuda.runtime.getDeviceCount()
        except Exception as exc:
            raise DeviceError(f"no usable GPU: {exc}") from None
        gpus = list(range(n_visible)) if gpus is None else list(gpus)
        bad = [g for g in gpus if g >= n_visible]
        if bad or not gpus:
            raise DeviceError(f"--gpus {','.join(map(str, gpus))}: {n_visible} GPU(s) visible")
        self.db = db
        self.gpus = gpus
        self.max_len = int(db.lengths.max()) if db.n_seqs else 0
        self._tables = {}
        self._whole = None
        self._whole_idx = None
        self._every_index = np.arange(db.n_seqs, dtype=np.int64)   # to recognise a whole-database call
        self.kernel_seconds = {"msv": 0.0, "viterbi": 0.0, "forward": 0.0}   # GPU time, for benchmarks
        self.viterbi_rescored = 0    # sequences viterbi_filter16 left to viterbi_filter (last call)
        if max_resident_residues is None:
            free = min(cp.cuda.Device(d).mem_info[0] for d in gpus)
            max_resident_residues = int(free * 0.5 / 1.1)   # residues + offsets + work space
        self.budget = max(self.MIN_BUDGET, int(max_resident_residues))
        self._build_parts()

    def _build_parts(self) -> None:
        """Cut the database into per-GPU parts within the memory budget (retrying on OOM)."""
        db = self.db
        while True:
            try:
                self.parts = []
                for dev, ids in zip(self.gpus, self._split_by_residues()):
                    if len(ids) == 0:
                        continue
                    lens = db.lengths[ids].astype(np.int64)
                    if lens.sum() <= self.budget:
                        self.parts.append(_Part(dev, db, ids, resident=True))
                        continue
                    cum = np.cumsum(lens)
                    cuts = np.searchsorted(cum, np.arange(self.budget, int(cum[-1]), self.budget), side="right")
                    for piece in np.split(ids, np.unique(cuts)):
                        if len(piece):
                            self.parts.append(_Part(dev, db, piece, resident=False))
                break
            except Exception as exc:
                if not _is_oom(exc):
                    raise
                self._shrink(exc)
        self.part_of = np.zeros(db.n_seqs, dtype=np.int32)
        self.local_index = np.zeros(db.n_seqs, dtype=np.int64)
        for k, part in enumerate(self.parts):
            self.part_of[part.seq_ids] = k
            self.local_index[part.seq_ids] = np.arange(len(part.seq_ids))
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
                if not _is_oom(exc):
                    raise
                self._shrink(exc)
                self._build_parts()

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
                entry[part.device_id] = cp.asarray(entry["host"])
        return entry[part.device_id]

    # --- launching ---------------------------------------------------------------------------
    def _orders(self, idx):
        """Per part: local sequence positions to score (longest first) and, on
        the device, the same positions and the permutation that puts their
        results in slot order; the slots in idx, increasing.  Cached for a
        search of the whole database (the usual MSV call).  Returns (per part,
        whether idx is the whole database, in order)."""
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
            sel = np.flatnonzero(self.part_of[idx] == k)
            local = self.local_index[idx[sel]]
            by_len = np.argsort(-part.lengths[local], kind="stable")
            local = local[by_len].astype(np.int32)
            slots = sel[by_len]
            to_slot_order = np.argsort(slots)        # results come back in slot order (no host scatter)
            with cp.cuda.Device(part.device_id):
                per.append((local, cp.asarray(local), cp.asarray(to_slot_order), sel))
        if whole:
            self._whole, self._whole_idx = per, idx
        return per, whole

    def _grid(self, part, smem: int, block: int = BLOCK) -> int:
        """Enough blocks to fill every SM (persistent grid; blocks beyond what
        registers allow only wait, find no work left and exit)."""
        blocks_per_sm = max(1, min(2048 // block, part.smem_per_sm // max(smem + 1024, 1)))
        return part.n_sm * blocks_per_sm

    def _run(self, kind: str, idx, launch, out_dtype) -> np.ndarray:
        """Launch ``launch(part, residues, offsets, order, out)`` on every part; the results of idx.

        Resident parts run concurrently on their GPUs.  Each part's results are
        put in slot order on its GPU and copied back behind the kernel, on its
        stream: for a whole-database call straight into their block of a
        page-locked results array, so that one GPU's copy overlaps the other's
        kernel and the host only waits (on two GPUs the host's copies and
        placing were a tenth of a small model's MSV call).  A streamed part is
        uploaded, run and collected before the next one, so that only one
        streamed part at a time holds GPU memory.
        """
        cp = _cupy()
        orders, whole = self._orders(idx)
        results = _pinned_empty(len(idx), out_dtype) if whole else np.empty(len(idx), dtype=out_dtype)
        pending = []
        try:
            for part, (local, order, to_slot_order, slots) in zip(self.parts, orders):
                if len(local) == 0:
                    continue
                with cp.cuda.Device(part.device_id):
                    residues, offsets = part.arrays()
                    out = cp.empty(len(local), dtype=out_dtype)
                    start, stop = cp.cuda.Event(), cp.cuda.Event()
                    start.record()
                    launch(part, residues, offsets, order, out)
                    stop.record()
                    if whole:     # a part of the whole database is a contiguous range: one block
                        out[to_slot_order].get(out=results[slots[0]: slots[-1] + 1], blocking=False)
                        out = None
                    copied = cp.cuda.Event()
                    copied.record()
                pending.append((part, out, to_slot_order, slots, start, stop, copied))
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
        """Wait for each GPU's copy back; fetch and place the results not copied yet (a subset
        of the database: a gather on the GPU, then a scatter); add up kernel time."""
        cp = _cupy()
        longest = 0.0
        for part, out, to_slot_order, slots, start, stop, copied in pending:
            with cp.cuda.Device(part.device_id):
                copied.synchronize()
                if out is not None:
                    place_results(results, slots, out[to_slot_order].get())
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
            smem = emis_host.nbytes
            in_smem = smem <= part.smem_optin - 1024
            kernel = load_kernels(geo.G, geo.W, in_smem, part.device_id)[0]
            smem = smem if in_smem else 0
            _set_smem(kernel, smem)
            if part.device_id not in profiles:
                profiles[part.device_id] = cp.asarray(emis_host)
            counter = cp.zeros(1, dtype=np.int32)   # one per launch: callers may be concurrent
            kernel((self._grid(part, smem),), (BLOCK,),
                   (residues, offsets, order, np.int32(len(order)), profiles[part.device_id],
                    self._device_table("tjb", prof, part), np.int32(prof.tbm), np.int32(prof.tec),
                    np.int32(prof.base_b), np.int32(prof.bias_b), counter, out),
                   shared_mem=smem)

        return msv_states(self._run("msv", idx, launch, np.int16))

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
            smem += (-smem) % 16
            in_smem = smem <= part.smem_optin - 1024
            kernel = load_kernels(geo.G, geo.W, in_smem, part.device_id, geo.seqs,
                                  geo.defines + VITERBI_DEFINES)[1 if bounds is None else 2]
            smem = smem if in_smem else 0
            _set_smem(kernel, smem)
            if part.device_id not in profiles:
                profiles[part.device_id] = (cp.asarray(vemis_host), cp.asarray(vtrans_host))
            vemis, vtrans = profiles[part.device_id]
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
            smem = femis_host.nbytes + ftrans_host.nbytes
            in_smem = smem <= part.smem_optin - 1024
            kernel = load_forward_kernel(geo.G, geo.W, in_smem, part.device_id)
            smem = smem if in_smem else 0
            _set_smem(kernel, smem)
            if part.device_id not in profiles:
                profiles[part.device_id] = (cp.asarray(femis_host), cp.asarray(ftrans_host))
            femis, ftrans = profiles[part.device_id]
            counter = cp.zeros(1, dtype=np.int32)
            kernel((self._grid(part, smem),), (BLOCK,),
                   (residues, offsets, order, np.int32(len(order)), femis, ftrans,
                    np.float32(prof.fwd_e_move), np.float32(prof.fwd_e_loop), np.float32(prof.nj),
                    counter, out),
                   shared_mem=smem)

        return self._run("forward", idx, launch, np.float64)
