"""HMMER 3.4's hmmsearch and phmmer text reports, written in Python from pyhmmer results.

hmmsearch's main output (``-o``) is built from a few HMMER functions; each
has its Python counterpart here, line for line, so that our report is
identical to HMMER's:

    hmmsearch.c    p7_banner + output_header()   ->  write_header()
    hmmsearch.c    "Query: ..." lines             ->  write_query()
    p7_tophits.c   p7_tophits_Targets()           ->    _write_targets()
    p7_tophits.c   p7_tophits_Domains()           ->    _write_domains()
    p7_alidisplay.c p7_alidisplay_Print()         ->      _write_alignment()
    p7_pipeline.c  p7_pli_Statistics()            ->    _write_statistics()
    hmmsearch.c    "[ok]"                         ->  write_footer()
    p7_tophits.c   p7_tophits_TabularTail()       ->  write_tabular_tail()

The tabular tables themselves (--tblout, --domtblout, --pfamtblout) come
from pyhmmer's ``TopHits.write``, which calls HMMER's own C functions.

phmmer (phmmer.c) writes its reports with the same functions; what differs,
the banner, two header lines, its scoring options' echo, the "Query:" lines
of a sequence and the -A file's names, is a :class:`Program` parameter
(HMMSEARCH or PHMMER) of the writers here.

hmmscan (hmmscan.c) too, with HMMER's functions in scan mode: the targets
are models ("Model" columns, "Target model(s):" in the statistics), each
alignment shows its own model's annotation lines, and the header names the
HMM database and says "profile" thresholds (HMMSCAN, :func:`write_scan_query`).

jackhmmer (jackhmmer.c) prints one "Query:" block per query sequence and in it each round's
hits, domains and statistics, between its "@@" lines on the round's model and alignment and on
convergence (JACKHMMER, :func:`write_iterative_query`).

Numbers are formatted with Python's ``%`` operator, which follows C's
printf (``%9.2g``, ``%6.1f``...) and rounds the same way.  Widths count
characters; HMMER counts bytes, which is the same for ASCII names and
descriptions.

Two values HMMER prints have no pyhmmer property: a hit's expected number
of domains (``exp``) and a domain's mean posterior probability (``acc``).
They are read from pyhmmer's pickle state of the hits, which is HMMER's own
serialization (``p7_hit_Serialize``, ``p7_domain_Serialize``: fixed fields in
network byte order), once for all the hits of a query: see :func:`_hidden_fields`.
"""

from __future__ import annotations

import io
import math
import os
import struct
import time
from dataclasses import dataclass
from functools import lru_cache

from .. import __version__
from .options import SearchOptions

HMMER_VERSION = "3.4"
HMMER_DATE = "Aug 2023"
HMMER_URL = "http://hmmer.org/"
HMMER_COPYRIGHT = "Copyright (C) 2023 Howard Hughes Medical Institute."
HMMER_LICENSE = "Freely distributed under the BSD open source license."

DASHES = "# - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - -"

# Which program wrote the file, beside the HMMER version whose results it reproduces: a
# comment line, which no parser of the tables reads as a row
PROVENANCE = f"gpu-search {__version__}"


def one_line(text: str) -> str:
    """A file name or folder as it goes into a comment line: a newline or carriage return in
    it (legal in a POSIX name) written as \\n or \\r, so that every line of a table's
    header and tail still starts with '#'."""
    return text.replace("\r", "\\r").replace("\n", "\\n")

MIN_ALIGNMENT_WIDTH = 40    # p7_tophits_Domains() passes 40 to p7_alidisplay_Print()


@dataclass(frozen=True)
class Program:
    """What a HMMER program's reports say of it, where phmmer's and hmmscan's differ from
    hmmsearch's."""

    name: str               # the banner's and the tabular tail's program name
    purpose: str            # the banner's text after "::"
    query_file: str         # output_header()'s line naming the query file
    msa_file: str           # output_header()'s line naming the -A file
    target_file: str = "# target sequence database:        "     # ... naming the target file
    targets: str = "sequence"   # what the -E, -T, --incE, --incT lines threshold
    scan: bool = False      # targets are models (hmmscan's pipeline mode, p7_SCAN_MODELS)
    iterative: bool = False     # jackhmmer's rounds: its -N, --chkhmm, --chkali header lines


HMMSEARCH = Program("hmmsearch", "search profile(s) against a sequence database",
                    "# query HMM file:                  ", "# MSA of all hits saved to file:   ")
PHMMER = Program("phmmer", "search a protein sequence against a protein database",
                 "# query sequence file:             ", "# MSA of hits saved to file:       ")
JACKHMMER = Program("jackhmmer", "iteratively search a protein sequence against a protein database",
                    "# query sequence file:             ", "# MSA of hits saved to file:       ",
                    iterative=True)
HMMSCAN = Program("hmmscan", "search sequence(s) against a profile database",
                  "# query sequence file:             ", "",
                  target_file="# target HMM database:             ", targets="profile", scan=True)


# ---------------------------------------------------------------------------
# Header and footer
# ---------------------------------------------------------------------------

