"""Karlin-Altschul and Spouge statistics, cutoffs and number formats of BLAST+ 2.12 blastp.

Every function mirrors one NCBI C function, named in its docstring, and keeps
its order of floating-point operations, so the integers BLAST derives from
them (X-drops, gap trigger, cutoff scores, length adjustment) and the E-values
and bit scores it prints come out the same.  Sources: algo/blast/core/
blast_stat.c, blast_parameters.c, blast_setup.c, blast_hits.c, ncbi_math.c;
objtools/align_format/align_format_util.cpp and tabular.cpp.

How blastp (gapped, -comp_based_stats 0) uses them, per query:

* ungapped_params(query)      kbp_std: the query's own ungapped lambda/K/H
                              (Blast_ScoreBlkKbpUngappedCalc)
* gapped_params(matrix, gaps) kbp_gap and the Gumbel block from the built-in
                              tables (Blast_KarlinBlkGappedLoadFromTables,
                              Blast_GumbelBlkLoadFromTables)
* effective_lengths(...)      length adjustment and effective search space
                              (BLAST_CalcEffLengths); only reported, since
                              E-values use Spouge's finite-size correction:
* spouge_evalue(...)          E-value of a raw score for a (query, subject)
                              pair, scaled by db_length / subject length
                              (BLAST_SpougeStoE, Blast_HSPListGetEvalues)
* bit_score(...)              (lambda S - ln K) / ln 2 with kbp_gap
* search_cutoffs(...)         every integer threshold of the search
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .._numba import numba
import numpy as np

from ..errors import OptionError
from .alphabet import ALPHABET_SIZE, NCBISTDAA, X, blast_query_codes

LN2 = 0.69314718055994530941723212145818  # NCBIMATH_LN2 (ncbi_math.h)


def c_int(x: float) -> int:
    """C's ``(int)x`` of a double as BLAST+ gets it on x86-64: truncation toward zero, and
    for a value no 32-bit int holds (infinity, NaN, |x| >= 2^31) the processor's "integer
    indefinite", INT_MIN.  BLAST+ meets such values with extreme option values (an
    -evalue of 1e-308 makes ln(db length / E) infinite; a -threshold of 1e308), and its
    rows then follow from INT_MIN: so do ours."""
    if not math.isfinite(x) or not -2147483648.0 <= x < 2147483648.0:
        return -2147483648
    return int(x)

# Defaults of blastp (blast_options.h)
UNGAPPED_X_DROPOFF_BITS = 7.0     # BLAST_UNGAPPED_X_DROPOFF_PROT
GAP_TRIGGER_BITS = 22.0           # BLAST_GAP_TRIGGER_PROT
GAP_X_DROPOFF_BITS = 15.0         # BLAST_GAP_X_DROPOFF_PROT
GAP_X_DROPOFF_FINAL_BITS = 25.0   # BLAST_GAP_X_DROPOFF_FINAL_PROT
EXPECT_VALUE = 10.0               # BLAST_EXPECT_VALUE
RESTRICTED_ALIGNMENT_WORST_EVALUE = 10.0  # blast_parameters.h

BLAST_SEQSRC_MINLENGTH = 10
"""What BlastSeqSrcGetMinSeqLen gives blastp for a BLAST database (blast_seqsrc.h).

