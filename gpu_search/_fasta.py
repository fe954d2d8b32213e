"""One-pass FASTA scanner (used by :mod:`gpu_search.seqdb`), compiled with numba or run as
plain Python.

It reads the bytes once: header lines are located and split into name and
description, sequence letters are digitized through a 256-entry table into a
residue array.  Compiled, parsing 273 M residues takes well under a second, faster
than Easel's own reader through pyhmmer.

The functions below are written as plain Python; :func:`scanners` gives them compiled by
numba, or run as they are.  A query file of a few kilobytes is scanned faster as plain
Python than numba is imported and its compiled loops loaded (about 0.5 s): for phmmer and
jackhmmer from a .gsdb that is numba's only use, a tenth of a run.

A file is scanned piece by piece (a few tens of MiB at a time), so the state
of the line it stopped in is carried from one piece to the next; a header line
that a piece does not finish is left for the next piece.

Lines end with LF, CR or CR LF, as Easel reads them (an old Mac file ends its
lines with CR alone).

The caller passes the output arrays and gets integers back: a compiled
function that returns arrays has numba rebuild their dtype in Python code
on the way out, where a pending Ctrl-C or SIGTERM raises inside numba's
boxing of the results and leaves a broken tuple (a segmentation fault when
it is unpacked).  Integers are boxed without running Python code.
"""

import types

import numpy as np

IGNORED = 254
ILLEGAL = 255
# byte codes of blastp's tables only (NCBI's CFastaReader, which BLAST+ 2.12 reads FASTA with)
DROPPED = 253           # not a residue: left out of the sequence, and counted for a warning
COMMENT = 252           # ';': the rest of its line is a comment
LINE_COMMENT = 251      # '!' or '#': a comment line when first on its line, else DROPPED
NL, CR, GT, SEMICOLON, HYPHEN = 10, 13, 62, 59, 45

# CFastaReader refuses a sequence's first data line that looks unlike sequence: one that has
# at least a third as many other bytes as letters among its first PLAUSIBLE_SPAN bytes
PLAUSIBLE_SPAN = 70
LOOKAHEAD = 4096        # bytes of such a line wanted in a piece before it is judged

# what scan() found wrong at position ``bad``
BAD_RESIDUE = 1         # a byte that is not a residue letter (or a residue before any header)
BAD_NO_NAME = 2         # a header line with no sequence name
BAD_IMPLAUSIBLE = 3     # blastp: a first data line CFastaReader refuses

# the state carried from piece to piece (an int64 array of STATE_SIZE): the first four for
# every reader; the others for blastp's (comment, blank line so far, the open sequence has a
# residue, and the letters dropped: how many, the first one's byte, line and header)
AT_LINE_START, AFTER_CR, LINE, IN_SEQUENCE = 0, 1, 2, 3
IN_COMMENT, LINE_BLANK, HAS_RESIDUES, DROPS, DROP_BYTE, DROP_LINE, DROP_SEQ = 4, 5, 6, 7, 8, 9, 10
STATE_SIZE = 11


def _is_space(c):
    return c == 32 or c == 9 or c == 10 or c == 13 or c == 11 or c == 12


def count_gt(buf):
    """How many '>' ``buf`` holds: room for its headers."""
    n = 0
    for c in buf:
        if c == GT:
            n += 1
    return n