# hmmsearch's and phmmer's option defaults as the text of their option tables.
# HMMER echoes an option (esl_opt_IsUsed) when it is on and its text differs
# from this text: "-E 10" is echoed, "-E 10.0" is not; options without a
# default text (-T, -Z, the switches...) are echoed whenever given.  The last
# three are phmmer's alone.
HMMER_DEFAULT_TEXT = {
    "E": "10.0", "domE": "10.0", "incE": "0.01", "incdomE": "0.01",
    "F1": "0.02", "F2": "1e-3", "F3": "1e-5", "textw": "120", "seed": "42", "cpu": "2",
    "popen": "0.02", "pextend": "0.4", "mx": "BLOSUM62",
}


def _given(options: SearchOptions) -> dict[str, object]:
    """``options.given`` with keys as field names (leading dashes dropped)."""
    return {str(key).lstrip("-"): value for key, value in options.given.items()}


def _as_typed(value) -> str:
    """An option value as it would have been typed (the text HMMER compares)."""
    if isinstance(value, str):
        return value
    if isinstance(value, float):
        return "%g" % value
    return str(value)


def _is_used(options: SearchOptions, name: str) -> bool:
    """Whether hmmsearch would echo option ``name`` (a SearchOptions field) in its header.

    ``options.given`` may name the options given on the command line (keys
    are field names, with or without leading dashes: ``"E"``, ``"--domE"``,
    ``"cut_ga"``, ``"cpu"``; values best the text as typed).  A given
    option is echoed unless its text is HMMER's default text (see
    HMMER_DEFAULT_TEXT); an option not in ``given`` is echoed when its value
    differs from the default.
    """
    given = _given(options)
    if name in given:
        # (jackhmmer's options say where their default texts differ: JackhmmerOptions.DEFAULT_TEXT)
        default_text = {**HMMER_DEFAULT_TEXT, **getattr(options, "DEFAULT_TEXT", {})}.get(name)
        return default_text is None or _as_typed(given[name]) != default_text
    if name in ("cut_ga", "cut_nc", "cut_tc"):
        flag = {"cut_ga": "gathering", "cut_nc": "noise", "cut_tc": "trusted"}[name]
        return options.bit_cutoffs == flag
    if name in ("cpu", "qformat", "tformat"):
        return False                    # only known from options.given
    if options.max and name in ("F1", "F2", "F3", "nobias"):
        return False                    # set by --max itself, not by the user
    if name == "textw" and options.notextw:
        return False
    # (the defaults of the options' own class: phmmer's options add its scoring system)
    return getattr(options, name) != getattr(_defaults(type(options)), name)


@lru_cache(maxsize=None)
def _defaults(cls) -> SearchOptions:
    return cls()


