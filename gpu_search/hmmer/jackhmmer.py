"""jackhmmer: iterative search of protein query sequences against a protein database.

HMMER's jackhmmer (jackhmmer.c) searches each query sequence in rounds.  Round 1 is
phmmer's search: a model built from the query alone (p7_SingleBuilder, with the
substitution matrix and gap probabilities of --mx, --popen, --pextend).  Each later
round builds its model (p7_Builder, hand architecture: the alignment's consensus
columns) from the alignment of the query and every domain the round before included
(p7_tophits_Alignment), and searches again.  The search stops after -N rounds, or
sooner where it converged: a round included no target the round before had not, and
its alignment did not grow.

Here each round is HMMER's own code through pyhmmer: ``Builder.build`` and
``Builder.build_msa`` (p7_SingleBuilder, p7_Builder), the round's search (below),
``TopHits.compare_ranking`` (p7_tophits_CompareRanking: which included targets are new,
which were dropped) and ``TopHits.to_msa`` (p7_tophits_Alignment).

The round's search is p7_Pipeline over the whole database:

* on the CPU (``device="cpu"``), ``Pipeline.search_hmm`` over the database, serially, as
  jackhmmer's serial path; queries are independent, so several run at once, one per
  thread, each with its own builder and pipeline;
* otherwise hmmsearch's engine (:func:`.search.hmmsearch`): the round's model through the
  filter cascade on the GPU, its survivors finished by pyhmmer on every core with Z the
  number of sequences searched, so the round's reported and included hits are those of the
  serial search; the weak, never reported hit serial HMMER keeps against a running Z that
  widens its name columns is added as hmmsearch adds it (:func:`.search.with_running_z_hit`).  The
  database is uploaded once and stays on the GPU for every round of every query; the
  queries run in lockstep, groups of up to LOCKSTEP_QUERIES, round r of each query of a
  group searched together as one run of the engine (:func:`in_lockstep`).
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Callable, Iterator

from ..seqdb import SequenceDB
from .options import JackhmmerOptions
from .queries import Query, query_of
from .queries import read_queries as _read_queries
from .report import HMMER_VERSION, PROVENANCE, Timing
from .search import PipelineStats, hmmsearch, make_backend, pipeline_stats


@dataclass
class Round:
    """One round of one query: what jackhmmer.c prints and saves of it."""

    iteration: int              # 1, 2, ...
    hmm: object                 # the round's model (pyhmmer HMM; --chkhmm saves it)
    hits: object                # its hits (pyhmmer TopHits), with the new/dropped marks
    stats: PipelineStats
    msa: object                 # the query and the included domains (the next round's input)
    n_new: int                  # included targets that the round before did not include
    prv_msa_nseq: int           # sequences of the alignment the model was built from (1: the query)
    prv_ntargets: int           # targets included the round before
    converged: bool
    timing: Timing | None = None


@dataclass
class JackhmmerResult:
    """One query sequence and its rounds, in order; the last round's hits are the tables'."""

    query: Query
    rounds: list


def read_queries(path: str | os.PathLike, fmt: str | None = None) -> SequenceDB:
    """jackhmmer's query sequences (:func:`.queries.read_queries`)."""
    return _read_queries(path, "jackhmmer searches with sequences", fmt)


def round_work(queries: SequenceDB) -> list:
    """A round's models as ``--device auto`` weighs them (:mod:`.crossover`): one per query,
    with as many nodes as the query has residues (round 1's single-sequence model has; later
    rounds' are about as long)."""
    return [SimpleNamespace(M=int(length)) for length in queries.lengths]


def _msa_author() -> str:
    # the -A and --chkali files say jackhmmer's version, and that gpu-search computed them
    return f"jackhmmer (HMMER {HMMER_VERSION}; computed by {PROVENANCE})"


def serial_search(targets, options: JackhmmerOptions) -> Callable:
    """A round's search on the CPU: ``search(hmm) -> (hits, stats)``, p7_Pipeline over
    ``targets`` (a ``DigitalSequenceBlock``, all of the database) in the calling thread,
    with a new pipeline each round, as jackhmmer.c creates one."""
    from pyhmmer.plan7 import Background, Pipeline

    def search(hmm):
        pipeline = Pipeline(hmm.alphabet, background=Background(hmm.alphabet), **options.pipeline_kwargs(options.Z))
        hits = pipeline.search_hmm(hmm, targets)
        return hits, pipeline_stats(hits, options)

    return search


