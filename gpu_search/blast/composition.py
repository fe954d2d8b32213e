"""Compositional score-matrix adjustment of blastp, as BLAST+ 2.12 computes it.

blastp's ``-comp_based_stats`` 1, 2 (the default) and 3 give every query-subject pair
its own score matrix before the final alignments are redone (Yu & Altschul 2005;
Altschul et al. 2005, FEBS J. 272:5101).  This module is the arithmetic of that step;
the driver (windows, SEG of the subject, realignment, E-values) is
``Blast_RedoAlignmentCore`` / ``Blast_RedoOneMatch`` and lives elsewhere.  What each
part mirrors (src/algo/blast/composition_adjustment/ unless said otherwise):

* ``read_composition``: ``Blast_ReadAaComposition`` (composition_adjustment.c);
  only the 20 true amino acids are counted, U as C (B, Z, J, X, O, '*', '-' not).
* ``matrix_info``: ``Blast_MatrixInfoNew`` + ``s_MatrixInfoInit`` (core/blast_kappa.c)
  for a square matrix: the frequency ratios of the named matrix
  (``_PSIMatrixFrequencyRatiosNew``, core/matrix_freq_ratios.c), the ideal
  ungapped lambda (``sbp->kbp_ideal``) divided by the scale factor, and
  ``startMatrix = Blast_Int4MatrixFromFreq(ratios, that lambda)``.
* ``adjust_scores``: ``Blast_AdjustScores`` with ``compositionTestIndex`` 0, which
  is what blastp passes (``unifiedP`` is 0): ``Blast_ChooseMatrixAdjustRule``
  (compo_mode_condition.c), then either ``Blast_CompositionMatrixAdj`` (relative-
  entropy constrained target frequencies: ``Blast_OptimizeTargetFrequencies`` in
  optimize_target_freq.c, with the dense algebra of nlm_linear_algebra.c) or, for
  mode 1 and whenever that optimisation does not converge,
  ``Blast_CompositionBasedStats`` (the old matrix rescaled by a lambda ratio).
* ``choose_matrix_adjust_rule``, ``optimize_target_frequencies``,
  ``calc_lambda_full_precision``, ``relative_entropy`` are the functions of the same
  BLAST names, callable on their own (tests, diagnostics).

Scale.  blast_kappa.c scales the whole search by ``SCALING_FACTOR`` = 32 when
composition-based statistics are on (``localScalingFactor``): gap costs become
``BLAST_Nint(cost * 32)``, the gapped lambda is divided by 32, and
``matrix_info.ungapped_lambda`` is the ideal ungapped lambda / 32.  Every matrix
this module returns is at that scale: scores are ln(frequency ratio) / (lambda / 32),
so BLOSUM62's A-A, 4 in BLAST's matrix, is 137 unadjusted (ln 3.9029 / (0.31761 / 32)).
Alignment scores computed with it (and with the gap costs times 32) are divided back
by the driver, ``BLAST_Nint(score / 32)`` (``s_HSPListNormalizeScores``), before they
are reported; E-values are computed before that, from the scaled score and the gapped
lambda / 32.  ``matrix_info(name, scale_factor=1.0)`` gives the unscaled variant.

Matrices.  BLAST+ 2.12 has frequency ratios, joint probabilities and background
frequencies for BLOSUM45, 50, 62, 80, 90 and PAM30, 70, 250, all the matrices blastp
accepts, so every mode works with each of them (``blastp -matrix PAM30
-comp_based_stats 2`` adjusts PAM30's target frequencies).  The target relative
entropy of modes 2 and 3 is BLOSUM62's 0.44 whatever the matrix (kFixedReBlosum62);
the mode-2 test measures distances from the matrix's own background frequencies.

Every table below was dumped from the BLAST+ 2.12.0 libraries (libblast.so: the
frequency ratios; libcomposition_adjustment.so: the joint probabilities and
background frequencies) and is written with enough digits to give back the same
doubles; the tests compare the results with those libraries where installed.
Floating-point steps follow BLAST's order of operations, in double precision, in
numba-compiled loops (no reassociation, no fast-math), so the rounded integer
matrices are BLAST's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .._numba import numba
from .alphabet import ALPHABET_SIZE
from .matrix import load_matrix
from .stats import lambda_nr

# NCBIstdaa codes (alphabet.NCBISTDAA) the compiled loops below write as numbers:
# B 2, C 3, D 4, E 5, I 9, L 11, N 13, Q 15, X 21, Z 23, U 24, '*' 25, O 26, J 27.
_C, _U = 3, 24

NUM_TRUE_AA = 20                 # COMPO_NUM_TRUE_AA
SCORE_MIN = -32768               # COMPO_SCORE_MIN (INT2_MIN)
SCALING_FACTOR = 32.0            # blast_kappa.c: localScalingFactor when compo stats are on
RE_PSEUDOCOUNTS = 20             # kReMatrixAdjustmentPseudocounts (redo_alignment.c)
FIXED_RE_BLOSUM62 = 0.44         # kFixedReBlosum62: target relative entropy of modes 2, 3
LAMBDA_RATIO_LOWER_BOUND = 0.5   # LambdaRatioLowerBound
MAXIMUM_X_SCORE = -1.0           # kMaximumXscore
COMPO_ADJUST_ERR_TOLERANCE = 1e-8    # kCompoAdjustErrTolerance
COMPO_ADJUST_ITERATION_LIMIT = 2000  # kCompoAdjustIterationLimit
LAMBDA_ITERATION_LIMIT = 100         # kLambdaIterationLimit
LAMBDA_ERROR_TOLERANCE = 1e-7        # kLambdaErrorTolerance
LAMBDA_FUNCTION_TOLERANCE = 1e-5     # kLambdaFunctionTolerance

# Codes of the 20 true amino acids in NCBIstdaa order (trueCharPositions):
# A C D E F G H I K L M N P Q R S T V W Y.
TRUE_CHAR_POSITIONS = np.array([1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18,
                                19, 20, 22], dtype=np.int64)
# NCBIstdaa code -> index in the order A R N D C Q E G H I L K M F P S T W Y V of the
# joint-probability tables (alphaConvert), -1 for a letter that is not a true amino acid.
ALPHA_CONVERT = np.array([-1, 0, -1, 4, 3, 6, 13, 7, 8, 9, 11, 10, 12, 2, 14, 5, 1, 15,
                          16, 19, 17, -1, 18, -1, -1, -1, -1, -1], dtype=np.int64)

# Matrix-adjustment rules (EMatrixAdjustRule, composition_adjustment.h).
DONT_ADJUST_MATRIX = -1                 # eDontAdjustMatrix
COMPO_SCALE_OLD_MATRIX = 0              # eCompoScaleOldMatrix
UNCONSTRAINED_REL_ENTROPY = 1           # eUnconstrainedRelEntropy
REL_ENTROPY_OLD_MATRIX_NEW_CONTEXT = 2  # eRelEntropyOldMatrixNewContext
REL_ENTROPY_OLD_MATRIX_OLD_CONTEXT = 3  # eRelEntropyOldMatrixOldContext
USER_SPECIFIED_REL_ENTROPY = 4          # eUserSpecifiedRelEntropy
RULE_NAMES = {-1: "eDontAdjustMatrix", 0: "eCompoScaleOldMatrix",
              1: "eUnconstrainedRelEntropy", 2: "eRelEntropyOldMatrixNewContext",
              3: "eRelEntropyOldMatrixOldContext", 4: "eUserSpecifiedRelEntropy"}


# --------------------------------------------------------------------------------------------
# Tables: frequency ratios (28 x 28, NCBIstdaa), BLOSUM62 joint probabilities (20 x 20, ARND)
# --------------------------------------------------------------------------------------------

def _lower_triangle(text: str, size: int, first: int) -> np.ndarray:
    """A symmetric matrix from its lower triangle, rows ``first``..size-1 (row by row)."""
    values = [float(v) for v in text.split()]
    out = np.zeros((size, size))
    k = 0
    for i in range(first, size):
        for j in range(first, i + 1):
            out[i, j] = out[j, i] = values[k]
            k += 1
    assert k == len(values)
    return out


def freq_ratios(name: str) -> np.ndarray:
    """The frequency ratios BLAST+ holds for matrix ``name`` (28 x 28 by NCBIstdaa code).

    Row and column 0 (the gap) are 0; X, U and O have the ratio 0.75 against every
    letter but '*', whose ratios are the matrix's own (0.25 for BLOSUM62); B, Z and J
    have ratios of their own.
    """
    return _lower_triangle(_FREQ_RATIOS[name.upper()], ALPHABET_SIZE, 1)


def joint_probs(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(probs, row_sums, col_sums): Blast_GetJointProbsForMatrix of BLAST+ 2.12.

    The joint probabilities as tabulated (not divided by their sum, which differs
    from 1 in the last bits) and their sums by row and by column, added in BLAST's
    order; the workspace of the relative-entropy adjustment (NRrecord: mat_b,
    first_standard_freq, second_standard_freq).  Checked against the library.
    """
    return _joint_probs(name.upper())


def background_freqs(name: str) -> np.ndarray:
    """Blast_GetMatrixBackgroundFreq: the matrix's background frequencies, ARND order.

    BLOSUM's equal the row sums of the joint probabilities; PAM's (one table for
    the three) do not, to 1e-16.
    """
    return _vector(_BACKGROUND[name.upper()])


_TABLE_CACHE: dict = {}


def _vector(text: str) -> np.ndarray:
    if text not in _TABLE_CACHE:
        values = np.array([float(v) for v in text.split()])
        values.setflags(write=False)
        _TABLE_CACHE[text] = values
    return _TABLE_CACHE[text]


def _joint_probs(key: str):
    if key not in _TABLE_CACHE:
        joint = _lower_triangle(_JOINT_PROBS[key], NUM_TRUE_AA, 0)
        rows, cols = _marginals(joint)
        for array in (joint, rows, cols):
            array.setflags(write=False)
        _TABLE_CACHE[key] = (joint, rows, cols)
    return _TABLE_CACHE[key]


@numba.njit(cache=True)
def _marginals(joint):
    """Row and column sums of a matrix, in the order of BLAST's loops."""
    n = joint.shape[0]
    rows = np.zeros(n)
    cols = np.zeros(n)
    for i in range(n):
        for j in range(n):
            rows[i] += joint[i, j]
            cols[j] += joint[i, j]
    return rows, cols


# --------------------------------------------------------------------------------------------
# Compositions
# --------------------------------------------------------------------------------------------

def read_composition(codes) -> tuple[np.ndarray, int]:
    """``Blast_ReadAaComposition`` on NCBIstdaa codes: (probs[20], number of true letters).

    ``probs[k]`` is the frequency of letter ``TRUE_CHAR_POSITIONS[k]`` among the true
    amino acids of ``codes`` (count / number counted; all zero when there is none).
    A U counts as a C (libcomposition_adjustment of BLAST+ 2.12 does so; blastp's
    subjects have their U turned into X before, Blast_RedoAlignmentCore's
    s_SequenceGetProteinRange, its queries not).
    """
    counts = np.bincount(np.asarray(codes, dtype=np.int64), minlength=ALPHABET_SIZE)
    counts[_C] += counts[_U]          # BLAST+ 2.12 counts a U (selenocysteine) as a C
    true_counts = counts[TRUE_CHAR_POSITIONS]
    n = int(true_counts.sum())
    probs = np.zeros(NUM_TRUE_AA)
    if n > 0:
        probs = true_counts / float(n)      # one division per letter, as BLAST's prob[i] /= n
    return probs, n


def _stdaa_probs(probs20) -> np.ndarray:
    """probs[20] in TRUE_CHAR_POSITIONS order -> BLAST's prob[28] by NCBIstdaa code."""
    out = np.zeros(ALPHABET_SIZE)
    out[TRUE_CHAR_POSITIONS] = np.asarray(probs20, dtype=np.float64)
    return out


@numba.njit(cache=True)
def _gather_letter_probs(std_probs, alpha_convert):
    """s_GatherLetterProbs: NCBIstdaa probabilities -> ARND order."""
    out = np.zeros(20)
    for c in range(std_probs.shape[0]):
        if alpha_convert[c] != -1:
            out[alpha_convert[c]] = std_probs[c]
    return out


# --------------------------------------------------------------------------------------------
# Matrix information (Blast_MatrixInfo)
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class MatrixInfo:
    """What ``Blast_MatrixInfo`` holds for a blastp (square, not position-based) matrix.

    matrix_name        as given to blastp's -matrix, upper case (matrixName)
    scale_factor       localScalingFactor of blast_kappa.c (32 for blastp)
    ideal_lambda       sbp->kbp_ideal->Lambda of the unscaled matrix
    ungapped_lambda    ideal_lambda / scale_factor (ungappedLambda)
    start_freq_ratios  float64 (28, 28): the matrix's frequency ratios (startFreqRatios)
    start_matrix       int32 (28, 28): Blast_Int4MatrixFromFreq(start_freq_ratios,
                       ungapped_lambda), the unadjusted matrix at this scale (startMatrix)
    """

    matrix_name: str
    scale_factor: float
    ideal_lambda: float
    ungapped_lambda: float
    start_freq_ratios: np.ndarray = field(repr=False)
    start_matrix: np.ndarray = field(repr=False)


_INFO_CACHE: dict[tuple[str, float], MatrixInfo] = {}


def matrix_info(name: str, scale_factor: float = SCALING_FACTOR) -> MatrixInfo:
    """``s_MatrixInfoInit`` (blast_kappa.c) for blastp with matrix ``name``.

    OptionError (matrix.load_matrix) for a matrix BLAST+ does not have.  The result
    is shared and read-only.
    """
    from .stats import ideal_params   # the ideal Karlin block lives in stats.py

    key = (name.upper(), float(scale_factor))
    if key not in _INFO_CACHE:
        matrix = load_matrix(name)
        ideal = ideal_params(matrix).Lambda
        ungapped = ideal / scale_factor
        ratios = freq_ratios(matrix.name)
        start = int4_matrix_from_freq(ratios, ungapped)
        ratios.setflags(write=False)
        start.setflags(write=False)
        _INFO_CACHE[key] = MatrixInfo(matrix.name, float(scale_factor), ideal, ungapped,
                                      ratios, start)
    return _INFO_CACHE[key]


@numba.njit(cache=True)
def _nint(x):
    """Nint (composition_adjustment.c): nearest integer, halves away from zero, as (long)."""
    if x >= 0.0:
        x += 0.5
    else:
        x += -0.5
    return np.int64(x)     # C's conversion truncates toward zero, as does this one


@numba.njit(cache=True)
def _round_score_matrix(scores):
    """s_RoundScoreMatrix: floating-point scores -> int32 (INT_MIN below INT_MIN)."""
    rows, cols = scores.shape
    out = np.empty((rows, cols), dtype=np.int32)
    for p in range(rows):
        for c in range(cols):
            v = scores[p, c]
            if v < -2147483648.0:
                out[p, c] = -2147483648
            else:
                out[p, c] = _nint(v)
    return out


@numba.njit(cache=True)
def _freq_ratio_to_score(ratios, lam):
    """Blast_FreqRatioToScore: log(ratio) / lambda, COMPO_SCORE_MIN for a ratio of 0."""
    rows, cols = ratios.shape
    out = np.empty((rows, cols))
    for i in range(rows):
        for j in range(cols):
            if ratios[i, j] == 0.0:
                out[i, j] = -32768.0
            else:
                out[i, j] = math.log(ratios[i, j]) / lam
    return out


def int4_matrix_from_freq(ratios: np.ndarray, lam: float) -> np.ndarray:
    """``Blast_Int4MatrixFromFreq``: the integer matrix of frequency ratios at scale ``lam``."""
    return _round_score_matrix(_freq_ratio_to_score(np.ascontiguousarray(ratios, np.float64),
                                                    float(lam)))


# --------------------------------------------------------------------------------------------
# Choosing the rule (compo_mode_condition.c)
# --------------------------------------------------------------------------------------------

@numba.njit(cache=True)
def relative_entropy(a, b):
    """Blast_GetRelativeEntropy: the square root of the Jensen-Shannon divergence of a, b."""
    value = 0.0
    for i in range(20):
        temp = (a[i] + b[i]) / 2
        if temp > 0:
            if a[i] > 0:
                value += a[i] * math.log(a[i] / temp) / 2
            if b[i] > 0:
                value += b[i] * math.log(b[i] / temp) / 2
    if value < 0:
        value = 0.0
    return math.sqrt(value)


@numba.njit(cache=True)
def _high_pair_frequencies(letter_probs, length):
    """s_HighPairFrequencies: length > 50 and the two commonest letters above 40 %."""
    if length <= 50:
        return False
    mx = 0.0
    second = 0.0
    for i in range(20):
        if letter_probs[i] > second:
            second = letter_probs[i]
            if letter_probs[i] > mx:
                second = mx
                mx = letter_probs[i]
    return (mx + second) > 0.4


@numba.njit(cache=True, error_model="numpy")
def _conditional_rule(len_query, len_match, p_query, p_match, p_matrix):
    """s_TestToApplyREAdjustmentConditional (mode 2); p_* in ARND order."""
    d_m_mat = relative_entropy(p_match, p_matrix)
    d_q_mat = relative_entropy(p_query, p_matrix)
    d_m_q = relative_entropy(p_match, p_query)
    # BLAST's C arithmetic: 0/0 gives NaN, and acos of a NaN or of a value rounded past
    # 1 gives NaN, which fails the angle test below
    cos_angle = (d_m_mat * d_m_mat + d_q_mat * d_q_mat - d_m_q * d_m_q) / 2.0 / d_m_mat / d_q_mat
    angle = math.nan
    if -1.0 <= cos_angle <= 1.0:
        angle = math.acos(cos_angle)
    angle = angle * 180 / 3.1415926543        # BLAST's own digits of pi
    len_q = 1.0 * len_query
    len_m = 1.0 * len_match
    if len_q > len_m:
        len_large = len_q
        len_small = len_m
    else:
        len_large = len_m
        len_small = len_q
    if _high_pair_frequencies(p_query, len_query) or _high_pair_frequencies(p_match, len_match):
        return 4   # eUserSpecifiedRelEntropy
    if d_m_q > 0.16 and len_large / len_small > 3.0 and angle > 70.0:
        return 0   # eCompoScaleOldMatrix
    return 4