def write_header(fh, hmmfile: str, seqfile: str, options: SearchOptions,
                 outputs: dict[str, str | None] | None = None, program: Program = HMMSEARCH) -> None:
    """Write hmmsearch's, phmmer's or hmmscan's banner and option echo (``output_header`` of
    hmmsearch.c, phmmer.c or hmmscan.c).

    Args:
        fh: text stream.
        hmmfile: the query file (HMMs, or phmmer's and hmmscan's sequences) as named on the
            command line.
        seqfile: the target database (hmmscan's: the HMM database) as named on the command line.
        options: the search options; those given are echoed, in the program's order
            (phmmer's: its --popen, --pextend and --mx after --textw).
        outputs: output files, keys ``"o"``, ``"A"``, ``"tblout"``, ``"domtblout"``,
            ``"pfamtblout"``, jackhmmer's ``"chkhmm"`` and ``"chkali"`` prefixes (missing or
            None: not written).
        program: HMMSEARCH, PHMMER, HMMSCAN or JACKHMMER.
    """
    outputs = outputs or {}
    used = lambda name: _is_used(options, name)     # noqa: E731
    lines = [
        f"# {program.name} :: {program.purpose}",
        f"# HMMER {HMMER_VERSION} ({HMMER_DATE}); {HMMER_URL}",
        f"# computed by {PROVENANCE}: HMMER {HMMER_VERSION}'s results",
        f"# {HMMER_COPYRIGHT}",
        f"# {HMMER_LICENSE}",
        DASHES,
        program.query_file + one_line(hmmfile),
        program.target_file + one_line(seqfile),
    ]
    if program.iterative and used("N"):
        lines.append("# maximum iterations set to:       %d" % options.N)
    if outputs.get("o"):
        lines.append("# output directed to file:         %s" % one_line(outputs["o"]))
    if outputs.get("A"):
        lines.append(program.msa_file + one_line(outputs["A"]))
    if outputs.get("tblout"):
        lines.append("# per-seq hits tabular output:     %s" % one_line(outputs["tblout"]))
    if outputs.get("domtblout"):
        lines.append("# per-dom hits tabular output:     %s" % one_line(outputs["domtblout"]))
    if outputs.get("pfamtblout"):
        lines.append("# pfam-style tabular hit output:   %s" % one_line(outputs["pfamtblout"]))
    if outputs.get("chkhmm"):
        lines.append("# HMM checkpoint files output:     %s-<i>.hmm" % one_line(outputs["chkhmm"]))
    if outputs.get("chkali"):
        lines.append("# MSA checkpoint files output:     %s-<i>.sto" % one_line(outputs["chkali"]))
    if used("acc"):
        lines.append("# prefer accessions over names:    yes")
    if used("noali"):
        lines.append("# show alignments in output:       no")
    if used("notextw"):
        lines.append("# max ASCII text line length:      unlimited")
    if used("textw"):
        lines.append("# max ASCII text line length:      %d" % options.textw)
    if program is PHMMER or program.iterative:
        if used("popen"):
            lines.append("# gap open probability:            %f" % options.popen)
        if used("pextend"):
            lines.append("# gap extend probability:          %f" % options.pextend)
        if used("mx"):
            lines.append("# subst score matrix (built-in):   %s" % options.mx)
    # (the label padded to 35 characters: "# sequence reporting threshold:    ",
    # hmmscan's "# profile reporting threshold:     ")
    reporting = ("# %s reporting threshold:" % program.targets).ljust(35)
    inclusion = ("# %s inclusion threshold:" % program.targets).ljust(35)
    if used("E"):
        lines.append(reporting + "E-value <= %g" % options.E)
    # (jackhmmer.c's header says "score <=" for -T and --domT, which report scores >= T)
    score_op = "<=" if program.iterative else ">="
    if used("T"):
        lines.append(reporting + "score %s %g" % (score_op, options.T))
    if used("domE"):
        lines.append("# domain reporting threshold:      E-value <= %g" % options.domE)
    if used("domT"):
        lines.append("# domain reporting threshold:      score %s %g" % (score_op, options.domT))
    if used("incE"):
        lines.append(inclusion + "E-value <= %g" % options.incE)
    if used("incT"):
        lines.append(inclusion + "score >= %g" % options.incT)
    if used("incdomE"):
        lines.append("# domain inclusion threshold:      E-value <= %g" % options.incdomE)
    if used("incdomT"):
        lines.append("# domain inclusion threshold:      score >= %g" % options.incdomT)
    if used("cut_ga"):
        lines.append("# model-specific thresholding:     GA cutoffs")
    if used("cut_nc"):
        lines.append("# model-specific thresholding:     NC cutoffs")
    if used("cut_tc"):
        lines.append("# model-specific thresholding:     TC cutoffs")
    if used("max"):
        lines.append("# Max sensitivity mode:            on [all heuristic filters off]")
    if used("F1"):
        lines.append("# MSV filter P threshold:       <= %g" % options.F1)
    if used("F2"):
        lines.append("# Vit filter P threshold:       <= %g" % options.F2)
    if used("F3"):
        lines.append("# Fwd filter P threshold:       <= %g" % options.F3)
    if used("nobias"):
        lines.append("# biased composition HMM filter:   off")
    if used("nonull2"):
        lines.append("# null2 bias corrections:          off")
    if used("Z"):
        lines.append("# sequence search space set to:    %.0f" % options.Z)
    if used("domZ"):
        lines.append("# domain search space set to:      %.0f" % options.domZ)
    if used("seed"):
        if options.seed == 0:
            lines.append("# random number seed:              one-time arbitrary")
        else:
            lines.append("# random number seed set to:       %d" % options.seed)
    # --qformat, --tformat as typed (hmmsearch.c, phmmer.c and jackhmmer.c, hmmscan.c word them so)
    if program is HMMSEARCH:
        formats = [("tformat", "# targ <seqfile> format asserted:  ")]
    elif program is HMMSCAN:
        formats = [("qformat", "# input seqfile format asserted:   ")]
    else:
        formats = [("qformat", "# query <seqfile> format asserted: "),
                   ("tformat", "# target <seqdb> format asserted:  ")]
    for name, label in formats:
        if used(name):
            lines.append(label + one_line(str(_given(options)[name])))
    if used("cpu"):
        lines.append("# number of worker threads:        %d" % int(_given(options)["cpu"]))
    lines.append(DASHES)
    fh.write("\n".join(lines) + "\n\n")


def write_footer(fh) -> None:
    """Write the ``[ok]`` that ends a complete hmmsearch or phmmer report."""
    fh.write("[ok]\n")


def write_tabular_tail(fh, qfile: str, tfile: str, options_line: str, program: Program = HMMSEARCH,
                       scan_mode: bool = False) -> None:
    """Write the comment lines that end a tabular output (``p7_tophits_TabularTail``).

    Args:
        program: HMMSEARCH, PHMMER or HMMSCAN, the "# Program:" line's name.
        qfile: the query file as named on the command line.
        tfile: the target file as named on the command line.
        options_line: the command line as HMMER spoofs it
            (``esl_opt_SpoofCmdline``: program, the options given, the
            arguments, each followed by one space).
        scan_mode: "# Pipeline mode:   SCAN" (hmmscan's --tblout and --domtblout; hmmscan.c
            ends its --pfamtblout in SEARCH mode).
    """
    fh.write("#\n")
    fh.write("# Program:         %s\n" % program.name)
    fh.write("# Version:         %s (%s)\n" % (HMMER_VERSION, HMMER_DATE))
    fh.write("# Computed by:     %s\n" % PROVENANCE)
    fh.write("# Pipeline mode:   %s\n" % ("SCAN" if scan_mode else "SEARCH"))
    fh.write("# Query file:      %s\n" % (one_line(qfile) if qfile is not None else "[none]"))
    fh.write("# Target file:     %s\n" % (one_line(tfile) if tfile is not None else "[none]"))
    fh.write("# Option settings: %s\n" % one_line(options_line))
    fh.write("# Current dir:     %s\n" % one_line(_current_dir()))
    fh.write("# Date:            %s\n" % time.ctime())   # same layout as C's ctime()
    fh.write("# [ok]\n")


