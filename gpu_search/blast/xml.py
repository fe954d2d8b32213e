"""BLAST XML output (``-outfmt 5``) as BLAST+ 2.12 blastp writes it.

BLAST+ builds the report as NCBI serial objects (blastxml_format.cpp) and
writes it incrementally with CObjectOStreamXml: the header up to
``</BlastOutput_param>``, then per query an ``<Iteration>`` whose hits are
written one ``<Hit>`` at a time, then the closing tags.  This module writes
the same bytes from gpu-search's output rows (output.Hsp):

- numbers: integers as they are; doubles (expect, bit score, E-value, eff-space,
  kappa, lambda, entropy) as the serial library's ``%.15g``, the bit score and
  E-value first rounded to 6 significant digits ("%.6g", as s_SeqAlignSetToXMLHsps),
  an E-value below 1e-180 as 0 (the Seq-align BLAST+ formats holds it so);
- text: ``& < > ' "`` escaped as entities (control characters as ``&#xH;``, though
  none reaches the XML: see below); other characters written as they are;
- queries are named ``Query_1``, ``Query_2``, ... in input order, as blastp names
  FASTA queries; their definition is the FASTA header line, cut at its first control
  character (tab included), as blastp reads it, then cleaned as the pairwise report's
  descriptions table cleans titles (``titles.description_title``: runs of spaces made one,
  trailing periods dropped, ...);
- subjects as in a database made by makeblastdb without ``-parse_seqids``:
  ``Hit_id`` ``gnl|BL_ORD_ID|<oid>``, ``Hit_accession`` the oid (0-based position
  in the database), ``Hit_def`` the whole FASTA header line as makeblastdb stores
  it (stored_title: "café" becomes "caf##", in BLAST+'s tabular output too; a tab as three
  spaces, control characters '#'); or, for a database made with
  ``-parse_seqids``, BLAST+'s sseqid, the title ("No definition line" when it has
  none) and the best id's accession (parse_seqids_hit_fields);
- ``Hsp_identity``, ``Hsp_positive`` and ``Hsp_midline`` are counted again on the
  aligned strings, as BLAST+ does: the letter where both are equal, '+' where the
  matrix scores the pair above 0, a space otherwise (gaps included);
- ``Hsp_query-frame`` and ``Hsp_hit-frame`` are 0 (protein against protein).

What differs from BLAST+:

- a query title with non-ASCII letters is written in UTF-8, as the rest of the
  file.  BLAST+ 2.12 writes such a title in Latin-1 (one byte 0xEF for "ï"), which
  leaves a file no XML parser reads as the UTF-8 it declares, and stops with an
  exception, writing no report, for a letter outside Latin-1 ("α").
- ``BlastOutput_version``: ``BLASTP 2.12.0+ (computed by gpu-search <version>)``
  instead of ``BLASTP 2.12.0+``, as -outfmt 7's program line says it; parsers that
  read BLAST's version from this element (Biopython's) still find 2.12.0+ first.

``BlastOutput_reference`` is BLAST's, the publication of the method whose numbers
gpu-search reproduces, and ``BlastOutput_db`` is the database name the caller gives
(blastp writes its -db as given).
"""

from __future__ import annotations

from .. import __version__
from .output import query_definition, stored_title
from .titles import deflines, description_title

VERSION = f"BLASTP 2.12.0+ (computed by gpu-search {__version__})"

# CReference::eGappedBlast (its "&auml;" is escaped once more on output, "&amp;auml;",
# as BLAST+ 2.12 writes it)
REFERENCE = ("Stephen F. Altschul, Thomas L. Madden, Alejandro A. Sch&auml;ffer, Jinghui Zhang, "
             "Zheng Zhang, Webb Miller, and David J. Lipman (1997), \"Gapped BLAST and PSI-BLAST: "
             "a new generation of protein database search programs\", Nucleic Acids Res. "
             "25:3389-3402.")

_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "'": "&apos;", '"': "&quot;"}
_ESCAPES.update({chr(c): "&#x%x;" % c for c in range(0x20)})
_ESCAPE_TABLE = str.maketrans(_ESCAPES)


