"""Protein substitution matrices exactly as BLAST+ 2.12 holds them (sbp->matrix->data).

BLAST+ does not read matrix files for its standard matrices: it takes them
compiled into util/tables (sm_blosum62.c ...: NCBISM_Blosum62 ...), in the
order "ARNDCQEGHILKMFPSTWYVBJZX*", and ``BlastScoreBlkProteinMatrixLoad`` in
blast_stat.c expands them to a 28 x 28 matrix indexed by NCBIstdaa codes:

* every entry starts as BLAST_SCORE_MIN (INT2_MIN = -32768); the gap/sentinel
  code 0 ('-') keeps that score against everything (itself included), which is
  what stops an extension at a sequence boundary;
* every other pair is ``NCBISM_GetScore`` (raw_scoremat.c): the table entry,
  or the table's default score for a letter not in it (none for proteins);
* U (selenocysteine) and O (pyrrolysine) are not scored by the tables: U's
  row and column are copied from C's, O's from X's ("Use the C scores for U
  and X scores for the O characters").  (Older toolkits copied X for both;
  BLAST+ 2.12 scores U as C: checked against the binary.)  blastp also turns
  a query's O into X (alphabet.blast_query_codes).

The tables below were dumped from the BLAST+ 2.12.0 libtables.so and checked
against Biopython (``Bio.Align.substitution_matrices``): the 20 x 20 core of
every matrix but BLOSUM80 is Biopython's; NCBI's 2.12 tables differ in B, Z,
X (always -1 against a residue), '*', the added J column (I/L), and NCBI's
BLOSUM80 is a different scaling of the matrix from Biopython's.  The tests
compare them with both.

Default gap costs are the BLAST_MATRIX_BEST rows of the statistics tables in
blast_stat.c (what blastp prints as "Gap Penalties"); the allowed gap costs are
the gapped rows of those tables (``Blast_KarlinBlkGappedLoadFromTables``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import OptionError
from .alphabet import ALPHABET_SIZE, GAP, NCBISTDAA

BLAST_SCORE_MIN = -32768   # INT2_MIN (blast_stat.h)
BLAST_SCORE_MAX = 32767    # INT2_MAX

# (default gap open, gap extend), default neighbourhood word threshold and
# default two-hit window of blastp.  Gap costs and threshold as blastp 2.12
# reports them ("Gap Penalties", "Neighboring words threshold"); thresholds
# and windows are BLAST_GetSuggestedThreshold and BLAST_GetSuggestedWindowSize
# (blast_options.c), which blastp calls when -threshold / -window_size are not
# given (CWordThresholdArg, CWindowSizeArg in blast_args.cpp).  All checked
# against libblast.so and the binary by the tests.
_DEFAULTS = {
    "BLOSUM45": ((14, 2), 14, 60),
    "BLOSUM50": ((13, 2), 11, 40),
    "BLOSUM62": ((11, 1), 11, 40),
    "BLOSUM80": ((10, 1), 12, 25),
    "BLOSUM90": ((10, 1), 11, 40),
    "PAM30": ((9, 1), 16, 15),
    "PAM70": ((10, 1), 14, 20),
    "PAM250": ((14, 2), 11, 40),
}

# NCBI's packed tables (util/tables/sm_*.c of BLAST+ 2.12), rows and columns in
# the order of the header line.
_TABLES = {
    "BLOSUM45": """
          A   R   N   D   C   Q   E   G   H   I   L   K   M   F   P   S   T   W   Y   V   B   J   Z   X   *
    A     5  -2  -1  -2  -1  -1  -1   0  -2  -1  -1  -1  -1  -2  -1   1   0  -2  -2   0  -1  -1  -1  -1  -5
    R    -2   7   0  -1  -3   1   0  -2   0  -3  -2   3  -1  -2  -2  -1  -1  -2  -1  -2  -1  -3   1  -1  -5
    N    -1   0   6   2  -2   0   0   0   1  -2  -3   0  -2  -2  -2   1   0  -4  -2  -3   5  -3   0  -1  -5
    D    -2  -1   2   7  -3   0   2  -1   0  -4  -3   0  -3  -4  -1   0  -1  -4  -2  -3   6  -3   1  -1  -5
    C    -1  -3  -2  -3  12  -3  -3  -3  -3  -3  -2  -3  -2  -2  -4  -1  -1  -5  -3  -1  -2  -2  -3  -1  -5
    Q    -1   1   0   0  -3   6   2  -2   1  -2  -2   1   0  -4  -1   0  -1  -2  -1  -3   0  -2   4  -1  -5
    E    -1   0   0   2  -3   2   6  -2   0  -3  -2   1  -2  -3   0   0  -1  -3  -2  -3   1  -3   5  -1  -5
    G     0  -2   0  -1  -3  -2  -2   7  -2  -4  -3  -2  -2  -3  -2   0  -2  -2  -3  -3  -1  -4  -2  -1  -5
    H    -2   0   1   0  -3   1   0  -2  10  -3  -2  -1   0  -2  -2  -1  -2  -3   2  -3   0  -2   0  -1  -5
    I    -1  -3  -2  -4  -3  -2  -3  -4  -3   5   2  -3   2   0  -2  -2  -1  -2   0   3  -3   4  -3  -1  -5
    L    -1  -2  -3  -3  -2  -2  -2  -3  -2   2   5  -3   2   1  -3  -3  -1  -2   0   1  -3   4  -2  -1  -5
    K    -1   3   0   0  -3   1   1  -2  -1  -3  -3   5  -1  -3  -1  -1  -1  -2  -1  -2   0  -3   1  -1  -5
    M    -1  -1  -2  -3  -2   0  -2  -2   0   2   2  -1   6   0  -2  -2  -1  -2   0   1  -2   2  -1  -1  -5
    F    -2  -2  -2  -4  -2  -4  -3  -3  -2   0   1  -3   0   8  -3  -2  -1   1   3   0  -3   1  -3  -1  -5
    P    -1  -2  -2  -1  -4  -1   0  -2  -2  -2  -3  -1  -2  -3   9  -1  -1  -3  -3  -3  -2  -3  -1  -1  -5
    S     1  -1   1   0  -1   0   0   0  -1  -2  -3  -1  -2  -2  -1   4   2  -4  -2  -1   0  -2   0  -1  -5
    T     0  -1   0  -1  -1  -1  -1  -2  -2  -1  -1  -1  -1  -1  -1   2   5  -3  -1   0   0  -1  -1  -1  -5
    W    -2  -2  -4  -4  -5  -2  -3  -2  -3  -2  -2  -2  -2   1  -3  -4  -3  15   3  -3  -4  -2  -2  -1  -5
    Y    -2  -1  -2  -2  -3  -1  -2  -3   2   0   0  -1   0   3  -3  -2  -1   3   8  -1  -2   0  -2  -1  -5
    V     0  -2  -3  -3  -1  -3  -3  -3  -3   3   1  -2   1   0  -3  -1   0  -3  -1   5  -3   2  -3  -1  -5
    B    -1  -1   5   6  -2   0   1  -1   0  -3  -3   0  -2  -3  -2   0   0  -4  -2  -3   5  -3   1  -1  -5
    J    -1  -3  -3  -3  -2  -2  -3  -4  -2   4   4  -3   2   1  -3  -2  -1  -2   0   2  -3   4  -2  -1  -5
    Z    -1   1   0   1  -3   4   5  -2   0  -3  -2   1  -1  -3  -1   0  -1  -2  -2  -3   1  -2   5  -1  -5
    X    -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -5
    *    -5  -5  -5  -5  -5  -5  -5  -5  -5  -5  -5  -5  -5  -5  -5  -5  -5  -5  -5  -5  -5  -5  -5  -5   1