def choose_matrix_adjust_rule(query_length: int, subject_length: int, query_probs20,
                              subject_probs20, mode: int, matrix_name: str = "BLOSUM62") -> int:
    """``Blast_ChooseMatrixAdjustRule`` for blastp's -comp_based_stats ``mode`` (0..3).

    Probabilities in TRUE_CHAR_POSITIONS order (read_composition).  Mode 0:
    eDontAdjustMatrix; 1: eCompoScaleOldMatrix; 3: eUserSpecifiedRelEntropy; 2: the
    published conditions (Altschul et al. 2005): the user-specified relative entropy
    unless neither sequence is longer than 50 with its two commonest letters above
    40 %, and the sequences are far apart (Jensen-Shannon distance > 0.16), of
    lengths more than 3 to 1, and at more than 70 degrees from each other as seen
    from the matrix's background (background_freqs); then the old matrix is only
    rescaled.
    """
    if mode == 0:
        return DONT_ADJUST_MATRIX
    if mode == 1:
        return COMPO_SCALE_OLD_MATRIX
    if mode == 3:
        return USER_SPECIFIED_REL_ENTROPY
    if mode != 2:
        raise ValueError(f"composition-based statistics mode {mode} is not 0, 1, 2 or 3")
    pq = _gather_letter_probs(_stdaa_probs(query_probs20), ALPHA_CONVERT)
    pm = _gather_letter_probs(_stdaa_probs(subject_probs20), ALPHA_CONVERT)
    return int(_conditional_rule(int(query_length), int(subject_length), pq, pm,
                                 background_freqs(matrix_name)))


# --------------------------------------------------------------------------------------------
# Lambda of a real-valued matrix (Blast_CalcLambdaFullPrecision) and entropies
# --------------------------------------------------------------------------------------------

@numba.njit(cache=True, error_model="numpy")
def _calc_lambda_full_precision(score, row_prob, col_prob, lambda_tolerance,
                                function_tolerance, max_iterations):
    alphsize = score.shape[0]
    f = 4.0
    left = 0.0
    right = 1.0
    x = 0.367879441171
    is_newton = False
    max_score = -32768.0
    avg_score = 0.0
    for i in range(alphsize):
        if row_prob[i] == 0.0:
            continue
        for j in range(alphsize):
            if col_prob[j] == 0.0:
                continue
            if max_score < score[i, j]:
                max_score = score[i, j]
            avg_score += row_prob[i] * col_prob[j] * score[i, j]
    if max_score <= 0.0 or avg_score >= 0:
        return -1.0, max_iterations
    k = 0
    while k < max_iterations:
        fold = f
        lam = -math.log(x)
        was_newton = is_newton
        x_pow_max_score = math.exp(-max_score * lam)
        f = -x_pow_max_score
        slope = max_score * f / x
        for i in range(alphsize):
            if row_prob[i] == 0.0:
                continue
            for j in range(alphsize):
                if col_prob[j] == 0.0:
                    continue
                if max_score != score[i, j]:
                    diff_score = max_score - score[i, j]
                    ff = row_prob[i] * col_prob[j] * math.exp(-lam * diff_score)
                    slope += diff_score * ff / x
                else:
                    ff = row_prob[i] * col_prob[j]
                f += ff
        if f > 0:
            left = x
        elif f < 0:
            right = x
        else:
            break
        if right - left <= 2 * left * (1 - right) * lambda_tolerance and \
                abs(f / x_pow_max_score) <= function_tolerance:
            x = (left + right) / 2
            break
        if (was_newton and abs(f) > .9 * abs(fold)) or slope >= 0:
            x = (left + right) / 2
        else:
            p = -f / slope
            y = x + p
            if y <= left or y >= right:
                x = (left + right) / 2
            else:
                is_newton = True
                x = y
                if abs(p) <= lambda_tolerance * x * (1 - x) and \
                        abs(f / x_pow_max_score) <= function_tolerance:
                    break
        k += 1
    if k < max_iterations:
        return -math.log(x), k
    return -1.0, k


def calc_lambda_full_precision(score, row_prob, col_prob,
                               lambda_tolerance: float = LAMBDA_ERROR_TOLERANCE,
                               function_tolerance: float = LAMBDA_FUNCTION_TOLERANCE,
                               max_iterations: int = LAMBDA_ITERATION_LIMIT) -> tuple[float, int]:
    """``Blast_CalcLambdaFullPrecision``: (lambda, iterations) of a real-valued score matrix.

    Lambda is -1 where it does not exist (no positive score, or a non-negative mean)
    or the safeguarded Newton iteration on x = exp(-lambda) did not converge.
    """
    lam, its = _calc_lambda_full_precision(np.ascontiguousarray(score, np.float64),
                                           np.asarray(row_prob, np.float64),
                                           np.asarray(col_prob, np.float64),
                                           float(lambda_tolerance), float(function_tolerance),
                                           int(max_iterations))
    return float(lam), int(its)


@numba.njit(cache=True)
def _target_freq_entropy(target_freq):
    """Blast_TargetFreqEntropy: relative entropy of target frequencies to their marginals."""
    n = target_freq.shape[0]
    row_prob = np.zeros(n)
    col_prob = np.zeros(n)
    for i in range(n):
        for j in range(n):
            row_prob[i] += target_freq[i, j]
            col_prob[j] += target_freq[i, j]
    entropy = 0.0
    for i in range(n):
        for j in range(n):
            freq = target_freq[i, j]
            entropy += freq * math.log(freq / row_prob[i] / col_prob[j])
    return entropy


def target_freq_entropy(target_freq) -> float:
    """``Blast_TargetFreqEntropy`` (20 x 20 target frequencies, ARND order)."""
    return float(_target_freq_entropy(np.ascontiguousarray(target_freq, np.float64)))


@numba.njit(cache=True, error_model="numpy")
def _entropy_old_freq_new_context(target_freq, row_prob, col_prob):
    """Blast_EntropyOldFreqNewContext: (status, entropy, lambda); status 0 on success."""
    n = 20
    old_row = np.zeros(n)
    old_col = np.zeros(n)
    for i in range(n):
        for j in range(n):
            old_row[i] += target_freq[i, j]
            old_col[j] += target_freq[i, j]
    scores = target_freq.copy()
    for i in range(n):                          # Blast_CalcFreqRatios
        if old_row[i] > 0:
            for j in range(n):
                if old_col[j] > 0:
                    scores[i, j] /= (old_row[i] * old_col[j])
    scores = _freq_ratio_to_score(scores, 1.0)
    lam, its = _calc_lambda_full_precision(scores, row_prob, col_prob, LAMBDA_ERROR_TOLERANCE,
                                           LAMBDA_FUNCTION_TOLERANCE, LAMBDA_ITERATION_LIMIT)
    if its < LAMBDA_ITERATION_LIMIT:
        entropy = 0.0                            # Blast_MatrixEntropy
        for i in range(n):
            for j in range(n):
                nat_score = lam * scores[i, j]
                entropy += nat_score * math.exp(nat_score) * row_prob[i] * col_prob[j]
        return 0, entropy, lam
    return 1, 0.0, lam


# --------------------------------------------------------------------------------------------
# Optimal target frequencies (optimize_target_freq.c, nlm_linear_algebra.c)
# --------------------------------------------------------------------------------------------
# x (alphsize^2 target frequencies, row-major) minimises sum x ln(x/q) subject to the
# column sums (alphsize equations), the row sums but the first (alphsize - 1), and, when
# constrained, the relative entropy.  Newton's method on the Lagrangian: the constraint
# matrix A is used implicitly (k = i * alphsize + j), the (2 alphsize - 1 [+1]) Schur
# complement J D^-1 J^T is Cholesky-factored in the lower triangle of W.

@numba.njit(cache=True)
def _multiply_by_a(beta, y, alphsize, alpha, x):
    """MultiplyByA: y = beta y + alpha A x."""
    if beta == 0.0:
        for i in range(2 * alphsize - 1):
            y[i] = 0.0
    elif beta != 1.0:
        for i in range(2 * alphsize - 1):
            y[i] *= beta
    for i in range(alphsize):
        for j in range(alphsize):
            y[j] += alpha * x[i * alphsize + j]
    for i in range(1, alphsize):
        for j in range(alphsize):
            y[i + alphsize - 1] += alpha * x[i * alphsize + j]


@numba.njit(cache=True)
def _multiply_by_a_transpose(beta, y, alphsize, alpha, x):
    """MultiplyByAtranspose: y = beta y + alpha A^T x."""
    if beta == 0.0:
        for k in range(alphsize * alphsize):
            y[k] = 0.0
    elif beta != 1.0:
        for k in range(alphsize * alphsize):
            y[k] *= beta
    for i in range(alphsize):
        for j in range(alphsize):
            k = i * alphsize + j
            y[k] += alpha * x[j]
            if i > 0:
                y[k] += alpha * x[i + alphsize - 1]


@numba.njit(cache=True)
def _euclidean_norm(v, n):
    """Nlm_EuclideanNorm: the 2-norm, scaled as BLAS dnrm2 does."""
    total = 1.0
    scale = 0.0
    for i in range(n):
        if v[i] != 0.0:
            absvi = abs(v[i])
            if scale < absvi:
                total = 1.0 + total * (scale / absvi) * (scale / absvi)
                scale = absvi
            else:
                total += (absvi / scale) * (absvi / scale)
    return scale * math.sqrt(total)


@numba.njit(cache=True)
def _factor_ltriang_pos_def(a, n):
    """Nlm_FactorLtriangPosDef: Cholesky factor of the lower triangle of a, in place."""
    for i in range(n):
        for j in range(i):
            temp = a[i, j]
            for k in range(j):
                temp -= a[i, k] * a[j, k]
            a[i, j] = temp / a[j, j]
        temp = a[i, i]
        for k in range(i):
            temp -= a[i, k] * a[i, k]
        a[i, i] = math.sqrt(temp)


@numba.njit(cache=True)
def _solve_ltriang_pos_def(x, n, lower):
    """Nlm_SolveLtriangPosDef: solve L L^T y = x in place."""
    for i in range(n):
        temp = x[i]
        for j in range(i):
            temp -= lower[i, j] * x[j]
        x[i] = temp / lower[i, i]
    for j in range(n - 1, -1, -1):
        x[j] /= lower[j, j]
        for i in range(j):
            x[i] -= lower[j, i] * x[j]


@numba.njit(cache=True, error_model="numpy")
def _optimize_target_frequencies(q, row_sums, col_sums, constrain_rel_entropy,
                                 relative_entropy_target, tol, maxits):
    """Blast_OptimizeTargetFrequencies: (status, x, iterations); status 0 on convergence."""
    alphsize = row_sums.shape[0]
    n = alphsize * alphsize
    m_a = 2 * alphsize - 1
    m = m_a + 1 if constrain_rel_entropy else m_a
    x = q.copy()
    z = np.zeros(m_a + 1)
    resids_x = np.empty(n)
    resids_z = np.empty(m_a + 1)
    old_scores = np.empty(n)
    workspace = np.empty(n)
    grads0 = np.empty(n)
    grads1 = np.empty(n)
    w = np.zeros((2 * alphsize, 2 * alphsize))
    dinv = np.empty(n)
    grad_re = np.empty(n)
    for i in range(alphsize):                   # ComputeScoresFromProbs
        for j in range(alphsize):
            k = i * alphsize + j
            old_scores[k] = math.log(q[k] / (row_sums[i] * col_sums[j]))
    its = 0
    rnorm = 0.0
    while its <= maxits:
        # EvaluateReFunctions
        value1 = 0.0
        for k in range(n):
            temp = math.log(x[k] / q[k])
            grads0[k] = temp + 1
            if constrain_rel_entropy:
                temp += old_scores[k]
                value1 += x[k] * temp
                grads1[k] = temp + 1
        # CalculateResiduals: DualResiduals, then ResidualsLinearConstraints
        if constrain_rel_entropy:
            eta = z[2 * alphsize - 1]
            for i in range(n):
                resids_x[i] = -grads0[i] + eta * grads1[i]
        else:
            for i in range(n):
                resids_x[i] = -grads0[i]
        _multiply_by_a_transpose(1.0, resids_x, alphsize, 1.0, z)
        norm_resids_x = _euclidean_norm(resids_x, n)
        for i in range(alphsize):
            resids_z[i] = col_sums[i]
        for i in range(1, alphsize):
            resids_z[i + alphsize - 1] = row_sums[i]
        _multiply_by_a(1.0, resids_z, alphsize, -1.0, x)
        if constrain_rel_entropy:
            resids_z[2 * alphsize - 1] = relative_entropy_target - value1
            norm_resids_z = _euclidean_norm(resids_z, 2 * alphsize)
        else:
            norm_resids_z = _euclidean_norm(resids_z, 2 * alphsize - 1)
        rnorm = math.sqrt(norm_resids_x * norm_resids_x + norm_resids_z * norm_resids_z)
        if not (rnorm > tol):       # NaN ends the loop too, as in BLAST
            break
        its += 1
        if its <= maxits:
            # FactorReNewtonSystem
            if constrain_rel_entropy:
                eta = z[m - 1]
                for i in range(n):
                    dinv[i] = x[i] / (1 - eta)
            else:
                for i in range(n):
                    dinv[i] = x[i]
            for roww in range(m_a):             # ScaledSymmetricProductA
                for colw in range(roww + 1):
                    w[roww, colw] = 0.0
            for i in range(alphsize):
                for j in range(alphsize):
                    dd = dinv[i * alphsize + j]
                    w[j, j] += dd
                    if i > 0:
                        w[i + alphsize - 1, j] += dd
                        w[i + alphsize - 1, i + alphsize - 1] += dd
            if constrain_rel_entropy:
                for i in range(n):
                    grad_re[i] = grads1[i]
                w[m - 1, m - 1] = 0.0
                for i in range(n):
                    workspace[i] = dinv[i] * grad_re[i]
                    w[m - 1, m - 1] += grad_re[i] * workspace[i]
                row = w[m - 1]
                _multiply_by_a(0.0, row, alphsize, 1.0, workspace)
            _factor_ltriang_pos_def(w, m)
            # SolveReNewtonSystem (resids_x, resids_z become the steps)
            for i in range(n):
                workspace[i] = resids_x[i] * dinv[i]
            _multiply_by_a(1.0, resids_z, alphsize, -1.0, workspace)
            if constrain_rel_entropy:
                for i in range(n):
                    resids_z[m - 1] -= grad_re[i] * workspace[i]
            _solve_ltriang_pos_def(resids_z, m, w)
            if constrain_rel_entropy:
                for i in range(n):
                    resids_x[i] += grad_re[i] * resids_z[m - 1]
            _multiply_by_a_transpose(1.0, resids_x, alphsize, 1.0, resids_z)
            for i in range(n):
                resids_x[i] *= dinv[i]
            # Nlm_StepBound(x, resids_x, 1 / .95) * .95 keeps x positive
            alpha = 1.0 / .95
            for i in range(n):
                alpha_i = -x[i] / resids_x[i]
                if alpha_i >= 0 and alpha_i < alpha:
                    alpha = alpha_i
            alpha *= 0.95
            for i in range(n):
                x[i] += alpha * resids_x[i]
            for i in range(m):
                z[i] += alpha * resids_z[i]
    converged = False
    if its <= maxits and rnorm <= tol:
        if (not constrain_rel_entropy) or z[m - 1] < 1:
            converged = True
    return (0 if converged else 1), x, its


def optimize_target_frequencies(q, row_sums, col_sums, relative_entropy_target: float | None,
                                tol: float = COMPO_ADJUST_ERR_TOLERANCE,
                                maxits: int = COMPO_ADJUST_ITERATION_LIMIT):
    """``Blast_OptimizeTargetFrequencies``: (converged, target frequencies, iterations).

    ``q``: joint probabilities of the standard matrix (n x n); ``row_sums`` and
    ``col_sums``: the compositions the result must have as marginals;
    ``relative_entropy_target``: its relative entropy, or None for no such constraint.
    """
    q = np.ascontiguousarray(q, np.float64)
    size = q.shape[0]
    constrain = relative_entropy_target is not None
    status, x, its = _optimize_target_frequencies(
        q.ravel().copy(), np.ascontiguousarray(row_sums, np.float64),
        np.ascontiguousarray(col_sums, np.float64), constrain,
        float(relative_entropy_target or 0.0), float(tol), int(maxits))
    return status == 0, x.reshape(size, size), int(its)


# --------------------------------------------------------------------------------------------
# Scores from target frequencies or frequency ratios (composition_adjustment.c)
# --------------------------------------------------------------------------------------------

@numba.njit(cache=True)
def _calc_avg_score(m, row, col, along_row, probs, alpha_convert):
    """s_CalcAvgScore over the true letters of a row (along_row) or a column of m."""
    score = 0.0
    for j in range(m.shape[0]):
        if alpha_convert[j] >= 0:
            if along_row:
                score += m[row, j] * probs[j]
            else:
                score += m[j, col] * probs[j]
    return score


@numba.njit(cache=True)
def _set_xuo_scores(m, row_probs, col_probs, alpha_convert):
    """s_SetXUOScores: X as the expected score (at most -1); U copied from C, O from X."""
    alphsize = m.shape[0]
    score_xx = 0.0
    for i in range(alphsize):
        if alpha_convert[i] >= 0:
            avg_ix = _calc_avg_score(m, i, 0, True, col_probs, alpha_convert)
            m[i, 21] = min(avg_ix, MAXIMUM_X_SCORE)
            score_xx += avg_ix * row_probs[i]
            m[21, i] = min(_calc_avg_score(m, 0, i, False, row_probs, alpha_convert),
                           MAXIMUM_X_SCORE)
    m[21, 21] = min(score_xx, MAXIMUM_X_SCORE)
    for amb in (2, 23, 27):                     # B, Z, J
        m[amb, 21] = min(_calc_avg_score(m, amb, 0, True, col_probs, alpha_convert),
                         MAXIMUM_X_SCORE)
        m[21, amb] = min(_calc_avg_score(m, 0, amb, False, row_probs, alpha_convert),
                         MAXIMUM_X_SCORE)
    # U (selenocysteine) scores as C, O (pyrrolysine) as X: what libcomposition_adjustment
    # of BLAST+ 2.12 gives (later toolkits copy X to both)
    for copy_to, source in ((24, 3), (26, 21)):
        for j in range(alphsize):
            m[copy_to, j] = m[source, j]
        for i in range(alphsize):
            m[i, copy_to] = m[i, source]


@numba.njit(cache=True)
def _set_pair_ambig_probs_to_sum(probs):
    """s_SetPairAmbigProbsToSum: B = D + N, Z = E + Q, J = I + L."""
    probs[2] = probs[4] + probs[13]
    probs[23] = probs[5] + probs[15]
    probs[27] = probs[9] + probs[11]


