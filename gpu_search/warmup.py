"""Compiled code made ahead of a search (``gpu-search compile``): numba's loops and the GPU kernels.

A search compiles what it needs the first time it meets a host: numba's loops (FASTA reading,
BLAST's lookup tables, extensions, alignments and statistics, the traceback) and, on a GPU, the
CUDA kernels (NVRTC).  On a fresh host the first blastp run of 500 queries against 68 M residues
took about 30 s against 9 s for the next ones (docs/benchmarks.md), and Galaxy jobs, Nextflow
tasks and containers often start with no cache.  ``gpu-search compile`` does it once, at install
or in a container image's build:

* numba's loops, by running each search once on a small generated input, every run in its own
  process at the same time (numba writes each loop to its cache whole; a loop two runs both
  compile is written twice, the same), among them blastp's GPU pipeline with its GPU parts
  stood in for by the CPU (``gpu_path``): the loops that pipeline calls on the host are the
  same with or without a GPU, so a host without one (an image's build) makes them too;
* the CUDA kernels, as ``python -m gpu_search.gpu.compiled`` makes them, where CuPy is
  installed (no GPU needed).

The loops land in numba's cache folder (``gpu_search._numba``: NUMBA_CACHE_DIR when set, else
beside the package); they are the host's own code unless NUMBA_CPU_NAME=generic (the image).
"""

from __future__ import annotations

import importlib.util
import io
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

AMINO = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWY", dtype=np.uint8)

# each search run once, as its own process: (name, gpu-search arguments), in the folder of write_inputs
RUNS = [
    ("hmmsearch, FASTA", ["hmmsearch", "--device", "cpu", "-o", "hits-1.out", "--domtblout", "dom-1.tsv",
                          "motif.hmm", "db.faa"]),
    ("hmmsearch, .gsdb", ["hmmsearch", "--device", "cpu", "-o", "hits-2.out", "--domtblout", "dom-2.tsv",
                          "motif.hmm", "db.gsdb"]),
    *[(f"hmmsearch, reference, {db}", ["hmmsearch", "--device", "reference", "-o", f"hits-3{db}.out", "motif.hmm", db])
      for db in ("db.faa", "db.gsdb")],
    ("blastp, FASTA", ["blastp", "-query", "query.faa", "-db", "db.faa", "-out", "hits-4.tsv",
                       "-outfmt", "6 std qseq sseq nident positive gaps"]),
    ("blastp, .gsdb", ["blastp", "-query", "query.faa", "-db", "db.gsdb", "-out", "hits-5.tsv", "-outfmt", "7"]),
    *[(f"blastp, -comp_based_stats {mode}", ["blastp", "-query", "query.faa", "-db", "db.faa",
                                             "-out", f"hits-cbs{mode}.tsv", "-comp_based_stats", mode])
      for mode in ("0", "1", "3")],
]


def write_inputs(work: Path) -> None:
    """200 random proteins, every tenth carrying a mutated copy of one motif (so that every stage:
    extension, gapped alignment, traceback, domains, has work), the motif as a query and as a
    profile HMM, and the proteins as a .gsdb."""
    import pyhmmer

    rng = np.random.default_rng(1)
    motif = AMINO[rng.integers(0, 20, 120)]
    with open(work / "db.faa", "w") as fh:
        for i in range(200):
            seq = AMINO[rng.integers(0, 20, int(rng.integers(80, 400)))]
            if i % 10 == 0:
                copy = motif.copy()
                mutate = rng.random(len(copy)) < 0.2
                copy[mutate] = AMINO[rng.integers(0, 20, int(mutate.sum()))]
                seq = np.concatenate([seq[:40], copy, seq[40:]])
            fh.write(f">seq{i} generated\n{seq.tobytes().decode()}\n")
    (work / "query.faa").write_text(f">motif\n{motif.tobytes().decode()}\n")
    alphabet = pyhmmer.easel.Alphabet.amino()
    query = pyhmmer.easel.TextSequence(name=b"motif", sequence=motif.tobytes().decode()).digitize(alphabet)
    hmm, _, _ = pyhmmer.plan7.Builder(alphabet).build(query, pyhmmer.plan7.Background(alphabet))
    with open(work / "motif.hmm", "wb") as fh:
        hmm.write(fh)
    subprocess.run([sys.executable, "-m", "gpu_search", "makedb", "db.faa", "-o", "db.gsdb", "--quiet"],
                   cwd=work, check=True)