BLAST's cutoff score is computed for the database's "shortest sequence"
(BLAST_GapAlignSetUp), but with a makeblastdb 2.12 database blastp behaves as
if it were BLAST_SEQSRC_MINLENGTH = 10 whatever the real shortest length
(checked with a database whose shortest sequence has 200 residues:
tests/blast/test_blast_stats.py).  With -subject, pass the subject's length.
"""


# ---------------------------------------------------------------------------
# Built-in statistical tables (blast_stat.c: blosum62_values ...)
# ---------------------------------------------------------------------------

# Per matrix, rows of (gap open, gap extend, Lambda, K, H, alpha, beta, C,
# alpha_v, sigma), exactly as in blast_stat.c (the decline-to-align column,
# always INT2_MAX, is left out).  Row 0 (32767, 32767) holds the ungapped
# values; BLAST_MATRIX_BEST marks the default gap costs (_BEST below).
_VALUES = {
    "BLOSUM45": (
        (32767, 32767, 0.2291, 0.0924, 0.2514, 0.9113, -5.7, 0.641318, 9.611060, 9.611060),
        (13, 3, 0.207, 0.049, 0.14, 1.5, -22, 0.671128, 35.855900, 35.963900),
        (12, 3, 0.199, 0.039, 0.11, 1.8, -34, 0.691530, 45.693600, 45.851700),
        (11, 3, 0.190, 0.031, 0.095, 2.0, -38, 0.691181, 62.874100, 63.103700),
        (10, 3, 0.179, 0.023, 0.075, 2.4, -51, 0.710529, 88.286800, 88.639100),
        (16, 2, 0.210, 0.051, 0.14, 1.5, -24, 0.666680, 36.279800, 36.452400),
        (15, 2, 0.203, 0.041, 0.12, 1.7, -31, 0.673871, 44.825700, 45.060400),
        (14, 2, 0.195, 0.032, 0.10, 1.9, -36, 0.685753, 60.736200, 61.102300),
        (13, 2, 0.185, 0.024, 0.084, 2.2, -45, 0.698480, 85.148100, 85.689400),
        (12, 2, 0.171, 0.016, 0.061, 2.8, -65, 0.713429, 127.758000, 128.582000),
        (19, 1, 0.205, 0.040, 0.11, 1.9, -43, 0.672302, 53.071400, 53.828200),
        (18, 1, 0.198, 0.032, 0.10, 2.0, -43, 0.682580, 72.342400, 73.403900),
        (17, 1, 0.189, 0.024, 0.079, 2.4, -57, 0.695035, 103.055000, 104.721000),
        (16, 1, 0.176, 0.016, 0.063, 2.8, -67, 0.712966, 170.100000, 173.003000),
    ),
    "BLOSUM50": (
        (32767, 32767, 0.2318, 0.112, 0.3362, 0.6895, -4.0, 0.609639, 5.388310, 5.388310),
        (13, 3, 0.212, 0.063, 0.19, 1.1, -16, 0.639287, 18.113800, 18.202800),
        (12, 3, 0.206, 0.055, 0.17, 1.2, -18, 0.644715, 22.654600, 22.777700),
        (11, 3, 0.197, 0.042, 0.14, 1.4, -25, 0.656327, 29.861100, 30.045700),
        (10, 3, 0.186, 0.031, 0.11, 1.7, -34, 0.671150, 42.393800, 42.674000),
        (9, 3, 0.172, 0.022, 0.082, 2.1, -48, 0.694326, 66.069600, 66.516400),
        (16, 2, 0.215, 0.066, 0.20, 1.05, -15, 0.633899, 17.951800, 18.092100),
        (15, 2, 0.210, 0.058, 0.17, 1.2, -20, 0.641985, 21.940100, 22.141800),
        (14, 2, 0.202, 0.045, 0.14, 1.4, -27, 0.650682, 28.681200, 28.961900),
        (13, 2, 0.193, 0.035, 0.12, 1.6, -32, 0.660984, 42.059500, 42.471600),
        (12, 2, 0.181, 0.025, 0.095, 1.9, -41, 0.678090, 63.747600, 64.397300),
        (19, 1, 0.212, 0.057, 0.18, 1.2, -21, 0.635714, 26.311200, 26.923300),
        (18, 1, 0.207, 0.050, 0.15, 1.4, -28, 0.643523, 34.903700, 35.734800),
        (17, 1, 0.198, 0.037, 0.12, 1.6, -33, 0.654504, 48.895800, 50.148600),
        (16, 1, 0.186, 0.025, 0.10, 1.9, -42, 0.667750, 76.469100, 78.443000),
        (15, 1, 0.171, 0.015, 0.063, 2.7, -76, 0.694575, 140.053000, 144.160000),
    ),
    "BLOSUM62": (
        (32767, 32767, 0.3176, 0.134, 0.4012, 0.7916, -3.2, 0.623757, 4.964660, 4.964660),
        (11, 2, 0.297, 0.082, 0.27, 1.1, -10, 0.641766, 12.673800, 12.757600),
        (10, 2, 0.291, 0.075, 0.23, 1.3, -15, 0.649362, 16.474000, 16.602600),
        (9, 2, 0.279, 0.058, 0.19, 1.5, -19, 0.659245, 22.751900, 22.950000),
        (8, 2, 0.264, 0.045, 0.15, 1.8, -26, 0.672692, 35.483800, 35.821300),
        (7, 2, 0.239, 0.027, 0.10, 2.5, -46, 0.702056, 61.238300, 61.886000),
        (6, 2, 0.201, 0.012, 0.061, 3.3, -58, 0.740802, 140.417000, 141.882000),
        (13, 1, 0.292, 0.071, 0.23, 1.2, -11, 0.647715, 19.506300, 19.893100),
        (12, 1, 0.283, 0.059, 0.19, 1.5, -19, 0.656391, 27.856200, 28.469900),
        (11, 1, 0.267, 0.041, 0.14, 1.9, -30, 0.669720, 42.602800, 43.636200),
        (10, 1, 0.243, 0.024, 0.10, 2.5, -44, 0.693267, 83.178700, 85.065600),
        (9, 1, 0.206, 0.010, 0.052, 4.0, -87, 0.731887, 210.333000, 214.842000),
    ),
    "BLOSUM80": (
        (32767, 32767, 0.3430, 0.177, 0.6568, 0.5222, -1.6, 0.564057, 1.918130, 1.918130),
        (25, 2, 0.342, 0.17, 0.66, 0.52, -1.6, 0.563956, 1.731000, 1.731300),
        (13, 2, 0.336, 0.15, 0.57, 0.59, -3, 0.570979, 2.673470, 2.692300),
        (9, 2, 0.319, 0.11, 0.42, 0.76, -6, 0.587837, 5.576090, 5.667860),
        (8, 2, 0.308, 0.090, 0.35, 0.89, -9, 0.597556, 7.536950, 7.686230),
        (7, 2, 0.293, 0.070, 0.27, 1.1, -14, 0.615254, 11.586600, 11.840400),
        (6, 2, 0.268, 0.045, 0.19, 1.4, -19, 0.644054, 19.958100, 20.441200),
        (11, 1, 0.314, 0.095, 0.35, 0.90, -9, 0.590702, 8.808610, 9.223320),
        (10, 1, 0.299, 0.071, 0.27, 1.1, -14, 0.609620, 13.833800, 14.533400),
        (9, 1, 0.279, 0.048, 0.20, 1.4, -19, 0.623800, 24.252000, 25.490400),
    ),
    "BLOSUM90": (
        (32767, 32767, 0.3346, 0.190, 0.7547, 0.4434, -1.4, 0.544178, 1.377760, 1.377760),
        (9, 2, 0.310, 0.12, 0.46, 0.67, -6, 0.570267, 4.232290, 4.334170),
        (8, 2, 0.300, 0.099, 0.39, 0.76, -7, 0.581580, 5.797020, 5.961420),
        (7, 2, 0.283, 0.072, 0.30, 0.93, -11, 0.600024, 9.040880, 9.321600),
        (6, 2, 0.259, 0.048, 0.22, 1.2, -16, 0.629344, 16.024400, 16.531600),
        (11, 1, 0.302, 0.093, 0.39, 0.78, -8, 0.576919, 7.143250, 7.619190),
        (10, 1, 0.290, 0.075, 0.28, 1.04, -15, 0.591366, 11.483900, 12.269800),
        (9, 1, 0.265, 0.044, 0.20, 1.3, -19, 0.613013, 21.408300, 22.840900),
    ),
    "PAM250": (
        (32767, 32767, 0.2252, 0.0868, 0.2223, 0.98, -5.0, 0.660059, 11.754300, 11.754300),
        (15, 3, 0.205, 0.049, 0.13, 1.6, -23, 0.687656, 34.578400, 34.928000),
        (14, 3, 0.200, 0.043, 0.12, 1.7, -26, 0.689768, 43.353000, 43.443800),
        (13, 3, 0.194, 0.036, 0.10, 1.9, -31, 0.697431, 50.948500, 51.081700),
        (12, 3, 0.186, 0.029, 0.085, 2.2, -41, 0.704565, 69.606500, 69.793600),
        (11, 3, 0.174, 0.020, 0.070, 2.5, -48, 0.722438, 98.653500, 98.927100),
        (17, 2, 0.204, 0.047, 0.12, 1.7, -28, 0.684799, 41.583800, 41.735800),
        (16, 2, 0.198, 0.038, 0.11, 1.8, -29, 0.691098, 51.635200, 51.843900),
        (15, 2, 0.191, 0.031, 0.087, 2.2, -44, 0.699051, 67.256700, 67.558500),
        (14, 2, 0.182, 0.024, 0.073, 2.5, -53, 0.714103, 96.315100, 96.756800),
        (13, 2, 0.171, 0.017, 0.059, 2.9, -64, 0.728738, 135.653000, 136.339000),
        (21, 1, 0.205, 0.045, 0.11, 1.8, -34, 0.683265, 48.728200, 49.218800),
        (20, 1, 0.199, 0.037, 0.10, 1.9, -35, 0.689380, 60.832000, 61.514100),
        (19, 1, 0.192, 0.029, 0.083, 2.3, -52, 0.696344, 84.019700, 84.985600),
        (18, 1, 0.183, 0.021, 0.070, 2.6, -60, 0.710525, 113.829000, 115.184000),
        (17, 1, 0.171, 0.014, 0.052, 3.3, -86, 0.727000, 175.071000, 177.196000),
    ),
    "PAM30": (
        (32767, 32767, 0.3400, 0.283, 1.754, 0.1938, -0.3, 0.436164, 0.161818, 0.161818),
        (7, 2, 0.305, 0.15, 0.87, 0.35, -3, 0.479087, 1.014010, 1.162730),
        (6, 2, 0.287, 0.11, 0.68, 0.42, -4, 0.499980, 1.688060, 1.951430),
        (5, 2, 0.264, 0.079, 0.45, 0.59, -7, 0.533009, 3.377010, 3.871950),
        (10, 1, 0.309, 0.15, 0.88, 0.35, -3, 0.474741, 1.372050, 1.788770),
        (9, 1, 0.294, 0.11, 0.61, 0.48, -6, 0.492716, 2.463920, 3.186150),
        (8, 1, 0.270, 0.072, 0.40, 0.68, -10, 0.521286, 5.368130, 6.763480),
    ),
    "PAM70": (
        (32767, 32767, 0.3345, 0.229, 1.029, 0.3250, -0.7, 0.511296, 0.633439, 0.633439),
        (8, 2, 0.301, 0.12, 0.54, 0.56, -5, 0.549019, 2.881650, 3.025710),
        (7, 2, 0.286, 0.093, 0.43, 0.67, -7, 0.565659, 4.534540, 4.785780),
        (6, 2, 0.264, 0.064, 0.29, 0.90, -12, 0.596330, 7.942630, 8.402720),
        (11, 1, 0.305, 0.12, 0.52, 0.59, -6, 0.543514, 3.681400, 4.108020),
        (10, 1, 0.291, 0.091, 0.41, 0.71, -9, 0.560723, 6.002970, 6.716570),
        (9, 1, 0.270, 0.060, 0.28, 0.97, -14, 0.585186, 11.360800, 12.636700),
    ),
}

# Index of the BLAST_MATRIX_BEST row of each table (blosum62_prefs ...).
_BEST = {"BLOSUM45": 7, "BLOSUM50": 9, "BLOSUM62": 9, "BLOSUM80": 8, "BLOSUM90": 6,
         "PAM250": 9, "PAM30": 5, "PAM70": 5}


def _table(matrix_name: str):
    try:
        return _VALUES[matrix_name.upper()]
    except KeyError:
        raise OptionError(f"{matrix_name} is not a supported matrix; supported matrices are: "
                          + ", ".join(_VALUES)) from None


def allowed_gap_costs(matrix_name: str) -> list[tuple[int, int]]:
    """The (open, extend) pairs BLAST has statistics for (BLAST_PrintAllowedValues).

    Leaves out the table's first row, (32767, 32767), BLAST's stand-in for
    "no gaps".
    """
    return [(int(r[0]), int(r[1])) for r in _table(matrix_name)[1:]]


def default_gap_costs(matrix_name: str) -> tuple[int, int]:
    """blastp's default (open, extend): BLAST_GetProteinGapExistenceExtendParams."""
    row = _table(matrix_name)[_BEST[matrix_name.upper()]]
    return int(row[0]), int(row[1])


