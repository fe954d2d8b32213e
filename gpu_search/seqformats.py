"""Sequence files in HMMER's other formats, read by Easel as HMMER's programs read them.

HMMER reads its sequence files through Easel, which knows unaligned formats (FASTA, EMBL,
GenBank, DDBJ, UniProt) and alignments (Stockholm, Pfam, A2M, aligned FASTA, Clustal,
PHYLIP, PSI-BLAST, SELEX: read as their sequences without gaps), told by ``--tformat`` or
``--qformat`` or guessed from the file's first lines.  FASTA, a ``.gsdb`` and a BLAST
database are read by :mod:`.seqdb`; every other format here, through pyhmmer's
``SequenceFile`` (Easel itself, so names, accessions, descriptions and residues are
HMMER's), into the same :class:`~.seqdb.SequenceDB`, accessions kept (HMMER's tables and
reports show them).

A format is recognised in a plain or gzip-compressed file, as HMMER's programs recognise it
(a pipe in a format other than FASTA needs the option: the FASTA reader has taken its first
bytes), and only one that its first lines tell apart: Easel also takes
any lines of two words for SELEX (``hello world`` is a sequence 'hello' there), which here
is no sequence file without ``--tformat selex``, nor is PSI-BLAST's format.
"""

from __future__ import annotations

import gzip
import io
import os
import stat
from pathlib import Path

import numpy as np

from .errors import EmptyInputError, FormatError, OptionError, SequenceError, printable
from .seqdb import (MAX_SEQUENCE, NotFastaError, SequenceDB, _check_protein, _ends, check_readable,
                    open_database, read_fasta, shown)

# Easel's names of sequence file formats (esl_sqio_EncodeFormat, unaligned and aligned), which
# HMMER's --qformat and --tformat take (any case)
EASEL_SEQ_FORMATS = ("fasta", "embl", "genbank", "ddbj", "uniprot", "ncbi", "daemon", "hmmpgmd", "fmindex",
                     "stockholm", "pfam", "a2m", "psiblast", "selex", "afa", "clustal", "clustallike", "phylip",
                     "phylips")
# of those, the formats recognised without the option (each has its own first lines)
RECOGNISED = ("embl", "uniprot", "genbank", "ddbj", "stockholm", "pfam", "clustal", "clustallike", "phylip",
              "phylips")
# what is no sequence file to read here: a BLAST database (read without the option),
# and the files of HMMER's search daemon and its FM-index
NOT_READ = {"ncbi": "give a BLAST database without --{option}: gpu-search reads it as blastp does",
            "daemon": "HMMER's daemon files are not read", "hmmpgmd": "HMMER's daemon files are not read",
            "fmindex": "FM-index files are not read"}
GUESS_BYTES = 1 << 16           # of a gzip file, read to recognise its format


def check_format(value: str | None, option: str) -> str | None:
    """``--qformat``/``--tformat`` VALUE as Easel names it (lower case); None for none given.
    A name Easel does not know, or a format read nowhere here, is an OptionError."""
    if value is None:
        return None
    fmt = value.lower()
    if fmt not in EASEL_SEQ_FORMATS:
        raise OptionError(f"--{option} {printable(value, 40)}: not a sequence file format "
                          f"(HMMER's: {', '.join(EASEL_SEQ_FORMATS)})")
    if fmt in NOT_READ:
        raise OptionError(f"--{option} {value}: " + NOT_READ[fmt].format(option=option))
    return fmt


def open_sequences(path: str | os.PathLike, fmt: str | None, option: str) -> SequenceDB:
    """A HMMER program's target database: in format ``fmt`` (from :func:`check_format`) or,
    for None, FASTA, a ``.gsdb`` or a BLAST database as :func:`.seqdb.open_database` reads
    them, or another format Easel recognises in a plain or gzipped file.  ``option``: the
    option that names the format ("tformat"), for messages."""
    return _read(open_database, path, fmt, option)


def open_queries(path: str | os.PathLike, fmt: str | None, option: str) -> SequenceDB:
    """A query file (phmmer's, jackhmmer's, hmmscan's): FASTA read as ``read_fasta`` reads a
    small file, or another format as :func:`open_sequences` reads it."""
    return _read(lambda p: read_fasta(p, plain_scan=True), path, fmt, option)


def _read(read_fasta_input, path, fmt: str | None, option: str) -> SequenceDB:
    """``read_fasta_input(path)`` where the format is FASTA or not given (Easel's guess where
    the file is not FASTA), else Easel's reading in ``fmt``."""
    if fmt not in (None, "fasta"):
        return read_easel(path, fmt)
    try:
        return read_fasta_input(path)
    except NotFastaError as exc:
        if fmt is None:
            return _guessed(path, exc, option)
        raise