def _implausible(buf, p, n, final, hyphen_good):
    """CFastaReader's test of a sequence's first data line, whose first byte other than
    whitespace is buf[p] (CheckDataLine: the line trimmed of whitespace, its first
    PLAUSIBLE_SPAN bytes; letters and '*' count as good, whitespace and digits as neither, ';'
    ends the line, anything else is bad; '-' is good where the reader keeps hyphens
    (makeblastdb), neither where it drops them (blastp's queries)).

    Returns 1 if refused, 0 if not, -1 if ``buf`` holds too little of the line to tell."""
    e = p
    while e < n and buf[e] != NL and buf[e] != CR:
        e += 1
    if e == n and not final and e - p < LOOKAHEAD:
        return -1
    t = e
    while t > p and _is_space(buf[t - 1]):
        t -= 1
    span = min(t - p, PLAUSIBLE_SPAN)
    good = 0
    bad = 0
    for j in range(p, p + span):
        c = buf[j]
        if (65 <= c <= 90) or (97 <= c <= 122) or c == 42:
            good += 1
        elif c == HYPHEN:
            if hyphen_good:
                good += 1
        elif _is_space(c) or (48 <= c <= 57):
            pass
        elif c == SEMICOLON:
            break
        else:
            bad += 1
    if bad >= good // 3 and (span > 3 or good == 0 or bad > good):
        return 1
    return 0


def scan(buf, table, final, state, residues, hstart, hend, lengths, blast):
    """Digitize a piece of a FASTA file.

    ``state`` (see STATE_SIZE) comes from the previous piece and is updated for the next;
    ``residues`` holds len(buf) bytes, ``hstart``, ``hend`` and ``lengths`` one entry a '>'
    in ``buf``.  Unless ``final``, a header line not ended within ``buf`` is left for the next
    piece (with ``blast``, a first data line too short to judge as well).

    ``blast``: read as BLAST+ reads FASTA (``table`` one of blastp's): DROPPED bytes left
    out and counted, comments skipped, a first data line CFastaReader refuses an error.

    Returns (n_res, lead, k, consumed, bad, bad_kind): residues written; how many of
    them come before the first header (they continue the previous piece's last
    sequence); headers found (start at '>', end at the line's end; residues of each in
    ``lengths``); bytes of ``buf`` used; the position of the first error (-1 if none)
    and what it is (BAD_RESIDUE, BAD_NO_NAME, BAD_IMPLAUSIBLE); ``state[LINE]`` is then
    its line.
    """
    n = len(buf)
    line_start = state[AT_LINE_START] != 0
    after_cr = state[AFTER_CR] != 0
    line = state[LINE]
    in_seq = state[IN_SEQUENCE] != 0
    in_comment = state[IN_COMMENT] != 0
    blank = state[LINE_BLANK] != 0
    has_res = state[HAS_RESIDUES] != 0
    hyphen_good = table[HYPHEN] != DROPPED
    k = 0
    n_res = 0
    lead = 0
    run = 0                     # residues since the last header (counted here, stored at the next)
    p = 0
    bad = -1
    bad_kind = 0
    while p < n:
        c = buf[p]
        if in_comment and c != NL and c != CR:
            p += 1
            continue
        if line_start and c == GT:
            q = p + 1
            while q < n and buf[q] != NL and buf[q] != CR:
                q += 1
            if q == n and not final:
                break                   # the rest of this header line is in the next piece
            a = p + 1
            while a < q and _is_space(buf[a]):
                a += 1
            if a == q:
                bad = p
                bad_kind = BAD_NO_NAME
                break
            if k == 0:
                lead = run
            else:
                lengths[k - 1] = run
            run = 0
            hstart[k] = p
            hend[k] = q
            k += 1
            in_seq = True
            has_res = False
            line_start = False
            after_cr = False
            p = q                       # its line end is counted below
            continue
        if c == NL:
            if not after_cr:
                line += 1
            after_cr = False
            line_start = True
            in_comment = False
            blank = True
            p += 1
            continue
        if c == CR:
            line += 1
            after_cr = True
            line_start = True
            in_comment = False
            blank = True
            p += 1
            continue
        after_cr = False
        line_start = False
        code = table[c]
        if code == IGNORED:
            p += 1
            continue
        if blast:
            if blank:                   # the line's first byte other than whitespace
                if code == LINE_COMMENT or code == COMMENT:
                    in_comment = True
                    p += 1
                    continue
                if in_seq and not has_res:
                    verdict = _implausible(buf, p, n, final, hyphen_good)
                    if verdict < 0:
                        break           # judged in the next piece, from here
                    if verdict > 0:
                        bad = p
                        bad_kind = BAD_IMPLAUSIBLE
                        break
                blank = False
            if code == COMMENT:
                in_comment = True
                p += 1
                continue
            if in_seq and (code == DROPPED or code == LINE_COMMENT):
                if state[DROPS] == 0:
                    state[DROP_BYTE] = c
                    state[DROP_LINE] = line
                    state[DROP_SEQ] = k - 1     # -1: the sequence an earlier piece began
                state[DROPS] += 1
                p += 1
                continue
        if code >= LINE_COMMENT or not in_seq:
            bad = p
            bad_kind = BAD_RESIDUE
            break
        residues[n_res] = code
        n_res += 1
        run += 1
        has_res = True
        p += 1
    if k == 0:
        lead = run
    else:
        lengths[k - 1] = run
    state[AT_LINE_START] = 1 if line_start else 0
    state[AFTER_CR] = 1 if after_cr else 0
    state[LINE] = line
    state[IN_SEQUENCE] = 1 if in_seq else 0
    state[IN_COMMENT] = 1 if in_comment else 0
    state[LINE_BLANK] = 1 if blank else 0
    state[HAS_RESIDUES] = 1 if has_res else 0
    return n_res, lead, k, p, bad, bad_kind