""",
    "BLOSUM50": """
          A   R   N   D   C   Q   E   G   H   I   L   K   M   F   P   S   T   W   Y   V   B   J   Z   X   *
    A     5  -2  -1  -2  -1  -1  -1   0  -2  -1  -2  -1  -1  -3  -1   1   0  -3  -2   0  -2  -2  -1  -1  -5
    R    -2   7  -1  -2  -4   1   0  -3   0  -4  -3   3  -2  -3  -3  -1  -1  -3  -1  -3  -1  -3   0  -1  -5
    N    -1  -1   7   2  -2   0   0   0   1  -3  -4   0  -2  -4  -2   1   0  -4  -2  -3   5  -4   0  -1  -5
    D    -2  -2   2   8  -4   0   2  -1  -1  -4  -4  -1  -4  -5  -1   0  -1  -5  -3  -4   6  -4   1  -1  -5
    C    -1  -4  -2  -4  13  -3  -3  -3  -3  -2  -2  -3  -2  -2  -4  -1  -1  -5  -3  -1  -3  -2  -3  -1  -5
    Q    -1   1   0   0  -3   7   2  -2   1  -3  -2   2   0  -4  -1   0  -1  -1  -1  -3   0  -3   4  -1  -5
    E    -1   0   0   2  -3   2   6  -3   0  -4  -3   1  -2  -3  -1  -1  -1  -3  -2  -3   1  -3   5  -1  -5
    G     0  -3   0  -1  -3  -2  -3   8  -2  -4  -4  -2  -3  -4  -2   0  -2  -3  -3  -4  -1  -4  -2  -1  -5
    H    -2   0   1  -1  -3   1   0  -2  10  -4  -3   0  -1  -1  -2  -1  -2  -3   2  -4   0  -3   0  -1  -5
    I    -1  -4  -3  -4  -2  -3  -4  -4  -4   5   2  -3   2   0  -3  -3  -1  -3  -1   4  -4   4  -3  -1  -5
    L    -2  -3  -4  -4  -2  -2  -3  -4  -3   2   5  -3   3   1  -4  -3  -1  -2  -1   1  -4   4  -3  -1  -5
    K    -1   3   0  -1  -3   2   1  -2   0  -3  -3   6  -2  -4  -1   0  -1  -3  -2  -3   0  -3   1  -1  -5
    M    -1  -2  -2  -4  -2   0  -2  -3  -1   2   3  -2   7   0  -3  -2  -1  -1   0   1  -3   2  -1  -1  -5
    F    -3  -3  -4  -5  -2  -4  -3  -4  -1   0   1  -4   0   8  -4  -3  -2   1   4  -1  -4   1  -4  -1  -5
    P    -1  -3  -2  -1  -4  -1  -1  -2  -2  -3  -4  -1  -3  -4  10  -1  -1  -4  -3  -3  -2  -3  -1  -1  -5
    S     1  -1   1   0  -1   0  -1   0  -1  -3  -3   0  -2  -3  -1   5   2  -4  -2  -2   0  -3   0  -1  -5
    T     0  -1   0  -1  -1  -1  -1  -2  -2  -1  -1  -1  -1  -2  -1   2   5  -3  -2   0   0  -1  -1  -1  -5
    W    -3  -3  -4  -5  -5  -1  -3  -3  -3  -3  -2  -3  -1   1  -4  -4  -3  15   2  -3  -5  -2  -2  -1  -5
    Y    -2  -1  -2  -3  -3  -1  -2  -3   2  -1  -1  -2   0   4  -3  -2  -2   2   8  -1  -3  -1  -2  -1  -5
    V     0  -3  -3  -4  -1  -3  -3  -4  -4   4   1  -3   1  -1  -3  -2   0  -3  -1   5  -3   2  -3  -1  -5
    B    -2  -1   5   6  -3   0   1  -1   0  -4  -4   0  -3  -4  -2   0   0  -5  -3  -3   6  -4   1  -1  -5
    J    -2  -3  -4  -4  -2  -3  -3  -4  -3   4   4  -3   2   1  -3  -3  -1  -2  -1   2  -4   4  -3  -1  -5
    Z    -1   0   0   1  -3   4   5  -2   0  -3  -3   1  -1  -4  -1   0  -1  -2  -2  -3   1  -3   5  -1  -5
    X    -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -5
    *    -5  -5  -5  -5  -5  -5  -5  -5  -5  -5  -5  -5  -5  -5  -5  -5  -5  -5  -5  -5  -5  -5  -5  -5   1
