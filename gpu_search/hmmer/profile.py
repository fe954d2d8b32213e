"""HMMER's integer filter profiles, unstriped into plain node order.

HMMER 3.4 runs its MSV and Viterbi filters on an *optimized profile*
(``P7_OPROFILE``, ``impl_sse/p7_oprofile.c``): match scores scaled and rounded
to unsigned bytes (MSV) or signed 16-bit words (Viterbi filter), stored in
Farrar's striped layout.  Every value the filters use is taken here from the
profile HMMER itself built, never recomputed from probabilities, so that the
GPU kernels and the numpy reference start from HMMER's own integers:

* MSV byte costs come from ``OptimizedProfile.rbv`` (exposed by pyhmmer);
* the Viterbi-filter words ``rwv``, ``twv`` and ``xw`` are not exposed as
  attributes, so they are read from HMMER's own binary serialization of the
  profile (``OptimizedProfile.write``, the ``.h3p`` record of hmmpress,
  ``impl_sse/io.c``, format 3/f).  The record is parsed from its end, where
  every field has a size fixed by M and the alphabet, and checked field by
  field against the attributes pyhmmer does expose.

Node order: element ``[x, k-1]`` of every array is node ``k`` (1..M).  In the
striped layout node ``k = z*Q + q + 1`` sits in vector ``q``, lane ``z``.

Contents:
    1. FilterProfile: the integer profile of one model, in node order.
    2. Length-dependent costs: the N/C/J move costs, computed as HMMER does.
    3. Parsing the .h3p record.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import io
import struct
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

# Transition rows of FilterProfile.vit_trans, in HMMER's p7o_tsc_e order.
BM, MM, IM, DM, MD, MI, II, DD = range(8)
TRANSITION_NAMES = ("BM", "MM", "IM", "DM", "MD", "MI", "II", "DD")

_PMAGIC_3F = 0xB3E6F0F3  # "3fps" + 0x80808080: binary profile file, SSE, format 3/f
_NXSTATES, _NXTRANS = 4, 2  # p7O_NXSTATES (E, N, J, C), p7O_NXTRANS (MOVE, LOOP)
_XE, _XN, _XJ, _XC = range(4)
_MOVE, _LOOP = range(2)
_NCUTOFFS = 6


def _nq(M: int, per_vector: int) -> int:
    """Number of 128-bit vectors per striped row (p7O_NQB / NQW / NQF)."""
    return max(2, (M - 1) // per_vector + 1)


# --- 1. FilterProfile ---------------------------------------------------------


@dataclass(frozen=True)
class FilterProfile:
    """The integer MSV and Viterbi-filter profile of one model, in node order.

    Attributes:
        name, accession: the model's name and accession (accession may be None).
        M: model length in nodes.
        msv_cost: uint8 array (Kp, M), MSV emission costs (``rbv``).
        tbm, tec: MSV B->Mk and E->C costs (bytes).
        base_b, bias_b: MSV score offset and emission bias.
        scale_b: MSV scale, 3/ln2 (float32).
        vit_emit: int16 array (Kp, M), Viterbi-filter match scores (``rwv``).
        vit_trans: int16 array (8, M), rows BM MM IM DM MD MI II DD (``twv``):
            BM/MM/IM/DM are the costs *into* node k (from B, M_k-1, I_k-1,
            D_k-1); MD/MI/II/DD the costs *out of* node k.  -32768 is -inf.
        e_move, e_loop: xw[E][MOVE] and xw[E][LOOP] (E->C, E->J).
        base_w, scale_w, ddbound_w: Viterbi-filter offset, scale, Lazy-F bound.
        nj: expected number of J passes (1.0 multihit), for the move costs.
        evparam: float32 [m_mu, m_lambda, v_mu, v_lambda, f_tau, f_lambda].
        compo: float32 (K,), the model composition used by the bias filter.
        fwd_emit, fwd_trans, fwd_e_move, fwd_e_loop: the Forward filter's float
            profile (odds ratios, probabilities; ``rfv``, ``tfv``, ``xf``).
    """

    name: str
    accession: str | None
    M: int
    K: int
    msv_cost: np.ndarray
    tbm: int
    tec: int
    base_b: int
    bias_b: int
    scale_b: np.float32
    vit_emit: np.ndarray
    vit_trans: np.ndarray
    e_move: int
    e_loop: int
    base_w: int
    scale_w: np.float32
    ddbound_w: int
    nj: np.float32
    evparam: np.ndarray
    compo: np.ndarray
    fwd_emit: np.ndarray | None = None    # float32 (Kp, M) odds ratios (rfv)
    fwd_trans: np.ndarray | None = None   # float32 (8, M) probabilities (tfv), rows as vit_trans
    fwd_e_move: np.float32 = np.float32(0.5)
    fwd_e_loop: np.float32 = np.float32(0.5)
    # the annotation an alignment display shows (P7_OPROFILE's desc, consensus, rf, cs)
    description: str | None = None
    consensus: str = ""
    reference: str | None = None
    consensus_structure: str | None = None
    # the kernels' layouts of this profile (gpu/packing.py's ``kept``), made once a search (a
    # copy made by dataclasses.replace starts with none of them)
    packed: dict = dataclasses.field(default_factory=dict, init=False, compare=False, repr=False)

    @property
    def Kp(self) -> int:
        return self.msv_cost.shape[0]

    @classmethod
    def from_hmm(cls, hmm, background=None) -> "FilterProfile":
        """Configure ``hmm`` as p7_Pipeline does (local multihit) and build the profile."""
        from pyhmmer.plan7 import Background, Profile

        bg = background or Background(hmm.alphabet)
        gm = Profile(hmm.M, hmm.alphabet)
        gm.configure(hmm, bg, 100)
        return cls.from_optimized(gm.to_optimized())

    @classmethod
    def from_optimized(cls, om) -> "FilterProfile":
        """Build from a ``pyhmmer.plan7.OptimizedProfile`` (local multihit)."""
        M = om.M
        Kp = om.alphabet.Kp
        K = om.alphabet.K
        q16 = _nq(M, 16)
        rbv = np.asarray(om.rbv, dtype=np.uint8).reshape(Kp, q16, 16)
        # striped [x, q, z] holds node z*Q + q + 1: transpose to [x, z, q]
        msv_cost = rbv.transpose(0, 2, 1).reshape(Kp, 16 * q16)[:, :M].copy()

        rec = _read_h3p_tail(om, Kp)
        checks = {
            "scale_w": (rec["scale_w"], np.float32(om.scale_w)),
            "base_w": (rec["base_w"], om.base_w),
            "ddbound_w": (rec["ddbound_w"], om.ddbound_w),
            "ncj_roundoff": (rec["ncj_roundoff"], np.float32(om.ncj_roundoff)),
            "L": (rec["L"], om.L),
        }
        for field, (got, want) in checks.items():
            if got != want:
                raise RuntimeError(
                    f"HMMER profile record does not match pyhmmer's {field} "
                    f"({got} != {want}): unsupported pyhmmer/HMMER build"
                )
        evparam = np.asarray(om.evalue_parameters.as_vector(), dtype=np.float32)
        return cls(
            name=om.name,
            accession=om.accession,
            M=M,
            K=K,
            msv_cost=msv_cost,
            tbm=int(om.tbm),
            tec=int(om.tec),
            base_b=int(om.base_b),
            bias_b=int(om.bias_b),
            scale_b=np.float32(om.scale_b),
            vit_emit=rec["rwv"][:, :M].copy(),
            vit_trans=rec["twv"][:, :M].copy(),
            e_move=int(rec["xw"][_XE, _MOVE]),
            e_loop=int(rec["xw"][_XE, _LOOP]),
            base_w=int(om.base_w),
            scale_w=np.float32(om.scale_w),
            ddbound_w=int(om.ddbound_w),
            nj=rec["nj"],
            evparam=evparam,
            compo=np.asarray(om.compositions, dtype=np.float32)[:K].copy(),
            fwd_emit=rec["rfv"][:, :M].copy(),
            fwd_trans=rec["tfv"][:, :M].copy(),
            fwd_e_move=np.float32(rec["xf"][_XE, _MOVE]),
            fwd_e_loop=np.float32(rec["xf"][_XE, _LOOP]),
            description=om.description,
            consensus=om.consensus or "",
            reference=om.reference,
            consensus_structure=om.consensus_structure,
        )

    # --- 2. length-dependent costs ---------------------------------------

    def tjb_b(self, lengths) -> np.ndarray:
        """MSV N/J->B move cost for target lengths L (uint8 per length).

        ``p7_oprofile_ReconfigMSVLength``:
        ``unbiased_byteify(logf(3.0f / (float)(L+3)))``.
        """
        L = np.asarray(lengths)
        p = np.float32(3.0) / (L + 3).astype(np.float32)
        cost = -_round_half_away(self.scale_b * _logf(p))  # float32 product, as C
        return np.where(cost > 255.0, 255, cost).astype(np.uint8)

    def move_w(self, lengths) -> np.ndarray:
        """Viterbi-filter N/C/J MOVE cost for target lengths L (int16 per length).

        ``p7_oprofile_ReconfigRestLength``: pmove = (2+nj)/(L+2+nj) in float,
        then ``wordify(logf(pmove))``.
        """
        L = np.asarray(lengths).astype(np.float32)
        two = np.float32(2.0)
        pmove = (two + self.nj) / (L + two + self.nj)
        return _wordify(self.scale_w, _logf(pmove))


def _round_half_away(x: np.ndarray) -> np.ndarray:
    """C ``roundf``: halves away from zero (numpy rounds halves to even).

    Done in float64, where |x| + 0.5 is exact for any float32 x.
    """
    x = np.asarray(x, dtype=np.float64)
    return np.copysign(np.floor(np.abs(x) + 0.5), x)


def _wordify(scale_w: np.float32, sc: np.ndarray) -> np.ndarray:
    """HMMER's ``wordify()``: round(scale_w * sc), saturated to int16."""
    v = _round_half_away(np.float32(scale_w) * np.asarray(sc, dtype=np.float32))
    return np.clip(v, -32768, 32767).astype(np.int16)