def escape(text: str) -> str:
    """Text as CObjectOStreamXml::WriteEscapedChar writes it."""
    return text.translate(_ESCAPE_TABLE)


def format_double(x: float) -> str:
    """A double as the serial library writes it: 15 significant digits, %g style."""
    return "%.15g" % x


def format_score(x: float) -> str:
    """Bit score and E-value: rounded to 6 significant digits, then written as a double."""
    return format_double(float("%.6g" % x))


SMALLEST_EVALUE = 1.0e-180      # blast_seqalign.cpp: the Seq-align keeps smaller E-values as 0


def format_evalue(e: float) -> str:
    return format_score(0.0 if e < SMALLEST_EVALUE else e)


def positive_pairs(matrix_name: str) -> set[tuple[str, str]]:
    """Letter pairs the matrix scores above 0 (CBlastFormattingMatrix over NCBIstdaa)."""
    from .alphabet import NCBISTDAA
    from .matrix import load_matrix

    scores = load_matrix(matrix_name).scores
    return {(a, b) for i, a in enumerate(NCBISTDAA) for j, b in enumerate(NCBISTDAA) if scores[i, j] > 0}


def midline(qseq: str, sseq: str, positive: set[tuple[str, str]]) -> tuple[str, int, int]:
    """(midline, identities, positives) of an alignment, counted as s_SeqAlignSetToXMLHsps."""
    out, nident, npos = [], 0, 0
    for a, b in zip(qseq, sseq):
        if a == b:
            out.append(a)
            nident += 1
            npos += 1
        elif (a, b) in positive:
            out.append("+")
            npos += 1
        else:
            out.append(" ")
    return "".join(out), nident, npos


def fasta_hit_fields(h) -> tuple[str, str, str]:
    """(Hit_id, Hit_def, Hit_accession) of a subject in a database made from FASTA without
    -parse_seqids: BLAST's ordinal id, the whole header line, the ordinal number."""
    return f"gnl|BL_ORD_ID|{h.oid}", h.subject_title, str(h.oid)


def seqid_accession(seqid: str) -> str:
    """Hit_accession of a -parse_seqids subject: the label of its best Seq-id, without
    version (CAlignFormatUtil::GetLabel), as BLAST+ 2.12 writes it for each kind of id:
    "sp|P12345|NAME" -> P12345, "ref|NP_000001.2|" -> NP_000001, a gi followed by another
    id -> that id's, "gi|555" -> 555, "pdb|1ABC|A" -> 1ABC_A, "gnl|db|tag" -> tag,
    "pir||name" -> name, "pat|US|123|1" -> US123_1, a local id -> itself."""
    parts = seqid.split("|")
    if len(parts) == 1:
        return seqid
    if parts[0] == "gi" and len(parts) > 3:
        parts = parts[2:]
    kind = parts[0]
    if kind == "pdb":
        return f"{parts[1]}_{parts[2]}" if len(parts) > 2 and parts[2] else parts[1]
    if kind == "gnl":
        return parts[2]
    if kind == "pat":
        return f"{parts[1]}{parts[2]}_{parts[3]}"
    if not parts[1] and len(parts) > 2:        # pir||name, prf||name: no accession, a name
        return parts[2]
    accession, dot, version = parts[1].rpartition(".")
    return accession if dot and version.isdigit() else parts[1]


def parse_seqids_hit_fields(h) -> tuple[str, str, str]:
    """(Hit_id, Hit_def, Hit_accession) of a subject in a database made with -parse_seqids:
    the first defline's id, its title followed by " >id title" of each other defline (a local
    id with its "lcl|"), and the accession of BLAST+'s sseqid (``h.subject_id``).  Without
    ``h.subject_columns`` (rows made before they were kept): the sseqid and the title."""
    if not h.subject_columns:
        return h.subject_id, "" if h.subject_title == "N/A" else h.subject_title, seqid_accession(h.subject_id)
    found, _ = deflines(h)
    text = found[0][2] + "".join(f" >{seqid if '|' in seqid else 'lcl|' + seqid} {title}"
                                 for seqid, _, title in found[1:])
    return found[0][0], text, seqid_accession(h.subject_id)