""",
    "BLOSUM62": """
          A   R   N   D   C   Q   E   G   H   I   L   K   M   F   P   S   T   W   Y   V   B   J   Z   X   *
    A     4  -1  -2  -2   0  -1  -1   0  -2  -1  -1  -1  -1  -2  -1   1   0  -3  -2   0  -2  -1  -1  -1  -4
    R    -1   5   0  -2  -3   1   0  -2   0  -3  -2   2  -1  -3  -2  -1  -1  -3  -2  -3  -1  -2   0  -1  -4
    N    -2   0   6   1  -3   0   0   0   1  -3  -3   0  -2  -3  -2   1   0  -4  -2  -3   4  -3   0  -1  -4
    D    -2  -2   1   6  -3   0   2  -1  -1  -3  -4  -1  -3  -3  -1   0  -1  -4  -3  -3   4  -3   1  -1  -4
    C     0  -3  -3  -3   9  -3  -4  -3  -3  -1  -1  -3  -1  -2  -3  -1  -1  -2  -2  -1  -3  -1  -3  -1  -4
    Q    -1   1   0   0  -3   5   2  -2   0  -3  -2   1   0  -3  -1   0  -1  -2  -1  -2   0  -2   4  -1  -4
    E    -1   0   0   2  -4   2   5  -2   0  -3  -3   1  -2  -3  -1   0  -1  -3  -2  -2   1  -3   4  -1  -4
    G     0  -2   0  -1  -3  -2  -2   6  -2  -4  -4  -2  -3  -3  -2   0  -2  -2  -3  -3  -1  -4  -2  -1  -4
    H    -2   0   1  -1  -3   0   0  -2   8  -3  -3  -1  -2  -1  -2  -1  -2  -2   2  -3   0  -3   0  -1  -4
    I    -1  -3  -3  -3  -1  -3  -3  -4  -3   4   2  -3   1   0  -3  -2  -1  -3  -1   3  -3   3  -3  -1  -4
    L    -1  -2  -3  -4  -1  -2  -3  -4  -3   2   4  -2   2   0  -3  -2  -1  -2  -1   1  -4   3  -3  -1  -4
    K    -1   2   0  -1  -3   1   1  -2  -1  -3  -2   5  -1  -3  -1   0  -1  -3  -2  -2   0  -3   1  -1  -4
    M    -1  -1  -2  -3  -1   0  -2  -3  -2   1   2  -1   5   0  -2  -1  -1  -1  -1   1  -3   2  -1  -1  -4
    F    -2  -3  -3  -3  -2  -3  -3  -3  -1   0   0  -3   0   6  -4  -2  -2   1   3  -1  -3   0  -3  -1  -4
    P    -1  -2  -2  -1  -3  -1  -1  -2  -2  -3  -3  -1  -2  -4   7  -1  -1  -4  -3  -2  -2  -3  -1  -1  -4
    S     1  -1   1   0  -1   0   0   0  -1  -2  -2   0  -1  -2  -1   4   1  -3  -2  -2   0  -2   0  -1  -4
    T     0  -1   0  -1  -1  -1  -1  -2  -2  -1  -1  -1  -1  -2  -1   1   5  -2  -2   0  -1  -1  -1  -1  -4
    W    -3  -3  -4  -4  -2  -2  -3  -2  -2  -3  -2  -3  -1   1  -4  -3  -2  11   2  -3  -4  -2  -2  -1  -4
    Y    -2  -2  -2  -3  -2  -1  -2  -3   2  -1  -1  -2  -1   3  -3  -2  -2   2   7  -1  -3  -1  -2  -1  -4
    V     0  -3  -3  -3  -1  -2  -2  -3  -3   3   1  -2   1  -1  -2  -2   0  -3  -1   4  -3   2  -2  -1  -4
    B    -2  -1   4   4  -3   0   1  -1   0  -3  -4   0  -3  -3  -2   0  -1  -4  -3  -3   4  -3   0  -1  -4
    J    -1  -2  -3  -3  -1  -2  -3  -4  -3   3   3  -3   2   0  -3  -2  -1  -2  -1   2  -3   3  -3  -1  -4
    Z    -1   0   0   1  -3   4   4  -2   0  -3  -3   1  -1  -3  -1   0  -1  -2  -2  -2   0  -3   4  -1  -4
    X    -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -4
    *    -4  -4  -4  -4  -4  -4  -4  -4  -4  -4  -4  -4  -4  -4  -4  -4  -4  -4  -4  -4  -4  -4  -4  -4   1