def _current_dir() -> str:
    try:
        return os.getcwd()
    except OSError:
        return "[unknown]"


# ---------------------------------------------------------------------------
# One query's report
# ---------------------------------------------------------------------------

@dataclass
class Timing:
    """CPU and wall-clock seconds of one query, for the '# CPU time' line."""

    user: float = 0.0
    sys: float = 0.0
    elapsed: float = 0.0


def _write_query_sequence(fh, query) -> None:
    """The "Query:" lines of a query sequence (phmmer, jackhmmer, hmmscan): its name and
    length, then its accession and description where it has them."""
    fh.write("Query:       %s  [L=%d]\n" % (query.name, query.length))
    if query.accession:
        fh.write("Accession:   %s\n" % query.accession)
    if query.description:
        fh.write("Description: %s\n" % query.description)


def write_query(fh, result, options: SearchOptions, timing: Timing | None = None) -> None:
    """Write one query's report: header lines, hit list, domains, statistics, ``//``.

    As hmmsearch.c's and phmmer.c's loops over queries: the "Query:" lines, then
    p7_tophits_Targets, two newlines, p7_tophits_Domains, two newlines,
    p7_pli_Statistics and "//".

    Args:
        result: a ``SearchResult`` (``hmm``, thresholded and sorted pyhmmer
            ``hits``, pipeline ``stats``); phmmer's also has the ``query``
            sequence (:class:`gpu_search.hmmer.phmmer.Query`), whose lines phmmer prints.
        options: the search options (--acc, --noali, --textw, --notextw).
        timing: our own timings for the "# CPU time" and "# Mc/sec" lines
            (zeros if not given).
    """
    hmm = result.hmm
    textw = 0 if options.notextw else options.textw
    query = getattr(result, "query", None)
    if query is not None:
        # phmmer.c prints the sequence's own name, length, accession and description
        _write_query_sequence(fh, query)
    else:
        fh.write("Query:       %s  [M=%d]\n" % (hmm.name, hmm.M))
        if hmm.accession is not None:
            fh.write("Accession:   %s\n" % hmm.accession)
        if hmm.description is not None:
            fh.write("Description: %s\n" % hmm.description)
    hidden = _hidden_fields(result.hits)
    _write_targets(fh, result.hits, hidden, textw, options.acc)
    fh.write("\n\n")
    _write_domains(fh, hmm, result.hits, hidden, textw, options.acc, not options.noali)
    fh.write("\n\n")
    _write_statistics(fh, result.stats, timing or Timing())
    fh.write("//\n")


def write_scan_query(fh, result, options: SearchOptions, timing: Timing | None = None) -> None:
    """Write one query sequence's hmmscan report: as hmmscan.c's loop over queries, the
    "Query:" lines of the sequence, then p7_tophits_Targets, p7_tophits_Domains and
    p7_pli_Statistics in scan mode, and "//".

    Args:
        result: a ``ScanResult`` (``query`` sequence, thresholded and sorted pyhmmer
            ``hits`` of models, pipeline ``stats``).
        options, timing: as :func:`write_query`.
    """
    textw = 0 if options.notextw else options.textw
    query = result.query
    _write_query_sequence(fh, query)
    hidden = _hidden_fields(result.hits)
    _write_targets(fh, result.hits, hidden, textw, options.acc, scan=True)
    fh.write("\n\n")
    _write_domains(fh, None, result.hits, hidden, textw, options.acc, not options.noali, scan=True)
    fh.write("\n\n")
    _write_statistics(fh, result.stats, timing or Timing(), scan=True)
    fh.write("//\n")


def write_iterative_query(fh, result, options: SearchOptions, alignment_path: str | None = None) -> None:
    """Write one query sequence's jackhmmer report: as jackhmmer.c's serial_master, the
    "Query:" lines and a blank line, then for each round the "@@" lines of the model built
    from the last round's alignment (rounds 2 on), p7_tophits_Targets, p7_tophits_Domains,
    p7_pli_Statistics and the "@@" lines of the convergence test; after the last round the
    -A file's line (``alignment_path`` given) and "//".

    Args:
        result: a ``JackhmmerResult`` (:mod:`gpu_search.hmmer.jackhmmer`): the ``query``
            sequence and its ``rounds``, each with its model, hits, statistics, alignment,
            counts and ``timing``.
        options: jackhmmer's options (-N, --acc, --noali, --textw, --notextw).
    """
    textw = 0 if options.notextw else options.textw
    query = result.query
    _write_query_sequence(fh, query)
    fh.write("\n")
    for rnd in result.rounds:
        if rnd.iteration > 1:
            fh.write("@@\n")
            fh.write("@@ Round:                  %d\n" % rnd.iteration)
            fh.write("@@ Included in MSA:        %d subsequences (query + %d subseqs from %d targets)\n" % (
                rnd.prv_msa_nseq, rnd.prv_msa_nseq - 1, rnd.prv_ntargets))
            fh.write("@@ Model size:             %d positions\n" % rnd.hmm.M)
            fh.write("@@\n\n")
        hidden = _hidden_fields(rnd.hits)
        _write_targets(fh, rnd.hits, hidden, textw, options.acc)
        fh.write("\n\n")
        _write_domains(fh, rnd.hmm, rnd.hits, hidden, textw, options.acc, not options.noali)
        fh.write("\n\n")
        _write_statistics(fh, rnd.stats, rnd.timing or Timing())
        fh.write("\n")
        fh.write("@@ New targets included:   %d\n" % rnd.n_new)
        fh.write("@@ New alignment includes: %d subseqs (was %d), including original query\n" % (
            len(rnd.msa.sequences), rnd.prv_msa_nseq))
        if rnd.converged:
            fh.write("@@\n")
            fh.write("@@ CONVERGED (in %d rounds). \n" % rnd.iteration)
            fh.write("@@\n\n")
        elif rnd.iteration < options.N:
            fh.write("@@ Continuing to next round.\n\n")
    if alignment_path is not None:
        fh.write("# Alignment of %d hits satisfying inclusion thresholds saved to: %s\n" % (
            len(result.rounds[-1].msa.sequences), one_line(alignment_path)))
    fh.write("//\n")


