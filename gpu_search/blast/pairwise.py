"""BLAST's pairwise report (``-outfmt 0``, BLAST+'s default) as BLAST+ 2.12 blastp writes it.

The report, as BLAST+ writes it (blast_format.cpp, showdefline.cpp, showalign.cpp,
align_format_util.cpp), from gpu-search's output rows (output.Hsp):

- the header: program line, the two references (the gapped-BLAST paper and the
  composition-based statistics paper; blastp 2.12 prints both in every
  -comp_based_stats mode), the database's name and size;
- per query: ``Query=`` and its title wrapped at 68 columns as NStr::Wrap wraps
  flat-file text (breaks at a space, else after a comma or a hyphen), its length,
  the "Sequences producing significant alignments" table (the subject's title as
  CDeflineGenerator cleans it, :func:`description_title`, cut to 65 bytes and
  "..." where longer than 68, the best HSP's bit score and E-value in
  GetScoreString's formats), then each subject's HSPs: the ``>`` line (its title
  as stored, a line break at the first space after every 60 letters), the score
  line, identities, positives and gaps (percentages rounded, 99 at most unless
  all), and 60-column blocks whose coordinates are as wide as the HSP's last
  0-based position; the middle line has the letter where both are equal, '+'
  where the matrix scores the pair above 0; or "***** No hits found *****";
- per query the footer: the query's ungapped Lambda, K, H (stats.ungapped_params)
  with the matrix's ungapped Gumbel a and alpha, the gapped Lambda, K, H, a, alpha,
  sigma (``%#8.3g``), and the effective search space;
- the final footer: the database, the matrix, gap costs, word threshold, window.

The score line's ``Method:`` says how composition-based statistics scored the
subject: none in mode 0, "Composition-based stats." in mode 1, and in modes 2 and 3
"Compositional matrix adjust." or, where Blast_AdjustScores only rescaled the
matrix (its rule, or a failed optimisation), "Composition-based stats.".  The rows
do not carry the rule, so :func:`adjustment_methods` asks Blast_AdjustScores again
for the subject as the redo aligned its best HSP (SEG-masked unless nearly
identical) and gives the answer to all its HSPs.  BLAST+ adjusts again within a
subject where its preliminary HSPs differ in near-identity; such a subject, if its
SEG masking changes the rule, would show another method on some HSPs.

Descriptions and alignments: blastp 2.12 with -outfmt 0 shows as many of each as
-max_target_seqs where it is given, else 500 descriptions and 250 alignments
(-num_descriptions, -num_alignments); the command line tells the writer whether
-max_target_seqs was given (``num_alignments``), its default being 500 too.

What differs from BLAST+:

- the first line reads ``BLASTP 2.12.0+ (computed by gpu-search <version>)``, as
  -outfmt 7's program line says it;
- ``Database:`` (header and footer) names the database as the caller gave it
  (-outfmt 7's and 5's name, without its folder), where BLAST+ prints the BLAST
  database's title (makeblastdb's -title: by default the FASTA's path as given);
- the footer has no ``Posted date:`` line: a FASTA file has no date of
  formatting, and a date would make two runs' reports differ;
- a description cut inside a non-ASCII letter (one a character reference
  decodes to) loses that letter's bytes, where BLAST+ writes them as far as the cut.
"""

from __future__ import annotations

from .. import __version__
from .stats import score_string_evalue as format_evalue
from .titles import description_title, pairwise_titles
from .xml import midline, positive_pairs

PROGRAM = f"BLASTP 2.12.0+ (computed by gpu-search {__version__})"
LINE_LENGTH = 68               # kFormatLineLength: wrapped titles, the descriptions table
ALIGNMENT_WIDTH = 60           # letters of an alignment block
TITLE_WRAP = 60                # the '>' line breaks at the first space after each 60 letters