def engine_search(db: SequenceDB, options: JackhmmerOptions, *, device: str, backend, cpus: int | None,
                  skip_long: bool) -> Callable:
    """Rounds' searches by hmmsearch's engine on ``device`` with ``backend`` (the database
    already on the GPU): ``search(hmms)`` yields each model's ``(hits, stats)`` in turn, the
    models' searches one run of the engine (filtered together, finished on every core)."""
    def search(hmms):
        results = hmmsearch(hmms, db, options, device=device, backend=backend, cpus=cpus, skip_long=skip_long)
        try:
            for result in results:
                yield result.hits, result.stats
        finally:
            results.close()           # (closed early: the engine's kill switch, its pools shut down)

    return search


class Iteration:
    """One query's rounds, jackhmmer.c's loop split where the round's model is searched:
    :meth:`model` builds the next round's model, :meth:`take` the rest of the round from its
    hits (ranking against the round before, the alignment of the included domains, the
    convergence test).  ``done`` after -N rounds or convergence; ``rounds`` what each gave.

    ``user_time``: the CPU seconds a round's report gives (this thread's where the round
    runs in it, the process's where the engine's threads run it)."""

    def __init__(self, seq, options: JackhmmerOptions, user_time: Callable = time.thread_time):
        from pyhmmer.easel import KeyHash
        from pyhmmer.plan7 import Background, Builder

        self.seq, self.options, self.user_time = seq, options, user_time
        # jackhmmer.c's builder (p7_builder_Create from its options): hand architecture (the
        # alignment's consensus columns are the model's), --seed, and the scoring system of the
        # first round's single-sequence model
        self.builder = Builder(seq.alphabet, architecture="hand", seed=options.seed, popen=options.popen,
                               pextend=options.pextend, score_matrix=options.mx)
        self.background = Background(seq.alphabet)
        self.ranking = KeyHash()        # the included targets of the round before (jackhmmer's kh)
        self.msa = None
        self.rounds: list[Round] = []
        self.done = False

    def model(self):
        """The next round's model."""
        self._clock, self._cpu = time.monotonic(), self.user_time()
        self._prv_ntargets = len(self.ranking)
        # (pyhmmer's builder writes Python's command line into the model's COM line, which
        # the --chkhmm files show; HMMER's is p7_Seqmodel's note in round 1, none after)
        if self.msa is None:
            hmm, _, _ = self.builder.build(self.seq, self.background)
            hmm.command_line = "[HMM created from a query sequence]"
            self._prv_msa_nseq = 1
        else:
            # (a copy: p7_Builder sets the alignment's relative weights, and the round before's
            # alignment is saved (--chkali) as jackhmmer.c saves it, before this build)
            hmm, _, _ = self.builder.build_msa(self.msa.copy(), self.background)
            hmm.command_line = None
            self._prv_msa_nseq = len(self.msa.sequences)
        self._hmm = hmm
        return hmm

    def take(self, hits, stats) -> None:
        """The round's hits (pyhmmer TopHits of :meth:`model`'s model) and statistics."""
        from pyhmmer.plan7 import Trace

        seq, iteration = self.seq, len(self.rounds) + 1
        hits.sort(by="key")
        n_new = hits.compare_ranking(self.ranking)
        # the query itself (aligned to its own model: a faux trace of matches only) comes
        # first in the alignment, then every included domain, every consensus column kept
        msa = hits.to_msa(seq.alphabet, sequences=[seq], traces=[Trace.from_sequence(seq)],
                          all_consensus_cols=True, digitize=True)
        msa.name = f"{seq.name}-i{iteration}"
        msa.accession = seq.accession or None
        msa.description = seq.description or None
        msa.author = _msa_author()
        converged = n_new == 0 and len(msa.sequences) <= self._prv_msa_nseq
        self.rounds.append(Round(iteration, self._hmm, hits, stats, msa, n_new, self._prv_msa_nseq,
                                 self._prv_ntargets, converged,
                                 Timing(user=self.user_time() - self._cpu, elapsed=time.monotonic() - self._clock)))
        self.msa = msa
        self.done = converged or iteration == self.options.N