@numba.njit(cache=True)
def _unpack_letter_probs(probs20, alpha_convert):
    """s_UnpackLetterProbs: ARND probabilities -> NCBIstdaa (0 for other letters)."""
    out = np.zeros(alpha_convert.shape[0])
    for c in range(alpha_convert.shape[0]):
        if alpha_convert[c] != -1:
            out[c] = probs20[alpha_convert[c]]
    return out


@numba.njit(cache=True)
def _calc_freq_ratios(ratios, row_prob, col_prob):
    """Blast_CalcFreqRatios, in place."""
    n = ratios.shape[0]
    for i in range(n):
        if row_prob[i] > 0:
            for j in range(n):
                if col_prob[j] > 0:
                    ratios[i, j] /= (row_prob[i] * col_prob[j])


@numba.njit(cache=True)
def _scores_std_alphabet(target_freq, start_matrix, row_prob20, col_prob20, lam, alpha_convert):
    """s_ScoresStdAlphabet: the 28 x 28 integer matrix of 20 x 20 target frequencies."""
    size = alpha_convert.shape[0]
    row_prob = _unpack_letter_probs(row_prob20, alpha_convert)
    _set_pair_ambig_probs_to_sum(row_prob)
    col_prob = _unpack_letter_probs(col_prob20, alpha_convert)
    _set_pair_ambig_probs_to_sum(col_prob)
    # Blast_TrueAaToStdTargetFreqs
    total = 0.0
    for a in range(20):
        for b in range(20):
            total += target_freq[a, b]
    std = np.zeros((size, size))
    for big_a in range(size):
        if alpha_convert[big_a] >= 0:
            a = alpha_convert[big_a]
            for big_b in range(size):
                if alpha_convert[big_b] >= 0:
                    std[big_a, big_b] = target_freq[a, alpha_convert[big_b]] / total
            std[big_a, 2] = std[big_a, 4] + std[big_a, 13]
            std[big_a, 23] = std[big_a, 5] + std[big_a, 15]
            std[big_a, 27] = std[big_a, 9] + std[big_a, 11]
    for j in range(size):
        std[2, j] = std[4, j] + 1.0 * std[13, j]
    for j in range(size):
        std[23, j] = std[5, j] + 1.0 * std[15, j]
    for j in range(size):
        std[27, j] = std[9, j] + 1.0 * std[11, j]
    _calc_freq_ratios(std, row_prob, col_prob)
    scores = _freq_ratio_to_score(std, lam)
    _set_xuo_scores(scores, row_prob, col_prob, alpha_convert)
    out = _round_score_matrix(scores)
    for i in range(size):                       # '*' as in the unadjusted matrix
        out[i, 25] = start_matrix[i, 25]
        out[25, i] = start_matrix[25, i]
    return out


@numba.njit(cache=True)
def _scale_square_matrix(freq_ratios, start_matrix, row_prob, col_prob, lam, alpha_convert):
    """s_ScaleSquareMatrix: the frequency ratios as integer scores at scale lam."""
    scores = _freq_ratio_to_score(freq_ratios, lam)
    _set_xuo_scores(scores, row_prob, col_prob, alpha_convert)
    out = _round_score_matrix(scores)
    for i in range(freq_ratios.shape[0]):
        out[i, 25] = start_matrix[i, 25]
        out[25, i] = start_matrix[25, i]
    return out


@numba.njit(cache=True)
def _matrix_score_probs(matrix, subject_prob, query_prob, true_positions):
    """s_GetMatrixScoreProbs: (probabilities of scores obs_min..obs_max, obs_min, obs_max)."""
    rows = matrix.shape[0]
    min_score = 0
    max_score = 0
    for irow in range(rows):                    # s_GetScoreRange
        for aa in range(20):
            s = matrix[irow, true_positions[aa]]
            if s < min_score and s > -32768:
                min_score = s
            if s > max_score:
                max_score = s
    probs = np.zeros(max_score - min_score + 1)
    for irow in range(rows):
        for aa in range(20):
            jcol = true_positions[aa]
            s = matrix[irow, jcol]
            if s >= min_score:
                probs[s - min_score] += query_prob[irow] * subject_prob[jcol]
    return probs, min_score, max_score


@numba.njit(cache=True)
def _calc_lambda(probs, min_score, max_score, lambda0):
    """s_CalcLambda (blast_kappa.c): Blast_KarlinLambdaNR (blast_stat.c) of the score
    probabilities ``probs[s - min_score]``, -1 where lambda does not exist (compiled: mode 1
    runs it once a pair)."""
    avg = 0.0
    for i in range(max_score - min_score + 1):
        avg += (min_score + i) * probs[i]
    low, high = min_score, max_score
    if avg >= 0.0 or low >= 0 or high <= 0 or low < -32768 or high > 32767 \
            or high - low > 65535:             # BlastScoreChk
        return -1.0
    return lambda_nr(probs, low, high, lambda0)


def composition_based_stats(info: MatrixInfo, query_probs28: np.ndarray,
                            subject_probs28: np.ndarray) -> tuple[np.ndarray, float]:
    """``Blast_CompositionBasedStats`` (square matrix, pValueAdjustment 0): (matrix, LambdaRatio).

    The lambda of ``start_matrix`` in this pair's context over the standard
    ungapped lambda, clipped to [0.5, 1]; the frequency ratios are turned into scores
    at ungapped_lambda / LambdaRatio, so a pair whose matrix scores too high gets
    scores shrunk by up to a half.
    """
    probs, lo, hi = _matrix_score_probs(info.start_matrix, subject_probs28, query_probs28,
                                        TRUE_CHAR_POSITIONS)
    correct = _calc_lambda(probs, lo, hi, info.ungapped_lambda)
    ratio = correct / info.ungapped_lambda
    ratio = min(1.0, ratio)
    ratio = max(ratio, LAMBDA_RATIO_LOWER_BOUND)
    matrix = _scale_square_matrix(np.ascontiguousarray(info.start_freq_ratios),
                                  np.ascontiguousarray(info.start_matrix), query_probs28,
                                  subject_probs28, info.ungapped_lambda / ratio, ALPHA_CONVERT)
    return matrix, ratio


@numba.njit(cache=True)
def _apply_pseudocounts(probs20, n_observations, background, pseudocounts):
    """Blast_ApplyPseudocounts: normalise, then mix in pseudocounts of the background."""
    total = 0.0
    for i in range(len(probs20)):
        total += probs20[i]
    if total == 0.0:
        total = 1.0
    dpseudocounts = float(pseudocounts)
    weight = dpseudocounts / (n_observations + dpseudocounts)
    out = np.empty(NUM_TRUE_AA)
    for i in range(NUM_TRUE_AA):
        out[i] = (1.0 - weight) * probs20[i] / total + weight * background[i]
    return out


def composition_matrix_adj(info: MatrixInfo, rule: int, length1: int, length2: int,
                           query_probs28: np.ndarray, subject_probs28: np.ndarray,
                           pseudocounts: int = RE_PSEUDOCOUNTS, workspace=None,
                           specified_re: float = FIXED_RE_BLOSUM62):
    """``Blast_CompositionMatrixAdj``: (status, matrix); status 0 success, 1 no convergence.

    ``length1``, ``length2``: numbers of true letters of query and subject (the
    weights of their compositions against the pseudocounts).
    """
    if workspace is None:
        workspace = joint_probs(info.matrix_name)
    joint, first_std, second_std = workspace
    row_probs = _gather_letter_probs(query_probs28, ALPHA_CONVERT)
    col_probs = _gather_letter_probs(subject_probs28, ALPHA_CONVERT)
    if rule == UNCONSTRAINED_REL_ENTROPY:
        desired_re = 0.0
    elif rule == REL_ENTROPY_OLD_MATRIX_NEW_CONTEXT:
        status, desired_re, _ = _entropy_old_freq_new_context(joint, row_probs, col_probs)
        if status > 0:
            desired_re = 0.0
    elif rule == REL_ENTROPY_OLD_MATRIX_OLD_CONTEXT:
        desired_re = _target_freq_entropy(joint)
    elif rule == USER_SPECIFIED_REL_ENTROPY:
        desired_re = specified_re
    else:
        raise ValueError(f"matrix adjustment rule {rule} does not optimise target frequencies")
    row_probs = _apply_pseudocounts(row_probs, length1, first_std, pseudocounts)
    col_probs = _apply_pseudocounts(col_probs, length2, second_std, pseudocounts)
    status, x, _ = _optimize_target_frequencies(
        joint.ravel().copy(), row_probs, col_probs, desired_re > 0.0, float(desired_re),
        COMPO_ADJUST_ERR_TOLERANCE, COMPO_ADJUST_ITERATION_LIMIT)
    if status != 0:
        return status, None
    matrix = _scores_std_alphabet(x.reshape(NUM_TRUE_AA, NUM_TRUE_AA),
                                  np.ascontiguousarray(info.start_matrix), row_probs, col_probs,
                                  info.ungapped_lambda, ALPHA_CONVERT)
    return 0, matrix


# --------------------------------------------------------------------------------------------
# Blast_AdjustScores
# --------------------------------------------------------------------------------------------

@dataclass
class Adjustment:
    """What ``Blast_AdjustScores`` gives back for one query-subject pair.

    matrix        int32 (28, 28) by NCBIstdaa code, at info.scale_factor times BLAST's
                  scale (see the module docstring); None when failed
    rule          the EMatrixAdjustRule used (eCompoScaleOldMatrix after a fallback)
    lambda_ratio  LambdaRatio of eCompoScaleOldMatrix (in [0.5, 1]; the matrix is
                  already rescaled by it); 1.0 after a successful optimisation (BLAST's
                  "meaningless for this mode").  blastp's E-values do not use it.
    failed        True where BLAST's function returns 1: the query or the subject (its
                  window) has no true amino acid, e.g. a subject masked whole by SEG.
                  Blast_RedoOneMatch then does not realign that HSP, and the next HSPs
                  of the window are realigned, without a new adjustment, with the
                  score matrix (and rule) the last adjustment left, or before any
                  adjustment the search's own unscaled matrix
    """

    matrix: np.ndarray | None
    rule: int
    lambda_ratio: float
    failed: bool = False


def new_workspace(info: MatrixInfo):
    """Blast_CompositionWorkspaceNew + Init: the matrix's (joint probabilities, row sums,
    column sums), read-only and shared, for ``adjust_scores(..., workspace)``."""
    return joint_probs(info.matrix_name)


def adjust_scores(info: MatrixInfo, query_comp, query_length: int, subject_comp,
                  subject_length: int, mode: int, workspace=None,
                  pseudocounts: int = RE_PSEUDOCOUNTS) -> Adjustment:
    """``Blast_AdjustScores`` for blastp (square matrix, compositionTestIndex 0).

    query_comp, subject_comp: ``read_composition`` of the query and of the subject's
        window, (probs[20], number of true letters); the numbers weigh the
        compositions against the pseudocounts;
    query_length, subject_length: the lengths Blast_RedoOneMatch passes (the query's
        and the subject window's lengths, all letters), used by the mode-2 test;
    mode: -comp_based_stats 1, 2 or 3;
    workspace: new_workspace(info), or None to look it up.

    Mode 1 rescales the old matrix.  Modes 2 and 3 choose the rule
    (choose_matrix_adjust_rule); eUserSpecifiedRelEntropy optimises target
    frequencies of relative entropy 0.44 whose marginals are the two compositions
    (each mixed with 20 pseudocounts of the matrix's background, the joint
    probabilities' marginals); if Newton's method does not converge, BLAST falls
    back to rescaling the old matrix, as here.
    """
    query_probs20, query_n_true = query_comp
    subject_probs20, subject_n_true = subject_comp
    if mode not in (1, 2, 3):
        raise ValueError(f"composition-based statistics mode {mode} is not 1, 2 or 3")
    if query_n_true == 0 or subject_n_true == 0:
        return Adjustment(None, DONT_ADJUST_MATRIX, 1.0, failed=True)
    query28 = _stdaa_probs(query_probs20)
    subject28 = _stdaa_probs(subject_probs20)
    rule = choose_matrix_adjust_rule(query_length, subject_length, query_probs20,
                                     subject_probs20, mode, info.matrix_name)
    if rule != COMPO_SCALE_OLD_MATRIX:
        status, matrix = composition_matrix_adj(info, rule, query_n_true, subject_n_true,
                                                query28, subject28, pseudocounts, workspace)
        if status == 0:
            return Adjustment(matrix, rule, 1.0)
    matrix, ratio = composition_based_stats(info, query28, subject28)
    return Adjustment(matrix, COMPO_SCALE_OLD_MATRIX, ratio)


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------