def split_headers(buf, hstart, hend, k, name_blob, name_lens, header_blob, header_lens):
    """Name and header line of each header.

    The name is Easel's: it runs up to the first whitespace after '>' (leading whitespace
    skipped).  The header is the whole line after '>' as written (the line's end, LF, CR or
    CR LF, is not in it): BLAST's titles keep its spacing, Easel's description is cut from it
    (``SequenceDB.description``).  ``name_blob`` and ``header_blob`` take the bytes; each
    header's name and line lengths go to ``name_lens`` and ``header_lens``.
    Returns the bytes written to each blob.
    """
    nn = 0
    nd = 0
    for i in range(k):
        a = hstart[i] + 1
        b = hend[i]
        for j in range(a, b):
            header_blob[nd] = buf[j]
            nd += 1
        header_lens[i] = b - a
        while a < b and _is_space(buf[a]):
            a += 1
        e = a
        while e < b and not _is_space(buf[e]):
            e += 1
        for j in range(a, e):
            name_blob[nn] = buf[j]
            nn += 1
        name_lens[i] = e - a
    return nn, nd


def _on_memoryviews(function):
    """``function`` run as plain Python with its numpy arguments as memoryviews (whose items
    are read and written several times faster than a numpy array's)."""
    def run(*args):
        return function(*[memoryview(a) if isinstance(a, np.ndarray) else a for a in args])
    return run


# what numba compiles of this module, callees before their callers
COMPILED_FUNCTIONS = (_is_space, _implausible, count_gt, scan, split_headers)
_compiled = None


def scanners(compiled: bool = True):
    """(count_gt, scan, split_headers): compiled by numba (from its cache after the first
    time), or run as plain Python (``compiled=False``: for an input of a few kilobytes; numba
    is not imported)."""
    global _compiled
    if not compiled:
        return tuple(_on_memoryviews(f) for f in (count_gt, scan, split_headers))
    if _compiled is None:
        from ._numba import numba

        # numba takes a function's callees from its globals, where they must be compiled too:
        # each function is compiled as a copy whose globals name the compiled helpers (numba's
        # cache files keep the names of the originals: module, name, first line)
        names = dict(globals())
        for function in COMPILED_FUNCTIONS:
            copy = types.FunctionType(function.__code__, names, function.__name__, function.__defaults__)
            copy.__qualname__ = function.__qualname__
            names[function.__name__] = numba.njit(cache=True, nogil=True)(copy)
        _compiled = (names["count_gt"], names["scan"], names["split_headers"])
    return _compiled