# CReference::eGappedBlast and eCompBasedStats as BLAST+ 2.12 wraps them (68 columns)
REFERENCES = (
    "Reference: Stephen F. Altschul, Thomas L. Madden, Alejandro A.\n"
    "Schaffer, Jinghui Zhang, Zheng Zhang, Webb Miller, and David J.\n"
    "Lipman (1997), \"Gapped BLAST and PSI-BLAST: a new generation of\n"
    "protein database search programs\", Nucleic Acids Res. 25:3389-3402.\n"
    "\n\n"
    "Reference for composition-based statistics: Alejandro A. Schaffer,\n"
    "L. Aravind, Thomas L. Madden, Sergei Shavirin, John L. Spouge, Yuri\n"
    "I. Wolf, Eugene V. Koonin, and Stephen F. Altschul (2001),\n"
    "\"Improving the accuracy of PSI-BLAST protein database searches with\n"
    "composition-based statistics and other refinements\", Nucleic Acids\n"
    "Res. 29:2994-3005.\n")

SCALED_METHOD = "Composition-based stats."          # eCompoScaleOldMatrix
ADJUSTED_METHOD = "Compositional matrix adjust."    # the matrix's target frequencies optimised


def wrap(text: str, width: int = LINE_LENGTH) -> list[str]:
    """NStr::Wrap with fWrap_FlatFile: a line ends at its last space within ``width``
    columns, else after its last comma or hyphen (one that leaves a letter for the
    next line), else at ``width`` letters; the next line starts after the spaces."""
    lines: list[str] = []
    n = len(text)
    pos = 0
    while pos < n:
        while pos < n and text[pos] == " ":
            pos += 1
        if pos >= n:
            break
        start = pos
        best, best_score = None, 0          # scores: 1 punctuation, 2 comma, 3 space
        column = 0
        while pos < n and column <= width:
            c = text[pos]
            score, at = 0, pos
            if c == " ":
                score = 3
            elif c == "," and column < width and pos < n - 1:
                score, at = 2, pos + 1
            elif c == "-" and pos < n - 1 and column < width:
                score, at = 1, pos + 1
            if score and score >= best_score and at > start:
                best, best_score = at, score
            pos += 1
            column += 1
        if pos >= n and column <= width:       # the rest fits
            best = n
        elif best is None:                     # no place to break: cut
            best = start + width
        lines.append(text[start:best])
        pos = best
    return lines


def wrap_title_line(text: str) -> str:
    """s_WrapOutputLine of showalign.cpp: a line break after the first space that follows
    each multiple of 60 letters (titles longer than 60 letters only)."""
    if len(text) <= TITLE_WRAP:
        return text
    out, pending = [], False
    for i, c in enumerate(text):
        if i > 0 and i % TITLE_WRAP == 0:
            pending = True
        out.append(c)
        if pending and c.isspace():
            out.append("\n")
            pending = False
    return "".join(out)


def format_bits(b: float) -> str:
    """Bit-score text: GetScoreString ("%3.0ld" of the truncated integer above 99.9)."""
    if b > 99999:
        return "%5.3e" % b
    if b > 99.9:
        return "%3d" % int(b)
    return "%4.1f" % b


def percent(count: int, length: int) -> int:
    """CAlignFormatUtil::GetPercentMatch: rounded, 100 only when all."""
    if count == length:
        return 100
    return min(99, int(0.5 + 100.0 * count / length))


def _g(x: float) -> str:
    return "%#8.3g " % x


def karlin_lines(ungapped, gapped) -> str:
    """PrintKAParameters, ungapped then gapped, and the blank lines around them."""
    g = gapped.gbp
    return ("Lambda      K        H        a         alpha\n"
            + _g(ungapped.Lambda) + _g(ungapped.K) + _g(ungapped.H) + _g(g.a_un) + _g(g.Alpha_un) + "\n"
            "\nGapped\n"
            "Lambda      K        H        a         alpha    sigma\n"
            + _g(gapped.kbp.Lambda) + _g(gapped.kbp.K) + _g(gapped.kbp.H) + _g(g.a) + _g(g.Alpha)
            + _g(g.Sigma) + "\n")