# ---------------------------------------------------------------------------
# Parameter blocks
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class KarlinBlk:
    """Blast_KarlinBlk (blast_stat.h): Karlin-Altschul parameters."""

    Lambda: float
    K: float
    logK: float
    H: float


@dataclass(frozen=True)
class GumbelBlk:
    """Blast_GumbelBlk (blast_stat.h): what BLAST_SpougeStoE needs.

    ``db_length`` is the database length of the search (total residues, or
    -dbsize); 0 means "not a database search" (no scaling).
    """

    Lambda: float
    C: float
    G: float
    a: float
    Alpha: float
    Sigma: float
    a_un: float
    Alpha_un: float
    b: float
    Beta: float
    Tau: float
    db_length: int = 0
    filled: bool = True


@dataclass(frozen=True)
class GappedParams:
    """The gapped statistics of one matrix and gap costs.

    kbp      kbp_gap (Blast_KarlinBlkGappedLoadFromTables)
    gbp      the Gumbel block (Blast_GumbelBlkLoadFromTables), db_length 0
    alpha, beta   BLAST_GetAlphaBeta, for the length adjustment
    """

    matrix: str
    gap_open: int
    gap_extend: int
    kbp: KarlinBlk
    gbp: GumbelBlk
    alpha: float
    beta: float

    @property
    def alpha_d_lambda(self) -> float:
        """alpha / Lambda as BLAST_CalcEffLengths passes it."""
        return self.alpha / self.kbp.Lambda


def gapped_params(matrix_name: str, gap_open: int, gap_extend: int) -> GappedParams:
    """Gapped Karlin block, Gumbel block, alpha and beta from the built-in tables.

    Mirrors Blast_KarlinBlkGappedLoadFromTables, Blast_GumbelBlkLoadFromTables
    and BLAST_GetAlphaBeta (blast_stat.c).  Raises OptionError for an unknown
    matrix or gap costs without statistics (BLAST's "Gap existence and
    extension values of ... not supported" error).
    """
    rows = _table(matrix_name)
    name = matrix_name.upper()
    for row in rows:
        if int(row[0]) == gap_open and int(row[1]) == gap_extend:
            break
    else:
        allowed = ", ".join(f"{o}/{e}" for o, e in allowed_gap_costs(name))
        raise OptionError(f"gap existence and extension values of {gap_open} and {gap_extend} "
                          f"are not supported for {name}; supported values are: {allowed}")
    _, _, lam, k, h, alpha, beta, c, alpha_v, sigma = row
    kbp = KarlinBlk(Lambda=lam, K=k, logK=math.log(k), H=h)
    g = float(gap_open + gap_extend)
    a_un, alpha_un = rows[0][5], rows[0][8]
    gbp = GumbelBlk(Lambda=lam, C=c, G=g, a=alpha, Alpha=alpha_v, Sigma=sigma,
                    a_un=a_un, Alpha_un=alpha_un,
                    b=2.0 * g * (a_un - alpha),
                    Beta=2.0 * g * (alpha_un - alpha_v),
                    Tau=2.0 * g * (alpha_un - sigma))
    return GappedParams(name, gap_open, gap_extend, kbp, gbp, alpha, beta)


# ---------------------------------------------------------------------------
# Ungapped (query-specific) Karlin-Altschul parameters
# ---------------------------------------------------------------------------

