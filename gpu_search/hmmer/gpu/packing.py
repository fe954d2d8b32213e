"""A model's profile in the kernels' memory layouts, and the kernels' outputs as HMMER's states.

Profiles come from :class:`..profile.FilterProfile` (HMMER's own integer
and float scores) and are laid out for a geometry (:mod:`.geometry`): lane
by lane, so that a group's lanes read neighbouring words.  Padding nodes
(past M, to fill the geometry) can never win.  The kernels return integer
states (xJ, xC, overflow), which the host turns into scores exactly as HMMER
does (:mod:`..scores`).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import numpy as np

from ..profile import FilterProfile

if TYPE_CHECKING:
    from .geometry import Geometry

KP = 29                   # Easel's amino alphabet with its degenerate codes: profile rows
OVERFLOW_W = 0x7FFFFFFF
RESCORE_W = 0x7FFFFFFE    # viterbi_filter16: near its 16-bit ceiling, score again in int32
PAD_TRANS = -(1 << 20)    # transitions into padding nodes: far below any real score
PAD_EMIT_W = -32768


def profile_nbytes(kind: str, geo: Geometry) -> int:
    """Bytes of one model's packed profile for a geometry: 'msv' (pack_msv_profile),
    or 'viterbi' (pack_viterbi_profile's two arrays, padded to 16 as the kernel's shared memory
    holds them)."""
    words = geo.G * geo.W
    if kind == "msv":
        return KP * words * 4
    nbytes = KP * words * (2 if geo.cells_per_word == 1 else 4) + 8 * words * 4
    return nbytes + (-nbytes) % 16


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


FWDBACK_QMAX = 400      # fwdback.cu's QMAX: models up to M = 1,600 (longer ones finish on the CPU)


def striped_q(M: int) -> int:
    """p7O_NQF(M): HMMER's float vectors a row, at least 2."""
    return max(2, (M - 1) // 4 + 1)


def pack_fwdback_profiles(profs):
    """The models' float profiles as HMMER's P7_OPROFILE holds them, for fwdback.cu.

    Returns (model_at int64, profiles float32): model j's block at model_at[j] is
    tfv[8*Q][4] (for each q the vectors BM MM IM DM MD MI II, then Q vectors of DD) and
    rfv[KP][Q][4], node k = z*Q + q + 1 in lane z; padding nodes 0 (HMMER's exp(-inf)).
    Each block is kept on its profile (:func:`kept`).
    """
    blocks = [kept(prof, "fwdback", lambda prof=prof: fwdback_block(prof)) for prof in profs]
    at = np.cumsum([0] + [len(b) for b in blocks[:-1]]).astype(np.int64) if blocks else np.zeros(0, np.int64)
    profiles = np.concatenate(blocks) if blocks else np.zeros(0, dtype=np.float32)
    return at, profiles


def fwdback_block(prof: FilterProfile) -> np.ndarray:
    """One model's block of :func:`pack_fwdback_profiles` (tfv, then rfv; float32)."""
    Q = striped_q(prof.M)
    trans = np.zeros((8, 4 * Q), dtype=np.float32)
    trans[:, : prof.M] = prof.fwd_trans
    emit = np.zeros((KP, 4 * Q), dtype=np.float32)
    emit[:, : prof.M] = prof.fwd_emit
    striped = trans.reshape(8, 4, Q).transpose(2, 0, 1)          # [q, t, z]
    tfv = np.concatenate([striped[:, :7, :].reshape(-1), striped[:, 7, :].reshape(-1)])
    rfv = emit.reshape(KP, 4, Q).transpose(0, 2, 1).reshape(-1)   # [x, q, z]
    return np.concatenate([tfv, rfv]).astype(np.float32, copy=False)


def kept(prof: FilterProfile, key, make):
    """make(), kept on the profile under key (``FilterProfile.packed``): a search lays each
    profile out once for each kernel, on the threads that build the profiles ahead of the
    filter thread that launches them (``GpuBackend.pack_ahead``).  make() may return None."""
    try:
        return prof.packed[key]
    except KeyError:
        value = prof.packed[key] = make()
        return value


def degenerate_bits(degeneracy: np.ndarray) -> np.ndarray:
    """null2_by_expectation's degeneracy table: for each code x of Easel's (Kp, K) table
    (:func:`gpu_search.seqdb.amino_degeneracy`), bit y set where x stands for residue y."""
    deg = np.asarray(degeneracy, dtype=bool)
    return (deg.astype(np.uint32) << np.arange(deg.shape[1], dtype=np.uint32)).sum(axis=1).astype(np.uint32)


def fwdback_params(prof: FilterProfile, multihit: bool = True) -> tuple:
    """forward_parser's scalars of a model: M, nj, E->C, E->J (floats as their bits): as the
    search configures it (local multihit), or unihit as HMMER's domain definition rescores an
    envelope (p7_oprofile_ReconfigUnihit: nj 0, E->C 1, E->J 0)."""
    if multihit:
        return (prof.M, float_bits(prof.nj), float_bits(prof.fwd_e_move), float_bits(prof.fwd_e_loop))
    return (prof.M, float_bits(0.0), float_bits(1.0), float_bits(0.0))


def length_table(kind: str, prof: FilterProfile, max_len: int, present=None) -> np.ndarray:
    """The kernels' length-indexed costs for lengths 0..max_len: 'tjb' (MSV, uint8) or 'move'
    (Viterbi filter, int16); length 0 (no sequence) as length 1.

    present: the lengths the kernels will read (the database's); the others are left 0.  Each
    distinct length costs one call of the C library's logf, and a database's longest sequence
    is far longer than it has distinct lengths (the proteome: 2,000 lengths up to 35,000;
    0.2 s a table before the first launch).
    """
    lengths = np.arange(max_len + 1) if present is None else np.union1d(np.asarray(present, np.int64), [0])
    costs = np.maximum(lengths, 1)
    values = prof.tjb_b(costs) if kind == "tjb" else prof.move_w(costs)
    table = np.zeros(max_len + 1, dtype=values.dtype)
    table[lengths] = values
    return table


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
    move = _longest_move(prof, max(1, max_len))
    off = prof.base_w + move + int(t[0].min())          # row 0 of vit_trans: BM
    if off < prof.base_w + e_max - 32767:
        return None
    return off, min(off + 32767 - e_max, 32766)


def _longest_move(prof: FilterProfile, max_len: int) -> int:
    """prof.move_w(max_len), the same for every model of a search (it depends on the scales
    every HMMER profile shares): computed once (a C logf call through ctypes, 0.15 ms a model)."""
    key = (float(prof.scale_w), float(prof.nj), max_len)
    move = _LONGEST_MOVES.get(key)
    if move is None:
        move = _LONGEST_MOVES[key] = int(prof.move_w(np.array([max_len]))[0])
    return move


_LONGEST_MOVES: dict = {}


def viterbi16_again(results: np.ndarray, prof: FilterProfile, bounds) -> np.ndarray:
    """Where viterbi_filter16's results need viterbi_filter: RESCORE_W (a sequence
    stopped near the ceiling), and xC = off + e_move, which is also what a sequence
    gets whose every row's true xE lies below the floor (its M cells read off
    there; rows of '*' or '~', say).  An xC above it comes from a row whose xE is
    above the floor, which is exact."""
    return np.flatnonzero((results == RESCORE_W) | (results == bounds[0] + prof.e_move))


# --- several models a launch (jobs.cuh) ----------------------------------------------------

JOB_INTS = 12             # jobs.cuh: ints a job's row
JOB_ORDER, JOB_N, JOB_OUT, JOB_P = 0, 1, 2, 3


def float_bits(x: float) -> int:
    """A float32's bits as the int32 a job's row holds (the kernel reads it back with
    __int_as_float)."""
    return int(np.float32(x).view(np.int32))


def job_table(order_start, n, out_start, params) -> np.ndarray:
    """The jobs of a launch (jobs.cuh), int32 [jobs, JOB_INTS]: each model's first position
    in the launch's order, its count of sequences, its first result, and its scalars."""
    table = np.zeros((len(params), JOB_INTS), dtype=np.int32)
    table[:, JOB_ORDER] = order_start
    table[:, JOB_N] = n
    table[:, JOB_OUT] = out_start
    for j, p in enumerate(params):
        table[j, JOB_P:JOB_P + len(p)] = p
    return table


def msv_params(prof: FilterProfile) -> tuple:
    """msv_filter's scalars of a model (jobs.cuh's JOB_P ...)."""
    return (prof.tbm, prof.tec, prof.base_b, prof.bias_b)


def viterbi_params(prof: FilterProfile, bounds=None) -> tuple:
    """viterbi_filter's scalars of a model; viterbi_filter16's also its (off, ceiling)."""
    return (prof.e_move, prof.e_loop, prof.base_w, prof.ddbound_w, *(bounds or ()))


def bias_params(t10: float, t11: float) -> tuple:
    """bias_filter's scalars of a model: its filter HMM's state 1 transitions."""
    return (float_bits(t10), float_bits(t11))
