"""``--device auto`` for hmmsearch (and, at the end, hmmscan): the GPU only where the work
repays its start.

Both paths pay the same finishing of the survivors (Forward, domain definition in
pyhmmer); they differ in what comes before:

* the GPU path pays a fixed start (CuPy imported and initialised, the database
  uploaded, kernels loaded), a host cost per model (profile conversion, launches,
  P-values, the bias filter), and the filters' DP cells at the GPU's rate;
* the CPU path (pyhmmer's whole pipeline) pays the conversion of every database
  sequence into a pyhmmer block, then the filters' cells on every core (pyhmmer runs
  one model per thread; with fewer models than threads the database is cut into pieces,
  :class:`.search.PiecewiseSearch`).

The costs are fitted to end-to-end runs through the command line on an H200 with 16
cores (``bench/hmmsearch_matrix.py``'s ``ours warm`` and ``ours --device cpu`` columns,
few-homolog cells of 1-2,000 models x 6.8-68 M residues; ``docs/benchmarks.md``): a
proteome searched with 200 models or more goes to the GPU, with 20 to the CPU.  With
many homologs the GPU path also finishes better (pieces of one model on every core, where
pyhmmer gives each of 16 or more models one thread), which this estimate leaves out:
there it may choose the CPU where the GPU was up to 1.4x faster.  The CPU path's pieces
for fewer models than cores came after these fits (their cells are counted on every core
here, not measured on that host).  Only the choice depends on these figures, never a
result: both paths give the same output.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Crossover:
    """Measured costs of the two paths (seconds; cells are model nodes x residues)."""

    gpu_start: float = 1.35             # CuPy import and initialisation, upload, kernel loads
    gpu_per_model: float = 0.005        # host work, launches and kernel loads per model (batched)
    gpu_cells_per_second: float = 5e11  # the filters' cells, end to end
    cpu_per_sequence: float = 6e-6      # a database sequence into pyhmmer's block
    cpu_cells_per_core: float = 5e9     # pyhmmer's MSV-bound pipeline, one core

    def seconds(self, n_models: int, model_nodes: int, n_seqs: int, residues: int,
                cpus: int) -> tuple[float, float]:
        """Estimated (CPU path, GPU path) seconds before finishing.

        model_nodes: the models' M summed; cpus: the threads the search may use.
        """
        cells = float(model_nodes) * float(residues)
        cpu = n_seqs * self.cpu_per_sequence + cells / (max(1, cpus) * self.cpu_cells_per_core)
        gpu = self.gpu_start + n_models * self.gpu_per_model + cells / self.gpu_cells_per_second
        return cpu, gpu


CROSSOVER = Crossover()


def choose_device(hmms, n_seqs: int, residues: int, cpus: int,
                  crossover: Crossover = CROSSOVER) -> tuple[str, str]:
    """('gpu' or 'cpu', why) for ``--device auto`` with a usable GPU."""
    n = len(hmms)
    nodes = hmms.nodes if hasattr(hmms, "nodes") else sum(h.M for h in hmms)    # (a stream: its LENG lines)
    cpu, gpu = crossover.seconds(n, nodes, n_seqs, residues, cpus)
    work = f"{n:,} model{'s' if n != 1 else ''} x {residues / 1e6:.3g} M residues"
    if gpu < cpu:
        return "gpu", work
    return "cpu", (f"{work} is too little work to repay the GPU's start (estimated {cpu:.1f} s on "
                   f"{cpus} CPU threads, {gpu:.1f} s with the GPU)")


# hmmscan's CPU path is pyhmmer's hmmscan (one query per thread; pieces of the models on
# every thread where there are fewer queries than threads).  With many hits its threads
# queue on each model's lock in turn (every thread goes through the models in the same
# order, and a profile is set to a query's length under its lock): 2,000 models x a
# proteome's 2,100 proteins, 12,300 hits, took 21.5 s on an H200 host's 16 cores, about
# 7e8 cells a second per core, against 7.8 s on the GPU (bench/hmmscan_bench.py).  That
# rate is the estimate's: without homologs the same run takes 2.5-3.0 s on the CPU and
# 3.2-3.4 s on the GPU, so the GPU chosen there costs about 10%, the CPU chosen with
# homologs 2.7x.  The GPU path pays the start and, per model, its filter profile and the
# host's work on its batch (about 1 ms there).
SCAN_CPU_CELLS_PER_CORE = 7e8
SCAN_GPU_PER_MODEL = 0.001


def choose_scan_device(profiles, n_queries: int, residues: int, cpus: int,
                       crossover: Crossover = CROSSOVER) -> tuple[str, str]:
    """('gpu' or 'cpu', why) for hmmscan's ``--device auto`` with a usable GPU."""
    n = len(profiles)
    threads = max(1, cpus)
    cells = float(sum(om.M for om in profiles)) * float(residues)
    cpu = cells / (threads * SCAN_CPU_CELLS_PER_CORE)
    gpu = crossover.gpu_start + n * SCAN_GPU_PER_MODEL + cells / crossover.gpu_cells_per_second
    work = f"{n_queries:,} quer{'ies' if n_queries != 1 else 'y'} x {n:,} model{'s' if n != 1 else ''}"
    if gpu < cpu:
        return "gpu", work
    return "cpu", (f"{work} is too little work to repay the GPU's start (estimated {cpu:.1f} s on "
                   f"{threads} CPU thread{'s' if threads != 1 else ''}, {gpu:.1f} s with the GPU)")
