"""HMMER's finishing of a batch of models' survivors on the GPU, where it is exact.

After the filter cascade, each model's survivors (the sequences through F3) go through
HMMER's domain definition and scoring.  :class:`GpuFinishing` runs that on the GPU for a
whole batch of models at once (:func:`gpu_search.hmmer.gpu.domaindef.define_domains`), then
builds each model's hits as HMMER stores them (:mod:`.hitrecords`; the records of a call's
models built together, in one pass of array operations), for every sequence the
GPU can give HMMER's answer for; the others (scores the kernels leave unsure, the longest
pairs) are returned to be finished by pyhmmer as before.  The pairs whose Forward test the
filter cascade left (too long for its Forward stage) are tested here, on the same score, and
dropped where they fail it, as p7_Pipeline drops them.  Both
parts of a model meet in ``TopHits.merge``, which sorts and thresholds them as HMMER does.

Used where HMMER's default scoring applies: null2 on, E-value or bit-score thresholds (not
a model's own cutoffs, which p7_Pipeline applies as it goes).
"""

from __future__ import annotations

import contextlib
import threading

import numpy as np

from ..seqdb import amino_degeneracy
from . import cascade
from .hitrecords import ModelText, gpu_tophits, models_records


def gpu_finishing_applies(options) -> bool:
    """Whether the GPU may finish: HMMER's null2 on and no model cutoffs (--cut_ga/nc/tc)."""
    return not options.nonull2 and not options.bit_cutoffs