@lru_cache(maxsize=1)
def _libm_logf():
    """The C library's ``logf``, the very function HMMER calls.

    numpy's float32 log is not guaranteed to round like the C library's; one
    unit in the last place can move ``roundf(scale * logf(p))`` across a half.
    """
    name = ctypes.util.find_library("m")
    if name is None:
        return None
    # PyDLL: called holding the interpreter lock.  Through CDLL each call gave the lock up and
    # took it back, and among busy threads (a search's filter and finishing threads) each
    # taking back could wait a whole switch interval: a length table of a few thousand calls
    # took 0.2 s on a GPU host, before the first kernel launch.
    fn = ctypes.PyDLL(name).logf
    fn.restype = ctypes.c_float
    fn.argtypes = [ctypes.c_float]
    return fn


def _logf(values) -> np.ndarray:
    """Elementwise C ``logf`` over float32 values (few distinct values expected)."""
    v = np.asarray(values, dtype=np.float32)
    fn = _libm_logf()
    if fn is None:  # no C math library: numpy's log, correct to ~1 ulp
        return np.log(v)
    uniq, inverse = np.unique(v, return_inverse=True)
    out = np.fromiter((fn(float(u)) for u in uniq), dtype=np.float32, count=len(uniq))
    return out[inverse].reshape(v.shape)