def write_msa(fh, msa, pfam: bool) -> None:
    """An alignment in Stockholm, or Pfam's one-block Stockholm (``pfam``), as esl_msafile_Write."""
    buf = io.BytesIO()
    msa.write(buf, "pfam" if pfam else "stockholm")
    fh.write(buf.getvalue().decode("utf-8", "replace"))


def write_alignment(afh, fh, result, options: SearchOptions, path: str, program: Program = HMMSEARCH) -> None:
    """-A: the multiple alignment of one query's included domains, and the report's line
    about it (after the query's ``//``), as hmmsearch.c and phmmer.c do: p7_tophits_Alignment
    with every consensus column (residues outside the domains trimmed), named, accessioned
    and described as the model (phmmer: the model's name, the query sequence's accession and
    description where not empty); Stockholm, or Pfam's one-block Stockholm with --notextw.
    A query without an included domain writes nothing there and says so.  The author line
    says HMMER's program, and gpu-search, computed it.

    Args:
        afh: the -A file (text); fh: the main report; path: the -A file's name as given.
        program: HMMSEARCH or PHMMER.
    """
    hits, hmm = result.hits, result.hmm
    n = sum(1 for hit in hits if hit.included for domain in hit.domains if domain.included)
    if n == 0:
        fh.write("# No hits satisfy inclusion thresholds; no alignment saved\n")
        return
    msa = hits.to_msa(hmm.alphabet, trim=True, all_consensus_cols=True)
    msa.name = hmm.name
    query = getattr(result, "query", None)
    if query is not None:
        msa.accession = query.accession or None
        msa.description = query.description or None
    else:
        msa.accession = hmm.accession
        msa.description = hmm.description
    msa.author = f"{program.name} (HMMER {HMMER_VERSION}; computed by {PROVENANCE})".encode()
    buf = io.BytesIO()
    msa.write(buf, "pfam" if options.notextw else "stockholm")
    afh.write(buf.getvalue().decode("utf-8", "replace"))
    fh.write("# Alignment of %d hits satisfying inclusion thresholds saved to: %s\n" % (n, one_line(path)))


def _shown_name(name: str, accession: str | None, show_accessions: bool) -> str:
    """--acc shows the accession where there is a non-empty one, else the name."""
    if show_accessions and accession:
        return accession
    return name


def _clip(text: str | None, width: int) -> str:
    """A description cut to ``width`` (``%-.*s``); unlimited when textw is 0."""
    text = text or ""
    return text[:width] if width > 0 else text


# Leading fixed fields of HMMER's serialized P7_HIT and P7_DOMAIN (network order).
_HIT_PREFIX = struct.Struct(">iidfffdddf")
#   size, window_length, sortkey, score, pre_score, sum_score,
#   lnP, pre_lnP, sum_lnP, nexpected
_DOMAIN_PREFIX = struct.Struct(">iqqqqqqffff")
#   size, ienv, jenv, iali, jali, iorf, jorf, envsc, domcorrection, dombias, oasc


_INT32 = struct.Struct(">i")        # a record's size (at 0), a hit record's ndom (at _HIT_NDOM_AT)
_HIT_NDOM_AT = struct.calcsize(">Iid3f3dfiiii")     # (size .. nenvelopes: HMMER's P7_HIT record)


def _hidden_fields(hits) -> list:
    """For each hit, in the order the hits iterate: its expected number of domains
    (``hit->nexpected``, the 'exp' column) and each of its domains' 'acc' column (the mean
    posterior probability per envelope residue, ``oasc / (1 + |jenv - ienv|)`` as in
    p7_tophits_Domains()), from one serialization of all the hits (their records one after
    the other: a hit's fixed fields and strings, then each domain's fixed fields and its
    alignment display, each starting with its size)."""
    state = hits.__getstate__()
    out = []
    for h in state["hit"]:
        record = bytes(state["unsrt"][h])
        nexpected = _HIT_PREFIX.unpack_from(record)[9]
        at = _INT32.unpack_from(record)[0]
        accs = []
        for _ in range(_INT32.unpack_from(record, _HIT_NDOM_AT)[0]):
            fields = _DOMAIN_PREFIX.unpack_from(record, at)
            accs.append(fields[10] / (1.0 + abs(float(fields[2] - fields[1]))))
            at += fields[0]
            at += _INT32.unpack_from(record, at)[0]             # (the alignment display)
        out.append((nexpected, accs))
    return out


