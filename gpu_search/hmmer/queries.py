"""Query sequences of phmmer, jackhmmer and hmmscan: read from a protein FASTA file (or
another of HMMER's formats, :mod:`..seqformats`), and shown in the reports as HMMER shows an
ESL_SQ."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from ..errors import FormatError, printable
from ..seqdb import SequenceDB
from ..seqformats import open_queries


@dataclass(frozen=True)
class Query:
    """A query sequence as the reports show it (Easel's ESL_SQ fields)."""

    name: str
    length: int
    accession: str = ""         # FASTA has none; EMBL, UniProt and Stockholm files may
    description: str = ""


def query_of(queries: SequenceDB, i: int) -> Query:
    return Query(name=queries.name(i), length=int(queries.lengths[i]), accession=queries.accession(i),
                 description=queries.description(i))


def read_queries(path: str | os.PathLike, hint: str, fmt: str | None = None) -> SequenceDB:
    """The query sequences of a protein FASTA file (plain or gzip; a pipe too), read as the
    databases are (Easel's rules; an empty file, a file that is not FASTA, nucleotides and
    a sequence without residues are refused, each with its one-line error; a small file is
    scanned without numba, see ``read_fasta``), or of a file in --qformat ``fmt`` or in
    another format Easel recognises (:func:`..seqformats.open_queries`).  An HMM file
    given instead is named as one, with ``hint`` (what the program takes where)."""
    try:
        return open_queries(path, fmt, "qformat")
    except FormatError:
        if _is_hmm_file(path):
            raise FormatError(f"{printable(path)}: this is a profile HMM file, not protein FASTA ({hint})") from None
        raise


def _is_hmm_file(path) -> bool:
    """Whether a regular file starts as a text or binary HMM file does (a pipe is never read
    here: it is read once)."""
    from pyhmmer.plan7 import HMMFile

    try:
        if not os.path.isfile(path):
            return False
        with open(path, "rb") as fh:
            head = fh.read(5)
    except OSError:
        return False
    return head == b"HMMER" or int.from_bytes(head[:4], sys.byteorder) in HMMFile._MAGIC
