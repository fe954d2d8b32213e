"""NCBIstdaa: BLAST's 28-letter protein alphabet, and the map from gpu-search's codes.

BLAST+ works on proteins in NCBIstdaa (``AMINOACID_TO_NCBISTDAA`` in
blast_encoding.c; ``kNCBIstdaa`` in util/tables/raw_scoremat.c): code 0 is the
gap '-', which BLAST also writes as the sentinel byte before and after every
sequence; 1..27 are the letters of ``NCBISTDAA`` below.  The substitution
matrices of matrix.py are indexed by these codes.

gpu-search's sequence database holds residues in Easel's amino alphabet
(``gpu_search.seqdb.AMINO_SYMBOLS``); ``EASEL_TO_NCBISTDAA`` converts them with
one ``take``.  Easel's '~' (missing data) has no NCBIstdaa letter and becomes X,
though blastp's sequences never hold it: blastp reads FASTA as BLAST+ does, and a
.gsdb's '.', '_' and '~' are left out before (``seqdb.blast_view``), so the gap code
reaches blastp only from a '-' that makeblastdb keeps in a database sequence.
"""

from __future__ import annotations

import numpy as np

from ..errors import SequenceError
from ..seqdb import AMINO_SYMBOLS

NCBISTDAA = "-ABCDEFGHIKLMNPQRSTVWXYZU*OJ"
"""NCBIstdaa letters, code = index (AMINOACID_TO_NCBISTDAA in blast_encoding.c)."""

ALPHABET_SIZE = len(NCBISTDAA)   # BLASTAA_SIZE in blast_encoding.h
GAP = 0                          # '-': gap and sequence sentinel (NCBISTDAA gap)
X = NCBISTDAA.index("X")         # 21: unknown residue
STOP = NCBISTDAA.index("*")      # 25
O = NCBISTDAA.index("O")         # 26: pyrrolysine

# Easel code -> NCBIstdaa code; Easel's '~' (missing residue) -> X.
EASEL_TO_NCBISTDAA = np.array(
    [NCBISTDAA.index("X" if sym == "~" else sym) for sym in AMINO_SYMBOLS], dtype=np.uint8)

_LETTER_TO_CODE = np.full(256, 255, dtype=np.uint8)
for _code, _sym in enumerate(NCBISTDAA):
    _LETTER_TO_CODE[ord(_sym)] = _code
    _LETTER_TO_CODE[ord(_sym.lower())] = _code


def encode(text: str) -> np.ndarray:
    """Protein letters (either case) -> NCBIstdaa codes (uint8), as AMINOACID_TO_NCBISTDAA.

    For tests and small inputs; real sequences come from the database through
    ``EASEL_TO_NCBISTDAA``.  Raises SequenceError on a letter outside the alphabet.
    """
    raw = np.frombuffer(text.encode("ascii", errors="replace"), dtype=np.uint8)
    codes = _LETTER_TO_CODE[raw]
    if (codes == 255).any():
        bad = text[int(np.flatnonzero(codes == 255)[0])]
        raise SequenceError(f"invalid protein letter {bad!r} for BLAST's alphabet")
    return codes


def decode(codes) -> str:
    """NCBIstdaa codes -> letters (the inverse of ``encode``)."""
    return "".join(NCBISTDAA[int(c)] for c in codes)


def blast_query_codes(codes: np.ndarray) -> np.ndarray:
    """A query as blastp searches it: O (pyrrolysine) replaced by X.

    BLAST+ does this when it sets up the query (blast_setup_cxx.cpp; it warns
    "One or more O characters replaced by X for alignment score calculations
    at positions ...").  Scores do not change (O scores as X), but the query's
    composition, hence its ungapped lambda and K, does.  Database sequences
    keep their O.
    """
    codes = np.asarray(codes, dtype=np.uint8)
    if (codes == O).any():
        codes = np.where(codes == O, np.uint8(X), codes).astype(np.uint8)
    return codes


def easel_to_ncbistdaa(residues, threads: int = 1) -> np.ndarray:
    """A whole database's residues in NCBIstdaa, translated in slices on ``threads`` threads.

    (numpy's take releases the GIL: a 273M-residue database takes ~0.05 s on 16 cores.)
    """
    from concurrent.futures import ThreadPoolExecutor

    residues = np.asarray(residues)
    out = np.empty(len(residues), dtype=np.uint8)
    k = max(1, min(64, len(residues) >> 22, 4 * threads))
    bounds = [len(residues) * i // k for i in range(k + 1)]

    def part(i):
        np.take(EASEL_TO_NCBISTDAA, residues[bounds[i]:bounds[i + 1]], out=out[bounds[i]:bounds[i + 1]])

    if threads > 1 and k > 1:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(part, range(k)))
    else:
        for i in range(k):
            part(i)
    return out