@dataclass(frozen=True)
class AlidisplayExtras:
    """What HMMER keeps in an alignment (P7_ALIDISPLAY) and pyhmmer does not show: the
    model's annotation lines along the alignment, and both accessions ('' where none)."""

    rfline: str | None
    mmline: str | None
    csline: str | None
    hmmacc: str
    sqacc: str


# p7_alidisplay_Serialize: size, N, hmmfrom, hmmto, M (32-bit), sqfrom, sqto, L (64-bit),
# network order, then a byte of flags saying which optional lines follow
_ALIDISPLAY_PREFIX = struct.Struct(">iiiiiqqqB")
_RFLINE, _MMLINE, _CSLINE, _PPLINE, _ASEQ, _NTSEQ = 1, 2, 4, 8, 16, 32


def _alidisplay_extras(ali) -> AlidisplayExtras:
    """Read :class:`AlidisplayExtras` from pyhmmer's pickle state of an alignment, HMMER's own
    serialization (p7_alidisplay_Serialize): the fixed fields, then NUL-terminated strings
    in order: rfline, mmline, csline (each where its flag says), model, mline, aseq, ntseq,
    ppline (where flagged), hmmname, hmmacc, hmmdesc, sqname, sqacc, sqdesc."""
    state = bytes(ali.__getstate__())
    flags = _ALIDISPLAY_PREFIX.unpack_from(state)[8]
    strings = iter(state[_ALIDISPLAY_PREFIX.size:].split(b"\0"))

    def optional(flag):
        return next(strings).decode() if flags & flag else None

    rfline, mmline, csline = optional(_RFLINE), optional(_MMLINE), optional(_CSLINE)
    next(strings), next(strings)                    # model, mline
    optional(_ASEQ), optional(_NTSEQ), optional(_PPLINE)
    next(strings)                                   # hmmname
    hmmacc = next(strings).decode()
    next(strings), next(strings)                    # hmmdesc, sqname
    sqacc = next(strings).decode()
    return AlidisplayExtras(rfline, mmline, csline, hmmacc, sqacc)


def _write_targets(fh, hits, hidden: list, textw: int, show_accessions: bool, scan: bool = False) -> None:
    """The per-sequence hit list (p7_tophits_Targets, search mode; with ``scan``, hmmscan's
    per-model list).

    The name column is as wide as the longest name of *all* hits in the
    list, reported or not (p7_tophits_GetMaxNameLength), at least 8.  ``hidden``: the hits'
    :func:`_hidden_fields`.
    """
    all_hits = list(hits)
    if show_accessions:
        namew = max([8] + [len(_shown_name(h.name, h.accession, True)) for h in all_hits])
    else:
        namew = max([8] + [len(h.name) for h in all_hits])
    # 61 chars excluding desc is from the format: 2 + 22+2 +22+2 +8+2 +<name>+1
    descw = max(32, textw - namew - 61) if textw > 0 else 0

    fh.write("Scores for complete sequence%s (score includes all domains):\n" % ("" if scan else "s"))
    fh.write("  %22s  %22s  %8s\n" % (" --- full sequence ---", " --- best 1 domain ---", "-#dom-"))
    fh.write("  %9s %6s %5s  %9s %6s %5s  %5s %2s  %-*s %s\n" % (
        "E-value", " score", " bias", "E-value", " score", " bias", "  exp", "N",
        namew, "Model" if scan else "Sequence", "Description"))
    fh.write("  %9s %6s %5s  %9s %6s %5s  %5s %2s  %-*s %s\n" % (
        "-------", "------", "-----", "-------", "------", "-----", " ----", "--",
        namew, "--------", "-----------"))

    printed_threshold = False
    nreported = 0
    for hit, (nexpected, _) in zip(all_hits, hidden):
        if not hit.reported:
            continue
        nreported += 1
        if not hit.included and not printed_threshold:
            fh.write("  ------ inclusion threshold ------\n")
            printed_threshold = True
        newness = "+" if hit.new else "-" if hit.dropped else " "
        best = hit.best_domain
        ndom_reported = sum(1 for d in hit.domains if d.reported)
        fh.write("%c %9.2g %6.1f %5.1f  %9.2g %6.1f %5.1f  %5.1f %2d  %-*s " % (
            newness,
            hit.evalue, hit.score, hit.bias,
            best.i_evalue, best.score, best.bias,
            nexpected, ndom_reported,
            namew, _shown_name(hit.name, hit.accession, show_accessions)))
        fh.write(" %s\n" % _clip(hit.description, descw))

    if nreported == 0:
        fh.write("\n   [No hits detected that satisfy reporting thresholds]\n")


