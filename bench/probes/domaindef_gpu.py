"""HMMER's domain definition on the GPU (hmmer/gpu/domaindef.py) against pyhmmer's finishing of
the same (model, sequence) pairs on every core: time and exactness.

The case is finish_cost.py's (single-sequence models of proteome proteins against the
proteome and copies mutated to 90/70/50/35% identity); the pairs are those HMMER reports.
pyhmmer finishes them with F1 = F2 = 1 (as gpu-search's CPU finishing does), one pipeline a
thread over a share of the models; the GPU defines their domains and scores them
(scores.hit_scores).  Every pair the GPU takes is compared with pyhmmer's hit: envelopes,
envelope scores, null2 corrections, the sequence's and the domains' scores.

Usage: python bench/probes/domaindef_gpu.py [--models N] [--gpu-only] [--variants A,B]
(--gpu-only: the GPU's domain definition alone, no pyhmmer finishing or comparison, for a
profiler; the pairs HMMER reports are kept in --work after the first run; --variants: the
GPU's domain definition again with fwdback.cu compiled with each of these constants, e.g.
``TRACE_GROUP=4,TRACE_GROUP=8`` (``+`` joins several in one variant), its results
compared with the first run's array by array, then the first build again)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from finish_cost import as_database, build  # noqa: E402

from gpu_search.hmmer.gpu.domaindef import CupyKernels, define_domains  # noqa: E402
from gpu_search.hmmer.profile import FilterProfile  # noqa: E402
from gpu_search.hmmer.hitrecords import scored_domains  # noqa: E402
from gpu_search.seqdb import amino_degeneracy  # noqa: E402

LOG2R = 1.44269504088896341


class TimedKernels(CupyKernels):
    """CupyKernels with each kernel's GPU time added up (an event pair a launch)."""

    def __init__(self, device_id: int = 0):
        super().__init__(device_id)
        self.events = []

    def launch(self, name, n_jobs, most, args):
        start, stop = self.cp.cuda.Event(), self.cp.cuda.Event()
        start.record()
        super().launch(name, n_jobs, most, args)
        stop.record()
        self.events.append((name, start, stop))

    def seconds(self) -> dict:
        out = {}
        for name, start, stop in self.events:
            stop.synchronize()
            out[name] = out.get(name, 0.0) + self.cp.cuda.get_elapsed_time(start, stop) / 1e3
        return out


