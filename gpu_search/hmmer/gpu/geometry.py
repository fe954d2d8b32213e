"""Which variant of the filter kernels a model gets: its geometry.

A model of M nodes is spread over a group of G lanes (threads), W 32-bit
words a lane (CUDAMPF's layout); the kernels are compiled for each (G, W),
so that the loops over the model unroll into registers.  MSV packs two
nodes a word (8-bit cells in 16-bit halves), the Viterbi filter two
(viterbi_filter16) or one (viterbi_filter, int32).  The Viterbi filter's group may also score several
sequences at once and keep some nodes' transitions in registers; each
choice below was measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .packing import KP

BLOCK = 256            # threads a block: MSV and the Viterbi filter's large profiles
VITERBI_BLOCK = 128    # threads a block of the Viterbi filter (viterbi_block)


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

    Chosen by measurement (bench/probes/viterbi_sweep.py, docs/benchmarks.md).
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



# A model joins a launch of a geometry with at most this many times its own geometry's
# nodes (its padding nodes cost time but never score): several models a launch hide
# the latency of the longest sequences' chains, which bounds a launch of one model over
# a proteome-sized database (docs/benchmarks.md).
GROUP_SLACK = 1.34


def launch_groups(Ms, geometry_of, slack: float = GROUP_SLACK) -> list:
    """Models of sizes Ms in groups of one launch each: [(geometry, [model positions])].

    Models are taken by increasing M; a group's geometry is its largest model's
    (geometry_of(M)), whose nodes hold every smaller model of the group, and a
    model joins while that geometry has at most ``slack`` times the nodes of the
    group's first model's own geometry."""
    order = sorted(range(len(Ms)), key=lambda j: Ms[j])
    groups = []
    i = 0
    while i < len(order):
        own = geometry_of(Ms[order[i]]).nodes
        k = i + 1
        while k < len(order) and geometry_of(Ms[order[k]]).nodes <= slack * own:
            k += 1
        members = order[i:k]
        groups.append((geometry_of(Ms[members[-1]]), members))
        i = k
    return groups
