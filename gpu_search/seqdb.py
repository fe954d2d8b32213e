"""The protein sequence database: FASTA (plain or gzip) or a pre-digitized .gsdb.

All sequences are held in a few flat arrays shared by every stage, CPU and
GPU alike (the layout of the early GPU hmmsearch papers: one residue stream plus offsets):

    residues   uint8   every residue, digitized with Easel's amino alphabet
                       (ACDEFGHIKLMNPQRSTVWY = 0..19, '-' 20, BJZOUX 21..26,
                       '*' 27, '~' 28: the codes HMMER's profiles index)
    offsets    int64   sequence i is residues[offsets[i]:offsets[i+1]]
    lengths    int32   offsets[i+1] - offsets[i]
    names, headers   packed bytes with offsets (decoded on demand): Easel's name of each
                     sequence, and its header line after '>' as written (BLAST's title;
                     Easel's description is cut from it)
    length_order  int32   sequence indices by decreasing length (for batching)
    columns  packed text with offsets, only for a BLAST database made with -parse_seqids:
             each sequence's BLAST+ title and id columns (BLAST_COLUMNS), which its
             deflines give and a FASTA header does not
    accessions, descriptions  packed text with offsets, only for a file read by Easel in
             one of HMMER's other formats (:mod:`.seqformats`: EMBL's AC and DE lines,
             Stockholm's #=GS AC and DE), which HMMER's outputs show; FASTA has no
             accession, and its descriptions are cut from the header lines

A ``.gsdb`` file is these arrays written once (``gpu-search makedb``), each
64-byte aligned after a small JSON header, and memory-mapped on load.  It
records its own sequence and residue counts and, for a shard, those of the
whole database, so a search of one shard can use the whole database's size
for its E-values.

FASTA is read the way Easel reads it (same letters accepted, same codes):
letters in either case, '*' and '~', '.' or '_' as gap; spaces and tabs
ignored; lines ending with LF, CR LF or CR alone (old Mac files); anything
else is an error, as in HMMER.  blastp reads it as BLAST+ 2.12 does instead
(``read_fasta``'s ``blast``, :func:`_blast_map`): what is not a letter or '*'
is dropped with a warning, and a .gsdb's '.', '_' and '~' are left out
(:func:`blast_view`).  An input is read once, a piece at a time, so
that a pipe works as a file does; ``makedb`` writes as it reads.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import itertools
import json
import os
import re
import shutil
import stat
import sys
import tempfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .errors import (AlphabetError, EmptyInputError, FormatError, InputFileError, OutputError,
                     SequenceError)
from .output import atomic_path

AMINO_SYMBOLS = "ACDEFGHIKLMNPQRSTVWY-BJZOUX*~"
K_AMINO = 20        # canonical residues
KP_AMINO = 29       # all codes
GAP_CODE = 20

IGNORED = 254       # byte maps: whitespace
ILLEGAL = 255       # byte maps: not allowed in a sequence

GSDB_MAGIC = b"GSDB\x00\x00\x00\x01"
GSDB_ALIGN = 64
# 2: the header line kept whole (BLAST's titles keep its spacing); format 1 kept Easel's
# description alone
GSDB_VERSION = 2
# a -parse_seqids BLAST database's columns kept per sequence (SequenceDB.blast_columns), in
# this order; sseqid is the sequence's name.  sallaccver (each defline's saccver, ';' between
# them) is no BLAST+ column: the pairwise report shows it
BLAST_COLUMNS = ("stitle", "salltitles", "sallseqid", "sacc", "saccver", "sallacc", "sallaccver")
HMMER_MAX_LENGTH = 100_000  # pyhmmer/HMMER 3.4 comparison pipeline limit


def _amino_map() -> np.ndarray:
    """Byte -> digital code table of Easel's amino alphabet for FASTA input."""
    table = np.full(256, ILLEGAL, dtype=np.uint8)
    for code, sym in enumerate(AMINO_SYMBOLS):
        if sym == "-":
            continue  # Easel's FASTA reader rejects '-' (it takes '.' and '_' as gaps)
        table[ord(sym)] = code
        table[ord(sym.lower())] = code
    table[ord(".")] = table[ord("_")] = GAP_CODE
    for ws in b" \t\r\n":
        table[ws] = IGNORED
    return table


AMINO_MAP = _amino_map()


def _blast_map(hyphen: int) -> np.ndarray:
    """Byte -> code table of blastp's reader, as NCBI's CFastaReader reads protein FASTA in
    BLAST+ 2.12: letters in either case and '*' are residues (Easel's codes); spaces, tabs,
    vertical tabs and form feeds are ignored; ';' starts a comment to the line's end, '!'
    and '#' a comment line when first on it; any other byte ('.', '_', '~', digits, other
    punctuation, control and non-ASCII bytes) is dropped with a warning.  ``hyphen``: the
    code of '-' (dropped in blastp's queries, a gap residue in makeblastdb's databases)."""
    from ._fasta import COMMENT, DROPPED, LINE_COMMENT

    table = np.full(256, DROPPED, dtype=np.uint8)
    for code, sym in enumerate(AMINO_SYMBOLS):
        if sym.isalpha() or sym == "*":
            table[ord(sym)] = table[ord(sym.lower())] = code
    table[ord("-")] = hyphen
    table[ord(";")] = COMMENT
    table[ord("!")] = table[ord("#")] = LINE_COMMENT
    for ws in b" \t\r\n\x0b\x0c":
        table[ws] = IGNORED
    return table


@functools.lru_cache(maxsize=None)
def _blast_maps() -> dict:
    """blastp's two tables (queries, databases); made on first use: they need the compiled
    scanner's constants, and a search that reads no FASTA imports no numba."""
    from ._fasta import DROPPED

    return {"query": _blast_map(DROPPED), "db": _blast_map(GAP_CODE)}

# Easel codes a .gsdb (Easel's rules) may hold that blastp's reader drops: '.' and '_' (gaps), '~'
BLAST_DROPPED = np.zeros(256, dtype=bool)
BLAST_DROPPED[[GAP_CODE, AMINO_SYMBOLS.index("~")]] = True


def amino_degeneracy() -> np.ndarray:
    """Easel's amino degeneracy table (Kp, K): which canonical residues each code stands for.

    From esl_alphabet.c create_amino(): B=ND, J=IL, Z=QE, U=C, O=K, X=any.
    """
    deg = np.zeros((KP_AMINO, K_AMINO), dtype=bool)
    for x in range(K_AMINO):
        deg[x, x] = True
    for sym, means in {"B": "ND", "J": "IL", "Z": "QE", "U": "C", "O": "K"}.items():
        for y in means:
            deg[AMINO_SYMBOLS.index(sym), AMINO_SYMBOLS.index(y)] = True
    deg[AMINO_SYMBOLS.index("X"), :] = True
    return deg


