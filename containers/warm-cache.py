"""Compile gpu-search's numba loops once, while the image is built.

Numba compiles the CPU loops (FASTA scanning, BLAST word hits, extensions,
gapped alignment, statistics) the first time they run: about 30 s for blastp.
A container starts from the image every time, so without this every run would
pay it.  Run with NUMBA_CACHE_DIR set (containers/Dockerfile does), this runs
each command once on a small generated input so that the compiled loops land in
that folder, and the containers made from the image find them there.

NUMBA_CPU_NAME=generic makes the cached code run on any x86-64 host, not only on
the CPU the image was built on (measured: the same blastp speed as host-tuned code).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyhmmer

AMINO = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWY", dtype=np.uint8)


def main() -> None:
    if not os.environ.get("NUMBA_CACHE_DIR"):
        sys.exit("warm-cache: set NUMBA_CACHE_DIR to the folder the image will use")
    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        # 200 random proteins, every tenth carrying a mutated copy of one motif,
        # so that every stage (extension, gapped alignment, traceback, domains) has work
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
        builder = pyhmmer.plan7.Builder(alphabet)
        hmm, _, _ = builder.build(query, pyhmmer.plan7.Background(alphabet))
        with open(work / "motif.hmm", "wb") as fh:
            hmm.write(fh)

        def run(*args: str) -> None:
            subprocess.run(["gpu-search", *args, "--quiet"], cwd=work, check=True)

        run("makedb", "db.faa", "-o", "db.gsdb")
        for db in ("db.faa", "db.gsdb"):
            run("hmmsearch", "--device", "cpu", "-o", "hits.out", "--domtblout", "dom.tsv", "motif.hmm", db)
            run("hmmsearch", "--device", "reference", "-o", "hits.out", "motif.hmm", db)
            run("blastp", "-query", "query.faa", "-db", db, "-out", "hits.tsv",
                "-outfmt", "6 std qseq sseq nident positive gaps")
        run("blastp", "-query", "query.faa", "-db", "db.faa", "-out", "hits.tsv", "-outfmt", "7")
        # the other composition-based statistics modes (the runs above use BLAST+'s default, 2)
        for mode in ("0", "1", "3"):
            run("blastp", "-query", "query.faa", "-db", "db.faa", "-out", "hits.tsv", "-comp_based_stats", mode)
    composition_loops()
    gpu_path_loops()
    cache = Path(os.environ["NUMBA_CACHE_DIR"])
    print(f"warm-cache: {sum(1 for _ in cache.rglob('*.nbc'))} compiled loops in {cache}")


def composition_loops() -> None:
    """Both ways a matrix is adjusted to a pair's composition, whichever the small search
    above took: the rescaled matrix and the optimised target frequencies."""
    from gpu_search.blast import composition as C

    info = C.matrix_info("BLOSUM62")
    comp = C.read_composition(np.arange(1, 23, dtype=np.uint8))
    C.adjust_scores(info, comp, 22, comp, 22, 1)
    C.adjust_scores(info, comp, 22, comp, 22, 2, C.new_workspace(info))


def gpu_path_loops() -> None:
    """The loops only a GPU run calls, which the commands above (the image's build has no GPU)
    never reach, compiled for the types that run passes them: the preliminary gapped
    kernel's rows purged and sorted group by group (blast/gpu/gapped.py's collect)."""
    from gpu_search.blast import gapped

    gapped.purge_and_sort_groups(np.zeros((0, 7), np.int32), np.zeros(0, np.int64))


if __name__ == "__main__":
    main()
