"""``--device auto`` for blastp: the GPU only where the work repays its start.

Both paths pay the same start (the interpreter, our imports, numba's compiled loops
loaded, the inputs read) and the same output; they differ in what comes between:

* the GPU path pays a fixed start of its own (CuPy imported and initialised, the
  traceback's worker processes forked, the database uploaded, kernels loaded), then
  scans the database at the GPU's rate, every query's hits on every core;
* the CPU path runs each query whole on one thread, so a search of fewer queries than
  threads uses fewer cores; its word finder and extensions cost about the same per
  query residue and database residue.

Work is counted in cells, query residues x database residues.  The costs are fitted to
end-to-end runs through the command line on an H200 host with 16 cores
(``bench/blastp_matrix.py``, ours warm and ``--device cpu``, few homologs; the figures
are in ``docs/benchmarks.md``): 1 query or 10 against a 6.8 M-residue database go to the
CPU, 100 queries against it, or 1 query against 68 M residues, to the GPU.  Only the
choice depends on these figures, never a result: both paths give the same rows.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass


@dataclass(frozen=True)
class Crossover:
    """Measured costs of the two paths (seconds; cells are query x database residues)."""

    gpu_start: float = 0.9               # the GPU path's start beyond the CPU path's own
    gpu_cells_per_second: float = 4e12   # the whole search on the GPU path, end to end
    cpu_cells_per_thread: float = 5e9    # one query on one CPU thread, end to end

    def seconds(self, n_queries: int, query_residues: int, db_residues: int,
                threads: int) -> tuple[float, float]:
        """Estimated (CPU path, GPU path) seconds beyond what both pay."""
        cells = float(query_residues) * float(db_residues)
        busy = max(1, min(threads, n_queries))
        return cells / (busy * self.cpu_cells_per_thread), self.gpu_start + cells / self.gpu_cells_per_second


CROSSOVER = Crossover()


def choose_device(n_queries: int, query_residues: int, db_residues: int, threads: int,
                  crossover: Crossover = CROSSOVER) -> tuple[str, str]:
    """('gpu' or 'cpu', why) for ``--device auto``."""
    cpu, gpu = crossover.seconds(n_queries, query_residues, db_residues, threads)
    work = (f"{n_queries:,} quer{'ies' if n_queries != 1 else 'y'} ({query_residues:,} residues) x "
            f"{db_residues / 1e6:.3g} M residues")
    if gpu < cpu:
        return "gpu", work
    return "cpu", (f"{work} is too little work to repay the GPU's start (estimated {cpu:.1f} s on "
                   f"{threads} CPU thread{'s' if threads != 1 else ''}, {gpu:.1f} s with the GPU)")


def auto_device(n_queries: int, query_residues: int, db_residues: int, threads: int) -> str:
    """``--device auto``: 'cpu' where the search is too small to repay the GPU's start, said on
    stderr (even with --quiet: a GPU was asked for and is not used), else 'auto', left to
    find a usable GPU."""
    from ..device import note

    if importlib.util.find_spec("cupy") is None:
        return "auto"            # no GPU to weigh: the CPU anyway, and device.resolve says why
    used, why = choose_device(n_queries, query_residues, db_residues, threads)
    if used == "cpu":
        note(f"--device auto: searching on the CPU: {why}; --device gpu to use the GPU anyway")
        return "cpu"
    return "auto"