@dataclass
class SequenceDB:
    """A packed protein database (see the module docstring for the arrays)."""

    residues: np.ndarray
    offsets: np.ndarray
    name_blob: bytes | np.ndarray
    name_offsets: np.ndarray
    header_blob: bytes | np.ndarray
    header_offsets: np.ndarray
    source: str = ""
    # BLAST_COLUMNS of each sequence, tab-separated (empty: none, the columns follow from the
    # name and header); offsets None where no sequence has them
    columns_blob: bytes | np.ndarray = b""
    columns_offsets: np.ndarray | None = None
    # Easel's accession of each sequence (empty: none); offsets None where no sequence has one
    accession_blob: bytes | np.ndarray = b""
    accession_offsets: np.ndarray | None = None
    # Easel's description of each sequence as Easel read it; offsets None where the
    # descriptions are cut from the header lines (FASTA)
    description_blob: bytes | np.ndarray = b""
    description_offsets: np.ndarray | None = None
    total_seqs: int | None = None       # of the whole database, when this is a shard
    total_residues: int | None = None
    shard: tuple[int, int] | None = None  # (i, n): shard i of n, 1-based
    first_index: int = 0                  # index of this file's first sequence in the whole database
    # the whole database's residues as blastp counts them, without '.', '_' and '~' (see
    # blast_view): a shard's .gsdb records it; None where not known
    total_blast_residues: int | None = None
    # how many of this file's own residues blastp's reader drops, where its .gsdb records it
    # (None: not known, and blast_view counts them)
    blast_dropped: int | None = None
    lengths: np.ndarray = field(init=False)
    _order: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self):
        self.lengths = np.diff(self.offsets).astype(np.int32)
        if self.total_seqs is None:
            self.total_seqs = self.n_seqs
        if self.total_residues is None:
            self.total_residues = self.n_residues

    # --- sizes ---------------------------------------------------------------
    @property
    def n_seqs(self) -> int:
        return len(self.offsets) - 1

    @property
    def n_residues(self) -> int:
        return int(self.offsets[-1])

    def __len__(self) -> int:
        return self.n_seqs

    @property
    def length_order(self) -> np.ndarray:
        """Sequence indices by decreasing length (stable)."""
        if self._order is None:
            self._order = np.argsort(-self.lengths, kind="stable").astype(np.int32)
        return self._order

    # --- per-sequence access -------------------------------------------------------
    def name(self, i: int) -> str:
        a, b = int(self.name_offsets[i]), int(self.name_offsets[i + 1])
        return bytes(self.name_blob[a:b]).decode("utf-8", "replace")

    def header(self, i: int) -> str:
        """The header line after '>' as written: BLAST's title."""
        a, b = int(self.header_offsets[i]), int(self.header_offsets[i + 1])
        return bytes(self.header_blob[a:b]).decode("utf-8", "replace")

    def description(self, i: int) -> str:
        """Easel's description: the header after the name, leading whitespace removed."""
        return self._description(i).decode("utf-8", "replace")

    def _description(self, i: int) -> bytes:
        if self.description_offsets is not None:
            a, b = int(self.description_offsets[i]), int(self.description_offsets[i + 1])
            return bytes(self.description_blob[a:b])
        a, b = int(self.header_offsets[i]), int(self.header_offsets[i + 1])
        n = int(self.name_offsets[i + 1] - self.name_offsets[i])
        # (bytes.lstrip takes the whitespace Easel skips: space, \t, \n, \v, \f, \r)
        return bytes(self.header_blob[a:b]).lstrip()[n:].lstrip()

    def blast_columns(self, i: int) -> str:
        """Sequence ``i``'s BLAST_COLUMNS, tab-separated, from a -parse_seqids BLAST database;
        "" for any other."""
        if self.columns_offsets is None:
            return ""
        a, b = int(self.columns_offsets[i]), int(self.columns_offsets[i + 1])
        return bytes(self.columns_blob[a:b]).decode("utf-8", "surrogateescape")

    def accession(self, i: int) -> str:
        """Easel's accession of sequence ``i``; "" for none (any FASTA file's)."""
        if self.accession_offsets is None:
            return ""
        a, b = int(self.accession_offsets[i]), int(self.accession_offsets[i + 1])
        return bytes(self.accession_blob[a:b]).decode("utf-8", "replace")

    def sequence(self, i: int) -> np.ndarray:
        return self.residues[self.offsets[i] : self.offsets[i + 1]]

    def text(self, i: int) -> str:
        return "".join(AMINO_SYMBOLS[c] for c in self.sequence(i))

    def subset(self, idx) -> "SequenceDB":
        """A new database of sequences ``idx`` (in that order); totals are kept."""
        idx = np.asarray(idx, dtype=np.int64)
        lens = self.lengths[idx].astype(np.int64)
        offsets = np.zeros(len(idx) + 1, dtype=np.int64)
        np.cumsum(lens, out=offsets[1:])
        residues = _gather(self.residues, self.offsets[idx], lens)
        nb, no = _gather_blob(self.name_blob, self.name_offsets, idx)
        hb, ho = _gather_blob(self.header_blob, self.header_offsets, idx)
        cb, co = (b"", None) if self.columns_offsets is None else _gather_blob(self.columns_blob,
                                                                              self.columns_offsets, idx)
        ab, ao = (b"", None) if self.accession_offsets is None else _gather_blob(self.accession_blob,
                                                                                self.accession_offsets, idx)
        db, do = (b"", None) if self.description_offsets is None else _gather_blob(self.description_blob,
                                                                                  self.description_offsets, idx)
        return SequenceDB(residues, offsets, nb, no, hb, ho, source=self.source, columns_blob=cb,
                          columns_offsets=co, accession_blob=ab, accession_offsets=ao, description_blob=db,
                          description_offsets=do, total_seqs=self.total_seqs, total_residues=self.total_residues)

    def digital_block(self, idx=None, alphabet=None):
        """A pyhmmer ``DigitalSequenceBlock`` of sequences ``idx`` (all by default)."""
        from pyhmmer.easel import Alphabet, DigitalSequence, DigitalSequenceBlock

        abc = alphabet or Alphabet.amino()
        idx = range(self.n_seqs) if idx is None else idx
        block = DigitalSequenceBlock(abc)
        # plain arrays, not np.memmap (a .gsdb's): slicing a memmap runs Python code for each
        # slice, half of this loop's time (21,000 sequences: 0.24 -> 0.1 s)
        nb, no, hb, ho, res, off = (a if isinstance(a, (bytes, bytearray)) else np.asarray(a) for a in (
            self.name_blob, self.name_offsets, self.header_blob, self.header_offsets, self.residues, self.offsets))
        for i in idx:
            i = int(i)
            name, description = self._name_and_description(i, nb, no, hb, ho)
            block.append(DigitalSequence(
                abc,
                name=name.decode("utf-8", "replace"),
                description=description.decode("utf-8", "replace"),
                accession=self.accession(i) if self.accession_offsets is not None else None,
                sequence=res[int(off[i]):int(off[i + 1])],
            ))
        return block

    def _name_and_description(self, i: int, nb, no, hb, ho) -> tuple[bytes, bytes]:
        a, b = int(no[i]), int(no[i + 1])
        name = bytes(nb[a:b])
        if self.description_offsets is None:
            # Easel's description: the header after the name (as _description cuts it)
            header = bytes(hb[int(ho[i]):int(ho[i + 1])]).lstrip()
            return name, header[b - a:].lstrip()
        return name, self._description(i)

    def easel_text(self, i: int) -> tuple[bytes, bytes, bytes]:
        """Sequence i's name, accession and description as HMMER holds them (the bytes of
        :meth:`digital_block`'s sequences: UTF-8, undecodable bytes replaced)."""
        name, description = self._name_and_description(int(i), self.name_blob, self.name_offsets,
                                                       self.header_blob, self.header_offsets)
        return (name.decode("utf-8", "replace").encode(), self.accession(int(i)).encode(),
                description.decode("utf-8", "replace").encode())

    # --- checks ----------------------------------------------------------------
    def check_for_hmmsearch(self, skip_long: bool = False, program: str = "hmmsearch") -> np.ndarray | None:
        """Refuse sequences over HMMER's 100,000-residue limit (or list them to skip).

        Returns the indices of sequences to skip when ``skip_long``, else None.
        ``program``: the HMMER program the message names (hmmsearch, phmmer).
        """
        long = np.nonzero(self.lengths > HMMER_MAX_LENGTH)[0]
        if len(long) == 0:
            return None
        if skip_long:
            return long
        i = int(long[0])
        raise SequenceError(
            f"sequence '{shown(self.name(i))}' in {self.source} has {int(self.lengths[i]):,} residues, "
            f"over HMMER's limit of {HMMER_MAX_LENGTH:,} for {program} "
            f"({len(long)} such sequence(s)); split it, or pass --skip-long to leave them out"
        )


