"""HMMER's finishing of a batch of models' survivors on the GPU, where it is exact.

After the filter cascade, each model's survivors (the sequences through F3) go through
HMMER's domain definition and scoring.  :class:`GpuFinishing` runs that on the GPU for a
whole batch of models at once (:func:`gpu_search.hmmer.gpu.domaindef.define_domains`), then
builds each model's hits as HMMER stores them (:mod:`.hitrecords`), for every sequence the
GPU can give HMMER's answer for; the others (regions HMMER resolves by stochastic traces,
scores the kernels leave unsure) are returned to be finished by pyhmmer as before.  Both
parts of a model meet in ``TopHits.merge``, which sorts and thresholds them as HMMER does.

Used where HMMER's default scoring applies: null2 on, E-value or bit-score thresholds (not
a model's own cutoffs, which p7_Pipeline applies as it goes).
"""

from __future__ import annotations

import contextlib
import threading

import numpy as np

from ..seqdb import amino_degeneracy
from .hitrecords import ModelText, gpu_tophits, model_records


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
    """

    def __init__(self, db, backend, pipeline: dict, kernels=None):
        self.db = db
        self.backend = backend
        self.device_id = backend.gpus[0] if backend is not None else 0
        self.pipeline = dict(pipeline)
        self.degeneracy = amino_degeneracy()
        self._kernels = kernels           # (the tests give the kernels' CPU emulator, and no backend)
        self._lock = threading.Lock()
        self.pairs_on_gpu = 0           # for benchmarks: pairs finished here, and left to the CPU
        self.pairs_left = 0

    def kernels(self):
        from .gpu.domaindef import CupyKernels

        with self._lock:
            if self._kernels is None:
                self._kernels = CupyKernels(self.device_id)
            return self._kernels

    def _on_device(self):
        """The GPU and the calling thread's stream of the backend, as a context."""
        stack = contextlib.ExitStack()
        if self.backend is not None:
            import cupy as cp

            stack.enter_context(cp.cuda.Device(self.device_id))
            stack.enter_context(self.backend.stream(self.device_id))
        return stack

    def finish(self, hmms, profs, survivors: list) -> list:
        """For each model of a batch: (its GPU hits as a ``TopHits`` or None, the survivors
        left to the CPU).  On a GPU out-of-memory error every survivor is left to the CPU."""
        from ..gpu import is_out_of_memory
        from .gpu.domaindef import define_domains

        survivors = [np.asarray(s, dtype=np.int64) for s in survivors]
        if not any(len(s) for s in survivors):
            return [(None, s) for s in survivors]
        # only the survivors' sequences go to the GPU
        uniq, local = np.unique(np.concatenate(survivors), return_inverse=True)
        lengths = self.db.lengths[uniq].astype(np.int64)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        residues = np.concatenate([self.db.sequence(int(s)) for s in uniq]).astype(np.uint8)
        models = np.repeat(np.arange(len(survivors)), [len(s) for s in survivors])
        kernels = self.kernels()
        try:
            with self._on_device():
                pairs, env = define_domains(kernels, profs, residues, offsets, models, local, self.degeneracy)
        except Exception as exc:
            if not is_out_of_memory(exc):
                raise
            return [(None, s) for s in survivors]
        out = []
        first = 0
        for m, (hmm, prof, s) in enumerate(zip(hmms, profs, survivors)):
            rows = np.arange(first, first + len(s))
            first += len(s)
            simple = pairs.simple[rows]
            self.pairs_on_gpu += int(simple.sum())
            self.pairs_left += int((~simple).sum())
            if not simple.any():
                out.append((None, s))
                continue
            pipeline = dict(self.pipeline, nnodes=prof.M, n_past_fwd=int(simple.sum()))
            records, keys, names, ialis = model_records(
                ModelText.from_profile(prof), prof, pairs, env, rows[simple], residues, offsets, lengths,
                lambda j: self.db.easel_text(int(uniq[j])), pipeline)
            out.append((gpu_tophits(hmm, pipeline, records, keys, names, ialis), s[~simple]))
        return out