def _write_domains(fh, hmm, hits, hidden: list, textw: int, show_accessions: bool,
                   show_alignments: bool, scan: bool = False) -> None:
    """Domain table and alignments of every reported hit (p7_tophits_Domains, search mode;
    with ``scan``, hmmscan's: every hit a model, ``hmm`` unused; ``hidden``: the hits'
    :func:`_hidden_fields`)."""
    fh.write("Domain annotation for each %s%s:\n" % ("model" if scan else "sequence",
                                                   " (and alignments)" if show_alignments else ""))

    nreported = 0
    for hit, (_, accs) in zip(hits, hidden):
        if not hit.reported:
            continue
        nreported += 1
        showname = _shown_name(hit.name, hit.accession, show_accessions)
        if textw > 0:
            descw = max(32, textw - len(showname) - 5)
            fh.write(">> %s  %s\n" % (showname, _clip(hit.description, descw)))
        else:
            fh.write(">> %s  %s\n" % (showname, hit.description or ""))

        domains = [(d, acc) for d, acc in zip(hit.domains, accs) if d.reported]
        if not domains:
            fh.write("   [No individual domains that satisfy reporting thresholds (although complete target did)]\n\n")
            continue

        # the domain table is 101 characters wide
        fh.write(" %3s   %6s %5s %9s %9s %7s %7s %2s %7s %7s %2s %7s %7s %2s %4s\n" % (
            "#", "score", "bias", "c-Evalue", "i-Evalue", "hmmfrom", "hmm to", "  ",
            "alifrom", "ali to", "  ", "envfrom", "env to", "  ", "acc"))
        fh.write(" %3s   %6s %5s %9s %9s %7s %7s %2s %7s %7s %2s %7s %7s %2s %4s\n" % (
            "---", "------", "-----", "---------", "---------", "-------", "-------", "  ",
            "-------", "-------", "  ", "-------", "-------", "  ", "----"))
        for n, (dom, acc) in enumerate(domains, start=1):
            ali = dom.alignment
            fh.write(" %3d %c %6.1f %5.1f %9.2g %9.2g %7d %7d %c%c %7d %7d %c%c %7d %7d %c%c %4.2f\n" % (
                n, "!" if dom.included else "?",
                dom.score, dom.bias, dom.c_evalue, dom.i_evalue,
                ali.hmm_from, ali.hmm_to,
                "[" if ali.hmm_from == 1 else ".", "]" if ali.hmm_to == ali.hmm_length else ".",
                ali.target_from, ali.target_to,
                "[" if ali.target_from == 1 else ".", "]" if ali.target_to == ali.target_length else ".",
                dom.env_from, dom.env_to,
                "[" if dom.env_from == 1 else ".", "]" if dom.env_to == ali.target_length else ".",
                acc))

        if show_alignments:
            fh.write("\n  Alignments for each domain:\n")
            for n, (dom, _) in enumerate(domains, start=1):
                fh.write("  == domain %d  score: %.1f bits;  conditional E-value: %.2g\n" % (
                    n, dom.score, dom.c_evalue))
                _write_alignment(fh, hmm, hit, dom.alignment, textw, show_accessions, scan)
                fh.write("\n")
        else:
            fh.write("\n")

    if nreported == 0:
        fh.write("\n   [No targets detected that satisfy reporting thresholds]\n")


def _annotation_line(annotation: str | None, model_line: str, hmm_from: int) -> str | None:
    """The HMM's CS or RF annotation laid along an alignment ('.' on insertions).

    ``model_line`` has '.' at insert columns; every other column is the
    next model position, starting at ``hmm_from``.
    """
    if annotation is None:
        return None
    out, k = [], hmm_from
    for c in model_line:
        if c == ".":
            out.append(".")
        else:
            out.append(annotation[k - 1])
            k += 1
    return "".join(out)


def _integer_textwidth(n: int) -> int:
    """Digits of ``n`` (plus one for a minus sign); 0 for 0, as HMMER counts."""
    w = 1 if n < 0 else 0
    n = abs(n)
    while n != 0:
        n //= 10
        w += 1
    return w