def _gather(residues, starts, lens) -> np.ndarray:
    """The pieces residues[starts[i]:starts[i] + lens[i]] packed one after the other.

    Pieces that follow each other in ``residues`` are copied as one run: a whole database
    in order is one copy (an index array per residue took 2.6 s for 273 M residues).
    """
    arr = np.asarray(residues)
    starts = np.asarray(starts, dtype=np.int64)
    lens = np.asarray(lens, dtype=np.int64)
    if int(lens.sum()) == 0:
        return np.zeros(0, dtype=arr.dtype)
    first = np.concatenate(([0], np.flatnonzero(starts[1:] != starts[:-1] + lens[:-1]) + 1))
    run_lens = np.add.reduceat(lens, first)
    return np.concatenate([arr[a:a + n] for a, n in zip(starts[first].tolist(), run_lens.tolist())])


def _gather_blob(blob, offs, idx):
    arr = np.frombuffer(blob, dtype=np.uint8) if isinstance(blob, (bytes, bytearray)) else blob
    lens = (offs[idx + 1] - offs[idx]).astype(np.int64)
    new_offs = np.zeros(len(idx) + 1, dtype=np.int64)
    np.cumsum(lens, out=new_offs[1:])
    return _gather(arr, offs[idx], lens).tobytes(), new_offs


# --- reading ------------------------------------------------------------------------
#
# An input is opened once and read from its start to its end, never twice, so that a pipe or
# a process substitution (``<(zcat db.fa.gz)``) reads as a file does: its format is told from
# its first bytes, then the same bytes are parsed.  It is read a piece at a time; FASTA is
# digitized piece by piece, so an input that never ends (/dev/zero) is refused from its first
# piece, not read into memory until memory runs out.

PIECE = 32 << 20                 # bytes read, or decompressed, at a time
MAX_HEADER_LINE = 64 << 20       # longest FASTA header line accepted (no real one comes near)
MAX_SEQUENCE = (1 << 31) - 1     # residues of one sequence: lengths are int32
_NOT_SPACE = re.compile(rb"[^ \t\n\r\x0b\x0c]")


class _Input:
    """An input file, opened once: its first bytes read to tell its format, the rest as it comes."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        check_readable(self.path)
        try:
            self.fh = open(self.path, "rb")
        except OSError as exc:
            raise InputFileError(f"{self.path}: cannot read ({exc.strerror})") from None
        # a .gsdb is memory-mapped from a plain file; a pipe is read through
        self.regular = stat.S_ISREG(os.fstat(self.fh.fileno()).st_mode)
        self.head = self.fh.read(len(GSDB_MAGIC))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.fh.close()

    @property
    def is_gsdb(self) -> bool:
        return self.head == GSDB_MAGIC

    def raw_pieces(self):
        """The file's bytes, PIECE at a time, from its first byte."""
        head, self.head = self.head, b""
        while data := self.fh.read(max(PIECE - len(head), 1)):
            yield head + data if head else data
            head = b""
        if head:
            yield head

    def pieces(self):
        """The file's bytes, gunzipped if it is gzip-compressed, PIECE at a time at most."""
        raw = self.raw_pieces()
        first = next(raw, b"")
        pieces = itertools.chain([first], raw) if first else iter(())
        return _gunzip(pieces, self.path) if first[:2] == b"\x1f\x8b" else pieces


def _gunzip(pieces, source):
    """Gzip members one after the other (zero bytes between them skipped, as gzip.decompress
    does), decompressed PIECE at a time at most: a small file that inflates to terabytes is
    read as it goes too."""
    member = zlib.decompressobj(wbits=31)
    try:
        for data in pieces:
            while data or member is not None:
                if member is None:              # between members
                    data = data.lstrip(b"\0")
                    if not data:
                        break
                    member = zlib.decompressobj(wbits=31)
                out = member.decompress(data, PIECE)
                if out:
                    yield out
                if member.eof:
                    data, member = member.unused_data, None
                    continue
                data = member.unconsumed_tail
                if not data and not out:
                    break                       # all this input taken and given out: read more
        if member is not None:
            raise EOFError("compressed file ended before the end-of-stream marker was reached")
    except (EOFError, zlib.error) as exc:
        raise FormatError(f"{source}: corrupt or truncated gzip file ({exc})") from None


def open_database(path: str | os.PathLike, blast: bool = False) -> SequenceDB:
    """Load a protein database from FASTA (plain or .gz) or a .gsdb file, a pipe too, or a
    BLAST database made by makeblastdb (its prefix, as blastp's -db: :mod:`.blastdb`).

    ``blast``: the database as blastp's -db: FASTA read as makeblastdb reads it (see
    :func:`_blast_map`; sequences left without a residue left out, as makeblastdb leaves
    them), a .gsdb without the letters that reader drops (:func:`blast_view`)."""
    from .blastdb import blast_database_prefix, read_blast_database

    prefix = blast_database_prefix(path)
    if prefix is not None:
        return read_blast_database(prefix)
    with _Input(path) as inp:
        if inp.is_gsdb:
            if inp.regular:
                db = read_gsdb(path)
            else:
                db = _gsdb_from_buffer(np.frombuffer(b"".join(inp.raw_pieces()), dtype=np.uint8), Path(path))
            return blast_view(db) if blast else db
        return _collect(inp.pieces(), str(path), "db" if blast else None)


def residues_hint(path: str | os.PathLike) -> int | None:
    """About how many residues a database file holds, without reading it: a .gsdb's own
    count, a plain FASTA file's size (its headers and line ends counted too: an
    overestimate); None for a stream or a gzip file.  For choices that only need the
    size's order (``--device auto``), never for a result."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None                   # a stream: read once, by open_database alone
    except OSError:
        return None                       # (open_database says what is wrong)
    with _Input(path) as inp:
        if inp.is_gsdb:
            head = inp.head + inp.fh.read(_HEADER_SIZE - len(inp.head))
            header = _gsdb_header_of(np.frombuffer(head, dtype=np.uint8), Path(path))
            try:
                return int(header["sections"]["residues"]["count"])
            except (KeyError, TypeError, ValueError):
                raise FormatError(f"{path}: corrupt .gsdb header") from None
        if inp.head[:2] == b"\x1f\x8b":
            return None
        return os.fstat(inp.fh.fileno()).st_size


def check_readable(path: Path) -> None:
    """Raise InputFileError unless ``path`` is a readable file."""
    if not path.exists():
        raise InputFileError(f"{path}: no such file")
    if path.is_dir():
        raise InputFileError(f"{path}: is a directory, not a file")
    if not os.access(path, os.R_OK):
        raise InputFileError(f"{path}: permission denied")


def read_bytes(path: Path) -> bytes:
    """The file's bytes, gunzipped if it is gzip-compressed (the file read once: a pipe too)."""
    with _Input(path) as inp:
        if inp.regular and inp.head[:2] != b"\x1f\x8b":
            inp.fh.seek(0)          # a plain file in one read (joining its pieces copied it again)
            return inp.fh.read()
        return b"".join(inp.pieces())