# Frequency ratios of libblast.so 2.12.0 (matrix_freq_ratios.c: BLOSUM45_FREQRATIOS ...),
# lower triangle of rows 1..27 (NCBIstdaa codes A..J; row and column 0 are all 0).
_FREQ_RATIOS = {
    "BLOSUM45": """
    2.95043377
    7.34701741e-1 3.25946658
    8.00397827e-1 6.00232275e-1 1.70900872e1
    6.88936672e-1 3.59386786 5.32858023e-1 5.35580571
    8.25164920e-1 1.30000108 5.45353890e-1 1.64256912 3.87327599
    5.87357723e-1 4.95670856e-1 6.01657157e-1 4.31018420e-1 4.97795679e-1 5.74817622
    1.08031132 8.85913772e-1 5.56827599e-1 7.40433725e-1 5.76408577e-1 4.80346092e-1 5.07068525
    6.54086288e-1 1.08769141 4.90637659e-1 9.76205497e-1 9.61718230e-1 6.79103477e-1 6.62087167e-1
    9.51252809
    7.46806187e-1 4.96979579e-1 5.42801532e-1 4.40334375e-1 4.85270933e-1 1.06375667 4.16341047e-1
    4.53313059e-1 3.23256769
    7.86209397e-1 1.02264352 5.46735291e-1 9.41681214e-1 1.27686825 5.29188869e-1 6.77879412e-1
    8.90272071e-1 5.32316397e-1 3.32707189
    7.12370041e-1 4.72210752e-1 6.72663401e-1 4.62523949e-1 5.70784073e-1 1.30295859 4.50091586e-1
    6.69868446e-1 1.59618413 5.53563636e-1 2.99708655
    8.21348665e-1 5.80058073e-1 6.03730225e-1 4.94422549e-1 6.14865688e-1 1.06255416 5.84692214e-1
    9.18088604e-1 1.45527106 7.37955763e-1 1.73144954 4.11411354
    7.89043130e-1 2.86239890 6.80232381e-1 1.50174498 8.93236200e-1 5.72439082e-1 1.05865660
    1.22006964 5.64240025e-1 1.11877807 4.83712850e-1 6.81741591e-1 4.47803773
    7.08569419e-1 6.85801186e-1 4.11520916e-1 7.24041930e-1 9.10746443e-1 4.51176385e-1
    7.02165561e-1 6.61223470e-1 6.09639867e-1 7.81202774e-1 4.77913692e-1 6.43682874e-1
    6.40394172e-1 8.81911509
    8.66678731e-1 9.91862879e-1 4.86216592e-1 9.57667486e-1 1.53097375 4.43558969e-1 6.87007231e-1
    1.15049417 5.77938325e-1 1.33004839 6.42028706e-1 9.40467390e-1 1.03246645 7.15515810e-1
    4.40728842
    6.99695540e-1 8.29088221e-1 4.71814444e-1 7.71179788e-1 1.01074883 5.89537777e-1 5.70228460e-1
    9.73045615e-1 4.88387978e-1 1.94261316 6.01135200e-1 7.75906233e-1 8.97848625e-1 5.81631739e-1
    1.32912854 4.74702063
    1.30031418 1.05297301 7.96941950e-1 9.29413105e-1 9.12113764e-1 6.09495403e-1 1.05800656
    8.54331847e-1 6.18410187e-1 8.89937552e-1 5.55659969e-1 6.60370266e-1 1.19968790 7.49733904e-1
    1.09183956 7.99048209e-1 2.78188630
    1.00058530 9.85207016e-1 8.21766666e-1 8.76125496e-1 8.32873235e-1 7.16103747e-1 6.92819008e-1
    7.06245757e-1 8.47505386e-1 8.84562104e-1 7.80723755e-1 8.60449567e-1 1.11473028 8.56242933e-1
    7.80601862e-1 7.15164318e-1 1.47248598 3.13871529
    1.00992663 5.20111147e-1 7.14771712e-1 4.93585385e-1 5.55160304e-1 9.52475503e-1 4.79214700e-1
    4.56693295e-1 2.17596400 5.91651856e-1 1.33363845 1.23582796 5.51607804e-1 5.40037335e-1
    5.47266398e-1 5.77699501e-1 7.27836330e-1 1.04019697 2.87075890
    5.65442334e-1 3.80841719e-1 3.33596922e-1 3.73386452e-1 5.19337483e-1 1.35493791 5.91296285e-1
    4.51816356e-1 5.64907506e-1 5.61572955e-1 6.70858407e-1 6.34345311e-1 3.89694095e-1
    5.25005050e-1 6.45177884e-1 5.80165842e-1 4.28363793e-1 4.54128072e-1 4.73320057e-1
    2.97023509e1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1
    6.38727873e-1 6.27051284e-1 4.88896599e-1 6.44927232e-1 6.16552718e-1 2.18456832 5.49197180e-1
    1.47204221 9.06458192e-1 7.37107274e-1 9.65090110e-1 1.02316322 6.05825405e-1 4.78832406e-1
    8.29182983e-1 8.07446927e-1 7.05878947e-1 7.43457494e-1 8.09252575e-1 1.80096028 7.50000000e-1
    5.75351902
    8.41025176e-1 1.18227759 5.22760621e-1 1.38090402 2.97840479 4.77074668e-1 6.18662539e-1
    1.03383965 5.20674297e-1 1.29718560 5.98002922e-1 7.39261071e-1 9.46428796e-1 8.36159027e-1
    2.62986317 1.13238507 9.80777594e-1 8.12903077e-1 5.52144455e-1 5.67414520e-1 7.50000000e-1
    6.97787623e-1 2.84524527
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    2.90000000e-1 2.90000000e-1 2.90000000e-1 2.90000000e-1 2.90000000e-1 2.90000000e-1
    2.90000000e-1 2.90000000e-1 2.90000000e-1 2.90000000e-1 2.90000000e-1 2.90000000e-1
    2.90000000e-1 2.90000000e-1 2.90000000e-1 2.90000000e-1 2.90000000e-1 2.90000000e-1
    2.90000000e-1 2.90000000e-1 2.90000000e-1 2.90000000e-1 2.90000000e-1 2.90000000e-1 1.33300000
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    2.90000000e-1 7.50000000e-1
    7.26064996e-1 4.82061098e-1 6.21018471e-1 4.53699350e-1 5.36776244e-1 1.20783008 4.36669292e-1
    5.83746261e-1 2.24695958 5.45113795e-1 2.43995990 1.62161577 5.15737804e-1 5.30300041e-1
    6.16540522e-1 5.56296615e-1 5.80615182e-1 8.07282226e-1 1.66862396 6.28722660e-1 7.50000000e-1
    9.41772708e-1 5.67250003e-1 7.50000000e-1 2.90000000e-1 7.50000000e-1 2.36320536
""",
    "BLOSUM50": """
    3.27354473
    6.87168642e-1 3.67565906
    8.87624875e-1 5.07294595e-1 1.82308935e1
    6.59704230e-1 4.02052534 4.27724382e-1 6.11147890
    7.97359654e-1 1.31892999 4.56030174e-1 1.65784569 4.43735647
    5.46298170e-1 3.83849184e-1 5.64985221e-1 3.37276799e-1 4.56055858e-1 6.63625360
    1.10130683 8.47577177e-1 5.24350848e-1 7.44468416e-1 5.39909105e-1 4.13949535e-1 5.79218671
    6.41220589e-1 1.11810068 5.17412429e-1 8.83789762e-1 9.11487897e-1 7.54714659e-1 6.01271290e-1
    1.04489376e1
    7.15157692e-1 4.07212168e-1 5.87186086e-1 3.70146565e-1 4.15558851e-1 9.89742646e-1
    3.70370366e-1 4.11545408e-1 3.41093885
    7.47622201e-1 9.68440788e-1 4.59864212e-1 8.90348134e-1 1.33108575 4.44979578e-1 6.54870319e-1
    9.45545516e-1 4.68297844e-1 3.88090096
    6.56954186e-1 3.91166888e-1 6.50074165e-1 3.72923686e-1 4.78428941e-1 1.26171801 3.76903001e-1
    5.47445792e-1 1.69677965 4.79194854e-1 3.32815910
    8.53472686e-1 5.16058658e-1 6.80946766e-1 4.35009775e-1 6.05096970e-1 1.05158910 5.19438610e-1
    7.60124356e-1 1.43810563 6.85231759e-1 1.78991633 4.81561797
    7.19514908e-1 3.26949213 6.01008569e-1 1.55790069 9.19771370e-1 4.38699901e-1 9.69013722e-1
    1.39406083 4.50866254e-1 1.06041456 4.12652855e-1 6.11514139e-1 5.28532229
    7.14770771e-1 6.61247189e-1 4.03060607e-1 7.09628659e-1 8.38805682e-1 3.75736079e-1
    6.20168128e-1 5.81906417e-1 5.11210841e-1 7.63679086e-1 4.43674459e-1 5.44813932e-1
    6.04265819e-1 1.02035160e1
    8.19913708e-1 9.98204754e-1 4.81296027e-1 9.66997497e-1 1.67134451 4.16967765e-1 6.41416113e-1
    1.20911332 5.02656404e-1 1.41855717 5.62937315e-1 9.59915799e-1 1.03495916 7.50499600e-1
    4.69722165
    6.68351460e-1 7.59007679e-1 4.27834290e-1 6.78533894e-1 9.76357610e-1 4.61789222e-1
    5.16985831e-1 9.81604707e-1 4.35318230e-1 2.06468049 5.54029894e-1 6.78015272e-1 8.53785837e-1
    5.18638945e-1 1.35733364 5.37787401
    1.36359270 1.06055276 8.29850973e-1 9.21480865e-1 8.82100970e-1 5.52981315e-1 9.99248542e-1
    8.22540644e-1 5.45643330e-1 8.92977250e-1 5.10605044e-1 6.82291911e-1 1.22434496 7.59438841e-1
    1.06872445 8.04499038e-1 3.14298812
    9.67331593e-1 9.55438618e-1 8.17890869e-1 8.25179634e-1 8.19031320e-1 5.70349305e-1
    6.36269018e-1 6.52641826e-1 8.60722536e-1 8.44796364e-1 7.59171671e-1 8.82308943e-1 1.10885139
    7.48565360e-1 8.10316946e-1 7.36510915e-1 1.49727124 3.55307500
    9.81625416e-1 4.46192804e-1 8.08665030e-1 4.31712984e-1 4.79075838e-1 8.59643167e-1
    4.02720033e-1 4.13620259e-1 2.31272269 5.22802406e-1 1.32427289 1.21329921 4.63246441e-1
    5.24438149e-1 5.57384267e-1 5.12488758e-1 6.78664919e-1 1.05992520 3.11745700
    4.63560176e-1 3.38571955e-1 3.12131245e-1 3.07050170e-1 5.48039829e-1 1.34807169 5.04888636e-1
    4.75002356e-1 5.22495607e-1 4.61593643e-1 6.01518374e-1 7.61522900e-1 3.75696800e-1
    4.20092966e-1 7.14705591e-1 5.28823677e-1 3.92328021e-1 5.02669810e-1 4.84839541e-1
    3.13609332e1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1
    5.96400452e-1 5.55905269e-1 5.38704705e-1 5.04473723e-1 6.51686488e-1 2.42442622 4.67274430e-1
    1.57000854 8.26095669e-1 6.67754286e-1 8.58373419e-1 9.17831903e-1 6.16478872e-1 4.68173126e-1
    7.42076535e-1 7.27125062e-1 6.51019697e-1 6.90730891e-1 7.27350506e-1 1.76515899 7.50000000e-1
    6.89283261
    8.05980349e-1 1.19634119 4.65687383e-1 1.39378711 3.38012103 4.41115461e-1 5.78707493e-1
    1.02524740 4.48849604e-1 1.36451940 5.10730048e-1 7.40717150e-1 9.63798879e-1 8.05053001e-1
    2.82790659 1.12197569 9.53432893e-1 8.15700480e-1 5.09007179e-1 6.11743441e-1 7.50000000e-1
    6.86235710e-1 3.16905156
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    2.90000000e-1 2.90000000e-1 2.90000000e-1 2.90000000e-1 2.90000000e-1 2.90000000e-1
    2.90000000e-1 2.90000000e-1 2.90000000e-1 2.90000000e-1 2.90000000e-1 2.90000000e-1
    2.90000000e-1 2.90000000e-1 2.90000000e-1 2.90000000e-1 2.90000000e-1 2.90000000e-1
    2.90000000e-1 2.90000000e-1 2.90000000e-1 2.90000000e-1 2.90000000e-1 2.90000000e-1 1.33300000
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    2.90000000e-1 7.50000000e-1
    6.80310043e-1 3.97605526e-1 6.24838486e-1 3.71809285e-1 4.53200481e-1 1.15257995 3.74281590e-1
    4.92911793e-1 2.38463611 4.74822110e-1 2.67352044 1.64874201 4.27987098e-1 4.70775405e-1
    5.38747839e-1 5.06393371e-1 5.24665180e-1 7.99921922e-1 1.72091725 5.69808181e-1 7.50000000e-1
    8.45421029e-1 4.85898712e-1 7.50000000e-1 2.90000000e-1 7.50000000e-1 2.55759716
""",
    "BLOSUM62": """
    3.90294070
    5.64459671e-1 4.43758048
    8.67987664e-1 3.45226274e-1 1.95765857e1
    5.44605275e-1 4.74290926 3.01454345e-1 7.39792738
    7.41264113e-1 1.33503378 2.85934574e-1 1.68781075 5.46952608
    4.64893827e-1 3.24101420e-1 4.38990118e-1 2.98969081e-1 3.30743991e-1 8.12879702
    1.05686961 7.38524318e-1 4.20387870e-1 6.34301019e-1 4.81267655e-1 3.40640908e-1 6.87630691
    5.69364849e-1 9.25449581e-1 3.55049505e-1 6.78558839e-1 9.60040718e-1 6.51990521e-1
    4.92966576e-1 1.35059997e1
    6.32481035e-1 3.33981361e-1 6.53458801e-1 3.39015407e-1 3.30522558e-1 9.45769883e-1
    2.75009722e-1 3.26288125e-1 3.99792994
    7.75390239e-1 8.54849426e-1 3.49128465e-1 7.84090406e-1 1.30827885 3.44043119e-1 5.88871736e-1
    7.78887490e-1 3.96372934e-1 4.76433717
    6.01945975e-1 2.97257620e-1 6.42275633e-1 2.86613046e-1 3.72873704e-1 1.15459749 2.84504012e-1
    3.80675486e-1 1.69443475 4.28270363e-1 3.79662137
    7.23150342e-1 4.04640322e-1 6.11354340e-1 3.46454634e-1 5.00342289e-1 1.00437163 3.95486600e-1
    5.84132623e-1 1.47774450 6.25302816e-1 1.99429557 6.48145121
    5.88307640e-1 4.07083696 3.97802620e-1 1.55385281 9.11298183e-1 3.54288952e-1 8.63711406e-1
    1.22200067 3.27934752e-1 9.39841129e-1 3.10043276e-1 4.74529655e-1 7.09409488
    7.54121369e-1 5.53838329e-1 3.79562691e-1 5.98716826e-1 6.79202587e-1 2.87444758e-1
    4.77385507e-1 4.72879831e-1 3.84662860e-1 7.03774479e-1 3.71121724e-1 4.23898024e-1
    4.99932836e-1 1.28375437e1
    7.56803943e-1 9.44103648e-1 3.65781531e-1 8.97081129e-1 1.90173784 3.33972402e-1 5.38649627e-1
    1.16798104 3.82937802e-1 1.55432308 4.77325586e-1 8.64250293e-1 1.00058442 6.41280589e-1
    6.24442175
    6.12698600e-1 7.02873767e-1 3.08939296e-1 5.73200024e-1 9.60797602e-1 3.80726330e-1
    4.49983999e-1 9.17048021e-1 3.54751311e-1 2.07680867 4.73919278e-1 6.22623369e-1 8.58630478e-1
    4.81534905e-1 1.40579606 6.66557707
    1.47210399 1.05798620 7.38415701e-1 9.13504624e-1 9.50357185e-1 4.39973597e-1 9.03596525e-1
    7.36731740e-1 4.43163582e-1 9.31919141e-1 4.28893743e-1 5.98558924e-1 1.23152924 7.55503259e-1
    9.65555228e-1 7.67165633e-1 3.84284741
    9.84401956e-1 8.26250098e-1 7.40551692e-1 6.94789868e-1 7.41425610e-1 4.81693683e-1
    5.79271582e-1 5.57503254e-1 7.79816110e-1 7.92905803e-1 6.60328975e-1 7.93801616e-1
    9.84152635e-1 6.88897122e-1 7.91320741e-1 6.77754679e-1 1.61392097 4.83210516
    9.36458396e-1 3.51280513e-1 7.55844055e-1 3.36500142e-1 4.28943130e-1 7.45089738e-1
    3.36954912e-1 3.39447442e-1 2.41751209 4.56542720e-1 1.31423573 1.26893679 3.69033853e-1
    4.43082984e-1 4.66777931e-1 4.20072316e-1 5.65223766e-1 9.80943005e-1 3.69215640
    4.16548781e-1 2.52855433e-1 4.49983903e-1 2.32102315e-1 3.74300212e-1 1.37437942 4.21690355e-1
    4.44088955e-1 4.08874390e-1 3.58930071e-1 5.68037074e-1 6.10296214e-1 2.77782896e-1
    2.81833164e-1 5.09360272e-1 3.95102106e-1 3.85303035e-1 4.30934144e-1 3.74456332e-1
    3.81077833e1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1
    5.42611869e-1 4.09444638e-1 4.34203398e-1 3.45683565e-1 4.96467354e-1 2.76938063 3.48714366e-1
    1.79790413 6.30388931e-1 5.32179333e-1 6.92059423e-1 7.08364628e-1 4.86030806e-1 3.63521119e-1
    6.11094097e-1 5.55965425e-1 5.57520051e-1 5.73156574e-1 6.58038693e-1 2.10980812 7.50000000e-1
    9.83220341
    7.47274948e-1 1.18382127 3.16819526e-1 1.38195506 4.08949895 3.31992746e-1 5.03463109e-1
    1.04047242 3.50796872e-1 1.40344922 4.13275887e-1 6.41102583e-1 9.45834265e-1 6.64534287e-1
    3.58149606 1.13292384 9.56235816e-1 7.60725140e-1 4.43577702e-1 4.26541694e-1 7.50000000e-1
    5.40805192e-1 3.89300249
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    2.50000000e-1 2.50000000e-1 2.50000000e-1 2.50000000e-1 2.50000000e-1 2.50000000e-1
    2.50000000e-1 2.50000000e-1 2.50000000e-1 2.50000000e-1 2.50000000e-1 2.50000000e-1
    2.50000000e-1 2.50000000e-1 2.50000000e-1 2.50000000e-1 2.50000000e-1 2.50000000e-1
    2.50000000e-1 2.50000000e-1 2.50000000e-1 2.50000000e-1 2.50000000e-1 2.50000000e-1 1.33300000
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    2.50000000e-1 7.50000000e-1
    6.14377313e-1 3.12208474e-1 6.46828489e-1 3.07946931e-1 3.55631838e-1 1.06958025 2.80638726e-1
    3.58533474e-1 2.63222650 4.15284382e-1 2.94078574 1.78399892 3.17327197e-1 3.76634549e-1
    4.38898727e-1 4.25403989e-1 4.34703235e-1 7.08974203e-1 1.76339815 5.03239261e-1 7.50000000e-1
    6.66952325e-1 3.87839626e-1 7.50000000e-1 2.50000000e-1 7.50000000e-1 2.81516607
""",
    "BLOSUM80": """
    4.77313697
    4.77250219e-1 5.36249708
    7.31790935e-1 2.52383415e-1 2.07020176e1
    4.50905428e-1 5.75921529 2.13899571e-1 9.10634223
    7.03141318e-1 1.26868736 1.79625278e-1 1.63552603 6.99475019
    3.96805472e-1 2.51452613e-1 3.94756499e-1 2.34434106e-1 2.48970812e-1 9.48547379
    9.57108118e-1 6.38679494e-1 2.72055621e-1 5.40654444e-1 3.99359878e-1 2.48796540e-1 7.88244144
    5.14428496e-1 8.30167261e-1 2.21322329e-1 5.94384672e-1 9.01259830e-1 5.71854758e-1
    3.87151686e-1 1.60694674e1
    5.43302985e-1 2.33516284e-1 5.81174860e-1 2.14047157e-1 2.64258683e-1 8.40573731e-1
    1.84455102e-1 2.57933576e-1 4.86762150
    7.22895459e-1 7.93249084e-1 2.41148280e-1 6.76875328e-1 1.19492933 2.82718808e-1 4.83435068e-1
    7.40110055e-1 3.13345237e-1 6.32564527
    5.04576848e-1 2.20539708e-1 4.92657548e-1 1.97166761e-1 2.75527698e-1 1.11429351 2.10542976e-1
    3.14299881e-1 1.66499837 3.56851811e-1 4.46305621
    6.25509899e-1 3.09639510e-1 4.99414247e-1 2.51946380e-1 4.28576433e-1 8.93330223e-1
    2.86067872e-1 4.32076355e-1 1.51247384 5.34403407e-1 2.12274889 8.88346290
    5.10109254e-1 4.86768283 3.00383113e-1 1.58444827 8.11140936e-1 2.72679266e-1 7.60943081e-1
    1.12425153 2.57799519e-1 9.38398440e-1 2.49692056e-1 3.81598352e-1 8.96275887
    7.71095354e-1 4.28138134e-1 2.69170214e-1 4.52407652e-1 5.81414067e-1 2.37160811e-1
    3.47300820e-1 4.19656882e-1 2.85790430e-1 5.96694133e-1 3.03099202e-1 3.61925345e-1
    3.97867522e-1 1.51545798e1
    6.95763501e-1 8.50001386e-1 2.95117493e-1 7.63275386e-1 1.90643780 2.85158291e-1 4.24585221e-1
    1.31555625 3.09071252e-1 1.52403165 4.06904090e-1 8.86557630e-1 9.58172021e-1 5.37994539e-1
    8.33990474
    5.55324683e-1 6.08526572e-1 2.32476995e-1 4.76639455e-1 8.31863127e-1 2.87269045e-1
    3.77442786e-1 9.25536475e-1 2.99348100e-1 2.19214139 3.62830591e-1 5.05866341e-1 7.73025258e-1
    4.45589871e-1 1.39424540 8.24459589
    1.53463504 9.48166786e-1 5.76114817e-1 7.74041684e-1 8.45039731e-1 3.69100895e-1 7.84315177e-1
    6.61407005e-1 3.78995471e-1 8.20193974e-1 3.68478686e-1 4.98438721e-1 1.16534759 6.51704179e-1
    8.58988713e-1 6.94509540e-1 5.10577131
    9.79634362e-1 7.43109762e-1 6.01733396e-1 6.10882957e-1 6.85529376e-1 4.45199900e-1
    4.92238430e-1 5.39570743e-1 7.00511896e-1 7.35729790e-1 5.60836408e-1 7.57959723e-1
    9.08032132e-1 5.60357280e-1 7.24369298e-1 5.98385216e-1 1.66260189 6.20547751
    8.65874830e-1 2.67977796e-1 6.34451252e-1 2.44693975e-1 3.69379335e-1 6.48888163e-1
    2.50954947e-1 2.88933760e-1 2.49584558 3.70194033e-1 1.22050154 1.22414515 2.97018980e-1
    3.70233083e-1 4.10943414e-1 3.53719047e-1 4.93679246e-1 8.91492247e-1 4.58356287
    3.09281009e-1 1.78830543e-1 3.02232769e-1 1.44774364e-1 2.40807712e-1 1.08939386 2.64396616e-1
    3.90225420e-1 3.43150987e-1 2.41427653e-1 4.38789464e-1 5.60653516e-1 2.21307752e-1
    1.78033069e-1 4.07901262e-1 2.94245493e-1 2.70773669e-1 2.85084781e-1 3.42175943e-1
    4.15522183e1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1
    4.36234494e-1 3.07187296e-1 3.07930831e-1 2.45193294e-1 3.32874109e-1 2.78024963 2.29516029e-1
    1.81930455 5.39308441e-1 4.08501941e-1 5.80503535e-1 5.49937808e-1 3.84510481e-1 2.57545983e-1
    4.61857147e-1 4.17775411e-1 4.62005069e-1 4.74451641e-1 4.89223745e-1 2.03605072 7.50000000e-1
    1.21940332e1
    7.00327585e-1 1.10900996 2.23671408e-1 1.30286928 5.05418243 2.62771902e-1 4.08980256e-1
    1.05926315 2.81349188e-1 1.32044155 3.25631695e-1 6.03240148e-1 8.67215281e-1 5.64854837e-1
    4.36001721 1.04634306 8.50359559e-1 7.00342047e-1 3.85230939e-1 3.04533429e-1 7.50000000e-1
    3.82065335e-1 4.78944345
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    1.40000000e-1 1.40000000e-1 1.40000000e-1 1.40000000e-1 1.40000000e-1 1.40000000e-1
    1.40000000e-1 1.40000000e-1 1.40000000e-1 1.40000000e-1 1.40000000e-1 1.40000000e-1
    1.40000000e-1 1.40000000e-1 1.40000000e-1 1.40000000e-1 1.40000000e-1 1.40000000e-1
    1.40000000e-1 1.40000000e-1 1.40000000e-1 1.40000000e-1 1.40000000e-1 1.40000000e-1 1.33300000
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    1.40000000e-1 7.50000000e-1
    5.20181427e-1 2.25768580e-1 5.28325329e-1 2.03968665e-1 2.70986883e-1 1.00399896 2.00030947e-1
    2.91587251e-1 2.95548558 3.39320970e-1 3.33558735 1.87684042 2.52958933e-1 2.96124685e-1
    3.67482647e-1 3.37250515e-1 3.72716393e-1 6.17118219e-1 1.73439753 4.00252232e-1 7.50000000e-1
    5.63904098e-1 3.07788194e-1 7.50000000e-1 1.40000000e-1 7.50000000e-1 3.18242650
""",
    "BLOSUM90": """
    5.49812903
    4.38682591e-1 5.85593083
    6.69393543e-1 2.24322103e-1 2.16370056e1
    4.10593787e-1 6.24911512 1.76054992e-1 9.87094836
    6.67362415e-1 1.23816514 1.47039970e-1 1.61092322 7.91072600
    3.46907686e-1 2.14608760e-1 3.92579579e-1 1.97472144e-1 2.04920324e-1 1.05190688e1
    8.55253386e-1 5.64122407e-1 2.18182122e-1 4.84699282e-1 3.47008914e-1 1.97046381e-1 8.29576319
    4.61993747e-1 7.82997018e-1 1.93552170e-1 5.46208942e-1 7.72534981e-1 5.10867985e-1
    3.35169505e-1 1.85636930e1
    4.75838329e-1 1.96621553e-1 5.20896357e-1 1.71646922e-1 2.37473636e-1 7.73236776e-1
    1.51428808e-1 2.32236241e-1 5.62471003
    6.64089300e-1 7.38810616e-1 2.15679622e-1 6.20942905e-1 1.07737256 2.73932585e-1 4.27685370e-1
    6.80230209e-1 2.84042165e-1 7.40971353
    4.46304927e-1 1.94127812e-1 4.25126435e-1 1.71021465e-1 2.37238651e-1 1.05058955 1.83265898e-1
    2.89296785e-1 1.59032509 3.18645229e-1 5.03145573
    5.48948177e-1 2.69937418e-1 4.27104871e-1 2.15937410e-1 3.61519510e-1 8.11125795e-1
    2.37360208e-1 4.06641319e-1 1.47982983 5.03980900e-1 2.07702392 1.13394084e1
    4.75350260e-1 5.34266045 2.87330927e-1 1.52110375 7.51559518e-1 2.36979230e-1 6.67802895e-1
    1.09210477 2.29223921e-1 8.92677413e-1 2.24291285e-1 3.40430076e-1 1.03313947e1
    7.12075051e-1 3.78549747e-1 2.30151009e-1 3.99848977e-1 5.28989676e-1 2.12448013e-1
    2.98989408e-1 3.99528365e-1 2.60766373e-1 5.54085013e-1 2.72188366e-1 3.16108504e-1
    3.50745318e-1 1.60877707e1
    6.37043670e-1 7.81147613e-1 2.42068607e-1 6.86343892e-1 1.83144568 2.80742738e-1 3.80871171e-1
    1.24778653 2.80218761e-1 1.48494120 3.74709469e-1 8.49621832e-1 9.04906229e-1 4.86643270e-1
    9.98642121
    5.31189855e-1 5.45762328e-1 2.06242089e-1 4.17577647e-1 7.31811567e-1 2.62210098e-1
    3.28608745e-1 8.70382542e-1 2.69951432e-1 2.15988586 3.26170372e-1 4.63059321e-1 7.13097098e-1
    4.09306303e-1 1.25897253 9.45518393
    1.45279278 8.70271567e-1 5.23756471e-1 6.96691332e-1 7.59912485e-1 3.33306129e-1 7.00460225e-1
    5.94270003e-1 3.32350183e-1 7.31921781e-1 3.38914311e-1 4.39100157e-1 1.09686657 5.93677872e-1
    7.86784913e-1 6.27094667e-1 5.99164849
    9.34706358e-1 6.66528685e-1 5.48342086e-1 5.29001708e-1 6.13331345e-1 3.90547453e-1
    4.00474342e-1 4.71855284e-1 6.20404233e-1 6.80549543e-1 5.07385737e-1 6.79030953e-1
    8.46059068e-1 4.80576271e-1 6.71486014e-1 5.25362150e-1 1.62868240 7.25868130
    7.93712275e-1 2.28904046e-1 5.88014943e-1 2.06199101e-1 3.33942314e-1 5.77272331e-1
    2.02269779e-1 2.49881715e-1 2.47466358 3.28415139e-1 1.13293282 1.13727027 2.58543521e-1
    3.23032809e-1 3.48766905e-1 3.16415957e-1 4.49399804e-1 8.04058132e-1 5.31607752
    2.83637106e-1 1.42810925e-1 2.50594014e-1 1.15609648e-1 2.02669731e-1 9.82154073e-1
    2.34021877e-1 3.84396440e-1 2.84494454e-1 1.74946435e-1 3.72830750e-1 4.92730381e-1
    1.78320001e-1 1.74477792e-1 3.51106744e-1 2.48889195e-1 2.30316670e-1 2.27083637e-1
    2.99756311e-1 4.26750567e1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1
    3.70274337e-1 2.77062678e-1 2.92512133e-1 2.13739536e-1 2.73296982e-1 2.77172979 1.88904853e-1
    1.62620965 4.78737209e-1 3.46172886e-1 5.08794972e-1 4.80316866e-1 3.59725936e-1 2.13074361e-1
    4.01714365e-1 3.62347797e-1 4.11583504e-1 4.20544390e-1 4.04621372e-1 1.77446682 7.50000000e-1
    1.36090374e1
    6.55892238e-1 1.06526643 1.82991170e-1 1.26113669 5.61081481 2.33605433e-1 3.59819671e-1
    9.52331980e-1 2.53644956e-1 1.23156378 2.89246563e-1 5.46178209e-1 8.09573592e-1 5.12969199e-1
    4.91663315 9.31246918e-1 7.70078852e-1 6.35332398e-1 3.39550748e-1 2.58826370e-1 7.50000000e-1
    3.21879801e-1 5.34819225
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    1.20000000e-1 1.20000000e-1 1.20000000e-1 1.20000000e-1 1.20000000e-1 1.20000000e-1
    1.20000000e-1 1.20000000e-1 1.20000000e-1 1.20000000e-1 1.20000000e-1 1.20000000e-1
    1.20000000e-1 1.20000000e-1 1.20000000e-1 1.20000000e-1 1.20000000e-1 1.20000000e-1
    1.20000000e-1 1.20000000e-1 1.20000000e-1 1.20000000e-1 1.20000000e-1 1.20000000e-1 1.33300000
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    1.20000000e-1 7.50000000e-1
    4.58271706e-1 1.95138263e-1 4.63931905e-1 1.71274897e-1 2.37333866e-1 9.38207661e-1
    1.70365676e-1 2.66176152e-1 3.22503669 3.04624249e-1 3.63712766 1.83504401 2.26289963e-1
    2.67560235e-1 3.36422330e-1 3.03390753e-1 3.36254561e-1 5.53180238e-1 1.67659508 3.37037347e-1
    7.50000000e-1 4.96615724e-1 2.74820979e-1 7.50000000e-1 1.20000000e-1 7.50000000e-1 3.47015056
""",
    "PAM30": """
    7.78912912
    3.02026381e-1 8.11766307
    1.07971742e-1 1.52757717e-02 2.75882699e1
    3.16807704e-1 8.45582330 7.71413760e-03 1.42349183e1
    4.53014491e-1 1.47233532 7.86819951e-03 2.34246282 1.36624533e1
    5.67768414e-02 2.69459344e-02 1.16056875e-02 6.53544516e-03 7.86638136e-03 2.14068164e1
    5.75744366e-1 3.37867839e-1 4.15734061e-02 3.26331184e-1 2.31589040e-1 4.44753676e-02
    9.31368857
    8.33329143e-02 6.63755159e-1 7.76695875e-02 2.71287596e-1 1.81505594e-1 1.31584637e-1
    4.78871557e-02 2.29276353e1
    1.98631007e-1 1.25827363e-1 1.19064797e-1 7.98669838e-02 1.49736909e-1 4.73011553e-1
    2.41395424e-02 4.36863126e-02 1.86346064e1
    9.54324770e-02 4.40914175e-1 7.78302876e-03 2.19798242e-1 2.26119978e-1 8.55473177e-03
    8.59403011e-02 1.19631443e-1 1.27210180e-1 9.98780825
    1.15281887e-1 4.89221062e-02 6.02160155e-03 1.38483017e-02 4.27891596e-02 4.15676862e-1
    2.78096704e-02 1.23251186e-1 6.43409762e-1 6.07412260e-02 1.00194105e1
    1.89338526e-1 3.39137767e-02 9.46008155e-03 2.29035955e-02 9.24578171e-02 2.49857403e-1
    5.67940501e-02 2.78547216e-02 7.92524183e-1 5.62560724e-1 1.24218990 4.65953079e1
    2.84890839e-1 7.72564409 2.40417467e-02 1.75629226 4.63622671e-1 5.06072009e-02 3.51241937e-1
    1.11873100 1.79107849e-1 6.97247226e-1 8.95821132e-02 4.66775487e-02 1.46457342e1
    5.93402017e-1 1.02509984e-1 6.32617140e-02 6.80928461e-02 1.53529752e-1 3.56716332e-02
    1.21951553e-1 2.47982049e-1 5.32543187e-02 1.06485246e-1 9.04970355e-02 6.48026667e-02
    1.42408737e-1 1.58088136e1
    2.35344432e-1 3.67813095e-1 8.13944094e-03 4.27289142e-1 1.50713628 1.12390799e-02
    9.44408638e-02 1.35964891 7.03383168e-02 3.84266618e-1 1.84988987e-1 2.71732304e-1
    2.98864303e-1 3.76066261e-1 1.81380436e1
    9.10275603e-02 8.23817770e-02 6.80179741e-02 2.95026156e-02 4.28627549e-02 4.18628794e-02
    3.97493058e-02 5.86952720e-1 1.58533228e-1 1.11121735 5.31753716e-02 2.43002286e-1
    1.43682999e-1 2.69813309e-1 5.84920778e-1 1.89240175e1
    8.75340369e-1 6.03773710e-1 3.79110970e-1 2.86012439e-1 2.25474962e-1 1.13897780e-1
    5.52895766e-1 1.31501535e-1 9.68805230e-02 2.59857530e-1 5.83025512e-02 1.60899996e-1
    9.72144796e-1 5.70573606e-1 1.67743101e-1 3.54610075e-1 9.02800848
    8.27084092e-1 3.53305100e-1 6.77518036e-02 1.99709663e-1 1.30340902e-1 5.14073961e-02
    1.35075690e-1 8.61653901e-02 4.44355269e-1 3.36316040e-1 1.02884887e-1 2.62669188e-1
    5.31363673e-1 2.40194503e-1 1.50331260e-1 1.06409795e-1 1.14463515 1.16950751e1
    4.77504036e-1 6.71234492e-02 1.32369559e-1 6.47860871e-02 1.09854687e-1 6.66400959e-02
    1.48994667e-1 1.14978024e-1 1.93788392 4.62631009e-02 4.62744892e-1 6.30878126e-1
    6.98330827e-02 1.40453450e-1 1.02742037e-1 7.42726505e-02 1.17807053e-1 3.90871695e-1
    1.16090589e1
    9.76867708e-03 3.23783774e-02 4.67559620e-03 5.42804139e-03 3.23568839e-03 2.13219283e-1
    5.68401675e-03 8.12035191e-02 9.23811792e-03 1.75142268e-02 1.27405990e-1 1.29243603e-02
    6.36210916e-02 9.02230244e-03 1.20726953e-02 5.17051285e-1 1.79210510e-1 1.25703039e-02
    5.05672115e-03 8.86903633e1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1
    6.99222384e-02 1.13742904e-1 2.57579768e-1 1.97046510e-02 5.65446816e-02 1.78617980
    9.25861867e-03 3.23746871e-1 1.18573178e-1 4.16645387e-02 9.50388211e-02 2.12719960e-02
    2.22758622e-1 9.80486654e-03 1.69239569e-02 3.01584225e-02 9.65415148e-02 1.11995399e-1
    8.04763342e-02 1.73378233e-1 7.50000000e-1 2.84454162e1
    3.58158006e-1 9.91005473e-1 7.98640138e-03 1.50786644 8.36539662 9.33613946e-03 1.71822465e-1
    6.94918113e-1 1.15136508e-1 2.95037286e-1 1.04757148e-1 1.70582240e-1 3.91824098e-1
    2.50506944e-1 8.75457039 2.79081365e-1 2.00316511e-1 1.39052321e-1 1.06755129e-1 7.08668846e-03
    7.50000000e-1 3.92787209e-02 8.53499117
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    3.00000000e-03 3.00000000e-03 3.00000000e-03 3.00000000e-03 3.00000000e-03 3.00000000e-03
    3.00000000e-03 3.00000000e-03 3.00000000e-03 3.00000000e-03 3.00000000e-03 3.00000000e-03
    3.00000000e-03 3.00000000e-03 3.00000000e-03 3.00000000e-03 3.00000000e-03 3.00000000e-03
    3.00000000e-03 3.00000000e-03 3.00000000e-03 3.00000000e-03 3.00000000e-03 3.00000000e-03
    1.33300000
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    3.00000000e-03 7.50000000e-1
    1.40431646e-1 7.21274943e-02 4.01312493e-02 3.37687752e-02 7.50595678e-02 4.32977029e-1
    2.67022462e-02 9.92432853e-02 6.07207247 8.07975645e-02 7.19029657 1.10650779 1.16595604e-1
    7.92594202e-02 1.50394300e-1 8.49660454e-02 6.99430663e-02 2.05920141e-1 9.07853260e-1
    9.17500230e-02 7.50000000e-1 1.02140077e-1 1.07889016e-1 7.50000000e-1 3.00000000e-03
    7.50000000e-1 6.85288369
""",
    "PAM70": """
    4.89972946
    6.04638890e-1 5.42142610
    2.42067963e-1 6.60540784e-02 2.48333286e1
    6.18433760e-1 5.88929014 3.97130183e-02 8.89965209
    7.71213936e-1 2.24885858 3.87120726e-02 3.35659301 8.65385421
    1.34833512e-1 7.88958522e-02 5.48382532e-02 3.36340414e-02 3.82398528e-02 1.74546228e1
    1.01498720 6.48829213e-1 1.15679023e-1 6.39387415e-1 4.91841782e-1 1.00136016e-1 7.30864335
    2.21390981e-1 1.09845328 1.64834856e-1 5.99746161e-1 4.80150693e-1 2.76577280e-1 1.45138751e-1
    1.64223829e1
    4.34566961e-1 2.52789787e-1 2.46442788e-1 1.93031482e-1 2.83623924e-1 8.45971180e-1
    1.07004308e-1 1.39752446e-1 1.17505537e1
    2.49319770e-1 7.77906911e-1 3.83065039e-02 4.83846284e-1 4.66181910e-1 4.12894272e-02
    2.09861286e-1 3.35085062e-1 2.66278255e-1 7.61026217
    2.49736666e-1 1.19715714e-1 3.01944614e-02 6.35580693e-02 1.17487568e-1 8.23804865e-1
    8.09786598e-02 2.59072609e-1 1.19239531 1.52754534e-1 8.22843955
    3.75829845e-1 1.39730820e-1 4.42379868e-02 1.03502951e-1 2.12426533e-1 5.08442478e-1
    1.44276056e-1 1.22395235e-1 1.36908981 9.47937549e-1 2.12939550 2.85861616e1
    5.88646912e-1 4.87904539 9.65904773e-02 2.39946804 9.64695360e-1 1.31366508e-1 6.59774806e-1
    1.67658945 3.22065793e-1 1.11880255 1.84817584e-1 1.81728699e-1 7.75354485
    1.03045017 2.73736473e-1 1.58823055e-1 2.12686642e-1 3.47480663e-1 8.91727264e-02 3.08399509e-1
    4.92867985e-1 1.59577365e-1 2.56118662e-1 1.98778178e-1 1.75926195e-1 3.44509706e-1
    1.18714088e1
    4.65602795e-1 7.90138593e-1 3.93861754e-02 9.22524100e-1 2.25815498 5.25046736e-02
    2.37177521e-1 2.18832010 1.89299534e-1 7.21669881e-1 3.50784854e-1 4.86044449e-1 6.36668056e-1
    6.84263791e-1 1.14706864e1
    2.26934456e-1 2.53425041e-1 1.51302811e-1 1.38560979e-1 1.78914910e-1 9.93639027e-02
    1.22086776e-1 1.05779530 3.01479599e-1 1.93666556 1.37359422e-1 4.88080973e-1 3.86583495e-1
    5.26778639e-1 1.02361055 1.36584013e1
    1.34964157 9.54703234e-1 6.65193229e-1 5.99713481e-1 4.78627630e-1 2.15603624e-1 9.64187863e-1
    3.26721114e-1 2.53646367e-1 5.20459614e-1 1.48574310e-1 3.18976045e-1 1.36623218 9.79291808e-1
    3.73519396e-1 6.10010848e-1 5.20445832
    1.32707297 6.53688648e-1 1.86417892e-1 4.42110174e-1 3.38114944e-1 1.37600314e-1 3.70424893e-1
    2.30266854e-1 7.61111058e-1 6.20196625e-1 2.40326213e-1 4.97701201e-1 8.98965212e-1
    5.30644206e-1 3.29322200e-1 2.83658630e-1 1.69490837 7.33707214
    8.08640731e-1 1.85063408e-1 2.74442219e-1 1.72922381e-1 2.46972907e-1 2.07856659e-1
    3.12986176e-1 2.33270842e-1 3.00374358 1.38845936e-1 9.08401895e-1 1.13284160 1.99138136e-1
    3.07279290e-1 2.32053434e-1 1.75829089e-1 3.03324606e-1 7.18561720e-1 8.21110545
    4.32618091e-02 7.80441148e-02 2.22251459e-02 2.64171458e-02 1.89756038e-02 4.52242030e-1
    2.68996967e-02 1.86063506e-1 4.36969076e-02 7.91911207e-02 2.67168548e-1 5.97810639e-02
    1.37893708e-1 4.18182164e-02 5.49721446e-02 9.90780192e-1 3.23868004e-1 5.45397612e-02
    2.66588959e-02 8.06167129e1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1
    1.54222102e-1 2.23329473e-1 5.23320532e-1 7.98817496e-02 1.19141830e-1 3.37849562
    4.37757319e-02 6.11386658e-1 2.80489781e-1 1.00771644e-1 2.38980900e-1 9.73038916e-02
    3.89624106e-1 4.66910129e-02 7.38645866e-02 8.59463892e-02 2.08076540e-1 2.27833757e-1
    1.80843519e-1 3.76692625e-1 7.50000000e-1 2.31438270e1
    6.38034395e-1 1.61317606 3.90058338e-02 2.29587193 5.86672974 4.44561913e-02 3.80863925e-1
    1.22453853 2.42519143e-1 5.77518724e-1 2.19154102e-1 3.31664034e-1 8.21747280e-1 4.94244365e-1
    6.27280154 5.47017256e-1 4.32823454e-1 3.34283233e-1 2.40471284e-1 3.46622138e-02 7.50000000e-1
    9.94108657e-02 6.04368813
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    2.00000000e-02 2.00000000e-02 2.00000000e-02 2.00000000e-02 2.00000000e-02 2.00000000e-02
    2.00000000e-02 2.00000000e-02 2.00000000e-02 2.00000000e-02 2.00000000e-02 2.00000000e-02
    2.00000000e-02 2.00000000e-02 2.00000000e-02 2.00000000e-02 2.00000000e-02 2.00000000e-02
    2.00000000e-02 2.00000000e-02 2.00000000e-02 2.00000000e-02 2.00000000e-02 2.00000000e-02
    1.33300000
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    2.00000000e-02 7.50000000e-1
    3.05507349e-1 1.59869478e-1 9.54452197e-02 1.02625370e-1 1.67617543e-1 8.30493328e-1
    8.88316375e-02 2.23068949e-1 4.37821344 1.87009175e-1 6.10538395 1.89998090 2.26230851e-1
    1.86949727e-1 3.02058283e-1 1.86881035e-1 1.80278747e-1 3.97467804e-1 1.54065018 1.99738227e-1
    7.50000000e-1 2.51505787e-1 2.26204268e-1 7.50000000e-1 2.00000000e-02 7.50000000e-1 5.58422761
""",
    "PAM250": """
    1.51578006
    1.05606466 1.84257846
    6.26687137e-1 3.65113184e-1 1.56285624e1
    1.07002228 2.05195422 3.06772262e-1 2.43292288
    1.07474947 1.82470118 2.94964746e-1 2.19715052 2.41404373
    4.46290560e-1 3.54071966e-1 3.70976416e-1 2.73911818e-1 2.87098831e-1 8.02764197
    1.33923306 1.11918465 4.59297624e-1 1.14726861 1.04389169 3.32339414e-1 2.99056680
    7.32178470e-1 1.29683470 4.51836855e-1 1.17343465 1.16525001 6.59545216e-1 6.15552047e-1
    4.47513035
    8.88728816e-1 6.16970770e-1 5.87603719e-1 5.79909835e-1 6.26339428e-1 1.26203255 5.57103314e-1
    5.70614299e-1 2.83022396
    7.66227814e-1 1.13010166 2.86099293e-1 1.01987501 9.87756703e-1 2.98137999e-1 6.78509416e-1
    9.90160946e-1 6.40800116e-1 2.92620120
    6.46341735e-1 4.52559218e-1 2.47791243e-1 3.98183329e-1 4.63568053e-1 1.51752623 3.94686522e-1
    6.20055020e-1 1.74919442 5.18814877e-1 3.92994485
    7.70359541e-1 6.04775077e-1 2.99408166e-1 5.48083233e-1 6.13603630e-1 1.04274830 5.25369171e-1
    6.09441413e-1 1.64986005 1.09961986 2.33771776 4.40351686
    1.03988401 1.59985542 4.32746060e-1 1.61030872 1.39293185 4.46999215e-1 1.08662777 1.43988866
    6.59934398e-1 1.25788411 5.15595552e-1 6.70496227e-1 1.58773724
    1.29408826 8.46142888e-1 5.27421501e-1 8.05577240e-1 8.79669521e-1 3.50828021e-1 8.94077901e-1
    9.46471632e-1 6.27243837e-1 7.70516817e-1 5.56038228e-1 6.21012433e-1 8.93169424e-1 3.84141803
    9.03456780e-1 1.33890747 2.89534285e-1 1.46152937 1.77158803 3.43119584e-1 7.57447784e-1
    1.96194975 6.25316723e-1 1.18387275 6.65507525e-1 7.95710012e-1 1.19675558 1.05550534
    2.54088209
    7.00798809e-1 8.61808201e-1 4.30504374e-1 7.42874842e-1 7.82149443e-1 3.58749728e-1
    5.54986868e-1 1.43036819 6.29014923e-1 2.18168472 5.01008003e-1 9.04471250e-1 9.99684066e-1
    9.60208581e-1 1.33504131 4.07760419
    1.28966428 1.11706882 9.89678273e-1 1.06886174 9.98597151e-1 4.78353203e-1 1.27845679
    8.30226277e-1 7.22513707e-1 9.61645918e-1 5.24107036e-1 6.98581457e-1 1.17295383 1.24349521
    8.89983529e-1 9.28286966e-1 1.44062735
    1.31725380 1.03197349 6.01385571e-1 9.67471640e-1 9.13853001e-1 4.88459165e-1 9.98770702e-1
    7.40733381e-1 1.01665478 9.95647751e-1 6.77040993e-1 8.73067477e-1 1.10674855 1.07552180
    8.32948914e-1 8.20208528e-1 1.36207698 1.80640078
    1.04499203 6.37811920e-1 6.38902701e-1 6.11601820e-1 6.60440693e-1 7.66309017e-1 7.34634729e-1
    5.96692220e-1 2.33821719 5.70096500e-1 1.53178711 1.51039751 6.68196499e-1 7.58279920e-1
    6.49448913e-1 5.61449723e-1 7.99071364e-1 1.06764169 2.69825619
    2.63609841e-1 2.96793416e-1 1.68818010e-1 2.12712296e-1 2.00637717e-1 1.07668873 2.00363838e-1
    5.44285116e-1 3.02670201e-1 4.50323287e-1 6.46886104e-1 3.74941590e-1 3.94266130e-1
    2.75343404e-1 3.35176014e-1 1.65111328 5.65535441e-1 3.05841935e-1 2.36794202e-1 5.26606678e1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1
    4.49686798e-1 4.85608019e-1 1.07830459 3.69025897e-1 3.71943861e-1 4.97590308 2.99613619e-1
    9.78877039e-1 7.99863687e-1 3.59829368e-1 8.14904569e-1 5.67675865e-1 6.20758168e-1
    3.20901839e-1 3.94549334e-1 3.78768704e-1 5.19882078e-1 5.30232118e-1 5.65836205e-1
    9.69642510e-1 7.50000000e-1 1.03387565e1
    1.00010336 1.61300149 2.92598254e-1 1.87658077 2.13407372 3.11511613e-1 9.19064864e-1
    1.51243666 6.25893752e-1 1.07322036 5.51569446e-1 6.92962139e-1 1.30744195 9.56295438e-1
    2.10683180 1.02308924 9.51265394e-1 8.78596534e-1 6.55650683e-1 2.59266956e-1 7.50000000e-1
    3.81794898e-1 2.12220220
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    1.70000000e-1 1.70000000e-1 1.70000000e-1 1.70000000e-1 1.70000000e-1 1.70000000e-1
    1.70000000e-1 1.70000000e-1 1.70000000e-1 1.70000000e-1 1.70000000e-1 1.70000000e-1
    1.70000000e-1 1.70000000e-1 1.70000000e-1 1.70000000e-1 1.70000000e-1 1.70000000e-1
    1.70000000e-1 1.70000000e-1 1.70000000e-1 1.70000000e-1 1.70000000e-1 1.70000000e-1 1.33300000
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1 7.50000000e-1
    1.70000000e-1 7.50000000e-1
    7.19479599e-1 5.02168751e-1 3.50326241e-1 4.53017475e-1 5.12682678e-1 1.44043358 4.43694156e-1
    6.05136779e-1 2.07538421 5.55622697e-1 3.27192533 2.13016362 5.59148347e-1 5.77523805e-1
    6.53380354e-1 5.39632804e-1 5.83974254e-1 7.79516037e-1 1.77511928 5.43022417e-1 7.50000000e-1
    8.10366134e-1 5.73996058e-1 7.50000000e-1 1.70000000e-1 7.50000000e-1 2.91088108
""",
}