def subject_groups(hsps) -> list[list]:
    """The rows grouped by subject (one subject's rows are consecutive)."""
    groups: list[list] = []
    for h in hsps:
        if groups and groups[-1][0].oid == h.oid:
            groups[-1].append(h)
        else:
            groups.append([h])
    return groups


def _alignment(h, method: str | None, positive) -> list[str]:
    """One HSP: its score lines and 60-column blocks."""
    mid, nident, npos = midline(h.qseq, h.sseq, positive)
    n = len(h.qseq)
    out = [f" Score = {format_bits(h.bit_score)} bits ({h.score}),  Expect = {format_evalue(h.evalue)}"
           + (f", Method: {method}" if method else "") + "\n",
           f" Identities = {nident}/{n} ({percent(nident, n)}%), Positives = {npos}/{n} ({percent(npos, n)}%), "
           f"Gaps = {h.gaps}/{n} ({percent(h.gaps, n)}%)\n", "\n"]
    # the coordinates' column is as wide as the HSP's last positions counted from 0
    # (showalign.cpp reads the alignment's 0-based stops): 1..100 is 2 wide, 1..101 3
    width = len(str(max(h.q_end, h.s_end) - 1))
    q_next, s_next = h.q_start, h.s_start
    pad = " " * (7 + width + 2)
    for k in range(0, n, ALIGNMENT_WIDTH):
        qb, sb = h.qseq[k:k + ALIGNMENT_WIDTH], h.sseq[k:k + ALIGNMENT_WIDTH]
        q_used = len(qb) - qb.count("-")
        s_used = len(sb) - sb.count("-")
        out.append(f"Query  {q_next:<{width}}  {qb}  {q_next + q_used - 1}\n"
                   f"{pad}{mid[k:k + ALIGNMENT_WIDTH]}\n"
                   f"Sbjct  {s_next:<{width}}  {sb}  {s_next + s_used - 1}\n\n")
        q_next += q_used
        s_next += s_used
    out.append("\n")
    return out