# a FASTA input held in one piece of fewer bytes than this, read with ``plain_scan``, is scanned
# as plain Python: a proteome's 2,100 proteins (743 KB) took 0.23 s so on the development
# machine, against about 0.5 s there for numba's import and first load, 0.85 s on the GPU host
# (bench/probes/hmmscan_profile.py)
PLAIN_SCAN_BYTES = 1 << 20


def read_fasta(path: str | os.PathLike, blast: str | None = None, plain_scan: bool = False) -> SequenceDB:
    """Parse a protein FASTA file (plain or gzip; a pipe too), a piece at a time.

    ``blast``: None (Easel's rules), "query" (as blastp reads its queries: empty ones kept,
    searched without hits) or "db" (as makeblastdb reads a database): see :func:`_blast_map`.
    ``plain_scan``: a file of under PLAIN_SCAN_BYTES is scanned as plain Python, not numba's
    compiled loop (for query files, where a run may need numba for nothing else)."""
    with _Input(path) as inp:
        return _collect(inp.pieces(), str(path), blast, plain_scan)


def parse_fasta(data: bytes, source: str = "<fasta>", blast: str | None = None,
                plain_scan: bool = False) -> SequenceDB:
    """Parse FASTA bytes into a :class:`SequenceDB` (see module docstring, and ``read_fasta``)."""
    return _collect(iter([data]), source, blast, plain_scan)


def _warn(message: str) -> None:
    """A warning on stderr, one line (the input was read, with something left out)."""
    print(f"gpu-search: warning: {message}", file=sys.stderr, flush=True)


@dataclass
class _Batch:
    """What one piece of FASTA held: its residues; the lengths of the sequences it ended
    (one begun in an earlier piece may end in it); names and header lines of the headers in it."""

    residues: np.ndarray
    lengths: np.ndarray
    name_blob: np.ndarray
    name_lens: np.ndarray
    header_blob: np.ndarray
    header_lens: np.ndarray


def _fasta_batches(pieces, source: str, blast: str | None = None, plain_scan: bool = False):
    """Digitize FASTA pieces (bytes) into :class:`_Batch`es, checking it as Easel reads it
    (``blast``: as blastp or makeblastdb reads it; ``plain_scan``: see ``read_fasta``).

    The first byte other than whitespace must be '>': anything else (an HMM file, NUL bytes,
    binary) is refused at once.  Errors are raised where they are found, in file order;
    empty sequences and nucleotide input once the whole file is read (with ``blast``, empty
    sequences are kept: their warning is :func:`_collect`'s).  Letters blastp's reader drops
    are told in one warning.
    """
    from ._fasta import (AT_LINE_START, BAD_IMPLAUSIBLE, BAD_NO_NAME, DROP_BYTE, DROP_LINE, DROP_SEQ, DROPS,
                         IN_SEQUENCE, LINE, LINE_BLANK, PLAUSIBLE_SPAN, STATE_SIZE, scanners)

    state = np.zeros(STATE_SIZE, dtype=np.int64)    # at a line's start, line 1, no sequence yet
    state[AT_LINE_START] = state[LINE] = state[LINE_BLANK] = 1
    table = AMINO_MAP if blast is None else _blast_maps()[blast]
    first_drop = ""             # the sequence of the first dropped letter
    started = False
    carry = b""                 # a header line begun at the end of the previous piece
    open_name = ""              # the name of the sequence the last piece ended in
    open_len = 0                # its residues so far
    n_seqs = 0
    empty, first_empty = 0, ""
    sample, sample_len = [], 0  # the first residues, for the nucleotide check

    def scan_piece(data: bytes, final: bool):
        nonlocal open_name, open_len, n_seqs, empty, first_empty, sample_len, first_drop
        count_gt, scan, split_headers = scanners(compiled=not (plain_scan and len(data) < PLAIN_SCAN_BYTES))
        buf = np.frombuffer(data, dtype=np.uint8)
        heads = count_gt(buf)
        residues = np.empty(len(buf), dtype=np.uint8)
        hstart, hend, lengths = (np.empty(heads, dtype=np.int64) for _ in range(3))
        had_drops = bool(state[DROPS])
        n_res, lead, k, used, bad, kind = scan(buf, table, final, state, residues, hstart, hend, lengths,
                                               blast is not None)
        header_bytes = int((hend[:k] - hstart[:k]).sum())
        name_blob, header_blob = np.empty(header_bytes, np.uint8), np.empty(header_bytes, np.uint8)
        name_lens, header_lens = np.empty(k, np.int64), np.empty(k, np.int64)
        nn, nd = split_headers(buf, hstart, hend, k, name_blob, name_lens, header_blob, header_lens)
        name_ends = np.cumsum(name_lens)

        def name(i):            # (decoded only where one is needed)
            return bytes(name_blob[name_ends[i] - name_lens[i]:name_ends[i]]).decode("utf-8", "replace")

        if state[DROPS] and not had_drops:
            first_drop = name(int(state[DROP_SEQ])) if state[DROP_SEQ] >= 0 else open_name
        if bad >= 0:
            line = int(state[LINE])
            if kind == BAD_NO_NAME:
                raise FormatError(f"{source}: FASTA header without a sequence name (line {line})")
            seq = name(k - 1) if k else open_name
            if kind == BAD_IMPLAUSIBLE:
                raise FormatError(
                    f"{source}: line {line} of sequence '{shown(seq)}' is not plausible sequence (its first "
                    f"{PLAUSIBLE_SPAN} bytes hold a third as many non-letters as letters, or more); "
                    f"BLAST+ refuses such a first line of a sequence")
            if not seq:
                raise FormatError(f"{source}: not FASTA (a FASTA file starts with '>' header lines)")
            c = int(buf[bad])
            ch = chr(c) if 32 < c < 127 else f"\\x{c:02x}"
            raise SequenceError(
                f"{source}: invalid residue '{ch}' in sequence '{shown(seq)}' (line {line}); "
                f"a protein sequence holds only letters, '*', '~', '.' or '_'")
        open_len += lead
        ended = lengths[:k].copy()
        if k:
            # the open sequence ends at the first header; the last header's sequence stays open
            ended = np.concatenate(([open_len], ended[:-1])) if n_seqs else ended[:-1]
            zero = np.flatnonzero(ended == 0)
            if len(zero) and not empty:
                z = int(zero[0]) - (1 if n_seqs else 0)     # its header's index in this piece
                first_empty = name(z) if z >= 0 else open_name
            empty += len(zero)
            open_name, open_len = name(k - 1), int(lengths[k - 1])
            n_seqs += k
        if open_len > MAX_SEQUENCE:
            raise SequenceError(f"{source}: sequence '{shown(open_name)}' is longer than "
                                f"{MAX_SEQUENCE:,} residues")
        if sample_len < _SAMPLE:
            sample.append(residues[:min(n_res, _SAMPLE - sample_len)].copy())
            sample_len += len(sample[-1])
        return used, _Batch(residues[:n_res], ended.astype(np.int64), name_blob[:nn], name_lens,
                            header_blob[:nd], header_lens)

    for piece in pieces:
        if not started:
            first = _NOT_SPACE.search(piece)
            if first is not None:
                started = True
                at = first.start()
                # (BLAST+ takes comment lines before the first header: the scanner skips them)
                if piece[at:at + 1] != b">" and not (blast and piece[at:at + 1] in (b"!", b"#", b";")):
                    if piece[at:at + 5] == b"HMMER":
                        raise FormatError(f"{source}: an HMM file (a FASTA file starts with '>' header lines)")
                    raise NotFastaError(f"{source}: not FASTA (a FASTA file starts with '>' header lines)")
        data = carry + piece if carry else piece
        used, batch = scan_piece(data, final=False)
        carry = data[used:]
        if len(carry) > MAX_HEADER_LINE:
            size = (f"{MAX_HEADER_LINE >> 20} MiB" if MAX_HEADER_LINE % (1 << 20) == 0
                    else f"{MAX_HEADER_LINE:,} bytes")
            raise FormatError(f"{source}: a header line longer than {size} "
                              f"(line {int(state[LINE])}); not a FASTA file?")
        yield batch
    if not started:
        raise EmptyInputError(f"{source}: file is empty")
    _, batch = scan_piece(carry, final=True)
    if state[IN_SEQUENCE]:
        batch.lengths = np.append(batch.lengths, open_len).astype(np.int64)
        if open_len == 0:
            first_empty = first_empty if empty else open_name
            empty += 1
    yield batch
    if n_seqs == 0:
        raise EmptyInputError(f"{source}: no sequences")
    if state[DROPS]:
        c = int(state[DROP_BYTE])
        ch = chr(c) if 32 < c < 127 else f"\\x{c:02x}"
        n = int(state[DROPS])
        _warn(f"{source}: {n:,} {'letter' if n == 1 else 'letters'} BLAST+ does not take "
              f"{'was' if n == 1 else 'were'} dropped (first: '{ch}' in sequence '{shown(first_drop)}', "
              f"line {int(state[DROP_LINE])})")
    if empty and blast is None:
        raise SequenceError(f"{source}: sequence '{shown(first_empty)}' is empty "
                            f"({empty} empty sequence(s)); remove them first")
    _check_protein(np.concatenate(sample), source)