def _write_alignment(fh, hmm, hit, ali, textw: int, show_accessions: bool, scan: bool = False) -> None:
    """One domain's alignment, wrapped in blocks (p7_alidisplay_Print).

    Each block shows, in order, the optional consensus structure (CS) and
    reference (RF) lines of the HMM (hmmscan: also its model mask, MM), the
    model line with its first and last model positions, the match line, the
    target line with its first and last residue positions ('-' for both when
    the block has no residue), and the posterior probability (PP) line.
    Blocks are ``textw`` wide overall (at least 40 alignment columns), or one
    block when textw is 0 (--notextw).

    With ``scan`` (hmmscan) each hit is a model of its own: the annotation lines and the
    accessions are those HMMER stored in the alignment (:func:`_alidisplay_extras`).
    """
    model, mline, aseq, ppline = (ali.hmm_sequence, ali.identity_sequence,
                                  ali.target_sequence, ali.posterior_probabilities)
    mmline = None
    if scan:
        extras = _alidisplay_extras(ali)
        hmmname = _shown_name(ali.hmm_name, extras.hmmacc, show_accessions)
        seqname = _shown_name(ali.target_name, extras.sqacc, show_accessions)
        csline, rfline, mmline = extras.csline, extras.rfline, extras.mmline
    else:
        hmmname = _shown_name(ali.hmm_name, ali.hmm_accession, show_accessions)
        seqname = _shown_name(ali.target_name, hit.accession, show_accessions)
        csline = _annotation_line(hmm.consensus_structure, model, ali.hmm_from)
        rfline = _annotation_line(hmm.reference, model, ali.hmm_from)
    n_cols = len(model)

    namewidth = max(len(hmmname), len(seqname))
    coordwidth = max(_integer_textwidth(x) for x in
                     (ali.hmm_from, ali.hmm_to, ali.target_from, ali.target_to))
    aliwidth = textw - namewidth - 2 * coordwidth - 5 if textw > 0 else n_cols
    if aliwidth < n_cols and aliwidth < MIN_ALIGNMENT_WIDTH:
        aliwidth = MIN_ALIGNMENT_WIDTH
    pad = namewidth + coordwidth + 1     # width of the name and start column

    forward = ali.target_from < ali.target_to
    k1, i1 = ali.hmm_from, ali.target_from
    for pos in range(0, n_cols, aliwidth):
        if pos > 0:
            fh.write("\n")                  # blank line between blocks
        block = slice(pos, pos + aliwidth)
        nk = sum(1 for c in model[block] if c != ".")   # model advances except on inserts
        ni = sum(1 for c in aseq[block] if c != "-")    # target advances except on deletions
        k2 = k1 + nk - 1
        i2 = i1 + ni - 1 if forward else i1 - ni + 1

        if csline is not None:
            fh.write("  %*s %s CS\n" % (pad, "", csline[block]))
        if rfline is not None:
            fh.write("  %*s %s RF\n" % (pad, "", rfline[block]))
        if mmline is not None:
            fh.write("  %*s %s MM\n" % (pad, "", mmline[block]))
        fh.write("  %*s %*d %s %-*d\n" % (namewidth, hmmname, coordwidth, k1, model[block], coordwidth, k2))
        fh.write("  %*s %s\n" % (pad, " ", mline[block]))
        if ni > 0:
            fh.write("  %*s %*d %s %-*d\n" % (namewidth, seqname, coordwidth, i1, aseq[block], coordwidth, i2))
        else:
            fh.write("  %*s %*s %s %*s\n" % (namewidth, seqname, coordwidth, "-", aseq[block], coordwidth, "-"))
        fh.write("  %*s %s PP\n" % (pad, "", ppline[block]))

        k1 += nk
        i1 = i1 + ni if forward else i1 - ni


def _write_statistics(fh, stats, timing: Timing, scan: bool = False) -> None:
    """'Internal pipeline statistics summary' (p7_pli_Statistics, search mode; with ``scan``,
    hmmscan's: one query sequence, the models as targets)."""
    ntargets = float(stats.nmodels if scan else stats.nseqs)

    def passed(label: str, n: int, F: float) -> str:
        fraction = n / ntargets if ntargets else math.nan
        return "%-29s%15d  (%.6g); expected %.1f (%.6g)\n" % (label, n, fraction, F * ntargets, F)

    fh.write("Internal pipeline statistics summary:\n")
    fh.write("-------------------------------------\n")
    if scan:
        fh.write("Query sequence(s):           %15d  (%d residues searched)\n" % (stats.nseqs, stats.nres))
        fh.write("Target model(s):             %15d  (%d nodes)\n" % (stats.nmodels, stats.nnodes))
    else:
        fh.write("Query model(s):              %15d  (%d nodes)\n" % (stats.nmodels, stats.nnodes))
        fh.write("Target sequences:            %15d  (%d residues searched)\n" % (stats.nseqs, stats.nres))
    fh.write(passed("Passed MSV filter:", stats.n_past_msv, stats.F1))
    fh.write(passed("Passed bias filter:", stats.n_past_bias, stats.F1))
    fh.write(passed("Passed Vit filter:", stats.n_past_vit, stats.F2))
    fh.write(passed("Passed Fwd filter:", stats.n_past_fwd, stats.F3))
    fh.write("Initial search space (Z):    %15.0f  %s\n" % (
        stats.Z, "[as set by --Z on cmdline]" if stats.Z_from_option else "[actual number of targets]"))
    fh.write("Domain search space  (domZ): %15.0f  %s\n" % (
        stats.domZ, "[as set by --domZ on cmdline]" if stats.domZ_from_option
        else "[number of targets reported over threshold]"))
    fh.write("# CPU time: %.2fu %.2fs %s Elapsed: %s\n" % (
        timing.user, timing.sys, _clock(timing.user + timing.sys), _clock(timing.elapsed)))
    cells = float(stats.nres) * float(stats.nnodes)
    fh.write("# Mc/sec: %.2f\n" % (cells / (timing.elapsed * 1.0e6) if timing.elapsed > 0 else math.inf))


def _clock(seconds: float) -> str:
    """hh:mm:ss.cc as Easel's stopwatch prints times (truncated, not rounded)."""
    h = int(seconds / 3600.0)
    m = int(seconds / 60.0) - h * 60
    s = int(seconds) - h * 3600 - m * 60
    cs = int(seconds * 100.0) - h * 360000 - m * 6000 - s * 100
    return "%02d:%02d:%02d.%02d" % (h, m, s, cs)