# --- 3. Parsing the .h3p record ----------------------------------------------


def _read_h3p_tail(om, Kp: int) -> dict:
    """Parse the fixed-size tail of HMMER's .h3p record of ``om``.

    Layout (impl_sse/io.c, p7_oprofile_Write, format 3/f), from the end:
    ... twv[8*Q8] rwv[Kp][Q8] xw[4][2] scale_w base_w ddbound_w ncj_roundoff
    tfv[8*Q4] rfv[Kp][Q4] xf[4][2] cutoff[6] nj mode L magic
    (vectors are 16 bytes; everything little-endian, native sizes).
    """
    M = om.M
    q8, q4 = _nq(M, 8), _nq(M, 4)
    ffp, pfp = io.BytesIO(), io.BytesIO()
    om.write(ffp, pfp)
    buf = pfp.getvalue()

    tail_fmt = [
        ("twv", 8 * q8 * 16),
        ("rwv", Kp * q8 * 16),
        ("xw", _NXSTATES * _NXTRANS * 2),
        ("scale_w", 4),
        ("base_w", 2),
        ("ddbound_w", 2),
        ("ncj_roundoff", 4),
        ("tfv", 8 * q4 * 16),
        ("rfv", Kp * q4 * 16),
        ("xf", _NXSTATES * _NXTRANS * 4),
        ("cutoff", _NCUTOFFS * 4),
        ("nj", 4),
        ("mode", 4),
        ("L", 4),
        ("magic", 4),
    ]
    size = sum(n for _, n in tail_fmt)
    if len(buf) < size + 4 or struct.unpack_from("<I", buf, 0)[0] != _PMAGIC_3F:
        raise RuntimeError("unexpected HMMER profile record (not format 3/f)")
    pos = len(buf) - size
    raw = {}
    for field, n in tail_fmt:
        raw[field] = buf[pos : pos + n]
        pos += n
    if struct.unpack("<I", raw["magic"])[0] != _PMAGIC_3F:
        raise RuntimeError("HMMER profile record has a bad end sentinel")

    # twv: for each q, 7 vectors (BM MM IM DM MD MI II), then Q vectors of DD
    twv = np.frombuffer(raw["twv"], dtype="<i2").reshape(8 * q8, 8)
    core = twv[: 7 * q8].reshape(q8, 7, 8)           # [q, t, z]
    dd = twv[7 * q8 :].reshape(q8, 1, 8)             # [q, DD, z]
    striped = np.concatenate([core, dd], axis=1)     # [q, t, z]
    trans = striped.transpose(1, 2, 0).reshape(8, 8 * q8)  # [t, z*Q + q]
    rwv = np.frombuffer(raw["rwv"], dtype="<i2").reshape(Kp, q8, 8)
    emit = rwv.transpose(0, 2, 1).reshape(Kp, 8 * q8)
    # Forward profile: the same striping with 4 float lanes per vector
    tfv = np.frombuffer(raw["tfv"], dtype="<f4").reshape(8 * q4, 4)
    fcore = tfv[: 7 * q4].reshape(q4, 7, 4)
    fdd = tfv[7 * q4 :].reshape(q4, 1, 4)
    ftrans = np.concatenate([fcore, fdd], axis=1).transpose(1, 2, 0).reshape(8, 4 * q4)
    rfv = np.frombuffer(raw["rfv"], dtype="<f4").reshape(Kp, q4, 4)
    femit = rfv.transpose(0, 2, 1).reshape(Kp, 4 * q4)
    return {
        "tfv": ftrans.astype(np.float32),
        "rfv": femit.astype(np.float32),
        "xf": np.frombuffer(raw["xf"], dtype="<f4").reshape(_NXSTATES, _NXTRANS),
        "twv": trans.astype(np.int16),
        "rwv": emit.astype(np.int16),
        "xw": np.frombuffer(raw["xw"], dtype="<i2").reshape(_NXSTATES, _NXTRANS),
        "scale_w": np.frombuffer(raw["scale_w"], dtype="<f4")[0],
        "base_w": int(np.frombuffer(raw["base_w"], dtype="<i2")[0]),
        "ddbound_w": int(np.frombuffer(raw["ddbound_w"], dtype="<i2")[0]),
        "ncj_roundoff": np.frombuffer(raw["ncj_roundoff"], dtype="<f4")[0],
        "nj": np.frombuffer(raw["nj"], dtype="<f4")[0],
        "L": int(np.frombuffer(raw["L"], dtype="<i4")[0]),
    }


def xw_move_from_record(om) -> int:
    """xw[N][MOVE] as HMMER stored it for the profile's current length ``om.L``.

    Used by the tests to check :meth:`FilterProfile.move_w` against HMMER.
    """
    rec = _read_h3p_tail(om, om.alphabet.Kp)
    return int(rec["xw"][_XN, _MOVE])
