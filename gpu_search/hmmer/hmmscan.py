"""hmmscan: each query sequence searched against every model of a profile database.

HMMER's hmmscan (hmmscan.c) reads its database pressed by hmmpress: the MSV
filter part of each model from ``.h3f``, the rest from ``.h3p`` (``.h3m`` and
the ``.h3i`` index only have to be there).  For each query sequence it makes one
pipeline in scan mode and runs every model through it, in file order:
p7_pli_NewModel, p7_Pipeline, and the results grouped per query.  Z, unless
``-Z`` sets it, is the number of models (counted as they are read: the
threshold for keeping a hit grows with it, which decides which weak hits are
kept and so the width of the reports' name columns).

This module does the same with pyhmmer (HMMER 3.4's own code): the models as
HMMER's optimized profiles (:func:`open_hmmdb`: read from the pressed files, or
configured from a text or binary HMM file as hmmpress configures them), then
pyhmmer's ``Pipeline.scan_seq`` per query, which is hmmscan's serial loop.
Queries run on several threads; each has its own pipeline, so the results are
those of serial hmmscan whatever the thread count.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ..errors import AlphabetError, EmptyInputError, FormatError, InputFileError, printable
from ..seqdb import SequenceDB, check_readable
from .options import SearchOptions
from .queries import Query, query_of
from .queries import read_queries as _read_queries
from .search import PipelineStats, pipeline_stats

# the files hmmpress writes beside an HMM file (hmmpress.c): binary models, their SSI
# index, the MSV filter part of the optimized profiles and the rest of them
PRESSED_SUFFIXES = (".h3m", ".h3i", ".h3f", ".h3p")

# hmmpress configures each model's profile for this length (p7_ProfileConfig, local mode)
PRESS_LENGTH = 400


@dataclass
class ModelDB:
    """The database's models as HMMER's optimized profiles, in file order."""

    path: str                   # as named on the command line
    profiles: object            # pyhmmer OptimizedProfileBlock
    pressed: bool               # read from hmmpress's files

    @property
    def n_models(self) -> int:
        return len(self.profiles)


@dataclass
class ScanResult:
    """One query sequence's hits (a pyhmmer ``TopHits`` of models) and pipeline statistics."""

    query: Query
    hits: object
    stats: PipelineStats


# --- the database ----------------------------------------------------------------------


def pressed_base(path: str | os.PathLike) -> str | None:
    """The name hmmpress was given, where ``path`` names a pressed database; else None.

    HMMER's rule (p7_hmmfile_Open): ``X`` is pressed where ``X.h3m`` exists, the text
    file ``X`` itself may be gone; a gzipped file or a pipe never is.  Beyond HMMER,
    ``X.h3m`` named itself is the pressed database ``X`` where another of its files
    is there (HMMER reads it as an unpressed binary file, and refuses it)."""
    p = os.fspath(path)
    if p.endswith(".gz") or p == "-":
        return None
    if os.path.exists(p + ".h3m"):
        return p
    if p.endswith(".h3m") and any(os.path.exists(p[:-4] + s) for s in PRESSED_SUFFIXES[1:]):
        return p[:-4]
    return None


def open_hmmdb(path: str | os.PathLike, threads: int | None = None) -> ModelDB:
    """The models of HMMDB: a pressed database (its ``.h3f`` and ``.h3p`` files, as hmmscan
    reads them), or an HMM file (text or binary, plain or gzip, checked as hmmsearch checks
    it) whose models are configured as hmmpress configures them.

    Raises:
        InputFileError (a file missing), EmptyInputError, FormatError (damaged, or pressed
        files that do not belong together), AlphabetError (nucleotide models).
    """
    base = pressed_base(path)
    if base is not None:
        profiles = _read_pressed(os.fspath(path), base)
        pressed = True
    else:
        from .models import read_hmms

        profiles = _configure(read_hmms(path, threads=threads, program="hmmscan"), threads)
        pressed = False
    return ModelDB(path=os.fspath(path), profiles=profiles, pressed=pressed)


def _configure(hmms: list, threads: int | None):
    """Each model's optimized profile as hmmpress makes it: p7_ProfileConfig at L = 400,
    local, then p7_oprofile_Convert (each thread with its own null model)."""
    from pyhmmer.easel import Alphabet
    from pyhmmer.plan7 import Background, OptimizedProfileBlock, Profile

    abc = Alphabet.amino()
    local = threading.local()

    def convert(hmm):
        if not hasattr(local, "background"):
            local.background = Background(abc)
        profile = Profile(hmm.M, abc)
        profile.configure(hmm, local.background, PRESS_LENGTH)
        return profile.to_optimized()

    workers = max(1, min(threads or os.cpu_count() or 1, len(hmms)))
    if workers == 1:
        optimized = [convert(hmm) for hmm in hmms]
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="hmmscan-profiles") as pool:
            optimized = list(pool.map(convert, hmms))
    return OptimizedProfileBlock(abc, optimized)