class PairwiseWriter:
    """Writes one ``-outfmt 0`` report: the header at construction, a query's part per
    :meth:`query` call (queries in input order), the footer at :meth:`close`.

    ``num_descriptions`` and ``num_alignments``: how many subjects the table lists and how
    many subjects' alignments follow (see the module docstring).
    """

    def __init__(self, fh, *, db_name: str, db_num_seqs: int, db_length: int, matrix: str, gap_open: int,
                 gap_extend: int, threshold: float, window_size: int, num_descriptions: int = 500,
                 num_alignments: int = 250):
        self.fh = fh
        self.db_name = db_name
        self.db_num_seqs = db_num_seqs
        self.db_length = db_length
        self.matrix = matrix
        self.gaps = (gap_open, gap_extend)
        self.threshold = threshold
        self.window_size = window_size
        self.num_descriptions = num_descriptions
        self.num_alignments = num_alignments
        self.positive = positive_pairs(matrix)
        fh.write(f"{PROGRAM}\n\n\n{REFERENCES}\n\n\n"
                 + "Database: " + "\n".join(wrap(db_name)) + "\n"
                 + f"           {db_num_seqs:,} sequences; {db_length:,} total letters\n\n\n\n")

    def query(self, query_title: str, query_len: int, hsps, *, ungapped, gapped, eff_space: int,
              methods=None) -> None:
        """One query's part.  ``hsps``: its output rows in output order, one subject's rows
        consecutive; ``ungapped``: the query's ungapped Karlin block; ``gapped``: the search's
        GappedParams; ``eff_space``: its effective search space; ``methods``: per subject
        (in order) the composition-based statistics' method text, or None."""
        from .output import query_definition

        w = ["\n".join(wrap("Query= " + query_definition(query_title))) + "\n\nLength=%d\n" % query_len]
        groups = subject_groups(hsps)
        if not groups:
            w.append("\n\n***** No hits found *****\n\n\n\n")
        else:
            shown = groups[:self.num_descriptions]
            bits = [format_bits(g[0].bit_score) for g in shown]
            evalues = [format_evalue(g[0].evalue) for g in shown]
            score_len = max([6] + [len(b) for b in bits])
            evalue_len = max([5] + [len(e) for e in evalues])
            w.append(" " * (LINE_LENGTH + 2) + "Score" + " " * (score_len - 5 + 4) + "E\n"
                     "Sequences producing significant alignments:" + " " * (LINE_LENGTH - 43 + 1)
                     + "(Bits)" + " " * (score_len - 6 + 2) + "Value\n\n")
            for g, b, e in zip(shown, bits, evalues):
                # cut and padded by bytes, as BLAST+ counts a decoded non-ASCII letter
                title = description_title(pairwise_titles(g[0])[0]).encode("utf-8")
                if len(title) > LINE_LENGTH:
                    title = title[:LINE_LENGTH - 3] + b"..."
                pad = " " * (LINE_LENGTH - len(title))
                w.append(f"{title.decode('utf-8', 'ignore')}{pad}  {b:<{score_len}}  {e:<{evalue_len}}\n")
            w.append("\n\n")
            for k, g in enumerate(groups[:self.num_alignments]):
                method = methods[k] if methods is not None else None
                w.append(">" + "\n ".join(wrap_title_line(t) for t in pairwise_titles(g[0])[1])
                         + "\nLength=%d\n\n" % g[0].subject_length)
                for h in g:
                    w.extend(_alignment(h, method, self.positive))
            w.append("\n")
        if ungapped is not None:
            w.append(karlin_lines(ungapped, gapped))
        else:       # a query BLAST+ does not search (no letters, or no Karlin block): no statistics
            w.append("\n")
            eff_space = 0
        w.append(f"\nEffective search space used: {int(eff_space)}\n\n\n")
        self.fh.write("".join(w))

    def close(self) -> None:
        go, ge = self.gaps
        threshold = f"{self.threshold:g}"
        self.fh.write("  Database: " + "\n".join(wrap(self.db_name)) + "\n"
                      f"  Number of letters in database: {self.db_length:,}\n"
                      f"  Number of sequences in database:  {self.db_num_seqs:,}\n\n\n\n"
                      f"Matrix: {self.matrix.upper()}\n"
                      f"Gap Penalties: Existence: {go}, Extension: {ge}\n"
                      f"Neighboring words threshold: {threshold}\n"
                      f"Window for multiple hits: {self.window_size}\n")


def adjustment_methods(groups, query_codes, subject_codes, setup, mode: int) -> list:
    """The ``Method:`` text of each subject (``groups``: its rows; ``subject_codes(oid)``:
    its sequence in NCBIstdaa as the search has it): none without composition statistics,
    "Composition-based stats." in mode 1, else what Blast_AdjustScores chose for the
    subject as the redo aligns it (SEG-masked unless its best HSP is nearly identical):
    a rescaled matrix (the rule, or a failed optimisation) or an adjusted one."""
    if mode == 0:
        return [None] * len(groups)
    if mode == 1:
        return [SCALED_METHOD] * len(groups)
    from . import composition, kappa

    kq = kappa.kappa_query(query_codes, setup, mode)
    out = []
    for g in groups:
        h = g[0]
        subject = subject_codes(h.oid)
        q0, q1, s0, s1 = h.q_start - 1, h.q_end, h.s_start - 1, h.s_end
        near = kappa.preliminary_near_identical(int(h.score * kappa.SCALING_FACTOR), q0, q1, s0, s1,
                                                len(query_codes), kq.near_identical_cutoff)
        data, _ = kappa._subject_data(subject, kq, near, q0, q1, s0, s1)
        adj = composition.adjust_scores(kq.matrix_info, kq.composition, len(query_codes),
                                        composition.read_composition(data), len(data), mode, kq.workspace)
        out.append(SCALED_METHOD if adj.rule == composition.COMPO_SCALE_OLD_MATRIX else ADJUSTED_METHOD)
    return out
