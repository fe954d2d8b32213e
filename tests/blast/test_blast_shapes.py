"""blastp's kernels compiled ahead of time, where no GPU is needed: every kernel shape blastp
runs load is one ``python -m gpu_search.gpu.compiled`` builds (``gpu_search.blast.gpu.kernel_shapes``).

The runs are real ``run_blastp`` calls with a stand-in CuPy: the engines choose and load
their kernels as on a GPU (``GpuUngapped._query_inputs``, ``_blast_order``,
``GpuPrelim._launch_on_device``, through the real loader), then leave the work to the CPU
path.  The loader finds each kernel among the cubins the command wrote, or would call NVRTC,
which the stand-in CuPy records.  (On a GPU: test_blast_gpu.py's
test_kernels_compiled_ahead_of_time_need_no_nvrtc.)
"""

from __future__ import annotations

import copy
import inspect
import io
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from gpu_search.blast import engine
from gpu_search.blast.gpu import GpuUngapped, gapped, kernel_shapes, ungapped
from gpu_search.blast.options import BlastOptions
from gpu_search.blast.output import parse_outfmt
from gpu_search.blast.settings import BlastSettings
from gpu_search.blast.ungapped import ungapped_extensions
from gpu_search.gpu import compiled, loader


class Loaded(Exception):
    """Raised once a kernel is loaded: the stand-in engines do the rest on the CPU."""


class Ungapped(GpuUngapped):
    """GpuUngapped with no GPU: each query's kernel chosen and loaded by GpuUngapped's own
    code, the order kernels too, the init HSPs from the CPU path.  Every query of a batch
    loads its kernel, also those GpuUngapped leaves to the CPU (one-hit mode, too long):
    more loads than a GPU's, never fewer."""

    streamed = False
    queries_per_pass = 4

    def __init__(self, residues, offsets, **kwargs):
        bound = inspect.signature(GpuUngapped).bind(residues, offsets, **kwargs)
        bound.apply_defaults()                 # GpuUngapped's own defaults for what the run leaves out
        for name in ("device_id", "block", "extension", "window_lanes", "scores", "prefilter"):
            setattr(self, name, bound.arguments[name])
        self.host_residues, self.host_offsets = residues, offsets
        self.cp = None
        self._new_clock()

    def worker(self):
        return copy.copy(self)

    stream_twin = worker

    def ungapped_extensions_many(self, jobs):
        from gpu_search.blast.wordhits import diag_array_length

        for job in jobs:
            with pytest.raises(Loaded):
                self._query_inputs(job, diag_array_length(job.lookup.query_length, job.window))
        with pytest.raises(Loaded):
            self._blast_order(None, 0, None, 0)
        ids = np.arange(len(self.host_offsets) - 1, dtype=np.int64)
        return [ungapped_extensions(j.query_codes, j.lookup, self.host_residues, self.host_offsets, ids,
                                    j.matrix_scores, j.x_drop, j.cutoff, j.window, method="scan") for j in jobs]


class Prelim(gapped.GpuPrelim):
    """GpuPrelim with no GPU: its kernel loaded by its own code, every subject then left to
    the CPU (as overflowing)."""

    def _launch(self, batch, matrix_scores, gap_open, gap_extend):
        with pytest.raises(Loaded):
            self._launch_on_device(None, batch, matrix_scores, gap_open, gap_extend)
        zero = np.zeros(len(batch.on_gpu), np.int32)
        return np.empty((0, 7), np.int32), zero, zero + gapped.STATUS_OVERFLOW


def stand_in_cupy(from_cubins: list, from_nvrtc: list):
    """A CuPy for the loader on an sm_90 device: the modules made from a cubin and from
    source (by NVRTC) recorded."""
    class RawModule:
        def __init__(self, code=None, options=(), path=None):
            if code is None:
                from_cubins.append(Path(path))
            else:
                from_nvrtc.append(code.partition("#line")[0])       # the shape's constants

        def get_function(self, name):
            return name

    class Device:
        compute_capability = "90"

        def __init__(self, device_id):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            pass

    return types.SimpleNamespace(RawModule=RawModule, cuda=types.SimpleNamespace(Device=Device))


# (BlastOptions, BlastSettings) of the runs: the defaults (auto: each query's variant, lanes,
# scores and block size), then each option and setting that changes a kernel
RUNS = [
    ({}, {}),
    (dict(word_size=2, window_size=20), dict(window_lanes=4, prefilter=False, gapped_kernel="thread")),
    (dict(word_size=4, window_size=80), dict(extension="diagonal")),
    ({}, dict(extension="window", window_lanes=8)),
]