""",
    "BLOSUM80": """
          A   R   N   D   C   Q   E   G   H   I   L   K   M   F   P   S   T   W   Y   V   B   J   Z   X   *
    A     5  -2  -2  -2  -1  -1  -1   0  -2  -2  -2  -1  -1  -3  -1   1   0  -3  -2   0  -2  -2  -1  -1  -6
    R    -2   6  -1  -2  -4   1  -1  -3   0  -3  -3   2  -2  -4  -2  -1  -1  -4  -3  -3  -1  -3   0  -1  -6
    N    -2  -1   6   1  -3   0  -1  -1   0  -4  -4   0  -3  -4  -3   0   0  -4  -3  -4   5  -4   0  -1  -6
    D    -2  -2   1   6  -4  -1   1  -2  -2  -4  -5  -1  -4  -4  -2  -1  -1  -6  -4  -4   5  -5   1  -1  -6
    C    -1  -4  -3  -4   9  -4  -5  -4  -4  -2  -2  -4  -2  -3  -4  -2  -1  -3  -3  -1  -4  -2  -4  -1  -6
    Q    -1   1   0  -1  -4   6   2  -2   1  -3  -3   1   0  -4  -2   0  -1  -3  -2  -3   0  -3   4  -1  -6
    E    -1  -1  -1   1  -5   2   6  -3   0  -4  -4   1  -2  -4  -2   0  -1  -4  -3  -3   1  -4   5  -1  -6
    G     0  -3  -1  -2  -4  -2  -3   6  -3  -5  -4  -2  -4  -4  -3  -1  -2  -4  -4  -4  -1  -5  -3  -1  -6
    H    -2   0   0  -2  -4   1   0  -3   8  -4  -3  -1  -2  -2  -3  -1  -2  -3   2  -4  -1  -4   0  -1  -6
    I    -2  -3  -4  -4  -2  -3  -4  -5  -4   5   1  -3   1  -1  -4  -3  -1  -3  -2   3  -4   3  -4  -1  -6
    L    -2  -3  -4  -5  -2  -3  -4  -4  -3   1   4  -3   2   0  -3  -3  -2  -2  -2   1  -4   3  -3  -1  -6
    K    -1   2   0  -1  -4   1   1  -2  -1  -3  -3   5  -2  -4  -1  -1  -1  -4  -3  -3  -1  -3   1  -1  -6
    M    -1  -2  -3  -4  -2   0  -2  -4  -2   1   2  -2   6   0  -3  -2  -1  -2  -2   1  -3   2  -1  -1  -6
    F    -3  -4  -4  -4  -3  -4  -4  -4  -2  -1   0  -4   0   6  -4  -3  -2   0   3  -1  -4   0  -4  -1  -6
    P    -1  -2  -3  -2  -4  -2  -2  -3  -3  -4  -3  -1  -3  -4   8  -1  -2  -5  -4  -3  -2  -4  -2  -1  -6
    S     1  -1   0  -1  -2   0   0  -1  -1  -3  -3  -1  -2  -3  -1   5   1  -4  -2  -2   0  -3   0  -1  -6
    T     0  -1   0  -1  -1  -1  -1  -2  -2  -1  -2  -1  -1  -2  -2   1   5  -4  -2   0  -1  -1  -1  -1  -6
    W    -3  -4  -4  -6  -3  -3  -4  -4  -3  -3  -2  -4  -2   0  -5  -4  -4  11   2  -3  -5  -3  -3  -1  -6
    Y    -2  -3  -3  -4  -3  -2  -3  -4   2  -2  -2  -3  -2   3  -4  -2  -2   2   7  -2  -3  -2  -3  -1  -6
    V     0  -3  -4  -4  -1  -3  -3  -4  -4   3   1  -3   1  -1  -3  -2   0  -3  -2   4  -4   2  -3  -1  -6
    B    -2  -1   5   5  -4   0   1  -1  -1  -4  -4  -1  -3  -4  -2   0  -1  -5  -3  -4   5  -4   0  -1  -6
    J    -2  -3  -4  -5  -2  -3  -4  -5  -4   3   3  -3   2   0  -4  -3  -1  -3  -2   2  -4   3  -3  -1  -6
    Z    -1   0   0   1  -4   4   5  -3   0  -4  -3   1  -1  -4  -2   0  -1  -3  -3  -3   0  -3   5  -1  -6
    X    -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -6
    *    -6  -6  -6  -6  -6  -6  -6  -6  -6  -6  -6  -6  -6  -6  -6  -6  -6  -6  -6  -6  -6  -6  -6  -6   1