def _guessed(path, not_fasta: NotFastaError, option: str) -> SequenceDB:
    """A file that is not FASTA, in the format Easel recognises from its first lines: a plain
    or gzip file (not a pipe: the FASTA reader has read its first bytes already) and a format
    of RECOGNISED; else ``not_fasta``, saying how to name one."""
    from pyhmmer.easel import SequenceFile

    unknown = FormatError(f"{not_fasta}; for another of HMMER's formats give --{option} FORMAT")
    try:
        fh = open(path, "rb")
    except OSError:
        raise unknown from None
    with fh:
        try:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise unknown
            if fh.read(2) == b"\x1f\x8b":
                fh.seek(0)
                # the first lines are enough to tell the format (Easel's guess reads no more)
                with gzip.open(fh) as unzipped:
                    source = io.BytesIO(unzipped.read(GUESS_BYTES))
            else:
                source = _by_descriptor(fh)
            with SequenceFile(source) as sf:
                fmt = sf.format
            if fmt not in RECOGNISED:
                raise unknown
            fh.seek(0)
        except Exception:
            raise unknown from None
        return _read_open(fh, fmt, str(path))          # (read from this opening of the file)


def _by_descriptor(fh) -> str:
    """The path Easel opens for an open plain file: its descriptor's, never the file's name
    (Easel reads a name ending in '.gz' through ``gzip -dc NAME`` in a shell)."""
    return f"/dev/fd/{fh.fileno()}"


def read_easel(path: str | os.PathLike, fmt: str) -> SequenceDB:
    """Every sequence of ``path`` (plain or gzip, a pipe too) in Easel's format ``fmt``, read
    by Easel in its amino alphabet as HMMER's programs read a protein file; checked as a
    FASTA file is (none empty, protein)."""
    path = Path(path)
    source = str(path)
    check_readable(path)
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise FormatError(f"{source}: cannot read as {fmt} ({printable(str(exc), 100)})") from None
    with fh:
        return _read_open(fh, fmt, source)


def _read_open(fh, fmt: str, source: str) -> SequenceDB:
    """:func:`read_easel` of a file open at its start (``source``: its name, for messages)."""
    try:
        info = os.fstat(fh.fileno())
        if stat.S_ISREG(info.st_mode) and fh.read(2) != b"\x1f\x8b":
            if info.st_size == 0:
                raise EmptyInputError(f"{source}: file is empty")
            return _read_sequences(_by_descriptor(fh), fmt, source)
        fh.seek(0) if fh.seekable() else None
        data = fh.read()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise FormatError(f"{source}: cannot read as {fmt} ({printable(str(exc), 100)})") from None
    if not data.strip():
        raise EmptyInputError(f"{source}: file is empty")
    return _read_sequences(io.BytesIO(data), fmt, source)


def _read_sequences(src, fmt: str, source: str) -> SequenceDB:
    """The sequences Easel reads from ``src`` (a path it opens, or a file object)."""
    from pyhmmer.easel import Alphabet, SequenceFile

    names, headers, descriptions, accessions, pieces = [], [], [], [], []
    try:
        with SequenceFile(src, format=fmt, digital=True, alphabet=Alphabet.amino()) as sf:
            for seq in sf:
                name, acc, desc = (x.encode("utf-8", "surrogateescape")
                                   for x in (seq.name, seq.accession, seq.description))
                names.append(name)
                headers.append(name + b" " + desc if desc else name)
                # Easel's description as it is (a header line would lose its leading spaces)
                descriptions.append(desc)
                accessions.append(acc)
                pieces.append(np.asarray(seq.sequence, dtype=np.uint8))
                if len(pieces[-1]) == 0:
                    raise SequenceError(f"{source}: sequence '{shown(seq.name)}' is empty; remove it first")
                if len(pieces[-1]) > MAX_SEQUENCE:
                    raise SequenceError(f"{source}: sequence '{shown(seq.name)}' is longer than "
                                        f"{MAX_SEQUENCE:,} residues")
    except SequenceError:
        raise
    except UnicodeDecodeError:
        raise FormatError(f"{source}: a name, accession or description that is not UTF-8 text (pyhmmer "
                          f"reads such {fmt} files no further)") from None
    except Exception as exc:
        # Easel's parse errors (ValueError "Could not parse file: Line 3: ..."), whatever the
        # reader raises on a damaged file: the file's fault
        raise FormatError(f"{source}: not a valid {fmt} file ({printable(str(exc), 200)})") from None
    if not pieces:
        raise EmptyInputError(f"{source}: no sequences (read as {fmt})")
    residues = np.concatenate(pieces)
    _check_protein(residues[:1 << 22], source)

    def packed(blobs):
        return b"".join(blobs), _ends([np.array([len(b) for b in blobs], dtype=np.int64)])

    (nb, no), (hb, ho), (db, do), (ab, ao) = map(packed, (names, headers, descriptions, accessions))
    return SequenceDB(residues, _ends([np.array([len(p) for p in pieces], dtype=np.int64)]), nb, no, hb, ho,
                      source=source, description_blob=db, description_offsets=do,
                      accession_blob=ab, accession_offsets=ao if any(accessions) else None)