# Joint probabilities (the 20 x 20 target frequencies, lower triangle, order
# A R N D C Q E G H I L K M F P S T W Y V) and background frequencies of every matrix, as
# Blast_GetJointProbsForMatrix and Blast_GetMatrixBackgroundFreq of
# libcomposition_adjustment.so 2.12.0 return them (matrix_frequency_data.c).
_JOINT_PROBS = {
    "BLOSUM45": """
    0.01806785919219965
    0.002863297028002919 0.012981201352308378
    0.0025852716092104864 0.0019658257815459023 0.007850147003471189
    0.0026802872542729885 0.0020049066095474076 0.0031259558053206788 0.013237563732845571
    0.0014721761726112878 0.0005799113200737929 0.0006694155441209358 0.0006226537455270339
    0.009441287407673988
    0.0024357016851740214 0.0024961427104605 0.001552481780465198 0.0017098653558570117
    0.0004104202590218276 0.005684372926829691
    0.0037509741193044975 0.0030703156814048727 0.0021724722312522963 0.004743601269964299
    0.0007445858578222004 0.003193862284965126 0.013069658477215567
    0.006339237106086777 0.0022360083825481514 0.0033237456813136586 0.0027602948240886133
    0.0009813905613010392 0.0018500970336630773 0.0025107356320500625 0.028511624448995753
    0.001269197441090731 0.001261722400281307 0.0012666696726132058 0.0012034182798676748
    0.00028594866937112776 0.0010245276847880554 0.001385238252927691 0.0012310524422167546
    0.0058487547639124796
    0.003617905986325506 0.0015810689324881372 0.0014625067095661482 0.0013552305161392132
    0.0007898115697892465 0.001284919726446263 0.0017450831790645173 0.0019327062043969442
    0.0006958584680060971 0.012388694439401509
    0.005226706734912183 0.0029473459585734607 0.0018988677499765833 0.0021559462215056625
    0.0014823588205010103 0.0021618326111720785 0.0031086857110181228 0.0031643945035180797
    0.001557346761310215 0.009264756698543214 0.0263465304174802
    0.00369161911275731 0.006095389370006629 0.0028106528553236663 0.00280907784444025
    0.0007710611471067531 0.0028660992672576535 0.0044504838476236725 0.0030499894759105127
    0.00132456941200328 0.001977320382474649 0.003114209808232864 0.011978396089560937
    0.0016118871872377726 0.001017543065019533 0.0007158326190598833 0.0006164339773888902
    0.0003558631861368668 0.0008470244761254212 0.0008957149647055045 0.0010995162153881082
    0.0005709065169932386 0.0022593292403687306 0.004071163882726104 0.0011104403771137466
    0.0025874360305861857
    0.0021340510849853227 0.0014313644854523438 0.0011127971670944336 0.000994899401774694
    0.0006565748932752701 0.000739602931898865 0.0013425662787911086 0.0016723363525115967
    0.0007818283207883408 0.003057545784464253 0.0056719761997807835 0.0014742483750212233
    0.0012371987255888946 0.012391203870190888
    0.0023620871424910785 0.0012956809668774457 0.001142208767186773 0.001533410526361098
    0.00041203914885321426 0.0010946565407497567 0.002253686374002267 0.002242953532717233
    0.0006984496240939799 0.001607738506801879 0.001908818534816865 0.0019968025222690676
    0.0006876567746344433 0.0008923622126329676 0.01600409811915946
    0.006225357310024341 0.0025563801601305607 0.003073044662388059 0.002826870992700114
    0.0011459765491404468 0.002398943084635732 0.0032415108480856065 0.004853684968285014
    0.001296032517751428 0.0023421848303183976 0.003187327981378552 0.00326688124359461
    0.0010131873446874034 0.0017312816295078565 0.0019539606804874826 0.010412392255159685
    0.004110454128845098 0.001963260804507791 0.002450135452435592 0.002286563244717886
    0.0010139516933242551 0.0014716698819858265 0.0025397857261280324 0.0027272360099530155
    0.0009193160787724996 0.002754271178114161 0.0038426846085017905 0.0027862613227875948
    0.0011327846844696357 0.0017453918151105632 0.0019148086102650892 0.004729138316067806
    0.008649728402498202
    0.0005915058801980818 0.0004055639755757836 0.00021811180797041274 0.0002481478483191889
    0.00010481557906271918 0.00030973861280282215 0.0004032764849740849 0.0005927112042822332
    0.00014976351019639964 0.00046749463838911354 0.0008408204615324071 0.0004504377280061543
    0.0002126584970455557 0.0008409524527499308 0.00029896951765680344 0.00035033107367116276
    0.00031868671219664247 0.005307762585866846
    0.0016885104821419373 0.0014263902102458958 0.0008568799515946164 0.0010831280925706914
    0.0003881842993807995 0.0010059662375582828 0.0012098752538504236 0.0013911803421160626
    0.0012330522291934879 0.0018956764459114616 0.0030567323782711214 0.001494088830242469
    0.0008668003426908045 0.0034263744717066835 0.0006890712208064848 0.0014588588725561497
    0.001318435527130367 0.0008132834721733859 0.006565813033289405
    0.00553061016895798 0.0021140813134646885 0.001616211653297441 0.0017172231262216453
    0.0011756651305043552 0.0013753940441066036 0.002256753443026674 0.002514667660718608
    0.000792466982006835 0.009426782216751079 0.008750301001633118 0.0024843185667476147
    0.0021688399348504966 0.003094698471683614 0.0016099029423219423 0.0031161052123834937
    0.0038213223234837145 0.00044278005713663357 0.0019130855013886519 0.014058608660834061
""",
    "BLOSUM50": """
    0.019177376165900414
    0.0027240376714546557 0.01524951856166919
    0.002403149299228151 0.00198393392171711 0.010064274648985122
    0.0025950400141435646 0.0018569646551144466 0.0034938528463521034 0.016142284245400377
    0.001516114150346608 0.0005084114555863481 0.0005852658039353581 0.000490557960148485
    0.009079081639987416
    0.0021916331677173605 0.0025241992415035875 0.0015772225567522585 0.0017355972391605227
    0.00037509694198458956 0.00572887809467007
    0.003444827891463962 0.002934671460039124 0.002265495521531444 0.004809293246293073
    0.0005744316769483405 0.003294640715935902 0.01413773886096205
    0.0062251471153775524 0.002033092924856633 0.0031227790949497 0.0028256049847966923
    0.0008641612574141322 0.001654283596173813 0.0022506310350989874 0.03159033419954977
    0.0012127849526349368 0.0012916661377324677 0.0015032392778514345 0.0011224039610689225
    0.000285328220327271 0.001043451230608596 0.0012713631289270268 0.0010972793065146165
    0.006380488211827152
    0.0035067963781079273 0.0014850904029213015 0.001260452592428299 0.0012187267471037043
    0.0008394909546163077 0.0011246276733803604 0.0015027392767795753 0.0017523277816042203
    0.0006515262678536066 0.01399975700127428
    0.004806417518791938 0.0028200506536265085 0.0017212395367610532 0.0018320202151810498
    0.0013866946702884293 0.0018792097500823605 0.0025813459827982222 0.002660641650020663
    0.0012931025418026663 0.010390816757632199 0.030409269773873687
    0.0033118156445774184 0.0063631786906688794 0.00267811792729463 0.002648303170100768
    0.0005939434626864156 0.002867210747979677 0.004348428785700749 0.0027990435215878512
    0.001352296231067518 0.001736376707066582 0.0026510115013545226 0.012999587798271149
    0.0015929928229676674 0.0008804424416323716 0.0006507298734960904 0.0005451890086020805
    0.0003705688278162992 0.0008174969523642363 0.0008328974554417706 0.0009354677086267561
    0.00045805146362189403 0.0022467399442463766 0.004172270189350731 0.0009671074584631902
    0.0028637130884961
    0.002011146253433483 0.001182755570461382 0.0009207707072665923 0.0008337277544314403
    0.0006064325812197591 0.0007003984896871136 0.0012381529956170115 0.001470387115210026
    0.0008970200048334167 0.0030498186875911964 0.00580085103707602 0.0012387025901401758
    0.0012334264856852042 0.015352527520022995
    0.0022367690269707355 0.0011291633722052721 0.0010780835837505738 0.0014911089792375384
    0.000367753012980717 0.0010716022846036992 0.0019357892959573676 0.0018725532583338258
    0.0005879128274916336 0.0013390359572833434 0.001733940881393821 0.0018070838729286381
    0.0005431951027322254 0.0007388907957731868 0.017056411057608904
    0.006207737246777811 0.002548070777999288 0.0031777703084905646 0.0028168184837142236
    0.00110148933015839 0.002219950091780782 0.00296148352999897 0.004389272670664318
    0.0012089586814863836 0.0020791955470136677 0.002903014870512971 0.0030739875836290694
    0.0009896284340729063 0.001581984107616179 0.0018468214541146135 0.011119087492164673
    0.00391827285857147 0.0020755623893205866 0.0025607235691682607 0.0022443557004503045
    0.0009659311983963818 0.0014976248429072652 0.002446595534041875 0.002486740459647423
    0.0008534923668549741 0.0029182353019045755 0.0038403853123581615 0.0025875240617244397
    0.0011386579188117374 0.001451788068138867 0.0016196921560667427 0.004713001064093922
    0.009951122572089873
    0.0004863173951095928 0.0003859774010252584 0.00022470939491808472 0.00021629521399451062
    9.547341541568705e-05 0.0003421130767715626 0.00042400226067181517 0.0005110691440104794
    0.00016088475111162087 0.00045881135439627285 0.0007880941166990205 0.0003661732048588877
    0.0002545364238101293 0.0008887296632783921 0.0002354195595323463 0.00031984588103465904
    0.00036462369214353146 0.005891765332723267
    0.0015289255743243066 0.0012968650803478032 0.0009010245575371931 0.0008683820045423804
    0.0004026527598510058 0.0008680123235573585 0.0012320532047293646 0.001155821524253414
    0.0012994388028749182 0.001772623716546032 0.002748148170378477 0.0012944286682925433
    0.0007496608244668932 0.0039057132596179516 0.000641118502679284 0.001296941122357514
    0.0012243502023766173 0.0008103543864476144 0.007732565160543309
    0.0054421693501580945 0.0019767324973351923 0.001464226958319167 0.0016071086977600263
    0.001307153080302891 0.0014099696811263587 0.001958722401725062 0.0021542687026690753
    0.0007403438865511633 0.010732172589653342 0.00916894248936574 0.0021916787299081464
    0.00214312478835708 0.0029949355095799514 0.0015531163167895289 0.0029238790831836834
    0.004063028518210787 0.0004813567510758473 0.0017646048865917325 0.01635618747879513
""",
    "BLOSUM62": """
    0.021497573378347484
    0.0023470224274721213 0.01775746511838632
    0.001949323525887618 0.0019786027128591904 0.01414029197255361
    0.002167484485306686 0.0015865480081162602 0.0037201973506001745 0.02127457461748009
    0.0015903351423026848 0.00039365984789376245 0.00043845466068066216 0.00039909227141697264
    0.011931352277704348
    0.0019242657898716525 0.002485861108973141 0.0015304436972610567 0.0016481246723433428
    0.00030937204045913537 0.007329225546718969
    0.002987905929279964 0.002693386754877176 0.002209715682973876 0.0049158017471929655
    0.00038338775043186374 0.0035385780499965817 0.01613392747216367
    0.005815852638805103 0.0017221140903704937 0.0028591871815612977 0.0025221102126636373
    0.0007695197603009929 0.001368303803916017 0.0019380952488713059 0.0378043464534133
    0.0011076584657559144 0.0012407382229440791 0.001430107261618318 0.0009538484940214398
    0.00022976387481074697 0.0010489026828741754 0.0013667885452189439 0.0009581360725588724
    0.009280250236933662
    0.003188064474633458 0.0012435878276496955 0.0009943722116692317 0.0012347404942429857
    0.0010956590131781735 0.0008910293602657157 0.0012192061706431622 0.0013849118546156933
    0.0005808962708301921 0.018441526588740136
    0.004418624546847155 0.0024193952633248727 0.0013690958423974782 0.0015202051791453383
    0.0015682982157153873 0.0016174411456311808 0.002003031602664843 0.0020864716056392773
    0.000986966084632361 0.011382470627796603 0.037141460156350926
    0.0033466571942021082 0.006233906028940708 0.002440210514084109 0.002445308772198056
    0.0005012492937903378 0.0030968229715707327 0.00413226037203052 0.0025392537741810947
    0.0011873625842258938 0.0015655862274689192 0.002463434502322808 0.016113385590544604
    0.0013412107617355408 0.0008030946171252088 0.0005294363306922651 0.00046429229320514104
    0.00037717165634097634 0.0007399325872270127 0.0006790974546751478 0.000732815597496524
    0.00038264639620910225 0.0025081290988482057 0.004929354551518309 0.0009087663339555762
    0.004047730932196985
    0.0016360627863999076 0.0009318198632378983 0.000750042279781928 0.0007602372241311157
    0.0005138999154705683 0.0005425514797214391 0.0008517940586751314 0.0011976708695723554
    0.0008104107633556558 0.0030458868657559346 0.0054151301166464015 0.0009487514977368536
    0.0011901770463553603 0.018277684015431908
    0.0021568959784943114 0.000957830343327187 0.0008601645985777003 0.0012373315413524663
    0.00036111795849154795 0.0008466818175206687 0.0014216207127018586 0.0013641171883713547
    0.00047770135861914477 0.0010068164685944146 0.00141460903993819 0.001577302091256439
    0.0004082444521345692 0.0005252802175678381 0.019066033679132538
    0.00625249874198154 0.002266089863603726 0.0031466019144814608 0.002803512790169727
    0.0010432626586831986 0.0018931125300036275 0.002953918065360009 0.0038342830901664762
    0.0011052034635193162 0.001722508168917156 0.002427710707201382 0.003101606999948111
    0.0008560378763855277 0.00119396181859016 0.001666256793488305 0.012585947097159817
    0.0037180506975672363 0.0017802796534180537 0.0022360795375444384 0.0018961512776990257
    0.0009304131372693906 0.0013796838284921874 0.0020493063257644955 0.002185845994098706
    0.0007437174607307733 0.0026953622613315018 0.0033238031308707055 0.0023467014804084987
    0.0010095451907679563 0.001162418436975068 0.001351100566572887 0.004700485768683533
    0.012514818886617953
    0.0004028167910893669 0.00026571979312581875 0.00016159545671597605 0.00016218020183662784
    0.00014474923964368156 0.0002273793136672889 0.0002648855258718378 0.0004074082908380525
    0.00015168037757411286 0.0003618376116607285 0.0007320664061783293 0.00027198500003555514
    0.0001987253722313138 0.0008491746895237787 0.00014152209821874487 0.00028731729176487776
    0.0002857577085846721 0.006469930171715485
    0.0012999956675626666 0.0009263460711125192 0.0007004842279402482 0.000598422639378537
    0.00034603772624580643 0.0006758415531245784 0.0008704418625678866 0.0008346741301810618
    0.0015213771111755425 0.0013821121844492116 0.0022096734692836624 0.000999088665868764
    0.0005714528835283145 0.004239200574563437 0.0004522439112528591 0.0010299846310599138
    0.0009416103989561272 0.0008874416025927253 0.01024610021382242
    0.005067905644450891 0.0015810185245264004 0.0012014015528772706 0.001315836566053827
    0.0013606607271146112 0.0011660966117775285 0.001698776352626268 0.0018218235950233687
    0.0006488290776579767 0.011972663837662637 0.009478626303045731 0.0019360424083099779
    0.0023123361470140736 0.002576305222792018 0.0012451325046931832 0.002358729205326556
    0.0036402328079338207 0.00035578318710317554 0.0015489827890922993 0.01963191514053764
""",
    "BLOSUM80": """
    0.025190801261944146
    0.0020340063576029794 0.02095761928483571
    0.001593445045678786 0.0016758487367421928 0.016571102507116985
    0.0017567882204091898 0.0012888167784480715 0.0036538256029687933 0.026192308612565114
    0.0015342531535382758 0.00033826512646630144 0.00037275314562150083 0.0003310669111831827
    0.017242275829262476
    0.001700066657109103 0.0023643445818728338 0.0013857458787672526 0.0013768335120404338
    0.0002864647407470819 0.009434776583527494
    0.0027868757423594017 0.0022882006533010476 0.0019028611939066358 0.004785510904893357
    0.00028282275916935814 0.0034983547675341785 0.02082016167211092
    0.005331214167219222 0.0014590947777562337 0.002508725279108294 0.0022232114513351937
    0.0006019975843529012 0.001094954885870577 0.001670576865880374 0.04633966911167135
    0.000949895514343584 0.0011860735000568496 0.0012287120285654496 0.0008102411280796875
    0.00016234838273827443 0.0011246735029182945 0.0012497919872780897 0.0007544996104233065
    0.010381617825381334
    0.0026511420856442343 0.001013758862598128 0.0007445756329814314 0.0007710743200420127
    0.0011265997431595498 0.0006982577226366119 0.0009684051315521636 0.0009499672461175915
    0.00044036371570812095 0.021961426293375986
    0.0036482390472164553 0.0018206526954490602 0.001068554053510861 0.0010524113745173926
    0.0014150540356314203 0.00136211647575567 0.001496091422534059 0.0016066592192185663
    0.0007950838271979393 0.01113070336969039 0.04420854362575095
    0.002877604005476744 0.00605607630474257 0.0022109484306704398 0.001989115861519504
    0.000381339345358004 0.002808767185263819 0.0035721908719380593 0.002031050531436627
    0.001030776650220348 0.001153271230585124 0.0019460828295282577 0.01899231105128772
    0.0011106592033970583 0.0006233754014062062 0.0004010411411463977 0.0003302559259094303
    0.0003522730958997125 0.0007288192377949581 0.0005714941917204978 0.0005360962438721921
    0.0002684230880961444 0.0024830606782385335 0.005163725394618371 0.0007157037614763694
    0.005306858097209656
    0.001357982167612301 0.0006822954725025286 0.0005523372506096732 0.0005922881884426322
    0.0005366827267178668 0.00045182331847654853 0.000639884737963689 0.0008986442440559794
    0.0006847229559045668 0.00265977596165189 0.005224369662460515 0.0007297742972963502
    0.0010285774291964053 0.021050081047094053
    0.0021407549535065536 0.0008585417627482988 0.0006537823077530526 0.0009272240259409419
    0.00029686417147468063 0.0006915171598042907 0.0012122196186289647 0.0010176342727297918
    0.00040762982846324675 0.0007336001009832371 0.0011528201208432873 0.001249476485584511
    0.0003380542628493131 0.0004269530578942082 0.02213214756884206
    0.006381455220174743 0.0020042877649097124 0.0028681766931253736 0.002376155335568298
    0.0009516901520739356 0.0016537440549432947 0.002638934713421208 0.003442169721790704
    0.0009622682148691626 0.0014571406164888326 0.0020991567569779157 0.002572460042396715
    0.0006973245213232655 0.0009952634215935265 0.0014255613382498733 0.01672832683856237
    0.003567698404112915 0.0015124193439838248 0.0019573168921473445 0.0016423964465390574
    0.0008705628988773383 0.0012213788117405877 0.0018749387967046983 0.0018920241991862482
    0.0006875198668579688 0.002358807323976605 0.002798196483016727 0.002020970218696851
    0.0009287071765281089 0.0010513746746114907 0.0010735194808918437 0.00477077488748854
    0.015594999664688735
    0.00032555946863964375 0.00021495826193954981 0.00013788261408849363 0.00011250313032631603
    0.0001263835478818433 0.00019879174677422644 0.00019036380224872525 0.00029373791998702517
    0.0001437160821727684 0.00033397592349852914 0.000632777680365026 0.00019168209136920497
    0.00019855470215781828 0.0007436016278848981 9.858220862586173e-05 0.0002245742919647255
    0.00020707952088013908 0.00872389209528674
    0.001104430593881822 0.0007340549050643792 0.0005761856156601343 0.00045827153005301055
    0.0003097016472388408 0.0005413676711446127 0.0006329003640478018 0.0006132795633215492
    0.0016115232208711219 0.0012624333898651637 0.0020134515231625665 0.0007800635743168625
    0.00046842552580683944 0.004564366906520208 0.00034299989987846913 0.0009215983695790173
    0.0008288890819023771 0.0010281252180987448 0.014809695895202394
    0.004604355808863844 0.0013053875072860433 0.0009348324250467432 0.0009605785883738515
    0.0013402441983659027 0.0010117238998697397 0.001475106101286916 0.0014084342214988788
    0.0005375573265698687 0.012271122820238527 0.008891396476473948 0.0014847749228956784
    0.0021900560317616967 0.002237494328565086 0.0010356422797820938 0.002068403016923911
    0.003271277391863104 0.0003629127512600366 0.0012479627747244684 0.02455797946229582
""",
    "BLOSUM90": """
    0.028941466476520718
    0.001896317291850312 0.022892163644406403
    0.0014296539454877236 0.001454525995856467 0.017753653137209658
    0.0016120541525071418 0.0011118856442462741 0.0034122251157479486 0.028905985529761216
    0.0014378045557717186 0.0003004355094508725 0.0003526243481779311 0.00028205144393017687
    0.018963924833314688
    0.0015518753295389346 0.0020799816656266574 0.0012595133876871906 0.0012470706135571605
    0.00024062393656260663 0.011258473852655668
    0.0026715149842246304 0.001986784518203654 0.0017189800468094042 0.004809859147419393
    0.00024018396300677406 0.0033929068022966746 0.024082550387620767
    0.0049176944070822995 0.0012814494483589008 0.0021939494568804173 0.0020787428065125128
    0.00051191591124581 0.0010135072388571143 0.0015173914448105995 0.052105577140795424
    0.0008342947103491619 0.0010659803319010067 0.0011268322842671913 0.0007357052349544229
    0.0001426245114185443 0.001042811243681722 0.0010609424122148584 0.0006611637297234222
    0.011500733945516558
    0.0022806166994472367 0.0008774737672742676 0.0006277177380086552 0.0006136073395055859
    0.001018724920195221 0.0006215443251124912 0.0008655627223309536 0.0007927979361967105
    0.0003818569142561746 0.024545975084797667
    0.0031400426239163565 0.0015563382766215293 0.0009016289503976407 0.0008974621314553808
    0.0012204913461061227 0.0012200582014470405 0.001269344698322093 0.0014084669216931525
    0.0006982730115599454 0.010187721075530867 0.04731466550609148
    0.002571714523465726 0.005672607072065239 0.0019751605656395136 0.0017935339070485811
    0.0003408145429860158 0.002661261500406105 0.003172871243124227 0.0018091800840455807
    0.0009037118494867991 0.0010015355309232945 0.0016493087064879096 0.021110006225715187
    0.0009719045919970501 0.0005560124856869148 0.0003443751413991754 0.0002851555454072904
    0.00030855994042178013 0.000696145418170544 0.0004867593377157896 0.00045905141534639837
    0.0002469912563664567 0.002385565445649764 0.004915096421747705 0.0006564430178896849
    0.006752574163716578
    0.0011707482997247202 0.0006001428744037339 0.00045695294787233016 0.0004970694868611655
    0.0005406174386970305 0.0004384702824980018 0.0005259263283051864 0.000726405637362377
    0.0005914745854155111 0.0023760161494061206 0.0047389371254676835 0.0006801175456555352
    0.0009207134934837812 0.02275992977836884
    0.0019972723941546994 0.0007786021331823074 0.000562101828266788 0.000836506204478709
    0.0002634129637076707 0.0006316903906448316 0.001128363399274131 0.0009160695804911898
    0.0003844474053759594 0.0006659634409982557 0.001020420899859817 0.0011433484348853926
    0.00029821836819244 0.0003820394509773041 0.02404436549263058
    0.0061234827650497045 0.00179260070270227 0.002641558391100079 0.0021902661040309438
    0.0009008178018246561 0.001534733135145937 0.002435839515990254 0.0032250721573096343
    0.000859322976113346 0.0012754928334842836 0.001909338771117376 0.0022696044144588988
    0.0006225082342341572 0.0009007040928505505 0.0013333728667143045 0.020222291957641345
    0.0034990592936902896 0.0013337993839260983 0.0018096241176560255 0.0014770487412630099
    0.000837607227427256 0.0011633090191045159 0.0017460695145653721 0.001637615464760631
    0.0006059861729075199 0.0021146482135048364 0.002538707211337062 0.0018742456882945837
    0.0008549729162453002 0.0009373330352812438 0.0009586152911255157 0.004882044472079019
    0.019324325014986026
    0.0003162826357696683 0.00018822355540425045 0.00011361193219385239 9.615414897765647e-05
    0.00011402385673074935 0.00018118969468635933 0.00017186658965667723 0.0002850558056887371
    0.00014705149603278306 0.0002888506706146634 0.0005556768251364344 0.00014351856033992664
    0.00018480270544289832 0.0007021597543797491 0.00010367126137135345 0.00020564914018856946
    0.00018008131088087498 0.010080756092360078
    0.0009578145696209481 0.0006356807770430476 0.0005316687852870541 0.0004123864013534284
    0.0003087553140926248 0.00048090269093961543 0.0005376292962922333 0.0005337797199562321
    0.0014431522344877262 0.0011275668044226116 0.0017591338828767365 0.0006587817254471072
    0.0004178999736255862 0.004596769465267283 0.00029369391163915916 0.0008525208475355607
    0.0007736422326628592 0.0009723719129061082 0.01729965547387733
    0.004230956072604361 0.0011439035919666126 0.0007874457889508633 0.0008198300520514704
    0.0012790175783090351 0.0008603847538020131 0.001353745844513038 0.0011777891482397749
    0.0004569699945873044 0.012010991497586472 0.008071938324132765 0.001287921094090018
    0.0020390401916086623 0.0019728777259904423 0.0009175462776582466 0.0019182160488867347
    0.0030481291734621883 0.0003384935926381426 0.0010599282277832859 0.028697002670368957
""",
    "PAM30": """
    0.059127839295455724
    0.00032440614389978224 0.03166230812043084
    0.0010035946285397422 0.00023762837035855522 0.023942402666531522
    0.0012937791530855702 5.656372451242431e-05 0.0033284186062777833 0.03127380350794697
    0.0003148929081253562 9.312998386526635e-05 3.2538350231327974e-05 1.2103234943893133e-05
    0.03091198592545139
    0.0007844199827618275 0.0009152818095775974 0.00046226978079510854 0.0007661748404178249
    1.0422909419121936e-05 0.02654463609169937
    0.0019549522618591804 8.683947829100928e-05 0.000928464848623985 0.005438236341521068
    1.30451504831464e-05 0.002855736947331599 0.033517661571345295
    0.004445024899992765 0.00014407449709189928 0.001258425773178551 0.001355390344676245
    0.00012331325932473484 0.0003201445156911534 0.0010164440084156755 0.0731320266744147
    0.0002440873925364856 0.0008071327313234364 0.0015206567357122051 0.00042748415829840124
    8.740362479246863e-05 0.001748626959993241 0.00030223151556800276 0.00014265572852210342
    0.025912762590464825
    0.0006383452153045692 0.00023918939892306258 0.00026711601073772237 0.0001380820276114638
    0.00014700821602711548 9.92526585498176e-05 0.0002735636467737476 7.890036120338887e-05
    5.417259308887817e-05 0.025353285377410485
    0.0008573418646965206 0.0001856592319722029 0.000309165478910241 5.540523221994062e-05
    1.7204998362221924e-05 0.000604060505277935 0.00018090379077740425 0.00021034403031175677
    0.0003536793730792803 0.002025750975181606 0.0730003550695621
    0.0006691820162220606 0.0036581384858227193 0.002268880376350384 0.0008291509234094124
    2.0967486284459295e-05 0.0011831024043470412 0.0009013800817810556 0.000612895357486122
    0.00032368239575447064 0.0003776377385151832 0.00041727413572248076 0.06469388318953882
    0.0002433682217821766 0.00014663859770241663 2.7842591589795833e-05 1.5837617592492976e-05
    4.671640609302568e-06 0.0001533584686453211 6.755997342323615e-05 7.424532515799647e-05
    1.3814951744043517e-05 0.00043126365297883206 0.0015642375920382058 0.0006679427567192713
    0.010141188024147338
    0.00019674172887918488 6.81031835984968e-05 8.13793676586421e-05 1.2183210262808245e-05
    1.545061583947997e-05 1.7100059826303178e-05 1.5496057150416647e-05 0.00015674229370359372
    0.00017593656715401314 0.0006939089043352082 0.0014111427667651418 2.7382721623874425e-05
    0.00014660178199119104 0.03386097728188887
    0.002620212096851542 0.0005593245208325829 0.0002918104251469659 0.00016175221090296296
    0.00010731935426699396 0.0007291106066036425 0.00038539043828203593 0.0005476664783160913
    0.0004225064520788887 9.955147966583466e-05 0.0003914818481880512 0.0004343320007945096
    4.8450925637158114e-05 7.19006095049811e-05 0.040604206849577246
    0.005306335240479784 0.001009210727675398 0.002734799052848827 0.0009327472068246271
    0.0008829451905556044 0.0004464820542815053 0.0007770286010730141 0.0034088067901566015
    0.00030759142376355817 0.00024863350821043576 0.00034625426602777944 0.0014551172602609017
    0.000165156446509707 0.00031517744951616293 0.0020119339905674016 0.04370431372563129
    0.004218579956637199 0.0002548069587848349 0.0012577236167229159 0.0005479955160407455
    0.00013276608390145865 0.0003366724106996372 0.0003779360287538055 0.0007007049868619587
    0.00016958020182452686 0.000959516414176522 0.0005141123634645854 0.0015845617070211647
    0.0002268545631928334 0.00011969179294550922 0.0007126298411337366 0.004662279619046793
    0.040080501117597984
    8.93130821159367e-06 0.0002219351072556783 2.6993374401853017e-05 2.6698310744553494e-06
    1.6423510327768317e-06 4.846466072467328e-06 1.6817714350602577e-06 5.2853781924046885e-06
    2.8647046074837808e-05 3.5757593419236457e-06 0.00011411927900827321 1.4791603367426559e-05
    2.0008298266352844e-06 8.898728400197394e-05 4.798229629098356e-06 0.0001308450869232041
    7.722156707997805e-06 0.009766343046961331
    0.00018225253115472477 3.690455127791459e-05 0.00026944461441064744 2.7630471952142814e-05
    0.00025794057350472414 1.936875792419507e-05 8.378590504676461e-05 2.454402806235745e-05
    0.0003256038246240254 0.00013084289995157492 0.00024268846460818286 0.0001003159019950437
    9.388328130826296e-06 0.0021252281905202656 1.4865662060036108e-05 0.00020094952100191171
    0.00019614260534399206 5.442883450240455e-05 0.02545808187608592
    0.0026924708725231086 0.00019661468480294445 0.000182730869100095 0.00019652464806266956
    0.0002867554993452513 0.000254368748789579 0.0003521385036343461 0.0008544488831769514
    0.00025015804822114957 0.004626016550984546 0.0025562624925597006 0.00024096483294034894
    0.0006023393114112808 0.00017152669910871525 0.00046067081670332334 0.0005304688436637324
    0.001480886250135653 3.4341494426087616e-06 0.00015581070490829142 0.04862301016847933
""",
    "PAM70": """
    0.03719419864988318
    0.0008087543098703462 0.02285225698020889
    0.002073646460090584 0.0006393463863094464 0.01267526029875837
    0.002525559500711185 0.0002656552608742641 0.004547326353838666 0.019552340613266873
    0.0007059762470512724 0.00020716330531302742 0.00013072655726453243 6.230845432869837e-05
    0.027825141122194648
    0.0015518877282373696 0.001601741899210073 0.0009847693402601644 0.0016541837501367655
    5.043571682692047e-05 0.01678710251788823
    0.00332811965051853 0.00036247967443696756 0.001931928240480028 0.007792630040674908
    6.418302084975141e-05 0.004278774731431352 0.02123022484483063
    0.007836191993001198 0.00044251315906877157 0.0023638339620501124 0.002655644240511472
    0.0003431221714266028 0.0008040066512051583 0.0021586929726556546 0.057388208411163856
    0.0006484682284710798 0.0014545996303067922 0.002278936614619648 0.0009450560448794936
    0.00018549298854202793 0.0028143703113243106 0.0007995162492997782 0.00043236801169914066
    0.01856054066207921
    0.0013965782283733507 0.0004548618918816057 0.00048031915042001503 0.00033373212803700417
    0.00030428065563695795 0.00026711588850824816 0.0005181701374856156 0.000349744763711229
    0.00017329804084653826 0.015987197880539435
    0.0018572709391302328 0.00047958376254792433 0.00063784180585583 0.0002542874688548849
    8.627200828035136e-05 0.001145448061591271 0.0004967133390505339 0.0006124983656974663
    0.0007434300707056992 0.0037542109440494597 0.05995153180275842
    0.0017482550126124556 0.006375522131721864 0.003640644326742691 0.0018252265778963348
    0.00010319775490385661 0.0022219191879465955 0.0018583368487577027 0.001496655308739241
    0.000906627326028596 0.000790476973792003 0.0010493781626637116 0.049293839020253936
    0.0004830767570627773 0.0002945301899127454 0.00010839896462648394 7.157130189019235e-05
    2.1845897888507003e-05 0.0002743105299487882 0.00015522247207982098 0.00018860818518822553
    6.070368572621641e-05 0.0007450102938427588 0.0026814583560349986 0.0011255105312350092
    0.006221605827895343
    0.00046722180304288895 0.0001616467428742446 0.00021124510348244946 6.269972259318919e-05
    7.300599681896486e-05 7.988492506296488e-05 7.532903856946113e-05 0.00035290430601106194
    0.000369800443948324 0.001241041431184889 0.002796658612027366 0.00013216275164777875
    0.0002983244534666983 0.027609457395367236
    0.004550031701784086 0.0010920151094434257 0.0007059364878601301 0.0005052297932262848
    0.00026943290953722234 0.0013266385181226064 0.000872246081537842 0.0013849768155457195
    0.0008397378148170759 0.0002983075022272284 0.0008598961061891683 0.0010446567434093407
    0.00013153451000560772 0.0001797387115213482 0.03049116465768451
    0.008181561008097523 0.0017360744550429996 0.0038434299995336323 0.0019557928207999562
    0.0015492275564647287 0.000994197115669641 0.001649439721552877 0.005944574610751248
    0.0007642238731040449 0.0006509562938557948 0.0008823711434018643 0.002914403775768319
    0.0003274142421396057 0.0005966174240882219 0.0034531398828496866 0.025194623995400022
    0.0067687959354540955 0.0006792437968991548 0.0021278266383168 0.001213133052618547
    0.0003653035371573847 0.0007375292337398293 0.0009803969236354716 0.0019215787027991949
    0.0004531831122564876 0.0016435015047341363 0.0012009021086866177 0.002922072416178732
    0.0004298402476204852 0.00032037468566685034 0.0015743611594360388 0.006903629277566296
    0.025145073963504398
    3.955341632069591e-05 0.00042527485122100103 5.850601402461715e-05 1.2993511235541354e-05
    7.806810025033393e-06 2.206803264892931e-05 9.862701369849675e-06 2.501313361537875e-05
    6.563964067480336e-05 1.691357772224879e-05 0.00023930650357563717 6.688069414348248e-05
    9.25475091557805e-06 0.0001887436699259741 2.2239711690711994e-05 0.00023646234303355702
    3.3504725726214485e-05 0.008877294500132537
    0.0004019803857577269 0.00010517171198521535 0.00047128194649955374 0.00011201266335522796
    0.0005240535740456192 8.45349171389665e-05 0.0001765401409952828 0.00011604677012097751
    0.0006148934618895839 0.00030951431979519975 0.000610254913687894 0.00024262835127628017
    4.294476466401628e-05 0.004019793615726111 7.079064429859136e-05 0.0004331077795518205
    0.0003990155565289417 0.00011825556331632613 0.020713264962639342
    0.004559629763528379 0.00046545505887026243 0.0005210808870931982 0.0005245495079043102
    0.0005945310718099032 0.0005745179218061931 0.0007916700913577605 0.0017949010789751496
    0.000507528103400004 0.0071703817823281675 0.005018129283944125 0.0007231894802385669
    0.0010815956386861806 0.0005350077332488484 0.001007839975556374 0.001365828686346375
    0.0027223976124681726 1.8104742145890378e-05 0.0003501322037932877 0.034391130954492435
""",
    "PAM250": """
    0.011506395421657883
    0.002497523150890463 0.0068223547287428144
    0.003663234697275743 0.0016533152696263029 0.002595584745726228
    0.004369756504853902 0.0014242726301819985 0.00305175945290284 0.005345078249941922
    0.0018276942838570587 0.000589445156527005 0.0005856830216539588 0.0004813158581957579
    0.017511424258914964
    0.0030112866662942396 0.002089067565664792 0.0018510873859350727 0.002620677472737522
    0.0003707612909632957 0.0037185262078390084
    0.004638005957406574 0.0015846263196146995 0.0027895276558308215 0.0051008808895958635
    0.0004890393917097595 0.0033568227763936856 0.005922296585908949
    0.010339526813131699 0.002011593717294989 0.0038931580947872417 0.004765087945166064
    0.0013623489692838801 0.002567667684160113 0.004581639320134369 0.023482233614097934
    0.0021445971886243646 0.001966933530292087 0.001957196487522984 0.001849051455993082
    0.0005084638689638148 0.002523238325293112 0.0019402998565554576 0.001833728155564898
    0.005057782391162096
    0.0028561290389349852 0.000949035752426288 0.0009842061334904809 0.0010026061088056078
    0.0007255089364442855 0.0008823689561010961 0.0011442983475073972 0.0018208983421724295
    0.000707582178091902 0.0038506568985748504
    0.004806790042458546 0.0017492451507985533 0.0017794215836961103 0.0015930790839216963
    0.0007079923663121509 0.002173139161010251 0.0019598706476253135 0.0029852908206479617
    0.0017792986667457807 0.005507271579368608 0.028633158451940706
    0.005372865607280008 0.007182127603812363 0.004093223278615861 0.0038473023950370976
    0.0007707517463665441 0.003644976267485547 0.0039374858628132975 0.004838885432848865
    0.0026790420483436923 0.0019022872797907308 0.0035641037178981254 0.01895383988703936
    0.0009901895593729861 0.0005457989632961975 0.0003999428656926955 0.00037899432160262535
    0.0001478557389041559 0.0004490775186706549 0.00044836711718981544 0.0006868009030195916
    0.00030226127635083285 0.0008977955371826203 0.0029437898388951153 0.0013056068288886324
    0.0009583989133618669
    0.0015464751871669552 0.0005836196393246784 0.0007188011347536978 0.0005106194289729856
    0.000493879754799718 0.000522050332093541 0.0005655586331172485 0.0011712470257125083
    0.0008818515898020722 0.0018514043008626233 0.00515170882509876 0.0009543057625704214
    0.0006118240092826385 0.012698002251905573
    0.005714145931289133 0.0019905178391619333 0.0018301977419577379 0.0019136209919861855
    0.0008947360310458041 0.002046395061735426 0.0022081467402101113 0.004015172288794219
    0.0016125778990215547 0.0011725443795985299 0.002405370208678148 0.0031427838314461703
    0.00046431155948741784 0.0007071374740088688 0.009866504613563578
    0.007817977153664866 0.0026418797202180837 0.003299707039394988 0.003485784756029156
    0.002304949579508308 0.002368870445526671 0.0034413512797094705 0.007882158724846825
    0.0019419581808088138 0.0018542542117578613 0.0031126304674457994 0.0053849029169230475
    0.0007170617418724311 0.0013236969321879562 0.004384763441862665 0.00697403308732634
    0.0067187128037285646 0.001964056422465845 0.002619644251998424 0.0026547044011729533
    0.0011784720532548663 0.0018654198667353624 0.002649805007028585 0.005181121859143066
    0.0014578210132932265 0.002195308603714386 0.003383151368824795 0.004691020093037058
    0.0007540257876530225 0.001137279025237926 0.0031909511773661765 0.005547954504052718
    0.0061907639011039494
    0.00024101326295153331 0.0007087111346623277 0.00016728058239964415 0.00010462445958257217
    5.929905428154924e-05 0.00013455315022844615 0.00010428284199341159 0.0001863116713419665
    0.00019201336290789017 0.00011715327832769289 0.0005794246851770113 0.00038031958293778897
    5.804498621719311e-05 0.00044935713151489045 0.00014643278579496693 0.0004129084497904201
    0.00018788403040115726 0.005798850382563186
    0.001172110031480674 0.0004634953648226223 0.0007508573338569017 0.0005174595420878052
    0.0010798150304862418 0.00045154514263611947 0.0005511332309653623 0.00079425725644547
    0.0009844917010257523 0.000882632029430214 0.002080917422878523 0.0008663628290380623
    0.0002505419468359887 0.005920417154275064 0.0004865357708729738 0.0010821257035278605
    0.000928619476378626 0.0003044010251468977 0.009252981444524518
    0.005892328416678893 0.0014862706481749135 0.001748456781009301 0.0018552568588661234
    0.0013840709648926645 0.0016079057012005865 0.0021170384602596944 0.004212954975342422
    0.0012982251382555629 0.005581671496389281 0.008461789669311338 0.0029693904037835185
    0.0014420721870535345 0.0019724229735869326 0.0024870690688613543 0.0035981076685639816
    0.00404494854440322 0.0001608130352435039 0.0010955188103504248 0.011301289775766317
""",
}