""",
    "BLOSUM90": """
          A   R   N   D   C   Q   E   G   H   I   L   K   M   F   P   S   T   W   Y   V   B   J   Z   X   *
    A     5  -2  -2  -3  -1  -1  -1   0  -2  -2  -2  -1  -2  -3  -1   1   0  -4  -3  -1  -2  -2  -1  -1  -6
    R    -2   6  -1  -3  -5   1  -1  -3   0  -4  -3   2  -2  -4  -3  -1  -2  -4  -3  -3  -2  -3   0  -1  -6
    N    -2  -1   7   1  -4   0  -1  -1   0  -4  -4   0  -3  -4  -3   0   0  -5  -3  -4   5  -4  -1  -1  -6
    D    -3  -3   1   7  -5  -1   1  -2  -2  -5  -5  -1  -4  -5  -3  -1  -2  -6  -4  -5   5  -5   1  -1  -6
    C    -1  -5  -4  -5   9  -4  -6  -4  -5  -2  -2  -4  -2  -3  -4  -2  -2  -4  -4  -2  -4  -2  -5  -1  -6
    Q    -1   1   0  -1  -4   7   2  -3   1  -4  -3   1   0  -4  -2  -1  -1  -3  -3  -3  -1  -3   5  -1  -6
    E    -1  -1  -1   1  -6   2   6  -3  -1  -4  -4   0  -3  -5  -2  -1  -1  -5  -4  -3   1  -4   5  -1  -6
    G     0  -3  -1  -2  -4  -3  -3   6  -3  -5  -5  -2  -4  -5  -3  -1  -3  -4  -5  -5  -2  -5  -3  -1  -6
    H    -2   0   0  -2  -5   1  -1  -3   8  -4  -4  -1  -3  -2  -3  -2  -2  -3   1  -4  -1  -4   0  -1  -6
    I    -2  -4  -4  -5  -2  -4  -4  -5  -4   5   1  -4   1  -1  -4  -3  -1  -4  -2   3  -5   3  -4  -1  -6
    L    -2  -3  -4  -5  -2  -3  -4  -5  -4   1   5  -3   2   0  -4  -3  -2  -3  -2   0  -5   4  -4  -1  -6
    K    -1   2   0  -1  -4   1   0  -2  -1  -4  -3   6  -2  -4  -2  -1  -1  -5  -3  -3  -1  -3   1  -1  -6
    M    -2  -2  -3  -4  -2   0  -3  -4  -3   1   2  -2   7  -1  -3  -2  -1  -2  -2   0  -4   2  -2  -1  -6
    F    -3  -4  -4  -5  -3  -4  -5  -5  -2  -1   0  -4  -1   7  -4  -3  -3   0   3  -2  -4   0  -4  -1  -6
    P    -1  -3  -3  -3  -4  -2  -2  -3  -3  -4  -4  -2  -3  -4   8  -2  -2  -5  -4  -3  -3  -4  -2  -1  -6
    S     1  -1   0  -1  -2  -1  -1  -1  -2  -3  -3  -1  -2  -3  -2   5   1  -4  -3  -2   0  -3  -1  -1  -6
    T     0  -2   0  -2  -2  -1  -1  -3  -2  -1  -2  -1  -1  -3  -2   1   6  -4  -2  -1  -1  -2  -1  -1  -6
    W    -4  -4  -5  -6  -4  -3  -5  -4  -3  -4  -3  -5  -2   0  -5  -4  -4  11   2  -3  -6  -3  -4  -1  -6
    Y    -3  -3  -3  -4  -4  -3  -4  -5   1  -2  -2  -3  -2   3  -4  -3  -2   2   8  -3  -4  -2  -3  -1  -6
    V    -1  -3  -4  -5  -2  -3  -3  -5  -4   3   0  -3   0  -2  -3  -2  -1  -3  -3   5  -4   1  -3  -1  -6
    B    -2  -2   5   5  -4  -1   1  -2  -1  -5  -5  -1  -4  -4  -3   0  -1  -6  -4  -4   5  -5   0  -1  -6
    J    -2  -3  -4  -5  -2  -3  -4  -5  -4   3   4  -3   2   0  -4  -3  -2  -3  -2   1  -5   4  -4  -1  -6
    Z    -1   0  -1   1  -5   5   5  -3   0  -4  -4   1  -2  -4  -2  -1  -1  -4  -3  -3   0  -4   5  -1  -6
    X    -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -6
    *    -6  -6  -6  -6  -6  -6  -6  -6  -6  -6  -6  -6  -6  -6  -6  -6  -6  -6  -6  -6  -6  -6  -6  -6   1