def _read_pressed(shown: str, base: str):
    """The optimized profiles of a pressed database, checked to be one database: every file
    there, the SSI index (.h3i) holding each model of the profile files (.h3f, .h3p) at the
    place in the model file (.h3m) where the profile says it is.  (HMMER reads mismatched
    files silently, or crashes on them.)"""
    from pyhmmer.easel import Alphabet, SSIReader
    from pyhmmer.plan7 import HMMPressedFile, OptimizedProfileBlock

    for suffix in PRESSED_SUFFIXES:
        if not os.path.exists(base + suffix):
            raise InputFileError(f"{printable(shown)}: a pressed HMM database ({printable(base)}.h3m) without its "
                                 f"{suffix} file: press the HMM file again (hmmpress -f)")
        check_readable(Path(base + suffix))
    mismatch = (f"{printable(shown)}: the pressed files {printable(base)}.h3m, .h3i, .h3f, .h3p are damaged or "
                f"do not belong together")
    try:
        with HMMPressedFile(base) as pf:
            indexed = len(pf)
            profiles = list(pf)
        index = SSIReader(base + ".h3i")
        entries = [index.find_name(om.name) for om in profiles]
    except Exception as exc:       # pyhmmer's ValueError, KeyError of a name not indexed, EaselError...
        raise FormatError(f"{mismatch} ({type(exc).__name__}: {printable(str(exc), 80)}): press the HMM file "
                          f"again (hmmpress -f)") from None
    if not profiles:
        raise EmptyInputError(f"{printable(shown)}: no models in the pressed database")
    if indexed != len(profiles):
        raise FormatError(f"{mismatch} (the .h3i index holds {indexed} models, the profiles {len(profiles)}): "
                          f"press the HMM file again (hmmpress -f)")
    with open(base + ".h3m", "rb") as mfp:
        magic = mfp.read(4)
        size = os.fstat(mfp.fileno()).st_size
        for om, entry in zip(profiles, entries):
            at = om.offsets.model
            mfp.seek(at if at is not None else 0)
            if at is None or entry.record_offset != at or at >= size or mfp.read(4) != magic:
                raise FormatError(f"{mismatch} (model '{printable(om.name)}' is not where the index and the "
                                  f"profiles place it): press the HMM file again (hmmpress -f)")
    for om in profiles:
        if om.alphabet.type != "amino":
            raise AlphabetError(
                f"{printable(shown)}: model '{printable(om.name)}' is a {om.alphabet.type} model; "
                f"gpu-search hmmscan searches protein sequences (use nhmmscan for nucleotide models)")
    return OptimizedProfileBlock(Alphabet.amino(), profiles)


def check_cutoffs(db: ModelDB, options: SearchOptions) -> None:
    """--cut_ga/nc/tc need every model to carry that cutoff.  (HMMER's hmmscan checks a model
    only where it passes the MSV filter, and then leaves it out without a word, its
    thresholds those of the model before: every model is checked here, before the search.)"""
    from .models import check_cutoff

    if options.bit_cutoffs:
        for om in db.profiles:
            check_cutoff(om, options.bit_cutoffs)


# --- the queries -----------------------------------------------------------------------


def read_queries(path: str | os.PathLike) -> SequenceDB:
    """hmmscan's query sequences (:func:`.queries.read_queries`)."""
    return _read_queries(path, "the HMM database comes first: hmmscan HMMDB SEQFILE")


# --- the search ------------------------------------------------------------------------


def _stats(hits, options: SearchOptions) -> PipelineStats:
    """The numbers of p7_pli_Statistics, from the pipeline pyhmmer keeps with the hits: as a
    search's, but the models are those scanned."""
    return dataclasses.replace(pipeline_stats(hits, options), nmodels=int(hits.searched_models))


def hmmscan(queries: SequenceDB, db: ModelDB, options: SearchOptions | None = None, *,
            cpus: int | None = None, callback=None) -> Iterator[ScanResult]:
    """Search every query sequence against every model of ``db``, as HMMER's hmmscan;
    results in query order.

    Args:
        queries: the query sequences (protein FASTA, read as phmmer reads its queries).
        db: the models (:func:`open_hmmdb`).
        options: HMMER's reporting, inclusion and filter options (defaults if None);
            ``Z`` None: the number of models, as hmmscan counts them.
        cpus: threads, each scanning its own queries (all cores by default).
        callback: called with (query index, number of queries) as each is done.
    """
    import pyhmmer
    from pyhmmer.easel import Alphabet

    options = options or SearchOptions()
    abc = Alphabet.amino()
    block = queries.digital_block(None, abc)
    n = queries.n_seqs
    threads = max(1, min(cpus or os.cpu_count() or 1, n))
    done = 0

    def progress(query, total):
        nonlocal done
        done += 1
        if callback is not None:
            callback(done, total)

    # (Z None: pyhmmer's pipeline counts the models as serial hmmscan does)
    kwargs = options.pipeline_kwargs(options.Z)
    results = pyhmmer.hmmscan(block, db.profiles, cpus=threads, callback=progress, **kwargs)
    for i, hits in enumerate(results):
        yield ScanResult(query=query_of(queries, i), hits=hits, stats=_stats(hits, options))

