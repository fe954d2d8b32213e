"""BLAST+ tabular output: ``-outfmt 6`` and ``-outfmt 7`` with BLAST's columns and number formats.

Rows are written exactly as BLAST+ 2.12 writes them (align_format/tabular.cpp):
the default 12 columns ``qaccver saccver pident length mismatch gapopen qstart
qend sstart send evalue bitscore`` (``std``), any column list, and format 7's
comment lines.  Identifiers follow a BLAST database made by ``makeblastdb``
without ``-parse_seqids`` where the database is FASTA: the id is the first word of the
FASTA header and the title is the whole header line; a BLAST database made with
``-parse_seqids`` gives its own (``Hsp.subject_columns``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import lru_cache

from .. import __version__
from ..errors import OptionError
from ..seqdb import BLAST_COLUMNS

STD_COLUMNS = ["qaccver", "saccver", "pident", "length", "mismatch", "gapopen",
               "qstart", "qend", "sstart", "send", "evalue", "bitscore"]

# column -> the name BLAST prints in format 7's "# Fields:" line
FIELD_NAMES = {
    "qseqid": "query id", "qacc": "query acc.", "qaccver": "query acc.ver", "qlen": "query length",
    "sseqid": "subject id", "sallseqid": "subject ids", "sacc": "subject acc.",
    "saccver": "subject acc.ver", "sallacc": "subject accs.", "slen": "subject length",
    "qstart": "q. start", "qend": "q. end", "sstart": "s. start", "send": "s. end",
    "qseq": "query seq", "sseq": "subject seq", "evalue": "evalue", "bitscore": "bit score",
    "score": "score", "length": "alignment length", "pident": "% identity", "nident": "identical",
    "mismatch": "mismatches", "positive": "positives", "gapopen": "gap opens", "gaps": "gaps",
    "ppos": "% positives", "frames": "query/sbjct frames", "qframe": "query frame",
    "sframe": "sbjct frame", "btop": "BTOP", "stitle": "subject title", "salltitles": "subject titles",
    "qcovhsp": "% query coverage per hsp",
}


def fields_reduce(obj):
    """A dataclass pickled as its fields in order, rebuilt by its constructor: the traceback's
    worker processes send thousands of rows back, and the parent's thread that loads them holds
    the GIL the GPU threads wait for; this loads about 3x faster than the default (a dict).
    Saved hits (``--hits-out``, blast/merge.py) list an Hsp's fields in this order too: a change
    to the fields of Hsp or SubjectResult needs a new output.RESULTS_VERSION."""
    names = _FIELD_NAMES.get(type(obj))
    if names is None:
        names = _FIELD_NAMES[type(obj)] = tuple(f.name for f in fields(obj))
    return type(obj), tuple([getattr(obj, n) for n in names])


_FIELD_NAMES: dict = {}


def tuple_reduce(self):
    """A NamedTuple pickled as its class and a plain tuple, rebuilt by ``tuple.__new__``: loading
    it runs no Python (a NamedTuple's own ``__new__`` is Python), so the parent's one thread that
    loads the worker processes' answers keeps the GIL while it does (workers.as_sent)."""
    return tuple.__new__, (type(self), tuple(self))


@dataclass
class Hsp:
    """One reported alignment (one output row).

    Coordinates are 1-based and inclusive, as BLAST prints them; ``qseq`` and
    ``sseq`` are the aligned strings with '-' for gaps.
    """

    query_id: str
    query_title: str
    query_length: int
    subject_id: str
    subject_title: str
    subject_length: int
    score: int
    bit_score: float
    evalue: float
    q_start: int
    q_end: int
    s_start: int
    s_end: int
    qseq: str
    sseq: str
    nident: int
    positive: int
    gaps: int
    gapopen: int
    oid: int = 0        # the subject's position in the whole database (ties in ordering)
    # from a BLAST database made with -parse_seqids: the subject's seqdb.BLAST_COLUMNS,
    # tab-separated; "" for any other database, whose columns are subject_id and subject_title
    subject_columns: str = ""

    def __reduce__(self):
        return fields_reduce(self)

    @property
    def length(self) -> int:
        return len(self.qseq)

    @property
    def mismatch(self) -> int:
        return self.length - self.nident - self.gaps


TABULAR = {6: "\t", 7: "\t", 10: ","}     # -outfmt -> the separator of its columns
XML = 5                                    # -outfmt 5: BLAST XML
PAIRWISE = 0                               # -outfmt 0: BLAST's pairwise report


def stored_title(title: str) -> str:
    """A FASTA title as makeblastdb 2.12 stores it: a tab as three spaces (wherever it
    stands), Ctrl-A as a space, other control characters and DEL as '#', and each byte of a
    non-ASCII letter's UTF-8 as '#'."""
    if title.isascii() and title.isprintable():
        return title
    out: list[str] = []
    for c in title:
        if c == "\t":
            out.append("   ")
        elif c == "\x01":
            out.append(" ")
        elif c < " " or c == "\x7f":
            out.append("#")
        elif not c.isascii():
            out.extend("#" * len(c.encode("utf-8", "surrogateescape")))
        else:
            out.append(c)
    return "".join(out)


def query_definition(header: str) -> str:
    """A query's title as blastp 2.12 reads it from a FASTA header line (after '>'): leading
    whitespace skipped, cut at the first control character after it (a tab included), trailing
    spaces removed."""
    title = header.lstrip(" \t\n\r\v\f")
    for i, c in enumerate(title):
        if c < " ":
            title = title[:i]
            break
    return title.rstrip(" ")


def parse_outfmt(spec: str) -> tuple[int, list[str]]:
    """``-outfmt`` text -> (format number, column list).  The tabular formats: 6 (tabs), 7 (tabs
    and comment lines) and 10 (commas, as BLAST+ writes them: nothing quoted); 5, BLAST XML
    (:mod:`.xml`), and 0, the pairwise report (:mod:`.pairwise`), take no columns (BLAST+
    ignores words after them, and so does this)."""
    parts = str(spec).split()
    if not parts:
        raise OptionError("-outfmt is empty")
    try:
        fmt = int(parts[0])
    except ValueError:
        raise OptionError(f"-outfmt {spec!r}: the format must be 0, 5, or 6, 7 or 10 then columns") from None
    if fmt in (XML, PAIRWISE):
        return fmt, []
    if fmt not in TABULAR:
        raise OptionError(f"-outfmt {fmt}: only the pairwise report (0), BLAST XML (5) and the tabular "
                          "formats 6, 7 and 10 are supported")
    columns: list[str] = []
    for word in parts[1:] or ["std"]:
        if word == "std":
            columns.extend(STD_COLUMNS)
        elif word in FIELD_NAMES:
            columns.append(word)
        else:
            raise OptionError(f"-outfmt: unknown column {word!r} "
                              f"(supported: std {' '.join(sorted(FIELD_NAMES))})")
    return fmt, columns


def btop(qseq: str, sseq: str) -> str:
    """BLAST traceback operations: run lengths of identities, letter pairs otherwise."""
    out, run = [], 0
    for a, b in zip(qseq, sseq):
        if a == b:
            run += 1
            continue
        if run:
            out.append(str(run))
            run = 0
        out.append(a + b)
    if run:
        out.append(str(run))
    return "".join(out)


def _qcovhsp(h: Hsp) -> str:
    return str(int(100.0 * (h.q_end - h.q_start + 1) / h.query_length + 0.5))


def _blast_column(k: int, plain):
    """The getter of BLAST_COLUMNS[k]: from a -parse_seqids subject's ``subject_columns``,
    else ``plain`` (the subject's id or title, as a FASTA database gives them)."""
    return lambda h: h.subject_columns.split("\t")[k] if h.subject_columns else plain(h)


def _column_getters() -> dict:
    """column -> function of an Hsp giving its text (BLAST's number formats)."""
    from .stats import format_bitscore, format_evalue, format_percent

    getters = dict.fromkeys(("qseqid", "qacc", "qaccver"), lambda h: h.query_id)
    getters["sseqid"] = lambda h: h.subject_id
    getters["stitle"] = lambda h: h.subject_title      # (the columns' stitle, where they are)
    for k, column in enumerate(BLAST_COLUMNS):
        if column == "salltitles":
            getters[column] = _blast_column(k, lambda h: h.subject_title)
        elif column not in ("stitle", "sallaccver"):
            getters[column] = _blast_column(k, lambda h: h.subject_id)
    getters.update({
        "qlen": lambda h: str(h.query_length), "slen": lambda h: str(h.subject_length),
        "qstart": lambda h: str(h.q_start), "qend": lambda h: str(h.q_end),
        "sstart": lambda h: str(h.s_start), "send": lambda h: str(h.s_end),
        "score": lambda h: str(h.score), "length": lambda h: str(h.length),
        "nident": lambda h: str(h.nident), "mismatch": lambda h: str(h.mismatch),
        "positive": lambda h: str(h.positive), "gapopen": lambda h: str(h.gapopen),
        "gaps": lambda h: str(h.gaps), "qframe": lambda h: "1", "sframe": lambda h: "1",
        "pident": lambda h: format_percent(h.nident, h.length, 3),
        "ppos": lambda h: format_percent(h.positive, h.length, 2),
        "evalue": lambda h: format_evalue(h.evalue),
        "bitscore": lambda h: format_bitscore(h.bit_score),
        "qseq": lambda h: h.qseq, "sseq": lambda h: h.sseq, "frames": lambda h: "1/1",
        "btop": lambda h: btop(h.qseq, h.sseq), "qcovhsp": _qcovhsp,
    })
    return getters


@lru_cache(maxsize=None)
def row_formatter(columns: tuple[str, ...], sep: str = "\t"):
    """A function writing an Hsp's row for these columns, ``sep`` between them: the column
    getters are looked up once, not per row and column (the rows are written while the GPU
    threads wait for the GIL)."""
    getters = _column_getters()
    unknown = [c for c in columns if c not in getters]
    if unknown:
        raise OptionError(f"-outfmt: unknown column {unknown[0]!r}")
    chosen = [getters[c] for c in columns]
    return lambda h: sep.join([get(h) for get in chosen])


def format_row(h: Hsp, columns: list[str]) -> str:
    return row_formatter(tuple(columns))(h)


def write_query(fh, fmt: int, columns: list[str], query_title: str, db_name: str, hsps: list) -> None:
    """Rows of one query (format 7: with its comment lines); ``hsps``: Hsp objects, or their
    lines as ``row_formatter`` wrote them (the traceback's worker processes send lines)."""
    if fmt == 7:
        # BLAST+'s program line, then which program computed the rows (comment lines: no
        # parser of format 7 reads them as rows); a database named with a newline in its path
        # keeps it escaped, so that every comment line starts with '#'
        fh.write(f"# BLASTP 2.12.0+ (computed by gpu-search {__version__})\n")
        fh.write(f"# Query: {query_definition(query_title)}\n")
        fh.write("# Database: %s\n" % db_name.replace("\r", "\\r").replace("\n", "\\n"))
        if hsps:
            fh.write("# Fields: " + ", ".join(FIELD_NAMES[c] for c in columns) + "\n")
        fh.write(f"# {len(hsps)} hits found\n")
    if hsps:
        row = row_formatter(tuple(columns), TABULAR[fmt])
        fh.write("".join([(h if isinstance(h, str) else row(h)) + "\n" for h in hsps]))


def write_footer(fh, fmt: int, n_queries: int) -> None:
    if fmt == 7:
        fh.write(f"# BLAST processed {n_queries} queries\n")
