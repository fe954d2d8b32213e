"""Who runs blastp's stages where: the GPUs, the CPU threads and the traceback's processes.

The stages themselves are :mod:`.pipeline`'s (as HMMER keeps p7_pipeline.c apart
from hmmsearch.c's threads).  On the CPU, queries run whole on a thread pool.
With GPUs (cuBLASTP's overlap of GPU and CPU phases):

* a *GPU feeder* thread per engine (several engines, each on its own CUDA
  stream, per GPU) takes the next queries, their statistics and lookup tables
  built ahead on helper threads, and runs the ungapped stage on its GPU, one
  pass over the database for a batch of queries;
* with the GPU's preliminary gapped kernel, each GPU's *gapped launcher*
  threads take the queries waiting for it, up to ``gapped_batch`` in one
  launch (subjects with few init HSPs);
* each query's other init HSPs are cut into pieces (whole subjects) whose
  preliminary gapped extensions run on the pool's threads while the GPUs go on;
  when a query's last piece is done, its hit list and traceback go to a worker
  process (:mod:`.workers`) or, without them, to the pool;
* with the traceback's alignments on the GPUs, a worker process gives back the
  hit list's alignment jobs instead (``gpu.traceback.AlignmentPlan``; one per
  piece of a long hit list, each aligned and traced back apart); each GPU's
  *traceback launcher* thread aligns those of the queries waiting, up to
  ``traceback_batch`` in one launch, and hands each query back to a worker
  process, which traces its hit list back with them;
* the calling thread writes the queries' results in query order.

Two bounds keep memory in check: queries taken whose results are not ready
(their init HSPs are held), and queries taken and not yet written.  The first
failure anywhere sets the kill switch: every thread stops taking work, and the
error is raised to the caller.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future

from . import pipeline, workers
from .settings import BlastSettings


class PhaseTimes:
    """Seconds spent per phase, summed over threads (``BlastSettings.timings`` prints them).

    With a ``timeline`` file every timed interval is also kept (thread, phase, start,
    end; bench/probes/timeline.py summarises them)."""

    def __init__(self, timeline: str | None = None):
        self.seconds: dict[str, float] = {}
        self.counts: dict[str, int] = {}
        self._lock = threading.Lock()
        self.timeline = timeline
        self.events: list | None = [] if timeline else None

    def add(self, phase: str, t0: float) -> None:
        t1 = time.perf_counter()
        self.add_seconds(phase, t1 - t0)
        if self.events is not None:
            with self._lock:
                self.events.append((threading.current_thread().name, phase, t0, t1))

    def save_timeline(self, origin: float) -> None:
        if self.events is not None:
            import json

            with open(self.timeline, "w") as fh:
                json.dump([(n, p, a - origin, b - origin) for n, p, a, b in self.events], fh)

    def add_span(self, thread: str, phase: str, t0: float, t1: float) -> None:
        """An interval timed elsewhere (a worker process: perf_counter is the system's monotonic clock)."""
        self.add_seconds(phase, t1 - t0)
        if self.events is not None:
            with self._lock:
                self.events.append((thread, phase, t0, t1))

    def add_seconds(self, phase: str, seconds: float) -> None:
        with self._lock:
            self.seconds[phase] = self.seconds.get(phase, 0.0) + seconds

    def count(self, what: str, n: int = 1) -> None:
        """Events counted rather than timed (e.g. hit lists cut into pieces)."""
        with self._lock:
            self.counts[what] = self.counts.get(what, 0) + n

    def line(self) -> str:
        return "  ".join([f"{k} {v:.2f} s" for k, v in self.seconds.items()] +
                         [f"{k} {v}" for k, v in self.counts.items()])


class _QueryChore:
    """One query after its ungapped stage: its preliminary gapped pieces on the pool (and the
    E-values of the HSPs the GPU's gapped kernel found), then its hit list and traceback on
    a worker process or the pool.  ``done`` gives the query's results, or its error."""

    def __init__(self, scheduler: "Scheduler", work: pipeline.QueryWork, gpu_hsps=None):
        self.s = scheduler
        self.work = work
        self.gpu_hsps = gpu_hsps             # PRELIM_BATCH rows of the GPU's gapped kernel, or None
        self.done: Future = Future()
        self._lock = threading.Lock()
        self._pieces_left = 0                # gapped pieces (and the reaping) not done yet
        self._traced: dict = {}              # a hit list traced back in pieces: piece -> results

    def start(self) -> Future:
        s, work = self.s, self.work
        if work.chunks is not None:        # a query BLAST+ splits: its chunks on the pool, then merged
            self._start_split()
            return self.done
        pieces = pipeline.init_pieces(work.init, s.settings.gapped_piece)
        reap_here = self.gpu_hsps is not None and s.procs is None
        self._pieces_left = len(pieces) + int(reap_here)
        for piece in pieces:
            s.pool.submit(s.timed, "preliminary gapped (CPU threads)", pipeline.prelim_hsps, piece, work,
                          s.setup).add_done_callback(self._piece_done)
        if reap_here:
            s.pool.submit(s.timed, "E-values of GPU gapped HSPs (CPU threads)", pipeline.reap_by_evalue,
                          self.gpu_hsps, work, s.setup).add_done_callback(self._piece_done)
        return self.done

    def _start_split(self) -> None:
        """A split query's chunks' preliminary gapped stages side by side on the pool's
        threads; the last one done hands their merge (``pipeline.split_prelim_stage``) to
        the pool, whose end ``_piece_done`` takes as a query's last piece."""
        s, work = self.s, self.work
        found = [None] * len(work.chunks)
        left = [len(work.chunks)]
        self._pieces_left = 1

        def merge():
            s.pool.submit(s.timed, "preliminary gapped (CPU threads)", pipeline.split_prelim_stage, work,
                          s.setup, found).add_done_callback(self._piece_done)

        def one(k):
            found[k] = pipeline.chunk_hit_list(work.chunks[k], s.setup)
            with self._lock:
                left[0] -= 1
                last = left[0] == 0
            if last:
                merge()

        def failed(f):
            if f.exception() is not None:
                self.fail(f.exception())

        if not work.chunks:
            merge()
        for k in range(len(work.chunks)):
            s.pool.submit(s.timed, "preliminary gapped (CPU threads)", one, k).add_done_callback(failed)

    def fail(self, exc: BaseException) -> None:
        """The query ends with ``exc`` (its own stages' error, or a launcher's that held it)."""
        with self._lock:
            if not self.done.done():
                self.done.set_exception(exc)

    def _succeed(self, results) -> None:
        with self._lock:
            if not self.done.done():
                self.done.set_result(results)

    def _piece_done(self, f: Future) -> None:
        try:
            hsps = f.result()
            with self._lock:
                self.work.prelim.update(hsps)
                self._pieces_left -= 1
                last = self._pieces_left == 0
            if last and self.s.procs is not None:
                self._submit_to_process(self.work.prelim, self.gpu_hsps, self.s.settings.traceback_split,
                                        self.work.hits)
            elif last:
                s = self.s
                s.pool.submit(s.timed, "traceback (CPU threads)", pipeline.final_stage, self.work, s.setup,
                              s.queries).add_done_callback(self._traced_on_thread)
        except BaseException as exc:
            self.fail(exc)

    def _traced_on_thread(self, f: Future) -> None:
        if f.exception() is not None:
            self.fail(f.exception())
        else:
            self._succeed(f.result())

    def _submit_to_process(self, prelim, gpu_hsps, split, hits=None, piece=None, n_pieces=0, aligned=None) -> None:
        """The query's E-values, hit list and traceback (or one piece of its hit list) on a
        worker process (their Python holds no GIL here); with the traceback's alignments on
        the GPUs, the hit list's alignment jobs first, then (``aligned``) the traceback."""
        w = self.work
        align = self.s.tracers is not None and aligned is None
        self.s.procs.submit(workers.traceback_task, w.index, w.codes, w.kbp, w.cutoffs, prelim, gpu_hsps,
                            split, hits, align, aligned).add_done_callback(lambda f: self._back(f, piece, n_pieces))

    def aligned(self, plan, kernel_out, piece, n_pieces: int) -> None:
        """The extensions of ``plan`` (a hit list, or a piece of it) aligned on a GPU
        (``kernel_out``: ``GpuTraceback.align_many``'s): its traceback on a worker process."""
        from .gpu.traceback import Aligned

        self._submit_to_process({}, None, None, plan.hits, piece, n_pieces,
                                Aligned(plan.prelims, plan.starts, *kernel_out))

    def _back(self, f: Future, piece, n_pieces: int) -> None:
        """A worker's answer: the results, a piece's results, or the hit list cut into pieces."""
        try:
            (what, value), t0, t1, pid = f.result()
            times = self.s.times
            times.add_span(f"blastp-process-{pid}", "E-values+traceback (worker processes)", t0, t1)
            if what in ("align", "pieces") and len(value) > 1:
                times.count("hit lists cut into pieces")
                times.count("pieces", len(value))
            if what == "align" and len(value) == 1:
                self.s.to_align(self, value[0], piece, n_pieces)
            elif what == "align":                # a hit list's pieces, aligned and traced back apart
                for k, plan in enumerate(value):
                    self.s.to_align(self, plan, k, len(value))
            elif what == "pieces":
                # handed to a pool thread: this callback runs on the process pool's own
                # thread, which should not wait on its own queue
                self.s.pool.submit(self._submit_pieces, value).add_done_callback(
                    lambda g: g.exception() is not None and self.fail(g.exception()))
            elif piece is None:
                self._succeed(value)
            else:
                with self._lock:
                    self._traced[piece] = value
                    last = len(self._traced) == n_pieces
                if last:
                    self._succeed([r for k in range(n_pieces) for r in self._traced[k]])
        except BaseException as exc:
            self.fail(exc)

    def _submit_pieces(self, pieces: list) -> None:
        for k, (hits, rows) in enumerate(pieces):
            self._submit_to_process(rows, None, None, hits, k, len(pieces))


class Scheduler:
    """The queries of one run through the stages, on the CPU threads and the GPUs.

    Args:
        queries: the query set.
        setup: the run's ``pipeline.SearchSetup``.
        pool: the CPU threads (a ThreadPoolExecutor of ``threads`` workers).
        threads: their number.
        engines: the GPU engines (``GpuUngapped`` or stand-ins, several per GPU); empty: a
            CPU run.
        times: the run's ``PhaseTimes``.
        gapped_engines: {id(engine): [GpuPrelim, ...]}, the same list for every engine of
            one GPU: its gapped launchers, one thread each.
        procs: the traceback's worker processes (``workers.start_workers``), or None.
        settings: the run's ``BlastSettings`` (gapped_batch, gapped_piece, traceback_split,
            traceback_batch).
        tracers: the GPUs' ``GpuTraceback`` launchers (a thread each), for the traceback's
            alignments (with ``procs``), or none: the worker processes align.

    ``results_in_order()`` yields each query's ``SubjectResult`` list, in query order.
    """

    def __init__(self, queries, setup, pool, threads: int, engines: list, times: PhaseTimes,
                 gapped_engines: dict | None = None, procs=None, settings: BlastSettings | None = None,
                 tracers: list | None = None):
        self.queries, self.setup, self.pool, self.times = queries, setup, pool, times
        self.engines = list(engines)
        self.gapped_engines = gapped_engines or {}
        self.procs = procs
        self.settings = settings or BlastSettings()
        self.n = queries.n_seqs
        # the kill switch: the first failure anywhere stops every thread; the writer raises it
        self.kill_switch = threading.Event()
        self.error: BaseException | None = None
        self.state = threading.Condition()       # guards everything below
        self.next_query = 0                      # the first query not taken by a GPU feeder
        self.n_written = 0
        self.prepared: dict[int, Future] = {}    # query -> (work, lookup), built ahead
        self.finished: dict[int, Future] = {}    # query -> its results, not yet written
        # bounds the queries taken whose results are not ready (their init HSPs are held); a
        # query's room is given back when its results are, not when they are written: one slow
        # query (a long traceback) must not hold back the GPUs until it is written
        # (a GPU taking queries in batches, one pass over the database each -- a streamed
        # database -- holds a batch's worth more)
        self.per_pass = {id(g): max(1, int(getattr(g, "queries_per_pass", 1))) for g in self.engines}
        room = 2 * threads + 2 * len(self.engines) + sum(b - 1 for b in self.per_pass.values())
        self.in_flight = threading.Semaphore(room)
        # and a looser bound on the queries taken and not yet written (finished results wait
        # for the slow query before them)
        self.unwritten_cap = 4 * room
        self.lookahead = max(2 + 2 * len(self.engines), 2 * self.settings.lookup_threads,
                             *self.per_pass.values()) if self.engines else 0
        # per gapped engine list (one GPU): the queries handed over and not yet launched, and
        # the GPU feeders still handing it queries
        lists = {id(ps): ps for ps in self.gapped_engines.values()}
        self.gapped_lists = list(lists.values())
        self.waiting = {key: [] for key in lists}
        self.feeders = {key: sum(1 for g in self.engines if self.gapped_engines.get(id(g)) is ps)
                        for key, ps in lists.items()}
        # the hit lists waiting for their alignments (chore, plan, piece, pieces), and the GPUs'
        # traceback launchers (None: the worker processes align)
        self.tracers = list(tracers) if tracers and procs is not None else None
        self.align_waiting: list = []
        self.closing = False                     # every query written: the launchers end

    # --- one failure path ------------------------------------------------------------------
    def fail(self, exc: BaseException) -> None:
        """Record the first failure and set the kill switch; the writer raises it."""
        with self.state:
            if self.error is None:
                self.error = exc
            self.kill_switch.set()
            self.state.notify_all()

    def timed(self, phase: str, fn, *args):
        """fn(*args), its time added to ``phase``."""
        t0 = time.perf_counter()
        try:
            return fn(*args)
        finally:
            self.times.add(phase, t0)

    # --- the writer (the caller's thread) ----------------------------------------------------
    def results_in_order(self):
        """Each query's results, in query order."""
        if not self.engines and self.procs is not None:     # a CPU run on processes
            for results in self.procs.map(workers.search_task, range(self.n)):
                yield workers.received(results)
            return
        if not self.engines:
            yield from self.pool.map(lambda i: pipeline.search_query(i, self.queries, self.setup), range(self.n))
            return
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=self.settings.lookup_threads,
                                thread_name_prefix="blastp-lookup") as ahead:
            for k, gpu in enumerate(self.engines):
                threading.Thread(target=self._feed_gpu, args=(gpu, ahead), name=f"blastp-gpu{k}",
                                 daemon=True).start()
            for k, prelims in enumerate(self.gapped_lists):
                for m, prelim in enumerate(prelims):
                    threading.Thread(target=self._launch_gapped, args=(prelim, id(prelims)),
                                     name=f"blastp-gapped{k}.{m}", daemon=True).start()
            for k, tracer in enumerate(self.tracers or []):
                threading.Thread(target=self._launch_traceback, args=(tracer,), name=f"blastp-traceback{k}",
                                 daemon=True).start()
            try:
                for i in range(self.n):
                    with self.state:
                        while i not in self.finished and not self.kill_switch.is_set():
                            self.state.wait()
                        if self.error is not None:
                            raise self.error
                        future = self.finished.pop(i)
                        self.n_written += 1
                        self.state.notify_all()
                    # (a query whose chore a failure elsewhere left unfinished must not hold the
                    # writer: the kill switch ends the wait)
                    while not future.done():
                        if self.kill_switch.wait(0.05):
                            with self.state:
                                raise self.error
                    yield workers.received(future.result())
            finally:
                with self.state:
                    self.closing = True
                    self.state.notify_all()

    # --- handing out queries -----------------------------------------------------------------
    def _prepare(self, i: int):
        t0 = time.perf_counter()
        work = pipeline.new_work(i, self.queries)
        lookup = pipeline.prepare_query(work, self.setup)
        self.times.add("statistics+lookup (ahead of the GPU)", t0)
        return work, lookup

    def _take(self, ahead, wait: bool = True):
        """The next query and its tables' future, or None: none left (or, with ``wait``
        False, none to be taken now without waiting for the writer)."""
        with self.state:
            while self.next_query - self.n_written >= self.unwritten_cap and not self.kill_switch.is_set():
                if not wait:
                    return None
                self.state.wait()
            i = self.next_query
            if i >= self.n or self.kill_switch.is_set():
                return None
            self.next_query += 1
            for k in range(i, min(self.n, i + self.lookahead)):
                if k not in self.prepared:
                    self.prepared[k] = ahead.submit(self._prepare, k)
            return i, self.prepared.pop(i)

    def _publish(self, i: int, future: Future) -> None:
        """Query i's results (to come): its room back when they are ready, the writer told."""
        def ready(f):
            self.in_flight.release()
            if f.exception() is not None:
                self.fail(f.exception())

        future.add_done_callback(ready)
        with self.state:
            self.finished[i] = future
            self.state.notify_all()

    # --- the threads ---------------------------------------------------------------------------
    def _feed_gpu(self, gpu, ahead) -> None:
        """A GPU feeder: batches of queries through the ungapped stage on ``gpu``, then to the
        GPU's gapped launchers or straight to the CPU stages."""
        prelims = self.gapped_engines.get(id(gpu))
        passes = 0
        try:
            while True:
                t0 = time.perf_counter()
                while not self.in_flight.acquire(timeout=0.1):
                    if self.kill_switch.is_set():    # queries not published never give their room back
                        return
                self.times.add("GPU threads held back (queries in flight)", t0)
                item = self._take(ahead)
                if item is None:
                    self.in_flight.release()
                    return
                # and more, up to a pass's worth, where there is room now.  Batches ramp up
                # 1, 2, 4... so that the CPU stages start as early as with single queries, and
                # the last ones are shared between the GPUs
                left = self.n - self.next_query + 1          # queries not taken yet, this one too
                most = min(self.per_pass[id(gpu)], 1 << min(passes, 16), -(-left // len(self.engines)))
                passes += 1
                items = [item]
                while len(items) < most and self.in_flight.acquire(blocking=False):
                    item = self._take(ahead, wait=False)
                    if item is None:
                        self.in_flight.release()
                        break
                    items.append(item)
                batch = [(i, *prepared.result()) for i, prepared in items]
                t0 = time.perf_counter()
                pipeline.ungapped_batch([(work, lookup) for _, work, lookup in batch], self.setup, gpu)
                self.times.add("GPU phases", t0)
                for i, work, _ in batch:
                    if prelims is not None and len(work.init):
                        with self.state:
                            self.waiting[id(prelims)].append((i, work))
                            self.state.notify_all()
                    else:
                        self._publish(i, _QueryChore(self, work).start())
        except BaseException as exc:
            self.fail(exc)
        finally:
            if prelims is not None:
                with self.state:
                    self.feeders[id(prelims)] -= 1
                    self.state.notify_all()

    def _launch_gapped(self, prelim, key: int) -> None:
        """A gapped launcher: the queries waiting for its GPU, up to ``gapped_batch`` in one
        launch of the preliminary gapped kernel (blast/gpu/gapped.py)."""
        from .gpu.gapped import PrelimJob

        setup = self.setup
        try:
            while True:
                with self.state:
                    while not self.waiting[key] and self.feeders[key] and not self.kill_switch.is_set():
                        self.state.wait()
                    if self.kill_switch.is_set() or not self.waiting[key]:
                        return
                    batch = self.waiting[key][:self.settings.gapped_batch]
                    del self.waiting[key][:len(batch)]
                t0 = time.perf_counter()
                jobs = [PrelimJob(work.init, work.codes, work.cutoffs.x_drop_gapped, work.cutoffs.cutoff_score,
                                  setup.options.evalue) for _, work in batch]
                found = prelim.run_many(jobs, setup.matrix.scores, setup.gap_open, setup.gap_extend)
                self.times.add("preliminary gapped (GPU threads)", t0)
                for (i, work), (gpu_hsps, left) in zip(batch, found):
                    work.init = left
                    self._publish(i, _QueryChore(self, work, gpu_hsps).start())
        except BaseException as exc:
            self.fail(exc)

    def to_align(self, chore: _QueryChore, plan, piece, n_pieces: int) -> None:
        """A hit list (or a piece of one) whose alignments wait for a traceback launcher."""
        with self.state:
            if self.kill_switch.is_set():          # no launcher will take it
                chore.fail(self.error)
                return
            self.align_waiting.append((chore, plan, piece, n_pieces))
            self.state.notify_all()

    def _launch_traceback(self, tracer) -> None:
        """A traceback launcher: the hit lists waiting, up to ``traceback_batch`` in one
        launch of the traceback kernel (blast/gpu/traceback.py), each then handed back to a
        worker process for its traceback."""
        setup = self.setup
        batch = []
        try:
            while True:
                with self.state:
                    while not self.align_waiting and not self.closing and not self.kill_switch.is_set():
                        self.state.wait()
                    if self.kill_switch.is_set() or not self.align_waiting:
                        return
                    batch = self.align_waiting[:self.settings.traceback_batch]
                    del self.align_waiting[:len(batch)]
                t0 = time.perf_counter()
                aligned = tracer.align_many([plan for _, plan, _, _ in batch],
                                            [chore.work.codes for chore, _, _, _ in batch],
                                            setup.matrix.scores, setup.gap_open, setup.gap_extend)
                self.times.add("traceback alignments (GPU threads)", t0)
                for (chore, plan, piece, n_pieces), pre in zip(batch, aligned):
                    chore.aligned(plan, pre, piece, n_pieces)
        except BaseException as exc:
            self.fail(exc)
            with self.state:                       # the hit lists taken or waiting fail with it
                left, self.align_waiting = self.align_waiting, []
            for chore, _, _, _ in [*batch, *left]:
                chore.fail(exc)
