"""What HMMER's finishing (Forward, Backward, domain definition) costs per reported hit, and how
it scales with threads on this host.

gpu-search finishes the survivors of its GPU filters with pyhmmer's pipeline (F1 = F2 = 1);
with many homologs that stage bounds a search.  This probe builds a small deterministic case
from pyhmmer's own test data (single-sequence models of proteome proteins against the
proteome and copies mutated to 90/70/50/35% identity), keeps the (model, sequence) pairs HMMER
reports, and finishes only those: on one thread (CPU time per pair), then on 1, 2, 4, ... up
to all cores at once, each thread with its own pipeline over its share of the models
(wall time, and the threads' summed CPU time: where they part, the threads wait for cores
or for each other, as on a host whose cores are hyperthreads).

Usage: python bench/probes/finish_cost.py [--models N]
"""

from __future__ import annotations

import argparse
import os
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

IDENTITIES = (0.9, 0.7, 0.5, 0.35)
LETTERS = "ACDEFGHIKLMNPQRSTVWY"


def build(n_models: int):
    import pyhmmer
    from pyhmmer.easel import Alphabet, DigitalSequenceBlock, SequenceFile, TextSequence
    from pyhmmer.plan7 import Background, Builder

    path = os.path.join(os.path.dirname(pyhmmer.__file__), "tests", "data", "seqs", "938293.PRJEB85.HG003687.faa")
    abc = Alphabet.amino()
    with SequenceFile(path, digital=False) as f:
        proteins = [(s.name.decode() if isinstance(s.name, bytes) else s.name, s.sequence) for s in f]
    rng = random.Random(42)
    db = list(proteins)
    for ident in IDENTITIES:
        db += [(f"{n}_m{int(ident * 100)}", "".join(c if rng.random() <= ident else rng.choice(LETTERS) for c in s))
               for n, s in proteins]
    block = DigitalSequenceBlock(abc, [TextSequence(name=n.encode(), sequence=s).digitize(abc) for n, s in db])
    picks = random.Random(7).sample([s for _, s in proteins if 100 <= len(s) <= 600], n_models)
    bg = Background(abc)
    builder = Builder(abc, seed=42)
    hmms = [builder.build(TextSequence(name=f"m{k}".encode(), sequence=s).digitize(abc), bg)[0]
            for k, s in enumerate(picks)]
    return abc, bg, block, hmms


def as_database(block, folder):
    """The case's sequences as our SequenceDB (through a FASTA file in ``folder``)."""
    from pathlib import Path

    from gpu_search.seqdb import open_database

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    fasta = folder / "db.faa"
    with open(fasta, "w") as fh:
        for s in block:
            fh.write(f">{s.name}\n{s.textize().sequence}\n")
    return open_database(fasta)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=40)
    args = ap.parse_args()
    from pyhmmer.easel import DigitalSequenceBlock
    from pyhmmer.plan7 import Pipeline

    t0 = time.perf_counter()
    abc, bg, db, hmms = build(args.models)
    print(f"built {len(hmms)} models, {len(db)} sequences in {time.perf_counter() - t0:.1f} s", flush=True)
    Z = len(db)
    t0 = time.perf_counter()
    pl = Pipeline(abc, background=bg, Z=Z)
    blocks = []
    for h in hmms:
        hits = pl.search_hmm(h, db)
        names = {hit.name for hit in hits if hit.reported}
        blocks.append(DigitalSequenceBlock(abc, [s for s in db if s.name in names]))
        pl.clear()
    whole = time.perf_counter() - t0
    pairs = sum(len(b) for b in blocks)
    print(f"whole pipeline, one thread: {whole:.2f} s for {pairs} reported pairs", flush=True)

    def finish(ks):
        p = Pipeline(abc, background=bg, Z=Z, F1=1.0, F2=1.0)
        c0 = time.thread_time()
        for k in ks:
            p.search_hmm(hmms[k], blocks[k])
            p.clear()
        return time.thread_time() - c0

    rows = []
    cores = os.cpu_count() or 1
    threads = 1
    while True:
        order = sorted(range(len(hmms)), key=lambda k: -len(blocks[k]))
        shares = [order[i::threads] for i in range(threads)]
        t0 = time.perf_counter()
        with ThreadPoolExecutor(threads) as pool:
            cpu = sum(pool.map(finish, shares))
        wall = time.perf_counter() - t0
        rows.append((threads, wall, cpu))
        print(f"{threads:3d} threads: wall {wall:.2f} s, CPU {cpu:.2f} s", flush=True)
        if threads >= cores:
            break
        threads = min(cores, threads * 2)
    one = rows[0][1]
    print(f"\nhost: {cores} logical CPUs ({threading.active_count()} threads alive)")
    print("| threads | wall s | threads' CPU s | CPU ms per pair | speed-up over 1 thread |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for t, wall, cpu in rows:
        print(f"| {t} | {wall:.2f} | {cpu:.2f} | {cpu / pairs * 1e3:.2f} | {one / wall:.1f}x |")


if __name__ == "__main__":
    main()
