"""What building the GPU's hit records costs a model, one model at a time against a whole
finishing call's models at once (no GPU: the domain definition runs on the kernels' CPU
emulator, tests/helpers/warp_emulator.cpp, once; then only the records are timed).

    python3 bench/probes/records_cost.py [--copies 40] [--calls 1,30,60] [--repeat 5]

Three of pyhmmer's test models (one whose displays carry a structure line) against 20
proteome proteins and, per model, --copies mutated copies of its consensus (10-60% of the
residues replaced): about 45 hits and 55 domains a model.  For a call of N models (the
three repeated), ``hitrecords.models_records`` of each model alone and of all at once, timed
(median of --repeat), the records checked byte for byte equal; and ``gpu_tophits`` a model.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests" / "helpers")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=40)
    ap.add_argument("--calls", default="3,30,60", help="models a call")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    import pyhmmer
    from emulated_fwdback import EmulatedKernels
    from pyhmmer.easel import DigitalSequenceBlock
    from pyhmmer.plan7 import Background, Pipeline, Profile

    from gpu_search.hmmer.gpu.domaindef import define_domains, index_ranges
    from gpu_search.hmmer.gpufinish import GpuFinishing
    from gpu_search.hmmer.hitrecords import ModelText, gpu_tophits, models_records
    from gpu_search.hmmer.models import read_hmms
    from gpu_search.hmmer.profile import FilterProfile
    from gpu_search.hmmer.search import SEQUENCE_COUNTERS
    from gpu_search.seqdb import amino_degeneracy, open_database

    data = Path(os.path.dirname(pyhmmer.__file__)) / "tests" / "data"
    hmms = [read_hmms(data / "hmms" / "txt" / f"{n}.hmm")[0] for n in ("Thioesterase", "RREFam", "PF02826")]
    proteome = open_database(data / "seqs" / "938293.PRJEB85.HG003687.faa")
    rng = np.random.default_rng(5)
    letters = np.array(list("ACDEFGHIKLMNPQRSTVWY"))
    targets = [(proteome.name(i), proteome.text(i)) for i in range(0, 400, 20)]
    for j, hmm in enumerate(hmms):
        cons = hmm.consensus.upper()
        for c in range(args.copies):
            rate = 0.1 + 0.5 * c / args.copies
            targets.append((f"m{j}_{c} a mutated consensus",
                            "".join(rng.choice(letters) if rng.random() < rate else x for x in cons)))
    tmp = Path(tempfile.mkdtemp())
    fasta = tmp / "targets.faa"
    fasta.write_text("".join(f">{n}\n{s}\n" for n, s in targets))
    db = open_database(fasta)
    bg = Background(hmms[0].alphabet)
    profs = []
    for hmm in hmms:
        gm = Profile(hmm.M, hmm.alphabet)
        gm.configure(hmm, bg, 100)
        profs.append(FilterProfile.from_optimized(gm.to_optimized()))
    options = dict(F1=1.0, F2=1.0, F3=1.0, Z=1000.0)
    empty = Pipeline(hmms[0].alphabet, background=bg, **options).search_hmm(hmms[0], DigitalSequenceBlock(hmms[0].alphabet))
    pipeline = empty.__getstate__()["pipeline"]
    pipeline.update(dict.fromkeys(SEQUENCE_COUNTERS, 0))
    finishing = GpuFinishing(db, None, pipeline, kernels=None)
    n = db.n_seqs
    uniq = np.arange(n)
    lengths = db.lengths.astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    residues = np.asarray(db.residues)[index_ranges(np.asarray(db.offsets)[uniq], lengths)].astype(np.uint8)
    t = time.perf_counter()
    pairs, env = define_domains(EmulatedKernels(tmp), profs, residues, offsets, np.repeat(np.arange(3), n),
                                np.tile(np.arange(n), 3), amino_degeneracy())
    print(f"domain definition on the emulator: {time.perf_counter() - t:.1f} s; {len(targets)} targets")
    rows = [np.arange(m * n, (m + 1) * n)[pairs.simple[m * n:(m + 1) * n]] for m in range(3)]

    def seq_text(j):
        return finishing.seq_text(int(uniq[j]))

    print("| models a call | one at a time (ms a model) | all at once (ms a model) | gpu_tophits (ms a model) |")
    print("| ---: | ---: | ---: | ---: |")
    for size in map(int, args.calls.split(",")):
        picks = [m % 3 for m in range(size)]
        texts = [ModelText.from_profile(profs[m]) for m in picks]
        ps, sels = [profs[m] for m in picks], [rows[m] for m in picks]
        alone, together, tophits = [], [], []
        for _ in range(args.repeat):
            t = time.perf_counter()
            one = [models_records([x], [p], pairs, env, [s], residues, offsets, lengths, seq_text, pipeline)[0]
                   for x, p, s in zip(texts, ps, sels)]
            alone.append((time.perf_counter() - t) / size)
            t = time.perf_counter()
            many = models_records(texts, ps, pairs, env, sels, residues, offsets, lengths, seq_text, pipeline)
            together.append((time.perf_counter() - t) / size)
            t = time.perf_counter()
            hits = [gpu_tophits(hmms[m], pipeline, *r) for m, r in zip(picks, many)]
            tophits.append((time.perf_counter() - t) / size)
            assert many == one, "records differ"
        print(f"| {size} | {statistics.median(alone) * 1e3:.2f} | {statistics.median(together) * 1e3:.2f} | "
              f"{statistics.median(tophits) * 1e3:.2f} |")
    print(f"hits a model {[len(h) for h in hits[:3]]}, domains {[sum(len(x.domains) for x in h) for h in hits[:3]]}")


if __name__ == "__main__":
    main()