def iterate(seq, search: Callable, options: JackhmmerOptions, stop: threading.Event | None = None) -> list[Round]:
    """jackhmmer.c's rounds for one query sequence (a pyhmmer ``DigitalSequence``), each
    round's model searched in this thread by ``search(hmm) -> (hits, stats)``
    (:func:`serial_search`).  ``stop`` set: no round is started (the search was stopped;
    the rounds so far are returned, for nobody)."""
    query = Iteration(seq, options)
    while not query.done and not (stop is not None and stop.is_set()):
        query.take(*search(query.model()))
    return query.rounds


def in_lockstep(seqs: list, search: Callable, options: JackhmmerOptions, threads: int) -> list[list[Round]]:
    """The rounds of several queries, round r of every query not yet done searched together by
    ``search(hmms)`` (:func:`engine_search`): each model's search is its own, so each
    query's rounds are those it has alone; the engine filters the models together and
    finishes their survivors on every core.  The models are built, and each round's hits
    taken as they come, on ``threads`` threads (a model built from a large alignment is
    weighted and calibrated for about a tenth of a second, outside Python's lock).  A
    round's time in the report is that of the round of every query searched with it."""
    queries = [Iteration(seq, options, time.process_time) for seq in seqs]
    active = queries
    with ThreadPoolExecutor(max_workers=max(1, threads), thread_name_prefix="jackhmmer") as pool:
        while active:
            results = search(list(pool.map(Iteration.model, active)))
            try:
                taken = [pool.submit(query.take, hits, stats) for query, (hits, stats) in zip(active, results)]
            finally:
                results.close()        # (every model's result taken; on a failure, the kill switch)
            for future in taken:
                future.result()
            active = [query for query in active if not query.done]
    return [query.rounds for query in queries]


# Queries whose rounds run together on the engine: their models share the filters' launches
# and the finishing threads; all their rounds' hits and alignments are held until the last
# of them is done.
LOCKSTEP_QUERIES = 64


def jackhmmer(queries: SequenceDB, db: SequenceDB, options: JackhmmerOptions | None = None, *,
              device: str = "cpu", cpus: int | None = None, skip_long: bool = False, gpus=None, backend=None,
              callback: Callable[[int], None] | None = None) -> Iterator[JackhmmerResult]:
    """Search each query sequence of ``queries`` against ``db`` in rounds, as jackhmmer;
    results in query order.

    Args:
        queries: the query sequences (:func:`read_queries`).
        db: the target database (all of it: each round's model comes from the round before).
        options: jackhmmer's options (defaults if None).
        device: 'cpu' (pyhmmer's serial pipeline, each query on one thread), 'gpu' or
            'reference' (hmmsearch's engine: its filter backend, survivors finished on every
            core).
        cpus: threads (all cores by default).
        skip_long: leave out sequences over HMMER's 100,000-residue limit instead of
            refusing the database.
        gpus, backend: as :func:`gpu_search.hmmer.search.hmmsearch` (the backend built once
            here where not given: the database uploaded once for every round).
        callback: called with the number of queries done, after each.
    """
    import numpy as np
    from pyhmmer.easel import Alphabet

    options = options or JackhmmerOptions()
    abc = Alphabet.amino()
    n = queries.n_seqs

    skipped = db.check_for_hmmsearch(skip_long, "jackhmmer")      # (refused here, naming jackhmmer)

    def query(i: int):
        return queries.digital_block([i], abc)[0]

    if device != "cpu":
        backend = backend or make_backend(device, db, gpus)
        search = engine_search(db, options, device=device, backend=backend, cpus=cpus, skip_long=skip_long)
        for first in range(0, n, LOCKSTEP_QUERIES):
            group = range(first, min(n, first + LOCKSTEP_QUERIES))
            for i, rounds in zip(group, in_lockstep([query(i) for i in group], search, options,
                                                    cpus or os.cpu_count() or 1)):
                if callback:
                    callback(i + 1)
                yield JackhmmerResult(query_of(queries, i), rounds)
        return

    # (the CPU path searches each round serially with Z unset, as jackhmmer.c does: HMMER then
    # keeps the weak hits reportable against the number of targets seen so far, and the name
    # columns are as wide as the longest of them)
    searched = None if skipped is None else np.setdiff1d(np.arange(db.n_seqs), skipped)
    search = serial_search(db.digital_block(searched, abc), options)

    stop = threading.Event()        # the kill switch: a stopped search starts no other round

    def one(i: int) -> JackhmmerResult:
        return JackhmmerResult(query_of(queries, i), iterate(query(i), search, options, stop))

    workers = max(1, min(cpus or os.cpu_count() or 1, n))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="jackhmmer") as pool:
        try:
            for done, result in enumerate(pool.map(one, range(n)), start=1):
                if callback:
                    callback(done)
                yield result
        finally:                    # (Ctrl-C, an error, the results abandoned: the queries under
            stop.set()              # way end with their round, before the pool's shutdown waits)