# Robinson & Robinson amino-acid background frequencies (Robinson_prob in
# blast_stat.c, STD_AMINO_ACID_FREQS), in the table's order.
ROBINSON_PROB = (("A", 78.05), ("C", 19.25), ("D", 53.64), ("E", 62.95), ("F", 38.56),
                 ("G", 73.77), ("H", 21.99), ("I", 51.42), ("K", 57.44), ("L", 90.19),
                 ("M", 22.43), ("N", 44.87), ("P", 52.03), ("Q", 42.64), ("R", 51.29),
                 ("S", 71.20), ("T", 58.41), ("V", 64.41), ("W", 13.30), ("Y", 32.16))


def std_residue_frequencies() -> list[float]:
    """Background residue probabilities by NCBIstdaa code: Blast_ResFreqStdComp.

    Robinson & Robinson's percentages, normalized to sum 1 the way
    Blast_ResFreqNormalize does it (sum in code order, then divide).
    """
    prob = [0.0] * ALPHABET_SIZE
    for letter, p in ROBINSON_PROB:
        prob[NCBISTDAA.index(letter)] = p
    total = 0.0
    for p in prob:
        total += p
    return [p / total * 1.0 for p in prob]


def query_residue_frequencies(query_codes) -> list[float]:
    """Residue probabilities of a query by NCBIstdaa code: Blast_ResFreqString.

    Counts every code (BlastResCompStr) except X, BLAST's one ambiguous protein
    residue (BLAST_ScoreSetAmbigRes(sbp, 'X') in Blast_ScoreBlkMatrixInit),
    then divides by the total (Blast_ResFreqResComp).
    """
    counts = np.bincount(np.asarray(query_codes, dtype=np.int64), minlength=ALPHABET_SIZE)
    counts = [int(c) for c in counts[:ALPHABET_SIZE]]
    counts[X] = 0
    total = 0.0
    for c in counts:
        total += c
    if total == 0.0:
        return [0.0] * ALPHABET_SIZE
    return [c / total for c in counts]


@dataclass
class ScoreFreq:
    """Blast_ScoreFreq: probability of each score from score_min to score_max.

    ``sprob[s - score_min]`` is the probability of score s.
    """

    score_min: int
    score_max: int
    obs_min: int
    obs_max: int
    sprob: list[float]
    score_avg: float

    def p(self, score: int) -> float:
        return self.sprob[score - self.score_min]


def score_frequencies(scores: np.ndarray, p1, p2) -> ScoreFreq:
    """Score distribution of a matrix under residue probabilities p1 x p2: BlastScoreFreqCalc.

    The range is [loscore, hiscore] of the matrix (Blast_ScoreFreqNew with
    sbp->loscore, sbp->hiscore); entries below loscore (the gap sentinel's
    BLAST_SCORE_MIN) are skipped.
    """
    valid = scores[(scores > -32768) & (scores < 32767)]
    lo, hi = int(valid.min()), int(valid.max())
    sprob = [0.0] * (hi - lo + 1)
    rows = scores.tolist()
    for i in range(ALPHABET_SIZE):
        row = rows[i]
        for j in range(ALPHABET_SIZE):
            s = row[j]
            if s >= lo:
                sprob[s - lo] += p1[i] * p2[j]
    score_sum = 0.0
    obs_min = obs_max = -32768
    for s in range(lo, hi + 1):
        if sprob[s - lo] > 0.0:
            score_sum += sprob[s - lo]
            obs_max = s
            if obs_min == -32768:
                obs_min = s
    score_avg = 0.0
    if score_sum > 0.0001 or score_sum < -0.0001:
        for s in range(obs_min, obs_max + 1):
            sprob[s - lo] /= score_sum
            score_avg += s * sprob[s - lo]
    return ScoreFreq(lo, hi, obs_min, obs_max, sprob, score_avg)


def _score_chk(lo: int, hi: int) -> bool:
    """BlastScoreChk: True when the score range is usable."""
    return not (lo >= 0 or hi <= 0 or lo < -32768 or hi > 32767 or hi - lo > 65535)


def karlin_lambda_nr(sfp: ScoreFreq, lambda0: float = 0.5) -> float:
    """Lambda of a score distribution: Blast_KarlinLambdaNR -> NlmKarlinLambdaNR (blast_stat.c).

    Safeguarded Newton iteration on x = exp(-lambda) (``lambda_nr``); -1 on failure.
    """
    low, high = sfp.obs_min, sfp.obs_max
    if sfp.score_avg >= 0.0 or not _score_chk(low, high):
        return -1.0
    probs = np.array([sfp.p(s) for s in range(low, high + 1)], dtype=np.float64)
    return float(lambda_nr(probs, low, high, lambda0))


@numba.njit(cache=True, nogil=True)
def lambda_nr(probs, low: int, high: int, lambda0: float) -> float:
    """NlmKarlinLambdaNR's iteration, for score probabilities ``probs[s - low]`` whose mean is
    negative (low < 0 < high): the scores' greatest common divisor d, then safeguarded Newton
    steps on x = exp(-lambda d) from exp(-lambda0); lambda = -ln(x) / d."""
    d = -low
    i = 1
    while i <= high - low and d > 1:
        if probs[i] != 0.0:
            a, b = d, i
            while b:
                a, b = b, a % b
            d = a
        i += 1
    tolx, itmax, max_newton = 1.0e-5, 20, 20 + 17
    x0 = math.exp(-lambda0)
    x = x0 if 0 < x0 < 1 else 0.5
    a, b = 0.0, 1.0
    f = 4.0
    is_newton = False
    for k in range(itmax):
        fold = f
        was_newton = is_newton
        is_newton = False
        # f(x) = sum_s p(s) x^(high - s) - x^high by Horner's rule, g = f'(x)
        g = 0.0
        f = probs[0]
        i = low + d
        while i < 0:
            g = x * g + f
            f = f * x + probs[i - low]
            i += d
        g = x * g + f
        f = f * x + probs[-low] - 1
        i = d
        while i <= high:
            g = x * g + f
            f = f * x + probs[i - low]
            i += d
        if f > 0:
            a = x
        elif f < 0:
            b = x
        else:
            break
        if b - a < 2 * a * (1 - b) * tolx:
            x = (a + b) / 2
            break
        if k >= max_newton or (was_newton and abs(f) > .9 * abs(fold)) or g >= 0:
            x = (a + b) / 2
        else:
            step = -f / g
            y = x + step
            if y <= a or y >= b:
                x = (a + b) / 2
            else:
                is_newton = True
                x = y
                if abs(step) < tolx * x * (1 - x):
                    break
    return -math.log(x) / d


def blast_powi(x: float, n: int) -> float:
    """BLAST_Powi (ncbi_math.c): x**n by repeated squaring."""
    if n == 0:
        return 1.0
    if x == 0.0:
        return math.inf if n < 0 else 0.0
    if n < 0:
        x, n = 1.0 / x, -n
    y = 1.0
    while n > 0:
        if n & 1:
            y *= x
        n //= 2
        x *= x
    return y