_SAMPLE = 1 << 22               # residues looked at to tell protein from nucleotide


class NotFastaError(FormatError):
    """An input whose first bytes are not a FASTA header (another of HMMER's formats, maybe)."""


def shown(name: str) -> str:
    """A sequence name as an error message shows it: on one line, control characters escaped."""
    name = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in name)
    return name if len(name) <= 80 else name[:77] + "..."


def _check_protein(sample: np.ndarray, source: str) -> None:
    """Reject DNA or RNA read as protein: almost only A, C, G, T/U, N."""
    nuc = np.isin(sample, [AMINO_SYMBOLS.index(c) for c in "ACGTUN"]).sum()
    if len(sample) >= 20 and nuc >= 0.9 * len(sample):
        raise AlphabetError(
            f"{source}: looks like nucleotide sequence ({100 * nuc / len(sample):.0f}% "
            f"A/C/G/T/U/N); gpu-search needs protein sequences"
        )


def _collect(pieces, source: str, blast: str | None = None, plain_scan: bool = False) -> SequenceDB:
    """A FASTA input read into memory, a piece at a time (the input is never held whole);
    ``blast`` and ``plain_scan``: see ``read_fasta``."""
    residues, names, headers = bytearray(), bytearray(), bytearray()
    lengths, name_lens, header_lens = [], [], []
    for b in _fasta_batches(pieces, source, blast, plain_scan):
        residues += memoryview(b.residues)      # (an array would add itself element-wise)
        names += memoryview(b.name_blob)
        headers += memoryview(b.header_blob)
        lengths.append(b.lengths)
        name_lens.append(b.name_lens)
        header_lens.append(b.header_lens)
    db = SequenceDB(np.frombuffer(residues, dtype=np.uint8), _ends(lengths), bytes(names), _ends(name_lens),
                    bytes(headers), _ends(header_lens), source=source)
    return _blast_empties(db, blast == "db") if blast else db


def _blast_empties(db: SequenceDB, leave_out: bool) -> SequenceDB:
    """Sequences without a residue (a header alone, or only letters dropped), as BLAST+ 2.12
    takes them: blastp searches such a query and finds nothing ("Sequence contains no data");
    makeblastdb leaves such a sequence out of the database (the next one takes its place).
    One warning for the file; an error if every sequence is empty."""
    empty = np.flatnonzero(db.lengths == 0)
    if not len(empty):
        return db
    if len(empty) == db.n_seqs:
        raise EmptyInputError(f"{db.source}: no sequence holds a letter BLAST+ takes")
    what = "left out of the database, as makeblastdb leaves them" if leave_out else "searched without hits, as blastp does"
    n = len(empty)
    _warn(f"{db.source}: {n:,} {'sequence' if n == 1 else 'sequences'} without a residue "
          f"{what} (first: '{shown(db.name(int(empty[0])))}')")
    if not leave_out:
        return db
    kept = db.subset(np.flatnonzero(db.lengths > 0))
    kept.shard, kept.first_index = db.shard, db.first_index
    kept.total_seqs = kept.n_seqs if not db.shard else db.total_seqs - n
    return kept