def profile(hmm, bg):
    from pyhmmer.plan7 import Profile

    gm = Profile(hmm.M, hmm.alphabet)
    gm.configure(hmm, bg, 100)
    return FilterProfile.from_optimized(gm.to_optimized())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=200)
    ap.add_argument("--work", type=Path, default=Path("/tmp/domaindef_probe"))
    ap.add_argument("--gpu-only", action="store_true", help="the GPU's domain definition alone (a profiler's run)")
    ap.add_argument("--variants", type=lambda v: v.split(","), default=[],
                    help="fwdback.cu's constants to time against the first run, e.g. TRACE_GROUP=4")
    args = ap.parse_args()
    from pyhmmer.easel import DigitalSequenceBlock
    from pyhmmer.plan7 import Pipeline

    t0 = time.perf_counter()
    abc, bg, db, hmms = build(args.models)
    ours = as_database(db, args.work)
    index = {ours.name(i): i for i in range(ours.n_seqs)}
    print(f"built {len(hmms)} models, {len(db)} sequences in {time.perf_counter() - t0:.1f} s", flush=True)
    Z = len(db)
    cores = os.cpu_count() or 1

    def reported(ks):
        p = Pipeline(abc, background=bg, Z=Z)
        out = []
        for k in ks:
            out.append((k, [hit.name for hit in p.search_hmm(hmms[k], db) if hit.reported]))
            p.clear()
        return out

    kept = args.work / f"reported_{args.models}.json"
    if kept.exists():
        found = {int(k): v for k, v in json.loads(kept.read_text()).items()}
    else:
        with ThreadPoolExecutor(cores) as pool:
            found = dict(x for part in pool.map(reported, [list(range(i, len(hmms), cores)) for i in range(cores)])
                         for x in part)
        kept.write_text(json.dumps(found))
    blocks = [DigitalSequenceBlock(abc, [db[index[n]] for n in found[k]]) for k in range(len(hmms))]
    n_pairs = sum(len(b) for b in blocks)
    print(f"{n_pairs} reported pairs", flush=True)

    def finish(ks):
        p = Pipeline(abc, background=bg, Z=Z, F1=1.0, F2=1.0)
        out = []
        for k in ks:
            out.append((k, {hit.name: hit for hit in p.search_hmm(hmms[k], blocks[k])}))
            p.clear()
        return out

    order = sorted(range(len(hmms)), key=lambda k: -len(blocks[k]))
    t0 = time.perf_counter()
    want, cpu_wall = {}, float("nan")
    if not args.gpu_only:
        with ThreadPoolExecutor(cores) as pool:
            want = dict(x for part in pool.map(finish, [order[i::cores] for i in range(cores)]) for x in part)
        cpu_wall = time.perf_counter() - t0

    profs = [profile(h, bg) for h in hmms]
    models = np.concatenate([np.full(len(found[k]), k) for k in range(len(hmms))]).astype(np.int64)
    seqs = np.array([index[n] for k in range(len(hmms)) for n in found[k]], dtype=np.int64)
    kernels = TimedKernels(0)
    define_domains(kernels, profs[:1], ours.residues, ours.offsets, models[:1] * 0, seqs[:1], amino_degeneracy())
    kernels.events.clear()                           # (the kernels loaded and compiled before the clock)
    t0 = time.perf_counter()
    pairs, env = define_domains(kernels, profs, ours.residues, ours.offsets, models, seqs, amino_degeneracy())
    t_define = time.perf_counter() - t0
    t0 = time.perf_counter()
    checked = differ = 0
    for k, prof in enumerate([] if args.gpu_only else profs):
        sel = np.flatnonzero((pairs.model == k) & pairs.simple)
        start, flat, got = scored_domains(prof, pairs, env, sel, ours.lengths)
        for q, p in enumerate(sel):
            hit = want[k].get(ours.name(int(pairs.seq[p])))
            ds = flat[start[q]:start[q + 1]]
            ok = hit is not None and np.float32(hit.score) == got.score[q] and \
                [(d.env_from, d.env_to, d.envelope_score) for d in hit.domains] == \
                [(int(env.i[e]), int(env.j[e]), float(env.envsc[e]) * LOG2R) for e in ds]
            checked += 1
            differ += not ok
    t_score = time.perf_counter() - t0
    gpu = kernels.seconds()
    print(f"\nhost: {cores} logical CPUs; {len(hmms)} models, {n_pairs} pairs, "
          f"{int(pairs.simple.sum())} taken by the GPU ({pairs.simple.mean():.1%}), {len(env.i)} envelopes")
    print(f"pairs compared with pyhmmer: {checked}, differing: {differ}")
    print("| stage | seconds |")
    print("| --- | ---: |")
    print(f"| pyhmmer finishing, {cores} threads (wall) | {cpu_wall:.2f} |")
    print(f"| GPU domain definition, define_domains (wall) | {t_define:.2f} |")
    for name, s in sorted(gpu.items(), key=lambda x: -x[1]):
        print(f"| - {name} (GPU time) | {s:.2f} |")
    print(f"| scores and the comparison (host, wall) | {t_score:.2f} |")
    if args.variants:
        variants(kernels, args.variants, pairs, env, (profs, ours.residues, ours.offsets, models, seqs,
                                                      amino_degeneracy()))


def variants(kernels, names: list, pairs, env, inputs) -> None:
    """define_domains again with fwdback.cu built with each variant's constants, then the
    default build again: wall, each kernel's GPU time, and whether every result array equals
    the first run's."""
    from dataclasses import fields

    from gpu_search.gpu import load_functions
    from gpu_search.hmmer.gpu.domaindef import THREADS_PER_PAIR
    from gpu_search.hmmer.gpu.kernels import FWDBACK_FILE

    kernel_names = tuple(kernels.functions)
    first = dict(kernels.functions)

    def equal(x, y) -> bool:
        if isinstance(x, np.ndarray):
            return np.array_equal(x, y, equal_nan=x.dtype.kind == "f")
        return x == y

    def same(a, b) -> bool:
        return all(equal(getattr(a, f.name), getattr(b, f.name)) for f in fields(a))

    print("\n| build | define_domains wall | region_traces GPU | all GPU kernels | results as the first run's |")
    print("| --- | ---: | ---: | ---: | --- |")
    group = THREADS_PER_PAIR["region_traces"]
    for name in names + ["(the default again)"]:
        THREADS_PER_PAIR["region_traces"] = group
        if name.startswith("("):
            kernels.functions = first
        else:
            options = tuple(f"-D{d}" for d in name.split("+"))
            kernels.functions = dict(zip(kernel_names, load_functions(FWDBACK_FILE, options, kernel_names, 0)))
            for d in name.split("+"):            # (the launch's threads a region, as the kernel's)
                if d.startswith("TRACE_GROUP="):
                    THREADS_PER_PAIR["region_traces"] = int(d.split("=")[1])
        profs, residues, offsets, models, seqs, degeneracy = inputs
        define_domains(kernels, profs[:1], residues, offsets, models[:1] * 0, seqs[:1], degeneracy)   # (compiled)
        kernels.events.clear()
        t0 = time.perf_counter()
        got_pairs, got_env = define_domains(kernels, *inputs)
        wall = time.perf_counter() - t0
        gpu = kernels.seconds()
        print(f"| {name} | {wall:.2f} | {gpu.get('region_traces', 0.0):.2f} | {sum(gpu.values()):.2f} | "
              f"{'identical' if same(pairs, got_pairs) and same(env, got_env) else 'DIFFERENT'} |", flush=True)


if __name__ == "__main__":
    main()