def blast_expm1(x: float) -> float:
    """BLAST_Expm1 (ncbi_math.c)."""
    absx = abs(x)
    if absx > .33:
        return math.exp(x) - 1.
    if absx < 1.e-16:
        return x
    return x * (1. + x * (1. / 2. + x * (1. / 6. + x * (1. / 24. + x * (1. / 120. + x * (
        1. / 720. + x * (1. / 5040. + x * (1. / 40320. + x * (1. / 362880. + x * (
            1. / 3628800. + x * (1. / 39916800. + x * (1. / 479001600. + x / 6227020800.))))))))))))


def karlin_l_to_h(sfp: ScoreFreq, lam: float) -> float:
    """Relative entropy H: BlastKarlinLtoH (blast_stat.c); -1 on failure."""
    low, high = sfp.obs_min, sfp.obs_max
    if lam < 0. or not _score_chk(low, high):
        return -1.
    etonlam = math.exp(-lam)
    total = low * sfp.p(low)
    for s in range(low + 1, high + 1):
        total = s * sfp.p(s) + etonlam * total
    scale = blast_powi(etonlam, high)
    if scale > 0.0:
        return lam * total / scale
    return lam * math.exp(lam * high + math.log(total))


@numba.njit(cache=True, nogil=True)
def _k_outer_sum(P, base, low, high, exp_minus_lambda):
    """The dynamic program of BlastKarlinLHtoK: sum over alignment lengths j of innerSum_j / j.

    P[base + k] is the probability of score low + k.  Same loops, same order of
    operations as the C code (compiled with numba: no fast-math).
    """
    rng = high - low
    sumlimit = 0.0001
    iterlimit = 100
    A = np.zeros(iterlimit * rng + 1)
    outer = 0.0
    low_as = 0
    high_as = 0
    A[0] = 1.0
    inner = 1.0
    it = 0
    while it < iterlimit and inner > sumlimit:
        first = rng
        last = rng
        low_as += low
        high_as += high
        ptr = high_as - low_as
        while ptr >= 0:
            p1 = ptr - first
            p1e = ptr - last
            p2 = base + first
            inner = 0.0
            while p1 >= p1e:
                inner += A[p1] * P[p2]
                p1 -= 1
                p2 += 1
            if first:
                first -= 1
            if ptr <= rng:
                last -= 1
            A[ptr] = inner
            ptr -= 1
        # Horner's rule
        ptr = 0
        inner = A[ptr]
        i = low_as + 1
        while i < 0:
            ptr += 1
            inner = A[ptr] + inner * exp_minus_lambda
            i += 1
        inner *= exp_minus_lambda
        while i <= high_as:
            ptr += 1
            inner += A[ptr]
            i += 1
        it += 1
        inner /= it
        outer += inner
    return outer


def karlin_lh_to_k(sfp: ScoreFreq, lam: float, H: float) -> float:
    """K from lambda and H: BlastKarlinLHtoK (blast_stat.c); -1 on failure.

    Sums the probabilities of alignment scores of growing length by dynamic
    programming, exactly in BLAST's order.
    """
    if lam <= 0. or H <= 0. or sfp.score_avg >= 0.0:
        return -1.
    low, high = sfp.obs_min, sfp.obs_max
    rng = high - low
    base = low - sfp.score_min          # probArrayStartLow = &sprob[low]
    P = sfp.sprob
    divisor = -low
    i = 1
    while i <= rng and divisor > 1:
        if P[base + i] != 0.0:
            divisor = math.gcd(divisor, i)
        i += 1
    high //= divisor
    low //= divisor
    lam *= divisor
    rng = high - low
    first_term = H / lam
    exp_minus_lambda = math.exp(-lam)
    if low == -1 and high == 1:
        pl, ph = sfp.p(low * divisor), sfp.p(high * divisor)
        return (pl - ph) * (pl - ph) / pl
    if low == -1 or high == 1:
        if high != 1:
            score_avg = sfp.score_avg / divisor
            first_term = (score_avg * score_avg) / first_term
        return first_term * (1.0 - exp_minus_lambda)

    outer = _k_outer_sum(np.asarray(P, dtype=np.float64), base, low, high, exp_minus_lambda)
    return -math.exp(-2.0 * outer) / (first_term * blast_expm1(-lam))


def karlin_blk_ungapped(sfp: ScoreFreq) -> KarlinBlk | None:
    """Lambda, H, K of a score distribution: Blast_KarlinBlkUngappedCalc; None on failure."""
    lam = karlin_lambda_nr(sfp, 0.5)
    if lam < 0.:
        return None
    h = karlin_l_to_h(sfp, lam)
    if h < 0.:
        return None
    k = karlin_lh_to_k(sfp, lam, h)
    if k < 0.:
        return None
    return KarlinBlk(Lambda=lam, K=k, logK=math.log(k), H=h)


def ungapped_params(query_codes, matrix) -> KarlinBlk | None:
    """The query's ungapped Karlin block (kbp_std): Blast_ScoreBlkKbpUngappedCalc.

    Query composition (X not counted; O first turned into X, see
    alphabet.blast_query_codes) against Robinson & Robinson background
    frequencies.  None when BLAST cannot compute it (e.g. a query of only X);
    BLAST then marks the query invalid ("Could not calculate ungapped
    Karlin-Altschul parameters due to an invalid query sequence ...").
    """
    codes = blast_query_codes(query_codes)
    sfp = score_frequencies(matrix.scores, query_residue_frequencies(codes),
                            std_residue_frequencies())
    return karlin_blk_ungapped(sfp)


def ideal_params(matrix) -> KarlinBlk:
    """The ideal ungapped Karlin block (kbp_ideal): Blast_ScoreBlkKbpIdealCalc.

    Background frequencies on both sides (BLOSUM62: lambda 0.3176, K 0.134).
    """
    std = std_residue_frequencies()
    return karlin_blk_ungapped(score_frequencies(matrix.scores, std, std))


# ---------------------------------------------------------------------------
# Effective lengths
# ---------------------------------------------------------------------------