def blast_view(db: SequenceDB) -> SequenceDB:
    """A .gsdb's database as blastp takes it: without the codes of letters blastp's reader
    drops ('.', '_' and '~', which Easel's rules keep), sequences left empty left out, as
    makeblastdb would have read the FASTA the .gsdb was made from.  The database itself
    when it holds none (no copy).

    A shard's whole-database size is the one its .gsdb records (a .gsdb written before it
    recorded one: its own size less the letters this shard drops)."""
    residues = np.asarray(db.residues)
    # (a scan of every residue: 1.5 s for 273 M on the development machine, where the .gsdb
    # says how many there are)
    where = np.zeros(0, np.int64) if db.blast_dropped == 0 else np.flatnonzero(BLAST_DROPPED[residues])
    n_drop = len(where)
    if db.shard and db.total_blast_residues is not None:
        total = db.total_blast_residues
    else:
        total = db.total_residues - n_drop
    if not n_drop:
        return db if total == db.total_residues else dataclasses.replace(db, total_residues=total)
    seq_of = np.searchsorted(db.offsets, where, side="right") - 1     # the sequence of each
    lengths = db.lengths - np.bincount(seq_of, minlength=db.n_seqs)
    offsets = np.zeros(db.n_seqs + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    i = int(seq_of[0])
    _warn(f"{db.source}: {n_drop:,} {'letter' if n_drop == 1 else 'letters'} BLAST+ does not take "
          f"{'was' if n_drop == 1 else 'were'} dropped (first in sequence '{shown(db.name(i))}')")
    kept = SequenceDB(np.delete(residues, where), offsets, db.name_blob, db.name_offsets, db.header_blob,
                      db.header_offsets, source=db.source, columns_blob=db.columns_blob,
                      columns_offsets=db.columns_offsets, total_seqs=db.total_seqs, total_residues=total,
                      shard=db.shard, first_index=db.first_index)
    return _blast_empties(kept, True)


def _blast_dropped(residues) -> int:
    """How many of ``residues`` (Easel's codes, bytes or an array) blastp leaves out."""
    return int(np.count_nonzero(BLAST_DROPPED[np.frombuffer(residues, dtype=np.uint8)
                                              if isinstance(residues, (bytes, bytearray, memoryview))
                                              else np.asarray(residues)]))


def _ends(parts) -> np.ndarray:
    """Offsets (0, then running sums) of lengths given in parts."""
    lens = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    offsets = np.zeros(len(lens) + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    return offsets


# --- .gsdb -------------------------------------------------------------------------------

# (columns_blob and columns_offsets are empty where the database has no BLAST columns;
# length_order stays last)
_SECTIONS = ("residues", "offsets", "name_blob", "name_offsets", "header_blob", "header_offsets",
             "columns_blob", "columns_offsets", "length_order")
_DTYPES = {"residues": "|u1", "offsets": "<i8", "name_blob": "|u1", "name_offsets": "<i8",
           "header_blob": "|u1", "header_offsets": "<i8", "columns_blob": "|u1", "columns_offsets": "<i8",
           "length_order": "<i4"}
_HEADER_SIZE = 4096             # the JSON header's reserved room; the sections follow


def _gsdb_header(counts: dict, *, n_seqs, n_residues, total_seqs, total_residues, shard, first_index,
                 source, total_blast_residues=None, blast_dropped=None) -> tuple[bytes, dict, int]:
    """The header's bytes, the header, and the file's size, for sections of ``counts`` items."""
    header = {
        "format": "gsdb",
        "version": GSDB_VERSION,
        "alphabet": "amino",
        "n_seqs": int(n_seqs),
        "n_residues": int(n_residues),
        "total_seqs": int(total_seqs),
        "total_residues": int(total_residues),
        "shard": list(shard) if shard else None,
        "first_index": int(first_index),
        "source": os.path.basename(source),
        "sections": {},
    }
    # only where blastp counts fewer (a database without '.', '_', '~' is written as before)
    if total_blast_residues is not None and total_blast_residues != total_residues:
        header["total_blast_residues"] = int(total_blast_residues)
    if blast_dropped is not None:         # this file's own letters that blastp drops (blast_view)
        header["blast_dropped"] = int(blast_dropped)
    # lay the sections out after a header of fixed reserved size
    pos = _HEADER_SIZE
    for name in _SECTIONS:
        dt = np.dtype(_DTYPES[name])
        header["sections"][name] = {"offset": pos, "dtype": dt.str, "count": int(counts[name])}
        pos += -(-int(counts[name]) * dt.itemsize // GSDB_ALIGN) * GSDB_ALIGN
    blob = json.dumps(header).encode()
    if len(blob) + 12 > _HEADER_SIZE:
        raise FormatError("internal: .gsdb header too large")
    return GSDB_MAGIC + len(blob).to_bytes(4, "little") + blob, header, pos


def write_gsdb(db, path: str | os.PathLike, *, total_seqs=None, total_residues=None,
               shard=None, first_index: int = 0, total_blast_residues=None) -> None:
    """Write ``db`` as a .gsdb file (atomically: temp file, then rename).

    ``db`` is a :class:`SequenceDB`, or (makedb's shards) a :class:`_GsdbRun`, sequences of a
    .gsdb being cut, copied a piece at a time."""
    if isinstance(db, _GsdbRun):
        with atomic_path(path) as tmp, open(tmp, "wb") as fh:
            db.write(fh, Path(tmp).parent, total_seqs=total_seqs, total_residues=total_residues, shard=shard,
                     first_index=first_index, total_blast_residues=total_blast_residues)
        return
    if total_blast_residues is None:
        total_blast_residues = db.total_blast_residues
    dropped = _blast_dropped(db.residues)
    if total_blast_residues is None and not db.shard:
        total_blast_residues = db.n_residues - dropped
    arrays = {
        "residues": np.ascontiguousarray(db.residues, dtype=np.uint8),
        "offsets": np.ascontiguousarray(db.offsets, dtype=np.int64),
        "name_blob": np.frombuffer(bytes(db.name_blob), dtype=np.uint8),
        "name_offsets": np.ascontiguousarray(db.name_offsets, dtype=np.int64),
        "header_blob": np.frombuffer(bytes(db.header_blob), dtype=np.uint8),
        "header_offsets": np.ascontiguousarray(db.header_offsets, dtype=np.int64),
        "columns_blob": np.frombuffer(bytes(db.columns_blob), dtype=np.uint8),
        "columns_offsets": np.ascontiguousarray(db.columns_offsets if db.columns_offsets is not None else
                                                np.zeros(0), dtype=np.int64),
        "length_order": np.ascontiguousarray(db.length_order, dtype=np.int32),
    }
    head, header, end = _gsdb_header(
        {name: a.size for name, a in arrays.items()}, n_seqs=db.n_seqs, n_residues=db.n_residues,
        total_seqs=total_seqs if total_seqs is not None else db.total_seqs,
        total_residues=total_residues if total_residues is not None else db.total_residues,
        shard=shard, first_index=first_index, source=db.source, total_blast_residues=total_blast_residues,
        blast_dropped=dropped)
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(head)
            for name in _SECTIONS:
                fh.seek(header["sections"][name]["offset"])
                fh.write(arrays[name].tobytes())
            fh.truncate(end)


class _GsdbWriter:
    """A .gsdb written as its parts come, in bounded memory: the residues straight into the
    file after the header's room, each other section into an unnamed temporary file beside it
    (gone however the program ends), copied after the residues by :meth:`finish`.

    The parts come in any grouping: residues, sequence lengths, name bytes and name
    lengths, header bytes and lengths, each in file order."""

    def __init__(self, fh, spool_dir):
        self.fh = fh
        fh.seek(_HEADER_SIZE)
        self.spools = {name: tempfile.TemporaryFile(dir=spool_dir)
                       for name in _SECTIONS[1:-1]}
        self.sums = dict.fromkeys(_SECTIONS[:-1], 0)
        self.counts = dict.fromkeys(_SECTIONS, 0)
        self.histogram = {}         # sequence length -> sequences of that length (for length_order)
        self.blast_dropped = 0      # residues blastp leaves out (blast_view)

    def close(self):
        for f in self.spools.values():
            f.close()

    def residues(self, data):
        self.fh.write(data)
        self.counts["residues"] += len(data)
        self.blast_dropped += _blast_dropped(data)

    def offsets(self, section, lens):
        """Append the running sums of ``lens`` (with those before) to a section of offsets."""
        ends = np.cumsum(lens, dtype=np.int64) + self.sums[section]
        if len(ends):
            self.sums[section] = int(ends[-1])
            self.spools[section].write(ends.tobytes())
        self.counts[section] += len(ends)

    def lengths(self, lens):
        self.offsets("offsets", lens)
        for value, count in zip(*(a.tolist() for a in np.unique(lens, return_counts=True))):
            self.histogram[value] = self.histogram.get(value, 0) + count

    def blob(self, section, data):
        self.spools[section].write(data)
        self.counts[section] += len(data)

    def finish(self, *, source, total_seqs=None, total_residues=None, shard=None, first_index=0,
               total_blast_residues=None):
        n_seqs, n_res = self.counts["offsets"], self.counts["residues"]
        if (self.sums["offsets"] != n_res or self.counts["name_offsets"] != n_seqs
                or self.counts["header_offsets"] != n_seqs or self.counts["columns_offsets"] not in (0, n_seqs)):
            raise AssertionError("internal: .gsdb sections of different sequence counts")
        columns = self.counts["columns_offsets"] > 0
        counts = dict(self.counts, offsets=n_seqs + 1, name_offsets=n_seqs + 1, header_offsets=n_seqs + 1,
                      columns_offsets=n_seqs + 1 if columns else 0, length_order=n_seqs)
        head, header, end = _gsdb_header(
            counts, n_seqs=n_seqs, n_residues=n_res,
            total_seqs=n_seqs if total_seqs is None else total_seqs,
            total_residues=n_res if total_residues is None else total_residues,
            shard=shard, first_index=first_index, source=source,
            # (a shard is given the whole database's counts; none recorded: nothing dropped)
            total_blast_residues=total_blast_residues if total_blast_residues is not None else
            n_res - self.blast_dropped if total_residues is None else total_residues,
            blast_dropped=self.blast_dropped)
        fh, where = self.fh, header["sections"]
        for name in _SECTIONS[1:-1]:
            fh.seek(where[name]["offset"])
            if name.endswith("offsets") and counts[name]:
                fh.write(bytes(8))                  # the leading 0
            spool = self.spools[name]
            spool.seek(0)
            shutil.copyfileobj(spool, fh, PIECE)
        _write_length_order(fh, where["length_order"]["offset"], self.spools["offsets"], n_seqs, self.histogram)
        fh.truncate(end)
        fh.seek(0)
        fh.write(head)


_ORDER_BATCH = 1 << 20          # sequences a step of the length order's sort (and of cutting shards)


def _write_length_order(fh, pos, ends_file, n_seqs, histogram):
    """Write the length_order section (sequence indices by decreasing length, stable) from the
    sequences' end offsets, in bounded memory: a counting sort, each length's indices going
    to their run of the section, written in batches of contiguous runs."""
    values = np.array(sorted(histogram, reverse=True), dtype=np.int64)
    counts = np.array([histogram[v] for v in values.tolist()], dtype=np.int64)
    next_slot = np.cumsum(counts) - counts          # where each length's run continues
    slots, indices, pending = [], [], 0

    def flush():
        s, i = np.concatenate(slots), np.concatenate(indices)
        order = np.argsort(s, kind="stable")
        s, i = s[order], i[order]
        starts = np.concatenate(([0], np.flatnonzero(np.diff(s) != 1) + 1, [len(s)]))
        for a, b in zip(starts[:-1].tolist(), starts[1:].tolist()):
            fh.seek(pos + 4 * int(s[a]))
            fh.write(i[a:b].tobytes())
        slots.clear()
        indices.clear()

    previous = 0
    for base in range(0, n_seqs, _ORDER_BATCH):
        ends_file.seek(8 * base)
        ends = np.frombuffer(ends_file.read(8 * min(_ORDER_BATCH, n_seqs - base)), dtype=np.int64)
        lens = np.diff(ends, prepend=previous)
        previous = int(ends[-1])
        group = np.searchsorted(-values, -lens)     # values run high to low
        order = np.argsort(group, kind="stable")
        in_group = np.bincount(group, minlength=len(values))
        rank = np.arange(len(order)) - (np.cumsum(in_group) - in_group)[group[order]]
        slots.append(next_slot[group[order]] + rank)
        indices.append((base + order).astype(np.int32))
        next_slot += in_group
        pending += len(order)
        if pending >= _ORDER_BATCH:
            flush()
            pending = 0
    if slots:
        flush()


def read_gsdb(path: str | os.PathLike) -> SequenceDB:
    """Memory-map a .gsdb file written by :func:`write_gsdb`."""
    path = Path(path)
    return _gsdb_from_buffer(np.memmap(path, dtype=np.uint8, mode="r"), path)


def _gsdb_header_of(buf, path) -> dict:
    try:
        n = int.from_bytes(bytes(buf[len(GSDB_MAGIC):len(GSDB_MAGIC) + 4]), "little")
        header = json.loads(bytes(buf[len(GSDB_MAGIC) + 4:len(GSDB_MAGIC) + 4 + n]))
    except (ValueError, UnicodeDecodeError):
        raise FormatError(f"{path}: corrupt .gsdb header") from None
    if not isinstance(header, dict) or header.get("format") != "gsdb":
        raise FormatError(f"{path}: corrupt .gsdb header")
    if header.get("version") != GSDB_VERSION:
        raise FormatError(f"{path}: a .gsdb of format {header.get('version')}, this gpu-search reads "
                          f"format {GSDB_VERSION}; rebuild it with gpu-search makedb")
    return header


def _gsdb_from_buffer(buf: np.ndarray, path: Path) -> SequenceDB:
    """A .gsdb's database over its bytes (a memory map of the file, or the bytes of a pipe)."""
    header = _gsdb_header_of(buf, path)
    size = len(buf)
    arrays = {}
    for name in _SECTIONS:
        sec = header["sections"][name]
        dt = np.dtype(sec["dtype"])
        end = sec["offset"] + sec["count"] * dt.itemsize
        if end > size:
            raise FormatError(f"{path}: truncated .gsdb file; rebuild it with gpu-search makedb")
        arrays[name] = buf[sec["offset"] : end].view(dt)
    db = SequenceDB(
        arrays["residues"], arrays["offsets"],
        arrays["name_blob"], arrays["name_offsets"],
        arrays["header_blob"], arrays["header_offsets"],
        source=str(path), columns_blob=arrays["columns_blob"],
        columns_offsets=arrays["columns_offsets"] if len(arrays["columns_offsets"]) else None,
        total_seqs=header["total_seqs"], total_residues=header["total_residues"],
        shard=tuple(header["shard"]) if header.get("shard") else None,
        first_index=int(header.get("first_index", 0)),
        total_blast_residues=header.get("total_blast_residues"),
        blast_dropped=header.get("blast_dropped"),
    )
    if db.n_seqs != header["n_seqs"] or db.n_residues != header["n_residues"]:
        raise FormatError(f"{path}: .gsdb counts do not match its contents; rebuild it")
    db._order = arrays["length_order"]
    return db


def shard_bounds(lengths: np.ndarray, n_shards: int) -> list[tuple[int, int]]:
    """Cut a database into ``n_shards`` contiguous runs of about equal residue counts.

    Contiguous shards keep the database order, so merged results tie-break
    exactly as an unsharded search does.
    """
    cum = np.cumsum(lengths.astype(np.int64))
    return _cut(len(lengths), int(cum[-1]), n_shards, [cum])


def _cut(n, total, n_shards, cum_pieces) -> list[tuple[int, int]]:
    """:func:`shard_bounds` from the running sums of the lengths, given a piece at a time:
    shard s + 1 begins after the first sequence whose running sum reaches s / n_shards of
    the residues, and every shard holds a sequence at least."""
    n_shards = max(1, min(n_shards, n))
    targets = [total * s / n_shards for s in range(1, n_shards)]
    reached, base = [], 0
    for cum in cum_pieces:
        while len(reached) < len(targets):
            i = int(np.searchsorted(cum, targets[len(reached)], side="left"))
            if i == len(cum):
                break
            reached.append(base + i)
        base += len(cum)
    reached += [n] * (len(targets) - len(reached))
    cuts = [0]
    for s in range(1, n_shards):
        cuts.append(min(max(reached[s - 1] + 1, cuts[-1] + 1), n - (n_shards - s)))
    cuts.append(n)
    return list(zip(cuts[:-1], cuts[1:]))


class _GsdbRun:
    """Sequences ``a`` to ``b`` of a .gsdb open as ``fh`` (makedb's whole database, cut into
    shards), copied into a new .gsdb a piece at a time."""

    def __init__(self, fh, header: dict, a: int, b: int):
        self.fh, self.header, self.a, self.b = fh, header, a, b

    def _int64(self, section, i, count) -> np.ndarray:
        self.fh.seek(self.header["sections"][section]["offset"] + 8 * i)
        return np.frombuffer(self.fh.read(8 * count), dtype=np.int64)

    def _lengths(self, section):
        """The lengths of sequences a..b from a section of offsets, a batch at a time."""
        for i in range(self.a, self.b, _ORDER_BATCH):
            yield np.diff(self._int64(section, i, min(_ORDER_BATCH, self.b - i) + 1))

    def _bytes(self, section, offsets):
        """The bytes of sequences a..b of a section of bytes, PIECE at a time."""
        start, stop = (int(self._int64(offsets, i, 1)[0]) for i in (self.a, self.b))
        base = self.header["sections"][section]["offset"]
        for p in range(start, stop, PIECE):
            self.fh.seek(base + p)
            yield self.fh.read(min(PIECE, stop - p))

    def write(self, out, spool_dir, **meta):
        w = _GsdbWriter(out, spool_dir)
        try:
            for data in self._bytes("residues", "offsets"):
                w.residues(data)
            for lens in self._lengths("offsets"):
                w.lengths(lens)
            kinds = ("name", "header", "columns") if self.header["sections"]["columns_offsets"]["count"] else (
                "name", "header")
            for kind in kinds:
                for data in self._bytes(f"{kind}_blob", f"{kind}_offsets"):
                    w.blob(f"{kind}_blob", data)
                for lens in self._lengths(f"{kind}_offsets"):
                    w.offsets(f"{kind}_offsets", lens)
            w.finish(source=self.header["source"], **meta)
        finally:
            w.close()


def _spool_dir(out: Path) -> Path:
    """The folder of the output (a link's target's), where makedb's temporary files go."""
    directory = Path(os.path.realpath(out)).parent
    if not directory.is_dir():
        raise OutputError(f"{out}: directory {directory} does not exist")
    return directory


def _fasta_to_gsdb(pieces, source: str, fh, spool_dir, progress) -> None:
    """Digitize FASTA pieces into a .gsdb open as ``fh``, as they come."""
    w = _GsdbWriter(fh, spool_dir)
    try:
        n_seqs = n_res = 0
        for b in _fasta_batches(pieces, source):
            w.residues(b.residues)
            w.lengths(b.lengths)
            w.blob("name_blob", b.name_blob)
            w.offsets("name_offsets", b.name_lens)
            w.blob("header_blob", b.header_blob)
            w.offsets("header_offsets", b.header_lens)
            n_seqs += len(b.name_lens)
            n_res += len(b.residues)
            progress.update(n_seqs, f"{n_res:,} residues")
        w.finish(source=source)
    finally:
        w.close()


def makedb(fasta: str | os.PathLike, out: str | os.PathLike, shards: int = 1, *,
           quiet: bool = False) -> list[Path]:
    """``gpu-search makedb``: write a .gsdb (and/or N shards of it). Returns the paths written.

    With ``shards > 1`` the shards are written as ``OUT-STEM.shardIofN.gsdb``
    next to ``out``; each records the whole database's sequence and residue
    counts so that searches of a shard report E-values of the whole.

    The FASTA (plain, gzip, a pipe) is read once and written as it is read, in memory that
    does not grow with the database.  Shards need the whole database's size before the first
    is written: the whole .gsdb is written first to an unnamed temporary file beside ``out``,
    then cut.  Progress on stderr on a terminal, unless ``quiet``.
    """
    from .blastdb import blast_database_prefix, read_blast_database

    out = Path(out)
    prefix = blast_database_prefix(fasta)
    if prefix is not None:          # a BLAST database: loaded whole, then written (or cut)
        return _makedb_of(read_blast_database(prefix), out, shards)
    with _Input(fasta) as inp:
        if inp.is_gsdb:             # a .gsdb again: rewritten, or cut, as loaded
            db = (read_gsdb(fasta) if inp.regular else
                  _gsdb_from_buffer(np.frombuffer(b"".join(inp.raw_pieces()), dtype=np.uint8), Path(fasta)))
            return _makedb_of(db, out, shards)
        from .progress import Progress

        progress = Progress("makedb", None, "sequences", quiet)
        try:
            if shards <= 1:
                with atomic_path(out) as tmp, open(tmp, "wb") as fh:
                    _fasta_to_gsdb(inp.pieces(), str(fasta), fh, Path(tmp).parent, progress)
                return [out]
            spool_dir = _spool_dir(out)
            try:
                whole = tempfile.TemporaryFile(dir=spool_dir)
            except OSError as exc:
                raise OutputError(f"{out}: cannot write ({exc.strerror})") from None
            with whole:
                _fasta_to_gsdb(inp.pieces(), str(fasta), whole, spool_dir, progress)
                whole.seek(0)
                header = _gsdb_header_of(np.frombuffer(whole.read(_HEADER_SIZE), dtype=np.uint8), out)
                return _write_shards(whole, header, out, shards)
        finally:
            progress.close()


def _shard_paths(out: Path, n: int) -> list[Path]:
    stem = out.name[:-5] if out.name.endswith(".gsdb") else out.name
    return [out.with_name(f"{stem}.shard{i}of{n}.gsdb") for i in range(1, n + 1)]


def _write_shards(whole, header: dict, out: Path, shards: int) -> list[Path]:
    """Cut the whole .gsdb open as ``whole`` into shards (a whole set, or none left)."""
    n, total = header["n_seqs"], header["n_residues"]
    run = _GsdbRun(whole, header, 0, n)
    cums = (np.cumsum(lens) + int(run._int64("offsets", i, 1)[0])
            for i, lens in zip(range(0, n, _ORDER_BATCH), run._lengths("offsets")))
    bounds = _cut(n, total, shards, cums)
    return _write_shard_set(out, bounds, lambda i, a, b, p: write_gsdb(
        _GsdbRun(whole, header, a, b), p, total_seqs=n, total_residues=total, shard=(i, len(bounds)),
        first_index=a, total_blast_residues=header.get("total_blast_residues")))


def _write_shard_set(out: Path, bounds, write_shard) -> list[Path]:
    """Each shard (a, b) of ``bounds`` written by ``write_shard(i, a, b, path)``, all or none:
    a set of shards is whole or not there (shards 1-5 of 8 would look like a database)."""
    written = []
    try:
        for i, ((a, b), p) in enumerate(zip(bounds, _shard_paths(out, len(bounds))), start=1):
            write_shard(i, a, b, p)
            written.append(p)
    except BaseException:
        for p in written:
            with contextlib.suppress(OSError):
                p.unlink()
        raise
    return written


def _makedb_of(db: SequenceDB, out: Path, shards: int) -> list[Path]:
    """makedb of a database in memory (or memory-mapped): a .gsdb given as the input."""
    if shards <= 1:
        write_gsdb(db, out)
        return [out]
    bounds = shard_bounds(db.lengths, shards)
    blast_residues = db.n_residues - _blast_dropped(db.residues)
    return _write_shard_set(out, bounds, lambda i, a, b, p: write_gsdb(
        db.subset(np.arange(a, b)), p, total_seqs=db.n_seqs, total_residues=db.n_residues,
        shard=(i, len(bounds)), first_index=a, total_blast_residues=blast_residues))