_BACKGROUND = {
    "BLOSUM45": """
    0.07825469682682999 0.0522934005085155 0.04186923450520716 0.04971547866943061
    0.023504091554598174 0.03591331913596381 0.058088865918176615 0.07498556258206131
    0.02479612002818483 0.061906885653760506 0.09375880704538439 0.060002347578480664
    0.025078218042817218 0.046429254925009635 0.04259936226518533 0.0611794505329539
    0.05249588652129556 0.013367812099806363 0.03378138719481918 0.06997981841151925
""",
    "BLOSUM50": """
    0.07653947049805765 0.0532503853072174 0.04363706198073319 0.05139363512759621
    0.022316032400410832 0.034923218698747475 0.056445304260661695 0.07385090705135995
    0.024711032253042223 0.06406536163940317 0.09558746761934825 0.057876000358301254
    0.024385897213061735 0.04809815919668035 0.040885461298433984 0.059478937760864596
    0.0529217077872778 0.01370655241902858 0.03349368473231571 0.072433722397458
""",
    "BLOSUM62": """
    0.07421620506799341 0.05161448614128464 0.044645808512757915 0.05362600083855441
    0.02468745716794485 0.03425965059141602 0.0543119256845875 0.074146941452645
    0.026212984805266227 0.06791736761895376 0.09890786849715096 0.05815568230307968
    0.02499019757964311 0.04741845974228475 0.038538003320306206 0.05722902947649442
    0.05089136455028703 0.013029956129972148 0.03228151231375858 0.07291909820561925
""",
    "BLOSUM80": """
    0.072647227078731 0.05041807807971253 0.04299865247521584 0.05363087784915547
    0.02885964319575845 0.03363452239459161 0.05455768629848016 0.07667364111683259
    0.02541743825671612 0.06716946216903266 0.09952608607391938 0.05479443969205975
    0.024441485110408976 0.04710829347705442 0.03821552490547458 0.05723946597242512
    0.050130851564694504 0.014489654685450317 0.034849727270340386 0.07319724233394616
""",
    "BLOSUM90": """
    0.07255257032277342 0.04920490867017682 0.04145380390489591 0.05411459975106948
    0.029605031943377283 0.033576453482421185 0.05517509219669671 0.07925267545535691
    0.024890326300616415 0.06606022910924614 0.0969730509113051 0.05337568623245533
    0.02440279006434796 0.04651540549826858 0.03865972199562866 0.058095437228457614
    0.05159686349516023 0.015369491541399532 0.035653734247116535 0.07347212764923039
""",
    "PAM30": """
    0.08712675771899868 0.04090389030799905 0.040432285538126674 0.04687193280763397
    0.033473507356366124 0.03825543697870414 0.04953047692156976 0.08861208361393715
    0.033618414314618796 0.0368856133889719 0.08535744375873362 0.08048158337595682
    0.014752761600830055 0.03977165856627473 0.050679914836743105 0.06957707600501817
    0.05854166419099378 0.010493678893463984 0.029916218247065893 0.06471760157799358
""",
    "PAM70": """
    0.08712675771899868 0.04090389030799905 0.040432285538126674 0.04687193280763397
    0.033473507356366124 0.03825543697870414 0.04953047692156976 0.08861208361393715
    0.033618414314618796 0.0368856133889719 0.08535744375873362 0.08048158337595682
    0.014752761600830055 0.03977165856627473 0.050679914836743105 0.06957707600501817
    0.05854166419099378 0.010493678893463984 0.029916218247065893 0.06471760157799358
""",
    "PAM250": """
    0.08712675771899868 0.04090389030799905 0.040432285538126674 0.04687193280763397
    0.033473507356366124 0.03825543697870414 0.04953047692156976 0.08861208361393715
    0.033618414314618796 0.0368856133889719 0.08535744375873362 0.08048158337595682
    0.014752761600830055 0.03977165856627473 0.050679914836743105 0.06957707600501817
    0.05854166419099378 0.010493678893463984 0.029916218247065893 0.06471760157799358
""",
}