def length_adjustment(K: float, logK: float, alpha_d_lambda: float, beta: float,
                      query_length: int, db_length: int, db_num_seqs: int) -> tuple[int, bool]:
    """BLAST_ComputeLengthAdjustment (blast_stat.c): (length adjustment, converged).

    The integer below the fixed point of
    ell = beta + (alpha/lambda) (ln K + ln((m - ell)(n - N ell))).
    """
    max_iterations = 20
    m, n, N = float(query_length), float(db_length), float(db_num_seqs)
    ell_min, ell_next = 0.0, 0.0
    converged = False
    a = N
    mb = m * N + n
    c = n * m - max(m, n) / K
    if c < 0:
        return 0, False
    ell_max = 2 * c / (mb + math.sqrt(mb * mb - 4 * a * c))
    for i in range(1, max_iterations + 1):
        ell = ell_next
        ss = (m - ell) * (n - N * ell)
        ell_bar = alpha_d_lambda * (logK + math.log(ss)) + beta
        if ell_bar >= ell:
            ell_min = ell
            if ell_bar - ell_min <= 1.0:
                converged = True
                break
            if ell_min == ell_max:
                break
        else:
            ell_max = ell
        if ell_min <= ell_bar <= ell_max:
            ell_next = ell_bar
        else:
            ell_next = ell_max if i == 1 else (ell_min + ell_max) / 2
    if converged:
        adjustment = int(ell_min)
        ell = math.ceil(ell_min)
        if ell <= ell_max:
            ss = (m - ell) * (n - N * ell)
            if alpha_d_lambda * (logK + math.log(ss)) + beta >= ell:
                adjustment = int(ell)
        return adjustment, True
    return int(ell_min), False


@dataclass(frozen=True)
class EffectiveLengths:
    """query_info->contexts[i].length_adjustment / eff_searchsp of BLAST_CalcEffLengths."""

    length_adjustment: int
    converged: bool
    eff_searchsp: int


def effective_lengths(query_length: int, db_length: int, db_num_seqs: int,
                      gapped: GappedParams, dbsize: int | None = None,
                      searchsp: int | None = None) -> EffectiveLengths:
    """Length adjustment and effective search space of one query: BLAST_CalcEffLengths (blast_setup.c).

    db_length/db_num_seqs are the database's residues and sequences; ``dbsize``
    (blastp -dbsize) replaces the residue count, not the sequence count;
    ``searchsp`` (-searchsp) replaces the search space.  Uses kbp_gap_std and
    BLAST_GetAlphaBeta's alpha and beta.  With Spouge statistics blastp uses
    this only for the report ("Effective search space used").
    """
    if dbsize:
        db_length = dbsize
    kbp = gapped.kbp
    adj, converged = length_adjustment(kbp.K, kbp.logK, gapped.alpha_d_lambda, gapped.beta,
                                       query_length, db_length, db_num_seqs)
    if searchsp:
        space = searchsp
    else:
        eff_db = db_length - db_num_seqs * adj
        if eff_db <= 0:
            eff_db = 1
        space = eff_db * (query_length - adj)
    return EffectiveLengths(adj, converged, space)


# ---------------------------------------------------------------------------
# BLAST's error function (boost_erf.c)
# ---------------------------------------------------------------------------

_LD = np.longdouble   # C long double (x87 80-bit on x86-64 Linux), for expl()


def _times_expl_over_z(result: float, z: float) -> float:
    """``result *= expl(-z * z) / z`` as boost_erf.c computes it: in long double, then rounded."""
    return float(_LD(result) * (np.exp(_LD(-z * z)) / _LD(z)))


def _erf_impl(z: float, invert: bool) -> float:
    """ErfImpl (boost_erf.c): BLAST's port of Boost's 53-bit erf/erfc, kept bit for bit.

    Note the port's first erfc branch ignores the last Q coefficient; its
    erfc is therefore not the C library's (up to 1e-7 relative apart).
    """
    if z < 0:
        if not invert:
            return -_erf_impl(-z, invert)
        if z < -0.5:
            return 2.0 - _erf_impl(-z, invert)
        return 1 + _erf_impl(-z, False)
    if z < 0.5:
        if z < 1e-10:
            if z == 0:
                result = 0.0
            else:
                c = 0.003379167095512573896158903121545171688
                result = z * 1.125 + z * c
        else:
            Y = 1.044948577880859375
            P = (0.0834305892146531832907, -0.338165134459360935041, -0.0509990735146777432841,
                 -0.00772758345802133288487, -0.000322780120964605683831)
            Q = (1.0, 0.455004033050794024546, 0.0875222600142252549554,
                 0.00858571925074406212772, 0.000370900071787748000569)
            zz = z * z
            p = (((P[4] * zz + P[3]) * zz + P[2]) * zz + P[1]) * zz + P[0]
            q = (((Q[4] * zz + Q[3]) * zz + Q[2]) * zz + Q[1]) * zz + Q[0]
            result = z * (Y + p / q)
    elif (z < 28.0) if invert else (z < 5.8):
        invert = not invert
        if z < 1.5:
            Y = 0.405935764312744140625
            P = (-0.098090592216281240205, 0.178114665841120341155, 0.191003695796775433986,
                 0.0888900368967884466578, 0.0195049001251218801359, 0.00180424538297014223957)
            Q = (1.0, 1.84759070983002217845, 1.42628004845511324508, 0.578052804889902404909,
                 0.12385097467900864233, 0.0113385233577001411017, 0.337511472483094676155e-5)
            x = z - 0.5
            p = ((((P[5] * x + P[4]) * x + P[3]) * x + P[2]) * x + P[1]) * x + P[0]
            q = ((((Q[5] * x + Q[4]) * x + Q[3]) * x + Q[2]) * x + Q[1]) * x + Q[0]
        elif z < 2.5:
            Y = 0.50672817230224609375
            P = (-0.0243500476207698441272, 0.0386540375035707201728, 0.04394818964209516296,
                 0.0175679436311802092299, 0.00323962406290842133584, 0.000235839115596880717416)
            Q = (1.0, 1.53991494948552447182, 0.982403709157920235114, 0.325732924782444448493,
                 0.0563921837420478160373, 0.00410369723978904575884)
            x = z - 1.5
            p = ((((P[5] * x + P[4]) * x + P[3]) * x + P[2]) * x + P[1]) * x + P[0]
            q = ((((Q[5] * x + Q[4]) * x + Q[3]) * x + Q[2]) * x + Q[1]) * x + Q[0]
        elif z < 4.5:
            Y = 0.5405750274658203125
            P = (0.00295276716530971662634, 0.0137384425896355332126, 0.00840807615555585383007,
                 0.00212825620914618649141, 0.000250269961544794627958, 0.113212406648847561139e-4)
            Q = (1.0, 1.04217814166938418171, 0.442597659481563127003, 0.0958492726301061423444,
                 0.0105982906484876531489, 0.000479411269521714493907)
            x = z - 3.5
            p = ((((P[5] * x + P[4]) * x + P[3]) * x + P[2]) * x + P[1]) * x + P[0]
            q = ((((Q[5] * x + Q[4]) * x + Q[3]) * x + Q[2]) * x + Q[1]) * x + Q[0]
        else:
            Y = 0.5579090118408203125
            P = (0.00628057170626964891937, 0.0175389834052493308818, -0.212652252872804219852,
                 -0.687717681153649930619, -2.5518551727311523996, -3.22729451764143718517,
                 -2.8175401114513378771)
            Q = (1.0, 2.79257750980575282228, 11.0567237927800161565, 15.930646027911794143,
                 22.9367376522880577224, 13.5064170191802889145, 5.48409182238641741584)
            x = 1.0 / z
            p = (((((P[6] * x + P[5]) * x + P[4]) * x + P[3]) * x + P[2]) * x + P[1]) * x + P[0]
            q = (((((Q[6] * x + Q[5]) * x + Q[4]) * x + Q[3]) * x + Q[2]) * x + Q[1]) * x + Q[0]
        result = _times_expl_over_z(Y + p / q, z)
    else:
        result = 0.0
        invert = not invert
    if invert:
        result = 1 - result
    return result