@pytest.fixture(scope="module")
def blastp_loads(proteome, tmp_path_factory):
    """(path, options) of every kernel the runs loaded, the cubins they came from, the shapes
    given to NVRTC instead and the cubins the command wrote."""
    folder = tmp_path_factory.mktemp("compiled")
    lengths = proteome.lengths
    # queries of every block size and lanes (130 to 2,099 aa: 128, 256 and 512 threads; 32 and
    # 16 lanes; the PSSM and the matrix) and a low-complexity one (diagonal-based when auto)
    picks = [int(np.argmin(np.abs(lengths - n))) for n in (130, 500, 900, 1100, 2099)] + [164]
    assert lengths[picks[-2]] + 40 > 2048 and lengths[picks[-3]] >= 1000
    queries = proteome.subset(picks)
    subjects = proteome.subset(sorted(set(picks) | set(range(0, proteome.n_seqs, 25))))
    loads, from_cubins, from_nvrtc = [], [], []

    def load_then_raise(path, options, names, device_id):
        loads.append((Path(path), tuple(options)))
        loader.load_functions(path, options, names, device_id)
        raise Loaded

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(compiled, "FOLDER", folder)
        mp.setattr(compiled, "compile_cubin", lambda source, *args: source.encode())   # (no NVRTC here)
        assert compiled.main(["--arch", "90", "--searches", "blastp", "--threads", "2"]) == 0
        mp.setitem(sys.modules, "cupy", stand_in_cupy(from_cubins, from_nvrtc))
        mp.setenv("CUPY_CACHE_DIR", str(tmp_path_factory.mktemp("kernel_cache")))
        mp.setattr(ungapped, "load_functions", load_then_raise)
        mp.setattr(gapped, "load_functions", load_then_raise)
        loader.clear_cache()
        try:
            for options, settings in RUNS:
                fmt, columns = parse_outfmt("6")
                fh = io.StringIO()
                engine.run_blastp(queries, subjects, BlastOptions(num_threads=2, **options), fh, fmt=fmt,
                                  columns=columns, db_name="proteome", quiet=True, device="gpu",
                                  settings=BlastSettings(traceback_processes=False, **settings),
                                  engine_types=engine.GpuEngineTypes(Ungapped, Prelim))
                assert fh.getvalue().count("\n") > 20          # a search with hits: its gapped stage ran
        finally:
            loader.clear_cache()
    return loads, from_cubins, from_nvrtc, sorted(folder.glob("*.cubin"))


def test_every_kernel_blastp_loads_is_among_the_shapes_built_ahead_of_time(blastp_loads):
    loads = blastp_loads[0]
    shapes = set(kernel_shapes())
    assert not set(loads) - shapes, f"kernel shapes not built ahead of time: {sorted(set(loads) - shapes)}"
    # the runs reach every value of every constant (else this test checks less than it says)
    values = {}
    for path, options in loads:
        for option in options:
            name, _, value = option.removeprefix("-D").partition("=")
            values.setdefault((path.name, name), set()).add(value)
    assert values == {("ungapped.cu", "WORD_SIZE"): {"2", "3", "4"}, ("ungapped.cu", "BLOCK"): {"128", "256", "512"},
                      ("ungapped.cu", "WIN"): {"0", "4", "8", "16", "32"}, ("ungapped.cu", "MATRIX_SMEM"): {"0", "1"},
                      ("ungapped.cu", "PREFILTER"): {"0", "1"}, ("gapped.cu", "BAND"): {"256"},
                      ("gapped.cu", "CELL_BUDGET"): {str(1 << 18)}, ("gapped.cu", "WARPS"): {"4"}}
    assert {path.name for path, _ in loads} == {"ungapped.cu", "order.cu", "gapped.cu"}


def test_the_loader_finds_each_one_among_the_cubins(blastp_loads):
    """One cubin a shape for blastp's 165 (3 word sizes x 3 block sizes x 18 variants of the
    extension, lanes, scores and prefilter; the order kernels; the gapped kernels, both in one
    file; the traceback kernels, likewise), and each kernel the runs loaded came from one of
    them, none from NVRTC."""
    loads, from_cubins, from_nvrtc, cubins = blastp_loads
    assert len(cubins) == 3 * 3 * (2 + 4 * 2 * 2) + 1 + 1 + 1
    assert not from_nvrtc, f"NVRTC called for shapes that should be built ahead of time: {from_nvrtc}"
    assert set(from_cubins) <= set(cubins) and len(set(from_cubins)) == len(set(loads))


def test_searches_and_their_shapes():
    """The command builds both searches' shapes by default, and refuses an unknown search."""
    hmmsearch = compiled._shapes(50, "90", ("hmmsearch",))
    both = compiled._shapes(50, "90")
    assert both == hmmsearch + list(kernel_shapes()) and len(hmmsearch) > 10
    with pytest.raises(SystemExit) as exit_info:
        compiled.main(["--searches", "blastn"])
    assert exit_info.value.code == 2