class GpuFinishing:
    """The finishing of the batches' survivors on one GPU of the backend.

    Args:
        db: the database (its sequences are taken from the host copy, only the survivors
            uploaded).
        backend: the filter backend (its GPUs and per-thread streams).
        pipeline: the P7_PIPELINE fields of a pyhmmer search configured as the search's
            others (``TopHits.__getstate__()["pipeline"]``), its counters zeroed.
        F3: HMMER's Forward threshold, for the pairs the cascade left untested (default: the
            pipeline's).
    """

    def __init__(self, db, backend, pipeline: dict, kernels=None, F3: float | None = None):
        self.db = db
        self.F3 = float(pipeline["F3"]) if F3 is None and "F3" in pipeline else F3
        if self.F3 is None:
            raise ValueError("GpuFinishing: no Forward threshold (F3) given")
        self.backend = backend
        self.device_id = backend.gpus[0] if backend is not None else 0
        self.pipeline = dict(pipeline)
        self.degeneracy = amino_degeneracy()
        self._kernels = kernels           # (the tests give the kernels' CPU emulator, and no backend)
        self._lock = threading.Lock()
        self._kernels_lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._waiting: list = []
        self._workers: list = []
        self._closed = False
        self.pairs_on_gpu = 0           # for benchmarks: pairs finished here, left to the CPU, and
        self.pairs_left = 0             # dropped by the Forward test here
        self.pairs_failed = 0
        # each hit sequence's (name, acc, desc) bytes, kept: with many homologs a sequence is a
        # hit of many models, and reading its texts again each time was a fifth of the records' time
        self._texts: dict[int, tuple] = {}

    def kernels(self):
        from .gpu.domaindef import CupyKernels

        with self._kernels_lock:          # (the first call of each worker: loaded once)
            if self._kernels is None:
                self._kernels = CupyKernels(self.device_id)
            return self._kernels

    # a GPU domain definition lasts about as long as its longest pair's chain of rows, however
    # many pairs it holds: one batch of models' survivors fills a fraction of the GPU, so a
    # worker takes several batches waiting in one call: the oldest, up to its share of the
    # pairs waiting (all of them over WORKERS) and at most this many.  Where one worker took
    # every batch waiting (up to 200,000 pairs), a search whose filters ran far ahead of the
    # finishing ended in one call of tens of thousands of pairs on one stream, the other
    # worker idle: 2,000 models x 6.8 M residues, many homologs, on an H200 host, in one
    # process (bench/probes/finish_split.py), 2 of 17 runs took 35-42 s against 8-12 s, the
    # slow ones with 7 and 25 calls against 27-31, one worker busy alone for 20 s
    GATHER_PAIRS = 8_192
    # calls under way at once, each on its worker thread's own stream: a call's last launches
    # (its longest regions' stochastic traces, its longest envelopes) run a few threads on a
    # GPU otherwise idle, and its host work between launches leaves the GPU idle too; another
    # worker's call fills both.  Measured (bench/probes/finish_split.py --ab --workers, 2,000
    # models x 6.8 M many homologs, two H200 hosts), seconds with 1 / 2 / 3 workers: batches
    # sent while the CPU threads have a backlog (the default) 15.5 / 13.9 / 14.2 and
    # 17.9 / 16.8 / 16.6; every batch 14.8 / 14.3 / 16.7 and 15.4 / 16.1 / 17.7
    WORKERS = 2
    # pairs of more DP cells (length x M) are left to the CPU: a call lasts as long as its
    # longest pair's chain of rows (length x M / 4 steps a thread).  The pairs over 250,000
    # cells were half of the CPU threads' finishing with many homologs; taken here, 2,000 models
    # x 6.8 M residues (longest pair 3.7 M cells) on an H200 host, in one process
    # (bench/probes/finish_split.py --ab --max-gpu-cells): median 17.6 s at 250,000, 15.9 s here
    MAX_GPU_CELLS = 16_000_000

    def submit(self, hmms, profs, survivors: list, then, untested: list | None = None) -> None:
        """finish() on a GPU finishing thread, several batches waiting at once in one call;
        then(results) is called there with this batch's results (or the exception)."""
        untested = list(untested) if untested is not None else [None] * len(hmms)
        with self._lock:
            self._waiting.append((list(hmms), list(profs), list(survivors), then, untested))
            if not self._workers:
                self._workers = [threading.Thread(target=self._work, name=f"gpu-finish-{w}", daemon=True)
                                 for w in range(max(1, self.WORKERS))]
                for worker in self._workers:
                    worker.start()
            self._wake.notify()

    def _work(self) -> None:
        while True:
            with self._lock:
                while not self._waiting and not self._closed:
                    self._wake.wait()
                if not self._waiting:
                    return
                # the oldest batches, up to this worker's share of the pairs waiting
                share = min(self.GATHER_PAIRS,
                            -(-sum(sum(map(len, w[2])) for w in self._waiting) // max(1, self.WORKERS)))
                taken, n = [], 0
                while self._waiting and (not taken or n + sum(map(len, self._waiting[0][2])) <= share):
                    taken.append(self._waiting.pop(0))
                    n += sum(map(len, taken[-1][2]))
            try:
                results = self.finish([h for t in taken for h in t[0]], [p for t in taken for p in t[1]],
                                      [x for t in taken for x in t[2]], [u for t in taken for u in t[4]])
            except BaseException as exc:          # (each batch's caller gets the error)
                for t in taken:
                    t[3](exc)
                continue
            first = 0
            for t in taken:
                t[3](results[first:first + len(t[0])])
                first += len(t[0])

    def close(self) -> None:
        """Ends the workers (after their calls under way), the batches still waiting dropped
        (their callers have stopped)."""
        with self._lock:
            self._closed = True
            self._waiting.clear()
            self._wake.notify_all()
        for worker in self._workers:
            worker.join()

    def _on_device(self):
        """The GPU and the calling worker's own stream of the backend, as a context."""
        stack = contextlib.ExitStack()
        if self.backend is not None:
            import cupy as cp

            stack.enter_context(cp.cuda.Device(self.device_id))
            stack.enter_context(self.backend.stream(self.device_id))
        return stack

    def finish(self, hmms, profs, survivors: list, untested: list | None = None) -> list:
        """For each model of a batch: (a function making its GPU hits, a ``TopHits``, or
        None; the survivors left to the CPU).  untested: for each model, None or the
        survivors whose Forward test the cascade left and their filter scores
        (``CascadeResult.untested``, ``untested_filt``); those failing it are in neither.  The
        functions build HMMER's records on the host (the finishing threads call them).  On a
        GPU out-of-memory error every survivor is left to the CPU."""
        from ..gpu import is_out_of_memory
        from .gpu.domaindef import define_domains, index_ranges

        every = [np.asarray(s, dtype=np.int64) for s in survivors]
        untested = untested if untested is not None else [None] * len(every)
        # the longest pairs stay on the CPU: a kernel's launch lasts as long as its longest
        # pair's chain of rows (length x M / 4 steps a thread)
        long = [cascade.pair_cells(self.db.lengths, s, prof.M) > self.MAX_GPU_CELLS for s, prof in zip(every, profs)]
        survivors = [s[~x] for s, x in zip(every, long)]
        if not any(len(s) for s in survivors):
            return [(None, s) for s in every]
        # only the survivors' sequences go to the GPU
        uniq, local = np.unique(np.concatenate(survivors), return_inverse=True)
        lengths = self.db.lengths[uniq].astype(np.int64)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        starts = np.asarray(self.db.offsets)[uniq]
        residues = np.asarray(self.db.residues)[index_ranges(starts, lengths)].astype(np.uint8)
        models = np.repeat(np.arange(len(survivors)), [len(s) for s in survivors])
        kernels = self.kernels()
        try:
            with self._on_device():
                # (the workers' calls share the matrices' third of the free memory)
                pairs, env = define_domains(kernels, profs, residues, offsets, models, local, self.degeneracy,
                                            kernels.matrix_floats() // max(1, self.WORKERS),
                                            forward_test=self._forward_test(profs, survivors, untested))
        except Exception as exc:
            if not is_out_of_memory(exc):
                raise
            return [(None, s) for s in every]
        out = []
        first = 0
        on_gpu = n_left = 0
        n_failed = int((~pairs.passed).sum())
        taken = []                               # (model, its simple pairs' rows) with GPU hits
        for m, (hmm, prof, s, x, e) in enumerate(zip(hmms, profs, survivors, long, every)):
            rows = np.arange(first, first + len(s))
            first += len(s)
            simple = pairs.simple[rows]          # (False where the Forward test failed: dropped)
            left = np.sort(np.concatenate([s[~simple & pairs.passed[rows]], e[x]]))
            on_gpu += int(simple.sum())
            n_left += len(left)
            if simple.any():
                taken.append((m, rows[simple]))
            out.append((None, left))
        call = _CallRecords(lambda: models_records(
            [ModelText.from_profile(profs[m]) for m, _ in taken], [profs[m] for m, _ in taken], pairs, env,
            [rows for _, rows in taken], residues, offsets, lengths, lambda j: self.seq_text(int(uniq[j])),
            self.pipeline))
        for j, (m, rows) in enumerate(taken):
            left = out[m][1]
            out[m] = (self._hits_maker(hmms[m], profs[m], call, j, len(rows), alone=not len(left)), left)
        with self._lock:
            self.pairs_on_gpu += on_gpu
            self.pairs_left += n_left
            self.pairs_failed += n_failed
        return out

    def _forward_test(self, profs, survivors: list, untested: list):
        """define_domains' forward_test: p7_Pipeline's Forward test (exact_forward_pass) of the
        pairs (survivors, model by model) whose test the cascade left, on the parser's scores;
        None where there are none."""
        tests = []                       # (the model's pairs to test, their filter scores, the model)
        first = 0
        for s, u, prof in zip(survivors, untested, profs):
            if u is not None and self.F3 < 1.0 and len(s) and len(u[0]):
                ids, filt = u
                at = np.minimum(np.searchsorted(ids, s), len(ids) - 1)
                mine = ids[at] == s
                if mine.any():
                    tests.append((first + np.flatnonzero(mine), filt[at[mine]], prof))
            first += len(s)
        if not tests:
            return None

        def forward_test(fwd: np.ndarray) -> np.ndarray:
            passed = np.ones(len(fwd), bool)
            for rows, filt, prof in tests:
                passed[rows] = cascade.exact_forward_pass(fwd[rows], filt, float(prof.evparam[4]),
                                                          float(prof.evparam[5]), self.F3)
            return passed
        return forward_test

    # sequences whose texts are kept, at most (about 100 bytes each)
    MAX_TEXTS = 1 << 20

    def seq_text(self, i: int) -> tuple:
        """Database sequence i's (name, acc, desc) bytes, as :meth:`SequenceDB.easel_text`."""
        text = self._texts.get(i)
        if text is None:
            text = self.db.easel_text(i)
            if len(self._texts) < self.MAX_TEXTS:
                self._texts[i] = text
        return text

    def _hits_maker(self, hmm, prof, call, j: int, n_pairs: int, alone: bool):
        """The function making the model's GPU hits from its records, the j-th model's of the
        call's (thresholded where ``alone``: no CPU hits of the model to be merged with them, a
        merge that thresholds them all)."""
        def make():
            pipeline = dict(self.pipeline, nnodes=prof.M, n_past_fwd=n_pairs)
            records, keys, names, ialis = call.take(j)
            return gpu_tophits(hmm, pipeline, records, keys, names, ialis, thresholded=alone)
        return make


class _CallRecords:
    """The hit records of every model of one finishing call, built together by the first of
    its models' makers to run (on the records thread), each model's then taken by its maker:
    the records' array operations run once for the call's models, not once a model.  Where
    building them fails, every model of the call fails with that error.  (They are kept while
    the makers are: until the finishing worker's next call.)"""

    def __init__(self, build):
        self._build = build
        self._lock = threading.Lock()
        self._made: list | None = None
        self._error: BaseException | None = None

    def take(self, j: int) -> tuple:
        with self._lock:
            if self._made is None and self._error is None:
                try:
                    self._made = self._build()
                except BaseException as exc:
                    self._error = exc
                self._build = None                 # (what it held: the call's arrays)
            if self._error is not None:
                raise RuntimeError("building the GPU's hit records failed") from self._error
            return self._made[j]
