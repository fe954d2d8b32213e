"""The GPU's warp kernel for the preliminary gapped stage (``prelim_gapped_warp`` in
blast/gpu/gapped.cu), its CUDA code run on the CPU, against gapped.py.

The kernel has no plain C++ build (its rows are computed by a warp's 32 lanes
together), so tests/warp_emulator.cpp runs it: each lane a fiber, all of them
meeting at every warp intrinsic, checked to meet at the same one (no
divergence), in a random order between meetings, shared memory filled with
garbage.  The checks are test_blast_gapped_kernel.py's, subject by subject
against gapped.py's numba code (rows, their order, the restart flag, overflow
to the CPU), on a subset of its cases (the emulator is ~100x slower than the
host build).  On a GPU host the same kernel runs in test_blast_gapped_warp.py.
"""

from __future__ import annotations

import numpy as np
import pytest
import test_blast_gapped_kernel as host_tests
from gapped_host import CXX, EmulatedKernel, search
from test_blast_gapped_kernel import compare, homolog_db, query_codes

from gpu_search.blast.alphabet import EASEL_TO_NCBISTDAA
from gpu_search.blast.gpu import gapped as gpu_gapped
from gpu_search.blast.matrix import load_matrix

pytestmark = pytest.mark.skipif(CXX is None, reason="no C++ compiler")


@pytest.fixture(scope="module")
def blosum62():
    return load_matrix("BLOSUM62")


@pytest.fixture(scope="module")
def db_codes(proteome):
    return EASEL_TO_NCBISTDAA[np.asarray(proteome.residues)], np.asarray(proteome.offsets, np.int64)


@pytest.fixture(scope="module")
def warp(tmp_path_factory):
    """(band, cell budget) -> the emulated warp kernel."""
    directory = tmp_path_factory.mktemp("emulated")
    return lambda band=gpu_gapped.BAND, budget=gpu_gapped.CELL_BUDGET: EmulatedKernel(directory, "warp", band,
                                                                                     budget)


def test_restricted_first_row_growth(warp):
    host_tests.test_kernel_matches_numba_on_restricted_first_row_growth(warp())


def test_homologs(warp, proteome, blosum62):
    """Mutated copies with indels (bands of many 32-cell chunks), a 100,000-letter subject; no
    budget (all on the kernel), then a 16-cell ring and a 3,000-cell budget (overflows)."""
    lengths = np.asarray(proteome.lengths)
    for target, seed in ((130, 1), (500, 2)):
        i = int(np.argmin(np.abs(lengths - target)))
        q, residues, offsets = homolog_db(proteome, i, 12, seed, long_subject=target == 500)
        init, xd, cutoff = search(q, residues, offsets, blosum62)
        n, _, over = compare(warp(budget=1 << 30), init, q, residues, offsets, blosum62.scores, xd, cutoff)
        assert n >= 10 and over == 0
        for lib in (warp(16), warp(budget=3000)):
            n, _, over = compare(lib, init, q, residues, offsets, blosum62.scores, xd, cutoff)
            assert over > 0


def test_proteome_restricted_and_restarted(warp, proteome, db_codes, blosum62):
    """Queries against the proteome (chance hits mostly) at BLAST's cutoff and a raised one:
    restricted extensions, restarted in many subjects (proteome sequences 56, 1358, 868: 82, 137
    and 177 letters, picked with the host build for their restarts)."""
    residues, offsets = db_codes
    restarts = groups = 0
    for i in (56, 1358, 868):
        q = query_codes(proteome, i)
        for scale in (1.0, 2.5):
            init, xd, cutoff = search(q, residues, offsets, blosum62, scale)
            g, r, _ = compare(warp(), init, q, residues, offsets, blosum62.scores, xd, cutoff)
            groups += g
            restarts += r
    assert groups > 300
    assert restarts >= 10, "few restricted extensions were restarted: the case is not exercised"