def hit_fields(h) -> tuple[str, str, str]:
    """(Hit_id, Hit_def, Hit_accession) of a subject: :func:`parse_seqids_hit_fields` where its
    database gave BLAST columns (made with -parse_seqids), else :func:`fasta_hit_fields`."""
    return parse_seqids_hit_fields(h) if h.subject_columns else fasta_hit_fields(h)


def query_id(index: int) -> str:
    """blastp's name for the query at 0-based input position ``index``."""
    return f"Query_{index + 1}"


def _definition(title: str) -> str:
    return escape(title) if title else "No definition line"


def _query_definition(header: str) -> str:
    """A query's definition from its FASTA header line (see the module docstring)."""
    return _definition(description_title(query_definition(header)))


class XmlWriter:
    """Writes one ``-outfmt 5`` report: the header at construction, an Iteration per
    :meth:`query` call (queries in input order), the closing tags at :meth:`close`.

    ``evalue`` is the -evalue threshold; ``filter_string`` BLAST's filter text ("F" for
    blastp's defaults, "L;" with -seg yes, "m;" with -soft_masking true, "L;m;" both);
    ``hit_fields`` gives a subject's (Hit_id, Hit_def, Hit_accession) from its first row
    (:func:`hit_fields` by default).
    """

    def __init__(self, fh, *, db_name: str, matrix: str, evalue: float, gap_open: int, gap_extend: int,
                 first_query_title: str, first_query_len: int, filter_string: str = "F",
                 hit_fields=hit_fields):
        self.fh = fh
        self.hit_fields = hit_fields
        self.positive = positive_pairs(matrix)
        fh.write(
            '<?xml version="1.0"?>\n'
            '<!DOCTYPE BlastOutput PUBLIC "-//NCBI//NCBI BlastOutput/EN" '
            '"http://www.ncbi.nlm.nih.gov/dtd/NCBI_BlastOutput.dtd">\n'
            "<BlastOutput>\n"
            "  <BlastOutput_program>blastp</BlastOutput_program>\n"
            f"  <BlastOutput_version>{escape(VERSION)}</BlastOutput_version>\n"
            f"  <BlastOutput_reference>{escape(REFERENCE)}</BlastOutput_reference>\n"
            f"  <BlastOutput_db>{escape(db_name)}</BlastOutput_db>\n"
            f"  <BlastOutput_query-ID>{query_id(0)}</BlastOutput_query-ID>\n"
            f"  <BlastOutput_query-def>{_query_definition(first_query_title)}</BlastOutput_query-def>\n"
            f"  <BlastOutput_query-len>{first_query_len}</BlastOutput_query-len>\n"
            "  <BlastOutput_param>\n"
            "    <Parameters>\n"
            f"      <Parameters_matrix>{escape(matrix.upper())}</Parameters_matrix>\n"
            f"      <Parameters_expect>{format_double(evalue)}</Parameters_expect>\n"
            f"      <Parameters_gap-open>{gap_open}</Parameters_gap-open>\n"
            f"      <Parameters_gap-extend>{gap_extend}</Parameters_gap-extend>\n"
            f"      <Parameters_filter>{escape(filter_string)}</Parameters_filter>\n"
            "    </Parameters>\n"
            "  </BlastOutput_param>\n"
            "<BlastOutput_iterations>\n")

    def query(self, index: int, query_title: str, query_len: int, hsps, *, db_num_seqs: int, db_length: int,
              length_adjustment: int, eff_space: int | float, kappa: float, lambda_: float,
              entropy: float) -> None:
        """One query's Iteration.  ``index``: the query's 0-based position in the input;
        ``hsps``: its output rows (output.Hsp) in output order, the rows of one subject
        consecutive; the statistics are the query's: length adjustment, effective search
        space and the gapped K, lambda, H."""
        w = []
        w.append("<Iteration>\n"
                 f"  <Iteration_iter-num>{index + 1}</Iteration_iter-num>\n"
                 f"  <Iteration_query-ID>{query_id(index)}</Iteration_query-ID>\n"
                 f"  <Iteration_query-def>{_query_definition(query_title)}</Iteration_query-def>\n"
                 f"  <Iteration_query-len>{query_len}</Iteration_query-len>\n"
                 "<Iteration_hits>\n")
        hit_num = 0
        i = 0
        while i < len(hsps):
            # the rows of one subject: one Hit, its HSPs numbered from 1
            j = i + 1
            while j < len(hsps) and hsps[j].oid == hsps[i].oid:
                j += 1
            hit_num += 1
            first = hsps[i]
            hit_id, hit_def, accession = self.hit_fields(first)
            w.append("<Hit>\n"
                     f"  <Hit_num>{hit_num}</Hit_num>\n"
                     f"  <Hit_id>{escape(hit_id)}</Hit_id>\n"
                     f"  <Hit_def>{_definition(stored_title(hit_def))}</Hit_def>\n"
                     f"  <Hit_accession>{escape(accession)}</Hit_accession>\n"
                     f"  <Hit_len>{first.subject_length}</Hit_len>\n"
                     "  <Hit_hsps>\n")
            for num, h in enumerate(hsps[i:j], 1):
                mid, nident, npos = midline(h.qseq, h.sseq, self.positive)
                w.append("    <Hsp>\n"
                         f"      <Hsp_num>{num}</Hsp_num>\n"
                         f"      <Hsp_bit-score>{format_score(h.bit_score)}</Hsp_bit-score>\n"
                         f"      <Hsp_score>{h.score}</Hsp_score>\n"
                         f"      <Hsp_evalue>{format_evalue(h.evalue)}</Hsp_evalue>\n"
                         f"      <Hsp_query-from>{h.q_start}</Hsp_query-from>\n"
                         f"      <Hsp_query-to>{h.q_end}</Hsp_query-to>\n"
                         f"      <Hsp_hit-from>{h.s_start}</Hsp_hit-from>\n"
                         f"      <Hsp_hit-to>{h.s_end}</Hsp_hit-to>\n"
                         "      <Hsp_query-frame>0</Hsp_query-frame>\n"
                         "      <Hsp_hit-frame>0</Hsp_hit-frame>\n"
                         f"      <Hsp_identity>{nident}</Hsp_identity>\n"
                         f"      <Hsp_positive>{npos}</Hsp_positive>\n"
                         f"      <Hsp_gaps>{h.gaps}</Hsp_gaps>\n"
                         f"      <Hsp_align-len>{len(h.qseq)}</Hsp_align-len>\n"
                         f"      <Hsp_qseq>{escape(h.qseq)}</Hsp_qseq>\n"
                         f"      <Hsp_hseq>{escape(h.sseq)}</Hsp_hseq>\n"
                         f"      <Hsp_midline>{escape(mid)}</Hsp_midline>\n"
                         "    </Hsp>\n")
            w.append("  </Hit_hsps>\n</Hit>\n")
            i = j
        w.append("</Iteration_hits>\n"
                 "  <Iteration_stat>\n"
                 "    <Statistics>\n"
                 f"      <Statistics_db-num>{db_num_seqs}</Statistics_db-num>\n"
                 f"      <Statistics_db-len>{db_length}</Statistics_db-len>\n"
                 f"      <Statistics_hsp-len>{length_adjustment}</Statistics_hsp-len>\n"
                 f"      <Statistics_eff-space>{format_double(float(eff_space))}</Statistics_eff-space>\n"
                 f"      <Statistics_kappa>{format_double(kappa)}</Statistics_kappa>\n"
                 f"      <Statistics_lambda>{format_double(lambda_)}</Statistics_lambda>\n"
                 f"      <Statistics_entropy>{format_double(entropy)}</Statistics_entropy>\n"
                 "    </Statistics>\n"
                 "  </Iteration_stat>\n")
        if not hsps:
            w.append("  <Iteration_message>No hits found</Iteration_message>\n")
        w.append("</Iteration>\n")
        self.fh.write("".join(w))

    def close(self) -> None:
        """The closing tags (BLAST+ ends the file with an empty line)."""
        self.fh.write("</BlastOutput_iterations>\n</BlastOutput>\n\n")
