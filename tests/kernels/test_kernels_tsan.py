"""The CUDA kernels' CPU emulation under ThreadSanitizer: no data race between their threads.

The plain emulator (tests/helpers/warp_emulator.cpp) runs one fiber at a time between meetings, so a
read-modify-write that should have been atomic, or a value read after a shuffle or ballot
without a __syncwarp, still gives the right answer there, and a wrong one on a GPU.  Built with
ThreadSanitizer (``emulator_build``, ``EMU_TSAN``) every thread is a fiber TSan knows, only
__syncwarp and __syncthreads order memory, atomicAdd is a real atomic, and such races are
reported.  Each case runs an emulated test's own checks in a subprocess with libtsan preloaded
(results must still match); a planted race must be reported, so the check cannot pass by
seeing nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import emulator_build
import pytest

ROOT = Path(__file__).resolve().parents[2]
LIBTSAN = emulator_build.libtsan()
pytestmark = pytest.mark.skipif(LIBTSAN is None, reason="no C++ compiler (g++)" if emulator_build.CXX is None
                                else "no ThreadSanitizer runtime (libtsan) for g++")
TSAN_EXIT = 66


def run_under_tsan(args: list[str], timeout: int = 900) -> subprocess.CompletedProcess:
    env = dict(os.environ, LD_PRELOAD=LIBTSAN, GPU_SEARCH_EMULATOR_TSAN="1",
               TSAN_OPTIONS=f"halt_on_error=1 exitcode={TSAN_EXIT}")
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


CASES = [
    "tests/kernels/test_blast_ungapped_emulated.py::test_extension_variants",
    "tests/kernels/test_filters_emulated.py::test_real_models_equal_hmmer[Thioesterase]",
    "tests/kernels/test_filters_emulated.py::test_long_deletions_across_lanes",
    "tests/kernels/test_fwdback_emulated.py::test_forward_parser_small_and_switch_models",
    "tests/kernels/test_domaindef_emulated.py::test_regions_resolved_by_stochastic_traces_equal_hmmer",
    "tests/kernels/test_blast_gapped_kernel.py::test_kernel_matches_numba_on_homologs[emulated]",
]


@pytest.mark.parametrize("case", CASES)
def test_no_race_between_threads(case):
    """ungapped.cu (both extension variants, bins struck off first or not), filters.cu (MSV
    and Viterbi filter), fwdback.cu (the parsers; the domain definition's kernels, a warp a
    region in region_traces and trace_clusters) and gapped.cu's warp kernel: no race, same
    results."""
    r = run_under_tsan(["-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", case])
    out = r.stdout + r.stderr
    assert "ThreadSanitizer" not in out, out[-4000:]
    assert r.returncode == 0, out[-4000:]


PLANTED = """
import sys
from pathlib import Path
sys.path[:0] = [{helpers!r}, {tests!r}, {root!r}]
import numpy as np
import ungapped_emulated as T
from blast_cases import compare, query_codes
from conftest import pyhmmer_data
from gpu_search.blast.alphabet import EASEL_TO_NCBISTDAA
from gpu_search.blast.matrix import load_matrix
from gpu_search.seqdb import open_database

source = T.KERNEL_FILE.read_text()
racy = source.replace("const int k = atomicAdd(&fill[b], 1);", "const int k = fill[b]; fill[b] = k + 1;")
assert racy != source
work = Path({work!r})
(work / "ungapped_racy.cu").write_text(racy)
T.KERNEL_FILE = work / "ungapped_racy.cu"
proteome = open_database(pyhmmer_data() / "seqs" / "938293.PRJEB85.HG003687.faa")
db = proteome.subset(np.arange(0, proteome.n_seqs, 50))
codes = (EASEL_TO_NCBISTDAA[np.asarray(db.residues)], np.asarray(db.offsets, np.int64))
compare(T.EmulatedUngapped(work, *codes, extension="diagonal"), codes, query_codes(proteome, 10),
        load_matrix("BLOSUM62"), cutoff=0)
"""


def test_a_planted_race_is_reported(tmp_path):
    """ungapped.cu with the bin fill's atomicAdd made a plain read-modify-write: TSan must report
    the race (the plain emulator gives the right rows for it)."""
    tests = str(ROOT / "tests")
    r = run_under_tsan(["-c", PLANTED.format(helpers=str(ROOT / "tests" / "helpers"), tests=tests, root=str(ROOT),
                                             work=str(tmp_path))])
    assert r.returncode == TSAN_EXIT and "ThreadSanitizer: data race" in r.stderr, (r.stdout + r.stderr)[-4000:]