""",
    "PAM30": """
          A   R   N   D   C   Q   E   G   H   I   L   K   M   F   P   S   T   W   Y   V   B   J   Z   X   *
    A     6  -7  -4  -3  -6  -4  -2  -2  -7  -5  -6  -7  -5  -8  -2   0  -1 -13  -8  -2  -3  -6  -3  -1 -17
    R    -7   8  -6 -10  -8  -2  -9  -9  -2  -5  -8   0  -4  -9  -4  -3  -6  -2 -10  -8  -7  -7  -4  -1 -17
    N    -4  -6   8   2 -11  -3  -2  -3   0  -5  -7  -1  -9  -9  -6   0  -2  -8  -4  -8   6  -6  -3  -1 -17
    D    -3 -10   2   8 -14  -2   2  -3  -4  -7 -12  -4 -11 -15  -8  -4  -5 -15 -11  -8   6 -10   1  -1 -17
    C    -6  -8 -11 -14  10 -14 -14  -9  -7  -6 -15 -14 -13 -13  -8  -3  -8 -15  -4  -6 -12  -9 -14  -1 -17
    Q    -4  -2  -3  -2 -14   8   1  -7   1  -8  -5  -3  -4 -13  -3  -5  -5 -13 -12  -7  -3  -5   6  -1 -17
    E    -2  -9  -2   2 -14   1   8  -4  -5  -5  -9  -4  -7 -14  -5  -4  -6 -17  -8  -6   1  -7   6  -1 -17
    G    -2  -9  -3  -3  -9  -7  -4   6  -9 -11 -10  -7  -8  -9  -6  -2  -6 -15 -14  -5  -3 -10  -5  -1 -17
    H    -7  -2   0  -4  -7   1  -5  -9   9  -9  -6  -6 -10  -6  -4  -6  -7  -7  -3  -6  -1  -7  -1  -1 -17
    I    -5  -5  -5  -7  -6  -8  -5 -11  -9   8  -1  -6  -1  -2  -8  -7  -2 -14  -6   2  -6   5  -6  -1 -17
    L    -6  -8  -7 -12 -15  -5  -9 -10  -6  -1   7  -8   1  -3  -7  -8  -7  -6  -7  -2  -9   6  -7  -1 -17
    K    -7   0  -1  -4 -14  -3  -4  -7  -6  -6  -8   7  -2 -14  -6  -4  -3 -12  -9  -9  -2  -7  -4  -1 -17
    M    -5  -4  -9 -11 -13  -4  -7  -8 -10  -1   1  -2  11  -4  -8  -5  -4 -13 -11  -1 -10   0  -5  -1 -17
    F    -8  -9  -9 -15 -13 -13 -14  -9  -6  -2  -3 -14  -4   9 -10  -6  -9  -4   2  -8 -10  -2 -13  -1 -17
    P    -2  -4  -6  -8  -8  -3  -5  -6  -4  -8  -7  -6  -8 -10   8  -2  -4 -14 -13  -6  -7  -7  -4  -1 -17
    S     0  -3   0  -4  -3  -5  -4  -2  -6  -7  -8  -4  -5  -6  -2   6   0  -5  -7  -6  -1  -8  -5  -1 -17
    T    -1  -6  -2  -5  -8  -5  -6  -6  -7  -2  -7  -3  -4  -9  -4   0   7 -13  -6  -3  -3  -5  -6  -1 -17
    W   -13  -2  -8 -15 -15 -13 -17 -15  -7 -14  -6 -12 -13  -4 -14  -5 -13  13  -5 -15 -10  -7 -14  -1 -17
    Y    -8 -10  -4 -11  -4 -12  -8 -14  -3  -6  -7  -9 -11   2 -13  -7  -6  -5  10  -7  -6  -7  -9  -1 -17
    V    -2  -8  -8  -8  -6  -7  -6  -5  -6   2  -2  -9  -1  -8  -6  -6  -3 -15  -7   7  -8   0  -6  -1 -17
    B    -3  -7   6   6 -12  -3   1  -3  -1  -6  -9  -2 -10 -10  -7  -1  -3 -10  -6  -8   6  -8   0  -1 -17
    J    -6  -7  -6 -10  -9  -5  -7 -10  -7   5   6  -7   0  -2  -7  -8  -5  -7  -7   0  -8   6  -6  -1 -17
    Z    -3  -4  -3   1 -14   6   6  -5  -1  -6  -7  -4  -5 -13  -4  -5  -6 -14  -9  -6   0  -6   6  -1 -17
    X    -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1 -17
    *   -17 -17 -17 -17 -17 -17 -17 -17 -17 -17 -17 -17 -17 -17 -17 -17 -17 -17 -17 -17 -17 -17 -17 -17   1