def blast_erfc(z: float) -> float:
    """ErfC (boost_erf.c), the complementary error function BLAST_SpougeStoE uses."""
    return _erf_impl(float(z), True)


def blast_erf(z: float) -> float:
    """Erf (boost_erf.c)."""
    return _erf_impl(float(z), False)


# ---------------------------------------------------------------------------
# E-values and bit scores
# ---------------------------------------------------------------------------

_INV_SQRT_2PI = 0.39894228040143267793994605993438


def spouge_evalue(score: int, kbp: KarlinBlk, gbp: GumbelBlk, query_len: int,
                  subject_len: int, db_length: int | None = None) -> float:
    """E-value of a raw score with Spouge's finite-size correction: BLAST_SpougeStoE (blast_stat.c).

    ``query_len`` and ``subject_len`` are the real (not effective) lengths of
    the pair; the pairwise E-value is scaled by db_length / subject_len, where
    db_length is the search's database length (total residues, or -dbsize),
    defaulting to ``gbp.db_length`` (0: no scaling).  This is what
    Blast_HSPListGetEvalues computes for every blastp HSP.

    The normal tail is BLAST+ 2.12's ``ErfC(-m_F / sqrt(2.0)) / 2.0`` (older
    toolkits had ``0.5 + 0.5 * NCBI_Erf(m_F)``, which does not reproduce
    2.12's E-values), with BLAST's own ErfC (blast_erfc).
    """
    if db_length is None:
        db_length = gbp.db_length
    scale_factor = kbp.Lambda / gbp.Lambda
    db_scale_factor = float(db_length) / float(subject_len) if db_length else 1.0
    lambda_ = kbp.Lambda
    k_ = kbp.K
    ai_hat = gbp.a * scale_factor
    bi_hat = gbp.b
    alphai_hat = gbp.Alpha * scale_factor
    betai_hat = gbp.Beta
    sigma_hat = gbp.Sigma * scale_factor
    tau_hat = gbp.Tau
    aj_hat, bj_hat, alphaj_hat, betaj_hat = ai_hat, bi_hat, alphai_hat, betai_hat
    y = score

    m_li_y = query_len - (ai_hat * y + bi_hat)
    vi_y = max(2.0 * alphai_hat / lambda_, alphai_hat * y + betai_hat)
    sqrt_vi_y = math.sqrt(vi_y)
    m_F = m_li_y / sqrt_vi_y
    P_m_F = blast_erfc(-m_F / math.sqrt(2.0)) / 2.0
    p1 = m_li_y * P_m_F + sqrt_vi_y * _INV_SQRT_2PI * math.exp(-0.5 * m_F * m_F)

    n_lj_y = subject_len - (aj_hat * y + bj_hat)
    vj_y = max(2.0 * alphaj_hat / lambda_, alphaj_hat * y + betaj_hat)
    sqrt_vj_y = math.sqrt(vj_y)
    n_F = n_lj_y / sqrt_vj_y
    P_n_F = blast_erfc(-n_F / math.sqrt(2.0)) / 2.0
    p2 = n_lj_y * P_n_F + sqrt_vj_y * _INV_SQRT_2PI * math.exp(-0.5 * n_F * n_F)

    c_y = max(2.0 * sigma_hat / lambda_, sigma_hat * y + tau_hat)
    area = p1 * p2 + c_y * P_m_F * P_n_F
    return area * k_ * math.exp(-lambda_ * y) * db_scale_factor


def spouge_score(evalue: float, kbp: KarlinBlk, gbp: GumbelBlk, query_len: int,
                 subject_len: int, db_length: int | None = None) -> int:
    """Score for an E-value: BLAST_SpougeEtoS (blast_stat.c).

    Bisection on spouge_evalue; returns the largest score whose E-value is
    still above ``evalue`` (as BLAST does), starting from
    max((int)(ln(db_length / evalue) / lambda), 2).
    """
    if db_length is None:
        db_length = gbp.db_length
    db_scale = float(db_length) if db_length else 1.0

    def e_of(s: int) -> float:
        return spouge_evalue(s, kbp, gbp, query_len, subject_len, db_length)

    b = max(c_int(math.log(db_scale / evalue) / kbp.Lambda), 2)
    e = e_of(b)
    if e > evalue:
        while e > evalue:
            a = b
            b *= 2
            e = e_of(b)
    else:
        a = 0
    while b - a > 1:
        c = (a + b) // 2
        e = e_of(c)
        if e > evalue:
            a = c
        else:
            b = c
    return a


def karlin_evalue(score: int, kbp: KarlinBlk, searchsp: int) -> float:
    """Plain Karlin-Altschul E-value: BLAST_KarlinStoE_simple (not blastp's; for comparison)."""
    return float(searchsp) * math.exp(-kbp.Lambda * score + kbp.logK)


def bit_score(raw: int, kbp: KarlinBlk) -> float:
    """Bit score of a raw score: Blast_HSPListGetBitScores (blast_hits.c), (lambda S - ln K) / ln 2."""
    return (raw * kbp.Lambda - kbp.logK) / LN2


# ---------------------------------------------------------------------------
# Cutoffs and X-drops
# ---------------------------------------------------------------------------

def ungapped_x_dropoff(kbp_ungapped: KarlinBlk, bits: float = UNGAPPED_X_DROPOFF_BITS) -> int:
    """Ungapped X-drop in raw score: BlastInitialWordParametersNew, ceil(bits ln2 / lambda_u)."""
    return int(1.0 * math.ceil(bits * LN2 / kbp_ungapped.Lambda))


def gap_trigger(kbp_ungapped: KarlinBlk, bits: float = GAP_TRIGGER_BITS) -> int:
    """Raw score an ungapped HSP needs to be extended with gaps: BlastInitialWordParametersUpdate.

    (Int4)((bits ln2 + ln K_u) / lambda_u), with the query's ungapped block.
    """
    return int((bits * LN2 + kbp_ungapped.logK) / kbp_ungapped.Lambda)