def write_outputs(results, options: JackhmmerOptions, *, seqfile: str, seqdb: str, output=None,
                  alignment=None, tblout=None, domtblout=None, chkhmm=None, chkali=None,
                  progress=None, argv_line: str = "jackhmmer") -> None:
    """jackhmmer's main report, -A, tables and checkpoint files; all files or none.

    As jackhmmer.c: the report's query blocks (:func:`report.write_iterative_query`); -A,
    --tblout and --domtblout of each query's last round; --chkhmm PREFIX and --chkali PREFIX
    each round's model (HMMER's text format) and alignment (Pfam's Stockholm) in
    PREFIX-<round>.hmm and PREFIX-<round>.sto, the queries one after the other in each.
    """
    import io
    import sys

    from ..output import OutputSet
    from . import report

    textw = 0 if options.notextw else options.textw
    with OutputSet() as outs:
        main_fh = outs.open(output) if output else io.StringIO()
        ali_fh = outs.open(alignment) if alignment else None
        tables = [(outs.open(path), fmt) for path, fmt in ((tblout, "targets"), (domtblout, "domains")) if path]
        checkpoints = {}            # file name -> handle, opened at the first round that has one

        def checkpoint(prefix, iteration, suffix):
            name = f"{prefix}-{iteration}.{suffix}"
            if name not in checkpoints:
                checkpoints[name] = outs.open(name)
            return checkpoints[name]

        report.write_header(main_fh, seqfile, seqdb, options,
                            {"o": output, "A": alignment, "tblout": tblout, "domtblout": domtblout,
                             "chkhmm": chkhmm, "chkali": chkali}, program=report.JACKHMMER)
        first = True
        try:
            for result in results:
                for rnd in result.rounds:
                    if chkhmm:
                        buf = io.BytesIO()
                        rnd.hmm.write(buf, binary=False)
                        checkpoint(chkhmm, rnd.iteration, "hmm").write(buf.getvalue().decode("utf-8", "replace"))
                    if chkali:
                        report.write_msa(checkpoint(chkali, rnd.iteration, "sto"), rnd.msa, pfam=True)
                report.write_iterative_query(main_fh, result, options, alignment)
                last = result.rounds[-1]
                if ali_fh is not None:
                    report.write_msa(ali_fh, last.msa, pfam=textw == 0)
                if tables:
                    # jackhmmer.c names the query sequence in the tables; pyhmmer's TopHits.write
                    # names the hits' model, <query>-i<round> from round 2 on.  The model is given
                    # the query's name now that its checkpoint and alignments are written (and
                    # its accession, which round 1's model, p7_SingleBuilder's, has not).
                    last.hmm.name = result.query.name
                    last.hmm.accession = result.query.accession or None
                    for fh, fmt in tables:
                        buf = io.BytesIO()
                        last.hits.write(buf, format=fmt, header=first)
                        fh.write(buf.getvalue().decode())
                first = False
        finally:
            # a stop or an error: the search's kill switch set now, before the interpreter's
            # exit waits for the threads under way
            close = getattr(results, "close", None)
            if close is not None:
                close()
        if progress:
            progress.close()
        report.write_footer(main_fh)
        for fh, _ in tables:
            report.write_tabular_tail(fh, seqfile, seqdb, argv_line, program=report.JACKHMMER)
        if not output:
            sys.stdout.write(main_fh.getvalue())
            sys.stdout.flush()
        outs.commit()
