"""Titles as BLAST+ 2.12's formatters clean them (CDeflineGenerator::GenerateDefline of a
protein): the subject titles of the pairwise report's descriptions table and the query's
definition in BLAST XML.  The tabular formats and the pairwise report's '>' lines print
titles as stored (``output.stored_title``, ``output.query_definition``)."""

from __future__ import annotations

import re
from html.entities import name2codepoint

from ..seqdb import BLAST_COLUMNS

_ENTITY = re.compile(r"&(#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]*);")


def _html_decode(text: str) -> str:
    """NStr::HtmlDecode: character references ending in ';', named (HTML 4's) or numeric."""
    def one(m):
        ref = m.group(1)
        if ref[0] == "#":
            code = int(ref[2:], 16) if ref[1] in "xX" else int(ref[1:])
            return chr(code) if 0 < code < 0x110000 else m.group(0)
        code = name2codepoint.get(ref)
        return chr(code) if code is not None else m.group(0)
    return _ENTITY.sub(one, text) if "&" in text else text


def _clean_and_compress(s: str) -> str:
    """CDeflineGenerator's clean-up of a title: spaces trimmed and runs of them made one;
    a space before a comma or semicolon (or a run of them) moved after it, unless a ')'
    follows; a space after '(' and before ')' removed; in a run of separators after another
    letter a comma that follows a comma made a space, the space after the run kept (before a
    ')' too) and the run's last separator dropped each time it follows that space again.  Found by comparing BLAST+ 2.12's
    descriptions of ~1,000 titles made of letters, spaces and punctuation."""
    s = s.strip(" ")
    out: list[str] = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        nxt = s[i + 1] if i + 1 < n else ""
        if c == " ":
            if nxt == " " or nxt == ")":
                i += 1
                continue
            if nxt in (",", ";"):
                j = i + 1
                while j < n and s[j] in ",;":
                    j += 1
                out.append(s[i + 1:j])
                if j < n and s[j] not in " )":
                    out.append(" ")
                i = j
                continue
            out.append(c)
            i += 1
        elif c in ",;":
            j = i
            while j < n and s[j] in ",;":
                j += 1
            # a comma after a comma becomes a space (",," -> ", ")
            run = s[i] + "".join(" " if b == "," and a == "," else b for a, b in zip(s[i:j], s[i + 1:j]))
            last = s[j - 1]
            i = j
            if i < n and s[i] == " ":
                # the space after the run kept, and the run's last separator dropped after it
                run += " "
                while i < n and s[i] == " ":
                    i += 1
                while i < n and s[i] == last:
                    i += 1
                    while i < n and s[i] == " ":
                        i += 1
            out.append(run)
        elif c == "(" and nxt == " ":
            out.append(c)
            i += 1
            while i < n and s[i] == " ":
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def description_title(title: str) -> str:
    """A subject's title as the descriptions table shows it (CDeflineGenerator::GenerateDefline
    of a protein): trailing periods, commas, semicolons, tildes and spaces dropped (unless that
    is all), character references decoded, then trailing commas, semicolons, tildes and spaces
    dropped, :func:`_clean_and_compress`, and ". [" and ", [" made " [".  The '>' line shows
    the title as stored."""
    s = title.rstrip(".,;~ ") or title
    s = _html_decode(s)
    s = s.rstrip(",;~ ") or s
    return _clean_and_compress(s).replace(". [", " [").replace(", [", " [")


def deflines(h) -> tuple[list[tuple[str, str, str]], int]:
    """The deflines of a subject from a -parse_seqids BLAST database (``h.subject_columns``),
    each as (id as sallseqid shows it, saccver, title, "" where it has none), and the index of
    the one whose id is the sseqid (the first but where a later one holds a gi)."""
    cols = dict(zip(BLAST_COLUMNS, h.subject_columns.split("\t")))
    ids, accvers = cols["sallseqid"].split(";"), cols["sallaccver"].split(";")
    titles = ["" if t == "N/A" else t for t in cols["salltitles"].split("<>")]
    found = list(zip(ids, accvers, titles))
    return found, ids.index(h.subject_id) if h.subject_id in ids else 0


def pairwise_titles(h) -> tuple[str, list[str]]:
    """A subject's title in the pairwise report: (its descriptions table line before clean-up,
    its '>' lines).  FASTA databases and those made without -parse_seqids: the title as stored,
    one line.  With -parse_seqids (CShowBlastDefline, CDisplaySeqalign): the saccver and title
    of each defline, a defline without a title taking the sseqid's defline's ("unnamed protein
    product" where that has none either); the table shows the sseqid's defline."""
    if not h.subject_columns:
        return h.subject_title, [h.subject_title]
    found, best = deflines(h)
    fallback = found[best][2] or "unnamed protein product"
    lines = [f"{accver} {title or fallback}" for _, accver, title in found]
    return lines[best], lines