def gapped_x_dropoffs(kbp_gapped: KarlinBlk, bits: float = GAP_X_DROPOFF_BITS,
                      final_bits: float = GAP_X_DROPOFF_FINAL_BITS) -> tuple[int, int]:
    """(gap_x_dropoff, gap_x_dropoff_final): BlastExtensionParametersNew (blast_parameters.c).

    (Int4)(bits ln2 / lambda_g), and (Int4)MAX(final_bits ln2 / lambda_g, gap_x_dropoff).
    """
    x = int(bits * LN2 / kbp_gapped.Lambda)
    final = int(max(final_bits * LN2 / kbp_gapped.Lambda, x))
    return x, final


def prelim_evalue(evalue: float = EXPECT_VALUE, comp_based_stats: int = 0) -> float:
    """E-value of the preliminary search: BlastHitSavingParametersUpdate.

    Five times -evalue when composition-based statistics 2 or 3 is on.
    """
    return (5 if comp_based_stats > 1 else 1) * evalue


def hit_cutoff_score(gapped: GappedParams, query_len: int, min_subject_len: int,
                     db_length: int, evalue: float = EXPECT_VALUE,
                     comp_based_stats: int = 0) -> int:
    """Gapped cutoff score of a query (hit_params->cutoffs[ctx].cutoff_score and _max).

    BlastHitSavingParametersUpdate with Spouge statistics:
    BLAST_SpougeEtoS(prelim_evalue, kbp_gap, gbp, query length, min_subject_len)
    with gbp->db_length = db_length (total residues, or -dbsize).  The
    subject length BLAST passes is BlastSeqSrcGetMinSeqLen (BLAST_GapAlignSetUp
    in blast_setup.c); for a BLAST database pass BLAST_SEQSRC_MINLENGTH (10),
    not the shortest sequence; for one subject (-subject) its length.
    """
    return spouge_score(prelim_evalue(evalue, comp_based_stats), gapped.kbp, gapped.gbp,
                        query_len, min_subject_len, db_length)


@dataclass(frozen=True)
class SearchCutoffs:
    """Every integer threshold blastp derives for one query (scale factor 1).

    x_drop_ungapped   ungapped X-drop (7 bits, query's lambda_u), rounded up
    gap_trigger       ungapped score that triggers a gapped extension (22 bits)
    ungapped_cutoff   word_params->cutoffs[ctx].cutoff_score = MIN(gap_trigger,
                      cutoff_score_max): ungapped HSPs below it are dropped
    cutoff_score      hit_params->cutoffs[ctx].cutoff_score (Spouge, from -evalue)
    x_drop_gapped     preliminary gapped X-drop (15 bits, gapped lambda)
    x_drop_final      traceback X-drop (25 bits, at least x_drop_gapped)
    prelim_evalue     E-value threshold of the preliminary stage
    """

    x_drop_ungapped: int
    gap_trigger: int
    ungapped_cutoff: int
    cutoff_score: int
    x_drop_gapped: int
    x_drop_final: int
    prelim_evalue: float


def search_cutoffs(kbp_ungapped: KarlinBlk, gapped: GappedParams, query_len: int,
                   min_subject_len: int, db_length: int, evalue: float = EXPECT_VALUE,
                   comp_based_stats: int = 0,
                   xdrop_ungap: float = UNGAPPED_X_DROPOFF_BITS,
                   gap_trigger_bits: float = GAP_TRIGGER_BITS,
                   xdrop_gap: float = GAP_X_DROPOFF_BITS,
                   xdrop_gap_final: float = GAP_X_DROPOFF_FINAL_BITS) -> SearchCutoffs:
    """All cutoffs of one query, as BLAST_GapAlignSetUp + BlastInitialWordParametersNew compute them.

    kbp_ungapped is the query's ungapped_params(); min_subject_len as in
    hit_cutoff_score (BLAST_SEQSRC_MINLENGTH for a database); db_length the
    database length used for statistics (total residues or -dbsize); the *_bits
    arguments are blastp's -xdrop_ungap, (gap trigger), -xdrop_gap and
    -xdrop_gap_final.
    """
    cutoff = hit_cutoff_score(gapped, query_len, min_subject_len, db_length, evalue,
                              comp_based_stats)
    trigger = gap_trigger(kbp_ungapped, gap_trigger_bits)
    x_gap, x_final = gapped_x_dropoffs(gapped.kbp, xdrop_gap, xdrop_gap_final)
    return SearchCutoffs(
        x_drop_ungapped=ungapped_x_dropoff(kbp_ungapped, xdrop_ungap),
        gap_trigger=trigger,
        ungapped_cutoff=min(trigger, cutoff),
        cutoff_score=cutoff,
        x_drop_gapped=x_gap,
        x_drop_final=x_final,
        prelim_evalue=prelim_evalue(evalue, comp_based_stats),
    )


# ---------------------------------------------------------------------------
# BLAST+'s tabular number formats
# ---------------------------------------------------------------------------

def score_string_evalue(e: float) -> str:
    """E-value text of CAlignFormatUtil::GetScoreString (align_format_util.cpp): the pairwise
    report's descriptions and score lines."""
    if e < 1.0e-180:
        return "0.0"
    if e < 1.0e-99:
        return "%2.0e" % e
    if e < 0.0009:
        return "%3.0e" % e
    if e < 0.1:
        return "%4.3f" % e
    if e < 1.0:
        return "%3.2f" % e
    if e < 10.0:
        return "%2.1f" % e
    return "%2.0f" % e


def format_evalue(e: float) -> str:
    """E-value text of -outfmt 6/7: CBlastTabularInfo::SetScores (tabular.cpp).

    CAlignFormatUtil::GetScoreString's formats, with tabular's override of
    [1e-180, 0.0009) by NStr::DoubleToString(evalue, 2, fDoubleScientific).
    """
    if 1.0e-180 <= e < 0.0009:
        return "%.2e" % e
    return score_string_evalue(e)


def format_bitscore(b: float) -> str:
    """Bit-score text of -outfmt 6/7: CAlignFormatUtil::GetScoreString (align_format_util.cpp).

    Above 99.9 the integer part, truncated ("%3.0ld" of (long)bit_score).
    """
    if b > 99999:
        return "%5.3e" % b
    if b > 99.9:
        return "%3d" % int(b)
    return "%4.1f" % b


def format_percent(count: int, length: int, decimals: int = 3) -> str:
    """pident (3 decimals) / ppos (2 decimals): CBlastTabularInfo::x_PrintPercentIdentical.

    NStr::DoubleToString(((double)count)/length * 100, decimals), 0 for length 0.
    """
    value = (float(count) / length * 100) if length > 0 else 0.0
    return "%.*f" % (decimals, value)


def format_pident(nident: int, length: int) -> str:
    """pident column: format_percent with 3 decimals."""
    return format_percent(nident, length, 3)