""",
    "PAM70": """
          A   R   N   D   C   Q   E   G   H   I   L   K   M   F   P   S   T   W   Y   V   B   J   Z   X   *
    A     5  -4  -2  -1  -4  -2  -1   0  -4  -2  -4  -4  -3  -6   0   1   1  -9  -5  -1  -1  -3  -1  -1 -11
    R    -4   8  -3  -6  -5   0  -5  -6   0  -3  -6   2  -2  -7  -2  -1  -4   0  -7  -5  -4  -5  -2  -1 -11
    N    -2  -3   6   3  -7  -1   0  -1   1  -3  -5   0  -5  -6  -3   1   0  -6  -3  -5   5  -4  -1  -1 -11
    D    -1  -6   3   6  -9   0   3  -1  -1  -5  -8  -2  -7 -10  -4  -1  -2 -10  -7  -5   5  -7   2  -1 -11
    C    -4  -5  -7  -9   9  -9  -9  -6  -5  -4 -10  -9  -9  -8  -5  -1  -5 -11  -2  -4  -8  -7  -9  -1 -11
    Q    -2   0  -1   0  -9   7   2  -4   2  -5  -3  -1  -2  -9  -1  -3  -3  -8  -8  -4  -1  -3   5  -1 -11
    E    -1  -5   0   3  -9   2   6  -2  -2  -4  -6  -2  -4  -9  -3  -2  -3 -11  -6  -4   2  -5   5  -1 -11
    G     0  -6  -1  -1  -6  -4  -2   6  -6  -6  -7  -5  -6  -7  -3   0  -3 -10  -9  -3  -1  -7  -3  -1 -11
    H    -4   0   1  -1  -5   2  -2  -6   8  -6  -4  -3  -6  -4  -2  -3  -4  -5  -1  -4   0  -4   1  -1 -11
    I    -2  -3  -3  -5  -4  -5  -4  -6  -6   7   1  -4   1   0  -5  -4  -1  -9  -4   3  -4   4  -4  -1 -11
    L    -4  -6  -5  -8 -10  -3  -6  -7  -4   1   6  -5   2  -1  -5  -6  -4  -4  -4   0  -6   5  -4  -1 -11
    K    -4   2   0  -2  -9  -1  -2  -5  -3  -4  -5   6   0  -9  -4  -2  -1  -7  -7  -6  -1  -5  -2  -1 -11
    M    -3  -2  -5  -7  -9  -2  -4  -6  -6   1   2   0  10  -2  -5  -3  -2  -8  -7   0  -6   2  -3  -1 -11
    F    -6  -7  -6 -10  -8  -9  -9  -7  -4   0  -1  -9  -2   8  -7  -4  -6  -2   4  -5  -7  -1  -9  -1 -11
    P     0  -2  -3  -4  -5  -1  -3  -3  -2  -5  -5  -4  -5  -7   7   0  -2  -9  -9  -3  -4  -5  -2  -1 -11
    S     1  -1   1  -1  -1  -3  -2   0  -3  -4  -6  -2  -3  -4   0   5   2  -3  -5  -3   0  -5  -2  -1 -11
    T     1  -4   0  -2  -5  -3  -3  -3  -4  -1  -4  -1  -2  -6  -2   2   6  -8  -4  -1  -1  -3  -3  -1 -11
    W    -9   0  -6 -10 -11  -8 -11 -10  -5  -9  -4  -7  -8  -2  -9  -3  -8  13  -3 -10  -7  -5 -10  -1 -11
    Y    -5  -7  -3  -7  -2  -8  -6  -9  -1  -4  -4  -7  -7   4  -9  -5  -4  -3   9  -5  -4  -4  -7  -1 -11
    V    -1  -5  -5  -5  -4  -4  -4  -3  -4   3   0  -6   0  -5  -3  -3  -1 -10  -5   6  -5   1  -4  -1 -11
    B    -1  -4   5   5  -8  -1   2  -1   0  -4  -6  -1  -6  -7  -4   0  -1  -7  -4  -5   5  -5   1  -1 -11
    J    -3  -5  -4  -7  -7  -3  -5  -7  -4   4   5  -5   2  -1  -5  -5  -3  -5  -4   1  -5   5  -4  -1 -11
    Z    -1  -2  -1   2  -9   5   5  -3   1  -4  -4  -2  -3  -9  -2  -2  -3 -10  -7  -4   1  -4   5  -1 -11
    X    -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1 -11
    *   -11 -11 -11 -11 -11 -11 -11 -11 -11 -11 -11 -11 -11 -11 -11 -11 -11 -11 -11 -11 -11 -11 -11 -11   1
""",
    "PAM250": """
          A   R   N   D   C   Q   E   G   H   I   L   K   M   F   P   S   T   W   Y   V   B   J   Z   X   *
    A     2  -2   0   0  -2   0   0   1  -1  -1  -2  -1  -1  -3   1   1   1  -6  -3   0   0  -1   0  -1  -8
    R    -2   6   0  -1  -4   1  -1  -3   2  -2  -3   3   0  -4   0   0  -1   2  -4  -2  -1  -3   0  -1  -8
    N     0   0   2   2  -4   1   1   0   2  -2  -3   1  -2  -3   0   1   0  -4  -2  -2   2  -3   1  -1  -8
    D     0  -1   2   4  -5   2   3   1   1  -2  -4   0  -3  -6  -1   0   0  -7  -4  -2   3  -3   3  -1  -8
    C    -2  -4  -4  -5  12  -5  -5  -3  -3  -2  -6  -5  -5  -4  -3   0  -2  -8   0  -2  -4  -5  -5  -1  -8
    Q     0   1   1   2  -5   4   2  -1   3  -2  -2   1  -1  -5   0  -1  -1  -5  -4  -2   1  -2   3  -1  -8
    E     0  -1   1   3  -5   2   4   0   1  -2  -3   0  -2  -5  -1   0   0  -7  -4  -2   3  -3   3  -1  -8
    G     1  -3   0   1  -3  -1   0   5  -2  -3  -4  -2  -3  -5   0   1   0  -7  -5  -1   0  -4   0  -1  -8
    H    -1   2   2   1  -3   3   1  -2   6  -2  -2   0  -2  -2   0  -1  -1  -3   0  -2   1  -2   2  -1  -8
    I    -1  -2  -2  -2  -2  -2  -2  -3  -2   5   2  -2   2   1  -2  -1   0  -5  -1   4  -2   3  -2  -1  -8
    L    -2  -3  -3  -4  -6  -2  -3  -4  -2   2   6  -3   4   2  -3  -3  -2  -2  -1   2  -3   5  -3  -1  -8
    K    -1   3   1   0  -5   1   0  -2   0  -2  -3   5   0  -5  -1   0   0  -3  -4  -2   1  -3   0  -1  -8
    M    -1   0  -2  -3  -5  -1  -2  -3  -2   2   4   0   6   0  -2  -2  -1  -4  -2   2  -2   3  -2  -1  -8
    F    -3  -4  -3  -6  -4  -5  -5  -5  -2   1   2  -5   0   9  -5  -3  -3   0   7  -1  -4   2  -5  -1  -8
    P     1   0   0  -1  -3   0  -1   0   0  -2  -3  -1  -2  -5   6   1   0  -6  -5  -1  -1  -2   0  -1  -8
    S     1   0   1   0   0  -1   0   1  -1  -1  -3   0  -2  -3   1   2   1  -2  -3  -1   0  -2   0  -1  -8
    T     1  -1   0   0  -2  -1   0   0  -1   0  -2   0  -1  -3   0   1   3  -5  -3   0   0  -1  -1  -1  -8
    W    -6   2  -4  -7  -8  -5  -7  -7  -3  -5  -2  -3  -4   0  -6  -2  -5  17   0  -6  -5  -3  -6  -1  -8
    Y    -3  -4  -2  -4   0  -4  -4  -5   0  -1  -1  -4  -2   7  -5  -3  -3   0  10  -2  -3  -1  -4  -1  -8
    V     0  -2  -2  -2  -2  -2  -2  -1  -2   4   2  -2   2  -1  -1  -1   0  -6  -2   4  -2   2  -2  -1  -8
    B     0  -1   2   3  -4   1   3   0   1  -2  -3   1  -2  -4  -1   0   0  -5  -3  -2   3  -3   2  -1  -8
    J    -1  -3  -3  -3  -5  -2  -3  -4  -2   3   5  -3   3   2  -2  -2  -1  -3  -1   2  -3   5  -2  -1  -8
    Z     0   0   1   3  -5   3   3   0   2  -2  -3   0  -2  -5   0   0  -1  -6  -4  -2   2  -2   3  -1  -8
    X    -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -1  -8
    *    -8  -8  -8  -8  -8  -8  -8  -8  -8  -8  -8  -8  -8  -8  -8  -8  -8  -8  -8  -8  -8  -8  -8  -8   1
