"""How a blastp run uses the machine: its GPUs, threads and processes (``BlastSettings``).

BLAST's own search parameters (matrix, E-value, word size...) are in
:mod:`.options`; nothing here changes a row of the output, only where and how
fast the work is done.  Each default is the measured best on an H100 host
(``docs/benchmarks.md``).  The command line sets the user-facing fields
(``--gpu-streams``, ``--gpu-gapped/--cpu-gapped``...); a benchmark builds a
``BlastSettings`` and passes it (``run_blastp(..., settings=)``, or
``gpu_search.cli.main(argv, blast_settings=)``), as BLAST passes its parameter
structs, instead of setting anything in the environment.
"""

from __future__ import annotations

from dataclasses import dataclass

EXTENSIONS = ("auto", "window", "diagonal")   # cuBLASTP's ungapped-extension variants (auto: by query)
GAPPED_KERNELS = ("warp", "thread")           # the preliminary gapped kernel: a warp or a thread per subject
TRACEBACK_KERNELS = ("warp", "thread")        # the traceback kernel: a warp or a thread per alignment job


@dataclass(frozen=True)
class BlastSettings:
    """Where and how a blastp run does its work (never what it finds).

    Attributes:
        streams: queries in flight per GPU, each engine on a CUDA stream and host thread
            of its own (``--gpu-streams``).
        gapped: the preliminary gapped extension of subjects with few init HSPs on the
            GPU (``--gpu-gapped``), else all of it on CPU threads.
        gapped_cells: the GPU gapped kernel's DP-cell budget per subject
            (``--gpu-gapped-cells``; None: the kernel's default).
        gapped_kernel: "warp" (a warp per subject) or "thread" (a thread per subject).
        lookup_threads: host threads building the queries' statistics and lookup tables
            ahead of the GPUs (numba, without the GIL).
        gapped_threads: host threads (each on its own stream) per GPU launching the
            gapped kernel.
        gapped_batch: most queries per launch of the gapped kernel (larger batches bunch
            the CPU work that follows).
        extension: cuBLASTP's ungapped-extension variant (``--gpu-extension``); auto
            takes window-based, or diagonal-based for low-complexity queries.
        window_lanes: threads per window of the window-based extension
            (``--gpu-window-lanes``; None: by the query's length).
        prefilter: window-based extension: bins that cannot trigger the two-hit rule are
            struck off before the windows start.
        queries_per_pass: queries per pass over the database (None: 32 for a streamed
            database, copied to the GPU once per pass; for a resident one, 1 to 16 by its
            size, a small one's kernels launched together: ``resident_queries_per_pass``).
        stream_residues: stream the database through the GPU in chunks of this many
            residues even where it fits (0: only where it does not fit).
        gapped_piece: init HSPs per task when one query's preliminary gapped stage is spread
            over CPU threads (pieces keep every thread busy when one query has most of the work).
        traceback_split: a query's hit list whose HSPs span more query letters than this is
            traced back on several worker processes (its tail would otherwise end the run).
        switch_interval: the interpreter's GIL switch interval (seconds) while the GPUs are
            fed (0: left as it is).
        traceback_processes: the traceback of a GPU run on forked worker processes (else
            on threads, sharing the GIL with the threads that feed the GPUs); in a CPU run
            with composition-based statistics, whole queries on them.
        traceback_gpu: the traceback's alignments (ALIGN_EX) on the GPU, for the worker
            processes (blast/gpu/traceback.py; a resident database, no composition-based
            statistics), else on the processes themselves.
        traceback_batch: most queries' hit lists per launch of the traceback kernel.
        traceback_threads: host threads (each on its own stream) per GPU launching the
            traceback kernel.
        traceback_kernel: "warp" (a warp per alignment job) or "thread" (a thread per job).
        timings: print where the run's time went on stderr (``--timings``).
        timeline: write every timed interval to this JSON file (``bench/probes/timeline.py``).
    """

    streams: int = 3
    gapped: bool = True
    gapped_cells: int | None = None
    gapped_kernel: str = "warp"
    lookup_threads: int = 1
    gapped_threads: int = 2
    gapped_batch: int = 4
    extension: str = "auto"
    window_lanes: int | None = None
    prefilter: bool = True
    queries_per_pass: int | None = None
    stream_residues: int = 0
    gapped_piece: int = 4096
    traceback_split: int = 20_000
    switch_interval: float = 0.0005
    traceback_processes: bool = True
    traceback_gpu: bool = True
    traceback_batch: int = 8
    traceback_threads: int = 2
    traceback_kernel: str = "warp"
    timings: bool = False
    timeline: str | None = None

    def __post_init__(self):
        if self.extension not in EXTENSIONS:
            raise ValueError(f"extension must be one of {EXTENSIONS}, not {self.extension!r}")
        if self.gapped_kernel not in GAPPED_KERNELS:
            raise ValueError(f"gapped_kernel must be one of {GAPPED_KERNELS}, not {self.gapped_kernel!r}")
        if self.traceback_kernel not in TRACEBACK_KERNELS:
            raise ValueError(f"traceback_kernel must be one of {TRACEBACK_KERNELS}, not {self.traceback_kernel!r}")
        for name in ("streams", "lookup_threads", "gapped_threads", "gapped_batch", "gapped_piece", "traceback_split",
                     "traceback_batch", "traceback_threads"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)}")