def compile_all(arch: str | None = "90", quiet: bool = False) -> None:
    """Make every compiled artefact a search needs: numba's loops and, where CuPy is installed and
    ``arch`` is given, the kernels for those GPU architectures.  Raises RuntimeError naming
    the runs that failed."""
    say = (lambda text: None) if quiet else (lambda text: print(f"gpu-search compile: {text}", file=sys.stderr))
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gpu-search-compile-") as tmp:
        work = Path(tmp)
        write_inputs(work)
        jobs = [(name, [sys.executable, "-m", "gpu_search", *args, "--quiet"]) for name, args in RUNS]
        jobs += [(f"blastp GPU pipeline (host loops), -comp_based_stats {mode}",
                  [sys.executable, "-m", "gpu_search.warmup", "gpu-path", mode]) for mode in ("0", "2")]
        jobs.append(("composition adjustment", [sys.executable, "-m", "gpu_search.warmup", "composition"]))
        if arch and importlib.util.find_spec("cupy") is not None:
            jobs.append((f"GPU kernels for sm_{arch}", [sys.executable, "-m", "gpu_search.gpu.compiled",
                                                        "--arch", arch]))
        elif arch:
            say("CuPy is not installed: no GPU kernels built (numba's loops only)")
        say(f"{len(jobs)} runs at once, each compiling what it needs")
        procs = [(name, subprocess.Popen(cmd, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                         text=True)) for name, cmd in jobs]
        failed = []
        for name, proc in procs:
            _, err = proc.communicate()
            if proc.returncode != 0:
                last = err.strip().splitlines()[-1:] or ["no message"]
                failed.append(f"{name} (exit {proc.returncode}: {last[0]})")
    if failed:
        raise RuntimeError("; ".join(failed))
    say(f"done in {time.perf_counter() - t0:.0f} s")


def gpu_stand_ins():
    """blastp's GPU engines with their GPU parts done on the CPU (engine.GpuEngineTypes): the word
    finder by ``ungapped.ungapped_extensions``, a preliminary gapped kernel that leaves every
    group to the CPU threads, and a traceback kernel that leaves every alignment to the worker
    processes.  The loops the pipeline runs on the host see the same arrays as
    with a GPU."""
    from .blast import engine
    from .blast.gpu import gapped as gpu_gapped
    from .blast.gpu import traceback as gpu_traceback
    from .blast.ungapped import ungapped_extensions

    class Ungapped:
        streamed = False

        def __init__(self, residues, offsets, device_id=0, **kwargs):
            self.residues, self.offsets, self.device_id = residues, offsets, device_id
            self.seconds = {"kernel wait": 0.0}

        def worker(self):
            return Ungapped(self.residues, self.offsets, self.device_id)

        stream_twin = worker

        def ungapped_extensions(self, q, lookup, scores, x_drop, cutoff, window=40):
            ids = np.arange(len(self.offsets) - 1, dtype=np.int64)
            return ungapped_extensions(q, lookup, self.residues, self.offsets, ids, scores, x_drop, cutoff,
                                       window, method="scan")

    class Prelim(gpu_gapped.GpuPrelim):
        def _launch(self, batch, matrix_scores, gap_open, gap_extend):
            left = np.zeros(len(batch.on_gpu), np.int32)     # every group left to the CPU
            return np.empty((0, 7), np.int32), left, left + gpu_gapped.STATUS_OVERFLOW

    class Traceback(gpu_traceback.GpuTraceback):
        def _launch(self, plans, query_codes, matrix_scores, gap_open, gap_extend):
            lay = gpu_traceback.layout(plans, query_codes, self.tb_cap)
            out = np.zeros((len(lay.jobs), gpu_traceback.OUT_FIELDS), np.int32)
            out[:, 0] = gpu_traceback.STATUS_OVERFLOW              # every job left to the CPU
            return out, np.zeros(lay.n_steps, np.uint8), lay.step_at

    return engine.GpuEngineTypes(Ungapped, Prelim, Traceback)


def gpu_path(comp_based_stats: int) -> None:
    """blastp's GPU pipeline (engine.run_blastp with device 'gpu': statistics and lookup tables
    ahead, the preliminary gapped stage's groups gathered and purged, the traceback's worker
    processes) on the generated input, with ``gpu_stand_ins``."""
    from .blast import engine
    from .blast.options import BlastOptions
    from .blast.output import parse_outfmt
    from .seqdb import open_database

    db = open_database("db.gsdb", blast=True)
    queries = open_database("query.faa", blast=True)
    fmt, columns = parse_outfmt("6")
    engine.run_blastp(queries, db, BlastOptions(num_threads=2, comp_based_stats=comp_based_stats), io.StringIO(),
                      fmt=fmt, columns=columns, db_name="db", quiet=True, device="gpu",
                      engine_types=gpu_stand_ins())


def composition() -> None:
    """Both ways a matrix is adjusted to a pair's composition, whichever the small searches
    took: the rescaled matrix and the optimised target frequencies."""
    from .blast import composition as C

    info = C.matrix_info("BLOSUM62")
    comp = C.read_composition(np.arange(1, 23, dtype=np.uint8))
    C.adjust_scores(info, comp, 22, comp, 22, 1)
    C.adjust_scores(info, comp, 22, comp, 22, 2, C.new_workspace(info))


if __name__ == "__main__":
    if sys.argv[1:2] == ["gpu-path"]:
        gpu_path(int(sys.argv[2]))
    elif sys.argv[1:] == ["composition"]:
        composition()
    else:
        sys.exit("usage: python -m gpu_search.warmup gpu-path MODE | composition (gpu-search compile runs them)")