""",

}


@dataclass(frozen=True)
class Matrix:
    """A substitution matrix as BLAST+ uses it.

    scores         int32 (28, 28), indexed by NCBIstdaa codes (alphabet.py):
                   exactly sbp->matrix->data after Blast_ScoreBlkMatrixFill
    default_gap    (open, extend) blastp uses when none is given
    allowed_gaps   every (open, extend) BLAST accepts for this matrix
    word_threshold blastp's default neighbourhood word threshold (-threshold)
    window_size    blastp's default two-hit window (-window_size):
                   BLAST_GetSuggestedWindowSize, 40 for BLOSUM62 but 60 for
                   BLOSUM45, 25 for BLOSUM80, 15 for PAM30, 20 for PAM70
    """

    name: str
    scores: np.ndarray = field(repr=False)
    default_gap: tuple[int, int]
    allowed_gaps: list[tuple[int, int]]
    word_threshold: int
    window_size: int = 40

    @property
    def hiscore(self) -> int:
        """Highest score (sbp->hiscore, BlastScoreBlkMaxScoreSet in blast_stat.c)."""
        return int(self.scores[self.scores > BLAST_SCORE_MIN].max())

    @property
    def loscore(self) -> int:
        """Lowest score above BLAST_SCORE_MIN (sbp->loscore, BlastScoreBlkMaxScoreSet)."""
        return int(self.scores[self.scores > BLAST_SCORE_MIN].min())


MATRIX_NAMES = tuple(_DEFAULTS)


def _parse_table(text: str) -> dict[tuple[str, str], int]:
    lines = [line.split() for line in text.strip().splitlines()]
    header = lines[0]
    return {(row[0], col): int(v) for row in lines[1:] for col, v in zip(header, row[1:])}


def ncbi_table(name: str) -> dict[tuple[str, str], int]:
    """NCBI's packed table for ``name``: {(letter, letter): score} over "ARNDCQEGHILKMFPSTWYVBJZX*"."""
    return _parse_table(_TABLES[name.upper()])


def _expand(table: dict[tuple[str, str], int]) -> np.ndarray:
    """The 28 x 28 NCBIstdaa matrix: BlastScoreBlkProteinMatrixLoad in blast_stat.c."""
    scores = np.full((ALPHABET_SIZE, ALPHABET_SIZE), BLAST_SCORE_MIN, dtype=np.int32)
    skip = {NCBISTDAA.index(c) for c in "-UO"}
    for i, a in enumerate(NCBISTDAA):
        for j, b in enumerate(NCBISTDAA):
            if i not in skip and j not in skip:
                scores[i, j] = table[a, b]
    x, u, o, c = (NCBISTDAA.index(ch) for ch in "XUOC")
    for i in range(ALPHABET_SIZE):      # BLAST's loop order: U copies C, O copies X
        scores[u, i] = scores[c, i]
        scores[i, u] = scores[i, c]
        scores[o, i] = scores[x, i]
        scores[i, o] = scores[i, x]
    assert (scores[GAP] == BLAST_SCORE_MIN).all() and (scores[:, GAP] == BLAST_SCORE_MIN).all()
    return scores


_CACHE: dict[str, Matrix] = {}


def load_matrix(name: str) -> Matrix:
    """The named matrix (case-insensitive, as blastp's -matrix); OptionError if unknown.

    Mirrors Blast_ScoreBlkMatrixFill -> BlastScoreBlkProteinMatrixLoad (blast_stat.c).
    """
    key = name.upper()
    if key not in _DEFAULTS:
        raise OptionError(f"{name} is not a supported matrix; supported matrices are: "
                          + ", ".join(MATRIX_NAMES))
    if key not in _CACHE:
        from .stats import allowed_gap_costs  # the statistics tables live in stats.py
        scores = _expand(ncbi_table(key))
        scores.setflags(write=False)
        gap, threshold, window = _DEFAULTS[key]
        _CACHE[key] = Matrix(key, scores, gap, allowed_gap_costs(key), threshold, window)
    return _CACHE[key]
