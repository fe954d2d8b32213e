"""phmmer: protein sequence queries against a protein database, on hmmsearch's engine.

HMMER's phmmer (phmmer.c) builds one profile HMM from each query sequence
(p7_SingleBuilder: the query's residues scored with a substitution matrix and
gap probabilities, then calibrated) and runs hmmsearch's pipeline with it.  So
does this module: :func:`build_models` builds the models with pyhmmer's
``Builder``, which calls p7_SingleBuilder, set up as phmmer.c sets up its builder;
:func:`phmmer` searches them with :func:`gpu_search.hmmer.search.hmmsearch` on any
device, and hands each result on with its query sequence, whose name, length,
accession and description phmmer's reports print.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields
from typing import Iterable, Iterator

from ..seqdb import SequenceDB
from .options import PhmmerOptions
from .queries import Query, query_of
from .queries import read_queries as _read_queries
from .search import SearchResult, hmmsearch


@dataclass
class PhmmerResult(SearchResult):
    """hmmsearch's result of one query's model, with the query sequence."""

    query: Query | None = None


def read_queries(path: str | os.PathLike, fmt: str | None = None) -> SequenceDB:
    """phmmer's query sequences (:func:`.queries.read_queries`)."""
    return _read_queries(path, "phmmer searches with sequences; search with HMMs by hmmsearch", fmt)


def build_models(queries: SequenceDB, options: PhmmerOptions, threads: int | None = None) -> list:
    """One profile HMM per query sequence, in file order, as phmmer.c builds them.

    phmmer.c makes one builder (p7_builder_Create without options: seed 42, reseeded
    before each model, so each model is the same whatever came before it), seeded
    with --seed where > 0, with the score system of --mx, --popen and --pextend.
    Each thread here builds with its own copy of such a builder (p7_SingleBuilder
    runs outside Python's lock): the models are those of one builder in turn.
    """
    from pyhmmer.easel import Alphabet
    from pyhmmer.plan7 import Background, Builder

    abc = Alphabet.amino()
    local = threading.local()

    def build(i: int):
        if not hasattr(local, "builder"):
            local.builder = Builder(abc, seed=options.builder_seed, popen=options.popen,
                                    pextend=options.pextend, score_matrix=options.mx)
            local.background = Background(abc)
        seq = queries.digital_block([i], abc)[0]
        hmm, _, _ = local.builder.build(seq, local.background)
        return hmm

    n = queries.n_seqs
    workers = max(1, min(threads or os.cpu_count() or 1, n))
    if workers == 1:
        return [build(i) for i in range(n)]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="phmmer-build") as pool:
        return list(pool.map(build, range(n)))


def with_queries(queries: SequenceDB, results: Iterable[SearchResult]) -> Iterator[PhmmerResult]:
    """hmmsearch's results of the queries' models (in query order), each with its query."""
    for i, result in enumerate(results):
        values = {f.name: getattr(result, f.name) for f in fields(SearchResult)}
        yield PhmmerResult(**values, query=query_of(queries, i))


def phmmer(queries: SequenceDB, db: SequenceDB, options: PhmmerOptions | None = None, *,
           hmms: list | None = None, device: str = "cpu", cpus: int | None = None,
           **kwargs) -> Iterator[PhmmerResult]:
    """Search every query sequence of ``queries`` against ``db``, as phmmer; results in query
    order.

    Args:
        queries: the query sequences (:func:`read_queries`).
        db: the target database.
        options: phmmer's options (defaults if None).
        hmms: the queries' models, where already built (:func:`build_models`).
        device, cpus, kwargs: as :func:`gpu_search.hmmer.search.hmmsearch`.
    """
    options = options or PhmmerOptions()
    if hmms is None:
        hmms = build_models(queries, options, cpus)
    yield from with_queries(queries, hmmsearch(hmms, db, options, device=device, cpus=cpus, **kwargs))
