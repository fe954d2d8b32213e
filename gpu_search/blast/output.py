"""BLAST+ tabular output: ``-outfmt 6`` and ``-outfmt 7`` with BLAST's columns and number formats.

Rows are written exactly as BLAST+ 2.12 writes them (align_format/tabular.cpp):
the default 12 columns ``qaccver saccver pident length mismatch gapopen qstart
qend sstart send evalue bitscore`` (``std``), any column list, and format 7's
comment lines.  Identifiers follow a BLAST database made by ``makeblastdb``
without ``-parse_seqids``: the id is the first word of the FASTA header and
the title is the whole header line.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import OptionError

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

    @property
    def length(self) -> int:
        return len(self.qseq)

    @property
    def mismatch(self) -> int:
        return self.length - self.nident - self.gaps


def parse_outfmt(spec: str) -> tuple[int, list[str]]:
    """``-outfmt`` text -> (format number, column list).  Only 6 and 7 are supported."""
    parts = str(spec).split()
    if not parts:
        raise OptionError("-outfmt is empty")
    try:
        fmt = int(parts[0])
    except ValueError:
        raise OptionError(f"-outfmt {spec!r}: the format must be 6 or 7, then columns") from None
    if fmt not in (6, 7):
        raise OptionError(f"-outfmt {fmt}: only the tabular formats 6 and 7 are supported")
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


def _cell(h: Hsp, column: str) -> str:
    from .stats import format_bitscore, format_evalue

    if column in ("qseqid", "qacc", "qaccver"):
        return h.query_id
    if column in ("sseqid", "sallseqid", "sacc", "saccver", "sallacc"):
        return h.subject_id
    simple = {
        "qlen": h.query_length, "slen": h.subject_length, "qstart": h.q_start, "qend": h.q_end,
        "sstart": h.s_start, "send": h.s_end, "score": h.score, "length": h.length,
        "nident": h.nident, "mismatch": h.mismatch, "positive": h.positive,
        "gapopen": h.gapopen, "gaps": h.gaps, "qframe": 1, "sframe": 1,
    }
    if column in simple:
        return str(simple[column])
    if column == "pident":
        return f"{100.0 * h.nident / h.length:.3f}"
    if column == "ppos":
        return f"{100.0 * h.positive / h.length:.2f}"
    if column == "evalue":
        return format_evalue(h.evalue)
    if column == "bitscore":
        return format_bitscore(h.bit_score)
    if column == "qseq":
        return h.qseq
    if column == "sseq":
        return h.sseq
    if column == "frames":
        return "1/1"
    if column == "btop":
        return btop(h.qseq, h.sseq)
    if column in ("stitle", "salltitles"):
        return h.subject_title
    if column == "qcovhsp":
        return str(int(100.0 * (h.q_end - h.q_start + 1) / h.query_length + 0.5))
    raise OptionError(f"-outfmt: unknown column {column!r}")


def format_row(h: Hsp, columns: list[str]) -> str:
    return "\t".join(_cell(h, c) for c in columns)


def write_query(fh, fmt: int, columns: list[str], query_title: str, db_name: str, hsps: list[Hsp]) -> None:
    """Rows of one query (format 7: with its comment lines)."""
    if fmt == 7:
        fh.write("# BLASTP 2.12.0+\n")
        fh.write(f"# Query: {query_title}\n")
        fh.write(f"# Database: {db_name}\n")
        if hsps:
            fh.write("# Fields: " + ", ".join(FIELD_NAMES[c] for c in columns) + "\n")
        fh.write(f"# {len(hsps)} hits found\n")
    for h in hsps:
        fh.write(format_row(h, columns) + "\n")


def write_footer(fh, fmt: int, n_queries: int) -> None:
    if fmt == 7:
        fh.write(f"# BLAST processed {n_queries} queries\n")
