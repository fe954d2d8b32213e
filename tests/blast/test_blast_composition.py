"""Compositional matrix adjustment (gpu_search.blast.composition) against BLAST+ 2.12.

Two kinds of tests: properties the published method fixes (marginals and relative
entropy of the optimised target frequencies, the rule of the conditions of
Altschul et al. 2005 for constructed compositions, BLOSUM62 from its frequency
ratios, BLAST's ideal lambda 0.3176), and the results of BLAST+'s own library
functions, called through ctypes in libcomposition_adjustment.so and libblast.so
of the installed BLAST+ 2.12 (ncbi-blast+), for the same inputs; those are skipped,
saying so, where the libraries are missing.
"""

import ctypes as ct
import math
import os
import shutil
import subprocess

import numpy as np
import pytest

from gpu_search.blast import composition as C
from gpu_search.blast.alphabet import NCBISTDAA, encode
from gpu_search.blast.matrix import MATRIX_NAMES, load_matrix


# --------------------------------------------------------------------------------------------
# BLAST+ 2.12's libraries through ctypes
# --------------------------------------------------------------------------------------------

def _blast_lib_dir():
    blastp = shutil.which("blastp")
    if blastp is None:
        return None
    try:
        version = subprocess.run([blastp, "-version"], capture_output=True, text=True,
                                 timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    if "2.12.0" not in version:
        return None
    prefix = os.path.dirname(os.path.dirname(os.path.realpath(blastp)))
    folder = os.path.join(prefix, "lib", "ncbi-blast+")
    if os.path.exists(os.path.join(folder, "libcomposition_adjustment.so")):
        return folder
    return None


LIB_DIR = _blast_lib_dir()
needs_blast_libs = pytest.mark.skipif(
    LIB_DIR is None, reason="BLAST+ 2.12 libraries (ncbi-blast+: libcomposition_adjustment.so, "
    "libblast.so) not installed")


class _Composition(ct.Structure):
    _fields_ = [("prob", ct.c_double * 28), ("numTrueAminoAcids", ct.c_int)]


class _MatrixInfo(ct.Structure):
    _fields_ = [("matrixName", ct.c_char_p),
                ("startMatrix", ct.POINTER(ct.POINTER(ct.c_int))),
                ("startFreqRatios", ct.POINTER(ct.POINTER(ct.c_double))),
                ("rows", ct.c_int), ("cols", ct.c_int), ("positionBased", ct.c_int),
                ("ungappedLambda", ct.c_double)]


class _ScoreFreq(ct.Structure):
    _fields_ = [("score_min", ct.c_int), ("score_max", ct.c_int),
                ("obs_min", ct.c_int), ("obs_max", ct.c_int), ("score_avg", ct.c_double),
                ("sprob0", ct.POINTER(ct.c_double)), ("sprob", ct.POINTER(ct.c_double))]


_CALC_LAMBDA = ct.CFUNCTYPE(ct.c_double, ct.POINTER(ct.c_double), ct.c_int, ct.c_int,
                            ct.c_double)


class Blast:
    """The BLAST+ functions the tests compare with."""

    def __init__(self, folder):
        self.ca = ct.CDLL(os.path.join(folder, "libcomposition_adjustment.so"))
        self.lb = ct.CDLL(os.path.join(folder, "libblast.so"))
        ca = self.ca
        ca.Blast_MatrixInfoNew.restype = ct.POINTER(_MatrixInfo)
        ca.Blast_MatrixInfoNew.argtypes = [ct.c_int, ct.c_int, ct.c_int]
        ca.Nlm_Int4MatrixNew.restype = ct.POINTER(ct.POINTER(ct.c_int))
        ca.Nlm_Int4MatrixNew.argtypes = [ct.c_int, ct.c_int]
        ca.Nlm_DenseMatrixNew.restype = ct.POINTER(ct.POINTER(ct.c_double))
        ca.Nlm_DenseMatrixNew.argtypes = [ct.c_int, ct.c_int]
        ca.Blast_Int4MatrixFromFreq.argtypes = [ct.POINTER(ct.POINTER(ct.c_int)), ct.c_int,
                                                ct.POINTER(ct.POINTER(ct.c_double)), ct.c_double]
        ca.Blast_CompositionWorkspaceNew.restype = ct.c_void_p
        ca.Blast_CompositionWorkspaceInit.argtypes = [ct.c_void_p, ct.c_char_p]
        ca.Blast_ReadAaComposition.argtypes = [ct.POINTER(_Composition), ct.c_int,
                                               ct.c_char_p, ct.c_int]
        ca.Blast_GetMatrixBackgroundFreq.restype = ct.POINTER(ct.c_double)
        ca.Blast_GetMatrixBackgroundFreq.argtypes = [ct.c_char_p]
        ca.Blast_GetJointProbsForMatrix.argtypes = [ct.POINTER(ct.POINTER(ct.c_double)),
                                                    ct.POINTER(ct.c_double),
                                                    ct.POINTER(ct.c_double), ct.c_char_p]
        ca.Blast_ChooseMatrixAdjustRule.argtypes = [ct.c_int, ct.c_int, ct.POINTER(ct.c_double),
                                                    ct.POINTER(ct.c_double), ct.c_char_p,
                                                    ct.c_int]
        ca.Blast_OptimizeTargetFrequencies.argtypes = [
            ct.POINTER(ct.c_double), ct.c_int, ct.POINTER(ct.c_int), ct.POINTER(ct.c_double),
            ct.POINTER(ct.c_double), ct.POINTER(ct.c_double), ct.c_int, ct.c_double,
            ct.c_double, ct.c_int]
        ca.Blast_CompositionMatrixAdj.argtypes = [
            ct.POINTER(ct.POINTER(ct.c_int)), ct.c_int, ct.c_int, ct.c_int, ct.c_int,
            ct.POINTER(ct.c_double), ct.POINTER(ct.c_double), ct.c_int, ct.c_double, ct.c_void_p,
            ct.POINTER(_MatrixInfo)]
        ca.Blast_AdjustScores.argtypes = [
            ct.POINTER(ct.POINTER(ct.c_int)), ct.POINTER(_Composition), ct.c_int,
            ct.POINTER(_Composition), ct.c_int, ct.POINTER(_MatrixInfo), ct.c_int, ct.c_int,
            ct.c_void_p, ct.POINTER(ct.c_int), _CALC_LAMBDA, ct.POINTER(ct.c_double), ct.c_int,
            ct.POINTER(ct.c_double)]
        self.lb.Blast_KarlinLambdaNR.restype = ct.c_double
        self.lb.Blast_KarlinLambdaNR.argtypes = [ct.POINTER(_ScoreFreq), ct.c_double]
        self.calc_lambda = _CALC_LAMBDA(self._calc_lambda)   # kept alive with self
        self._workspaces = {}
        self._infos = {}

    def workspace(self, name):
        """Blast_CompositionWorkspaceNew + Init for the matrix, as Blast_RedoAlignmentCore."""
        if name not in self._workspaces:
            self._workspaces[name] = self.ca.Blast_CompositionWorkspaceNew()
            assert self.ca.Blast_CompositionWorkspaceInit(self._workspaces[name],
                                                          name.encode()) == 0
        return self._workspaces[name]

    def _calc_lambda(self, probs, min_score, max_score, lambda0):
        """s_CalcLambda of blast_kappa.c (static there), on libblast's Blast_KarlinLambdaNR."""
        avg = 0.0
        for i in range(max_score - min_score + 1):
            avg += (min_score + i) * probs[i]
        base = ct.cast(probs, ct.c_void_p).value
        freq = _ScoreFreq(min_score, max_score, min_score, max_score, avg, probs,
                          ct.cast(ct.c_void_p(base - min_score * 8), ct.POINTER(ct.c_double)))
        return self.lb.Blast_KarlinLambdaNR(ct.byref(freq), lambda0)

    def composition(self, codes):
        comp = _Composition()
        data = bytes(np.asarray(codes, dtype=np.uint8))
        self.ca.Blast_ReadAaComposition(ct.byref(comp), 28, data, len(data))
        return comp

    def int4_matrix_from_freq(self, ratios, lam):
        freq = self.ca.Nlm_DenseMatrixNew(28, 28)
        for i in range(28):
            for j in range(28):
                freq[i][j] = float(ratios[i, j])
        out = self.ca.Nlm_Int4MatrixNew(28, 28)
        self.ca.Blast_Int4MatrixFromFreq(out, 28, freq, lam)
        return np.array([[out[i][j] for j in range(28)] for i in range(28)])

    def matrix_info(self, info):
        """A Blast_MatrixInfo as s_MatrixInfoInit fills it (ratios and lambda from ``info``)."""
        key = (info.matrix_name, info.scale_factor)
        if key not in self._infos:
            mi = self.ca.Blast_MatrixInfoNew(28, 28, 0)
            name = ct.create_string_buffer(info.matrix_name.encode())
            mi.contents.matrixName = ct.cast(name, ct.c_char_p)
            for i in range(28):
                for j in range(28):
                    mi.contents.startFreqRatios[i][j] = float(info.start_freq_ratios[i, j])
            mi.contents.ungappedLambda = info.ungapped_lambda
            self.ca.Blast_Int4MatrixFromFreq(mi.contents.startMatrix, 28,
                                             mi.contents.startFreqRatios, info.ungapped_lambda)
            self._infos[key] = (mi, name)
        return self._infos[key][0]

    def adjust_scores(self, info, query_codes, subject_codes, mode):
        """Blast_AdjustScores as Blast_RedoOneMatch calls it for blastp."""
        q, s = self.composition(query_codes), self.composition(subject_codes)
        matrix = self.ca.Nlm_Int4MatrixNew(28, 28)
        for i in range(28):
            for j in range(28):
                matrix[i][j] = 12345
        rule = ct.c_int(-99)
        pvalue = ct.c_double(-1.0)
        ratio = ct.c_double(-7.0)
        status = self.ca.Blast_AdjustScores(
            matrix, ct.byref(q), len(query_codes), ct.byref(s), len(subject_codes),
            self.matrix_info(info), mode, C.RE_PSEUDOCOUNTS, self.workspace(info.matrix_name),
            ct.byref(rule),
            self.calc_lambda, ct.byref(pvalue), 0, ct.byref(ratio))
        out = np.array([[matrix[i][j] for j in range(28)] for i in range(28)])
        return status, out, rule.value, ratio.value

    def composition_matrix_adj(self, info, rule, query_codes, subject_codes):
        """Blast_CompositionMatrixAdj with a given rule: (status, matrix)."""
        q, s = self.composition(query_codes), self.composition(subject_codes)
        matrix = self.ca.Nlm_Int4MatrixNew(28, 28)
        status = self.ca.Blast_CompositionMatrixAdj(
            matrix, 28, rule, q.numTrueAminoAcids, s.numTrueAminoAcids, q.prob, s.prob,
            C.RE_PSEUDOCOUNTS, C.FIXED_RE_BLOSUM62, self.workspace(info.matrix_name),
            self.matrix_info(info))
        return status, np.array([[matrix[i][j] for j in range(28)] for i in range(28)])

    def choose_rule(self, len1, len2, codes1, codes2, mode, name="BLOSUM62"):
        p1 = (ct.c_double * 20)(*C._gather_letter_probs(C._stdaa_probs(
            C.read_composition(codes1)[0]), C.ALPHA_CONVERT))
        p2 = (ct.c_double * 20)(*C._gather_letter_probs(C._stdaa_probs(
            C.read_composition(codes2)[0]), C.ALPHA_CONVERT))
        return self.ca.Blast_ChooseMatrixAdjustRule(len1, len2, p1, p2, name.encode(), mode)


@pytest.fixture(scope="module")
def blast():
    return Blast(LIB_DIR)


# --------------------------------------------------------------------------------------------
# Test sequences: random proteins of several compositions and lengths, with ambiguity codes
# --------------------------------------------------------------------------------------------

TRUE_LETTERS = "ACDEFGHIKLMNPQRSTVWY"


def _random_protein(rng, length, kind):
    if kind == "uniform":
        weights = np.ones(20)
    elif kind == "background":
        weights = C.background_freqs("BLOSUM62")[[C.ALPHA_CONVERT[NCBISTDAA.index(c)]
                                                  for c in TRUE_LETTERS]]
    elif kind == "biased":          # a few letters dominate (low complexity)
        weights = rng.random(20) ** 6
    else:                           # "skewed": hydrophobic-rich, as membrane proteins
        weights = np.array([4.0 if c in "AILMFVWG" else 0.6 for c in TRUE_LETTERS])
    weights = weights / weights.sum()
    letters = rng.choice(list(TRUE_LETTERS), size=length, p=weights)
    text = "".join(letters)
    if length > 20:                 # letters BLAST does not count
        text = text[:5] + "X" + text[6:10] + "B" + text[11:15] + "Z" + text[16:]
    return encode(text)


def _pairs(seed, count):
    rng = np.random.default_rng(seed)
    kinds = ["uniform", "background", "biased", "skewed"]
    lengths = [12, 35, 60, 140, 400, 1200]
    for _ in range(count):
        q = _random_protein(rng, int(rng.choice(lengths)), kinds[rng.integers(4)])
        s = _random_protein(rng, int(rng.choice(lengths)), kinds[rng.integers(4)])
        yield q, s


# --------------------------------------------------------------------------------------------
# Tables and matrix information
# --------------------------------------------------------------------------------------------

# bit scale of each matrix (_PSIMatrixFrequencyRatiosNew's bit_scale_factor): BLAST's
# integer matrix is the frequency ratios in 1/scale bits
BIT_SCALE = {"BLOSUM45": 3, "BLOSUM50": 3, "BLOSUM62": 2, "BLOSUM80": 2, "BLOSUM90": 2,
             "PAM30": 2, "PAM70": 2, "PAM250": 3}


@pytest.mark.parametrize("name", MATRIX_NAMES)
def test_freq_ratios_give_blasts_matrix(name):
    """Rounded at lambda ln2/bit scale, the ratios are BLAST's integer matrix (true letters)."""
    ratios = C.freq_ratios(name)
    scores = C.int4_matrix_from_freq(ratios, math.log(2) / BIT_SCALE[name])
    core = C.TRUE_CHAR_POSITIONS
    expected = load_matrix(name).scores
    assert (scores[np.ix_(core, core)] == expected[np.ix_(core, core)]).all()
    assert (ratios == ratios.T).all() and (ratios[0] == 0).all()
    assert (scores[0] == C.SCORE_MIN).all() and (scores[:, 0] == C.SCORE_MIN).all()


def test_ideal_lambda_blosum62():
    """ungappedLambda is BLAST's ideal ungapped lambda of BLOSUM62 (0.3176) over 32."""
    info = C.matrix_info("BLOSUM62")
    assert round(info.ideal_lambda, 4) == 0.3176
    assert info.scale_factor == 32.0
    assert info.ungapped_lambda == info.ideal_lambda / 32.0


def test_start_matrix_blosum62_values():
    """startMatrix entries worked out by hand: round(ln(ratio) / (0.31760596 / 32))."""
    info = C.matrix_info("BLOSUM62")
    a, w, x, star = (NCBISTDAA.index(c) for c in "AWX*")
    lam = 0.31760595763573063 / 32
    assert info.start_matrix[a, a] == 137            # ln 3.90294070 / lam = 137.2
    assert info.start_matrix[w, w] == round(math.log(C.freq_ratios("BLOSUM62")[w, w]) / lam)
    assert info.start_matrix[a, x] == -29            # ln 0.75 / lam = -28.99
    assert info.start_matrix[star, a] == -140        # ln 0.25 / lam = -139.7
    assert info.start_matrix[0, a] == C.SCORE_MIN


@needs_blast_libs
@pytest.mark.parametrize("name", MATRIX_NAMES)
def test_tables_equal_blasts(blast, name):
    probs, rows, cols = C.joint_probs(name)
    mat = blast.ca.Nlm_DenseMatrixNew(20, 20)
    r, c = (ct.c_double * 20)(), (ct.c_double * 20)()
    assert blast.ca.Blast_GetJointProbsForMatrix(mat, r, c, name.encode()) == 0
    assert (probs == np.array([[mat[i][j] for j in range(20)] for i in range(20)])).all()
    assert (rows == np.array(r[:])).all() and (cols == np.array(c[:])).all()
    bg = blast.ca.Blast_GetMatrixBackgroundFreq(name.encode())
    assert (C.background_freqs(name) == np.array(bg[:20])).all()


def test_joint_probs_are_distributions():
    for name in MATRIX_NAMES:
        probs, rows, cols = C.joint_probs(name)
        assert (probs > 0).all() and (probs == probs.T).all()
        assert abs(probs.sum() - 1) < 1e-15 and abs(C.background_freqs(name).sum() - 1) < 1e-15
        assert np.abs(rows - C.background_freqs(name)).max() < 1e-15


@needs_blast_libs
@pytest.mark.parametrize("scale", [1.0, 32.0])
def test_start_matrix_equals_blasts(blast, scale):
    for name in MATRIX_NAMES:
        info = C.matrix_info(name, scale)
        expected = blast.int4_matrix_from_freq(info.start_freq_ratios, info.ungapped_lambda)
        assert (info.start_matrix == expected).all(), name


@needs_blast_libs
def test_read_composition_equals_blasts(blast):
    for text in ["ACDEFGHIKLMNPQRSTVWY", "MKVLAAGIXXBZJUO*-ACCA", "XXXX", "W", "BZJUO*"]:
        codes = encode(text)
        probs, n = C.read_composition(codes)
        comp = blast.composition(codes)
        assert n == comp.numTrueAminoAcids
        expected = np.array(comp.prob[:])
        assert (C._stdaa_probs(probs) == expected).all(), text
    probs, n = C.read_composition(encode("AAWXU"))
    assert n == 4 and probs[0] == 2 / 4 and probs[TRUE_LETTERS.index("W")] == 1 / 4
    assert probs[TRUE_LETTERS.index("C")] == 1 / 4      # U counts as C


# --------------------------------------------------------------------------------------------
# The rule (compo_mode_condition.c)
# --------------------------------------------------------------------------------------------

def _probs(text):
    return C.read_composition(encode(text))[0]


def test_rule_modes_1_and_3_fixed():
    p = _probs("ACDEFGHIKLMNPQRSTVWY")
    assert C.choose_matrix_adjust_rule(100, 100, p, p, 1) == C.COMPO_SCALE_OLD_MATRIX
    assert C.choose_matrix_adjust_rule(100, 5000, p, _probs("AAAAW"), 3) == \
        C.USER_SPECIFIED_REL_ENTROPY
    assert C.choose_matrix_adjust_rule(100, 100, p, p, 0) == C.DONT_ADJUST_MATRIX


def test_rule_mode_2_conditions():
    """Rescaling only when the compositions are far apart, at > 70 degrees, lengths > 3:1."""
    # query rich in hydrophobic letters, subject in charged ones: far apart and at an
    # angle (each deviates from the background in different letters)
    query = "AILMFVWAILMFVWGACDEFGHIKLMNPQRSTVWY" * 3
    subject = "DEKRDEKRNQSTDEKRHGACDEFGHIKLMNPQRSTVWY" * 3
    pq, ps = _probs(query), _probs(subject)
    assert C.choose_matrix_adjust_rule(100, 400, pq, ps, 2) == C.COMPO_SCALE_OLD_MATRIX
    assert C.choose_matrix_adjust_rule(400, 100, pq, ps, 2) == C.COMPO_SCALE_OLD_MATRIX
    # lengths 3:1 exactly is not more than 3
    assert C.choose_matrix_adjust_rule(100, 300, pq, ps, 2) == C.USER_SPECIFIED_REL_ENTROPY
    # same composition: distance 0
    assert C.choose_matrix_adjust_rule(100, 400, pq, pq, 2) == C.USER_SPECIFIED_REL_ENTROPY
    # two letters over 40 % in a sequence longer than 50: always the relative entropy rule
    # (A and K: 14 of 32 letters, 0.4375)
    pair = _probs("AAAAAAKKKKKK" + "ACDEFGHIKLMNPQRSTVWY")
    assert C.choose_matrix_adjust_rule(51, 400, pair, ps, 2) == C.USER_SPECIFIED_REL_ENTROPY
    assert C.choose_matrix_adjust_rule(400, 51, ps, pair, 2) == C.USER_SPECIFIED_REL_ENTROPY
    # ... unless that sequence is 50 long or shorter; then the pair is far enough apart
    assert C.choose_matrix_adjust_rule(50, 400, pair, ps, 2) == C.COMPO_SCALE_OLD_MATRIX
    # exactly 40 % is not above it
    forty = _probs("AAAAAKKKKK" + "ACDEFGHIKLMNPQRSTVWY")
    assert C.choose_matrix_adjust_rule(51, 400, forty, ps, 2) == C.COMPO_SCALE_OLD_MATRIX


def test_relative_entropy_is_jensen_shannon_distance():
    a = np.zeros(20)
    b = np.zeros(20)
    a[0] = b[1] = 1.0                 # disjoint: JS divergence ln 2
    assert C.relative_entropy(a, b) == math.sqrt(math.log(2))
    assert C.relative_entropy(a, a) == 0.0


@needs_blast_libs
def test_rule_equals_blasts(blast):
    seen = set()
    for q, s in _pairs(7, 300):
        pq, ps = C.read_composition(q)[0], C.read_composition(s)[0]
        if C.read_composition(q)[1] == 0 or C.read_composition(s)[1] == 0:
            continue
        ours = C.choose_matrix_adjust_rule(len(q), len(s), pq, ps, 2)
        assert ours == blast.choose_rule(len(q), len(s), q, s, 2)
        seen.add(ours)
        for name in ("BLOSUM45", "PAM30"):
            assert C.choose_matrix_adjust_rule(len(q), len(s), pq, ps, 2, name) == \
                blast.choose_rule(len(q), len(s), q, s, 2, name)
    assert seen == {C.COMPO_SCALE_OLD_MATRIX, C.USER_SPECIFIED_REL_ENTROPY}


# --------------------------------------------------------------------------------------------
# Target frequencies
# --------------------------------------------------------------------------------------------

def _adjusted_marginals(text, n):
    probs = C._gather_letter_probs(C._stdaa_probs(_probs(text)), C.ALPHA_CONVERT)
    joint, rows, cols = C.joint_probs("BLOSUM62")
    return C._apply_pseudocounts(probs, n, rows, C.RE_PSEUDOCOUNTS)


@pytest.mark.parametrize("target", [None, 0.44, 0.30])
def test_optimized_target_frequencies_meet_constraints(target):
    joint, _, _ = C.joint_probs("BLOSUM62")
    query = "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDNLSGAEKAVQVKVKALPDAQFEVVHSLAKW"
    subject = "MSDNGPQNQRNAPRITFGGPSDSTGSNQNGERSGARSKQRRPQGLPNNTASWFTALTQHGKEDLKFPRGQGVPI"
    rows = _adjusted_marginals(query, len(query))
    cols = _adjusted_marginals(subject, len(subject))
    ok, x, its = C.optimize_target_frequencies(joint, rows, cols, target)
    assert ok and 0 < its < C.COMPO_ADJUST_ITERATION_LIMIT
    assert (x > 0).all()
    assert np.abs(x.sum(axis=1) - rows).max() < 1e-10
    assert np.abs(x.sum(axis=0) - cols).max() < 1e-10
    if target is not None:
        # the relative entropy of x to the product of the given marginals
        re = float((x * np.log(x / np.outer(rows, cols))).sum())
        assert abs(re - target) < 1e-9
    else:                  # unconstrained: x q-proportional in the form x = q a_i b_j
        ratio = x / joint
        assert np.abs(ratio / ratio[0] / (ratio[:, :1] / ratio[0, 0]) - 1).max() < 1e-7


def test_optimization_keeps_an_optimal_table():
    """Asked for the table's own marginals and no entropy constraint, the table is the optimum."""
    joint, _, _ = C.joint_probs("BLOSUM62")
    ok, x, its = C.optimize_target_frequencies(joint, joint.sum(axis=1), joint.sum(axis=0), None)
    assert ok and its <= 3      # only the multipliers move: the objective's gradient is 1
    assert np.abs(x - joint).max() < 1e-15


@needs_blast_libs
@pytest.mark.parametrize("target", [None, 0.44])
def test_optimized_target_frequencies_equal_blasts(blast, target):
    joint, bg_rows, bg_cols = C.joint_probs("BLOSUM62")
    for q, s in _pairs(11, 12):
        rows = C._apply_pseudocounts(C._gather_letter_probs(C._stdaa_probs(
            C.read_composition(q)[0]), C.ALPHA_CONVERT), len(q), bg_rows, 20)
        cols = C._apply_pseudocounts(C._gather_letter_probs(C._stdaa_probs(
            C.read_composition(s)[0]), C.ALPHA_CONVERT), len(s), bg_cols, 20)
        ok, x, its = C.optimize_target_frequencies(joint, rows, cols, target)
        out = (ct.c_double * 400)()
        iterations = ct.c_int(0)
        status = blast.ca.Blast_OptimizeTargetFrequencies(
            out, 20, ct.byref(iterations), (ct.c_double * 400)(*joint.ravel()),
            (ct.c_double * 20)(*rows), (ct.c_double * 20)(*cols), target is not None,
            target or 0.0, C.COMPO_ADJUST_ERR_TOLERANCE, C.COMPO_ADJUST_ITERATION_LIMIT)
        assert (status == 0) == ok and iterations.value == its
        assert (x.ravel() == np.array(out[:])).all()


# --------------------------------------------------------------------------------------------
# Blast_AdjustScores
# --------------------------------------------------------------------------------------------

def _adjust(info, q, s, mode):
    pq, nq = C.read_composition(q)
    ps, ns = C.read_composition(s)
    workspace = C.new_workspace(info) if mode > 1 else None
    return C.adjust_scores(info, (pq, nq), len(q), (ps, ns), len(s), mode, workspace)


def test_no_true_letters_fails():
    info = C.matrix_info("BLOSUM62")
    result = _adjust(info, encode("XXXXBZ"), encode("ACDEFG"), 2)
    assert result.failed and result.matrix is None
    assert _adjust(info, encode("ACDEFG"), encode("XXXX"), 1).failed


def test_mode_1_background_pair_keeps_ratios():
    """A pair of background compositions scores like the matrix: LambdaRatio 1, matrix at 32x."""
    info = C.matrix_info("BLOSUM62")
    bg = C.background_freqs("BLOSUM62")[[C.ALPHA_CONVERT[c] for c in C.TRUE_CHAR_POSITIONS]]
    result = C.adjust_scores(info, (bg, 1000), 1000, (bg, 1000), 1000, 1)
    assert result.rule == C.COMPO_SCALE_OLD_MATRIX
    assert 0.95 < result.lambda_ratio <= 1.0
    core = C.TRUE_CHAR_POSITIONS
    expected = C.int4_matrix_from_freq(info.start_freq_ratios,
                                       info.ungapped_lambda / result.lambda_ratio)
    assert (result.matrix[np.ix_(core, core)] == expected[np.ix_(core, core)]).all()
    star = NCBISTDAA.index("*")
    assert (result.matrix[star] == info.start_matrix[star]).all()
    assert (result.matrix[:, 0] == C.SCORE_MIN).all()


def test_adjusted_matrix_layout():
    info = C.matrix_info("BLOSUM62")
    q = encode("MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDNLSGAEKAVQVKVKALPDAQ" * 2)
    s = encode("MSDNGPQNQRNAPRITFGGPSDSTGSNQNGERSGARSKQRRPQGLPNNTASWFTALTQHGKEDLK" * 2)
    result = _adjust(info, q, s, 2)
    m = result.matrix
    assert result.rule == C.USER_SPECIFIED_REL_ENTROPY and result.lambda_ratio == 1.0
    c, x, u, o, star = (NCBISTDAA.index(ch) for ch in "CXUO*")
    assert (m[u] == m[c]).all() and (m[:, u] == m[:, c]).all()
    assert (m[o] == m[x]).all() and (m[:, o] == m[:, x]).all()
    assert (m[x] <= -1).all() and (m[:, x] <= -1).all()
    assert (m[star] == info.start_matrix[star]).all()
    assert (m[:, star] == info.start_matrix[:, star]).all()
    assert (m[0] == C.SCORE_MIN).all() and (m[1:, 0] == C.SCORE_MIN).all()
    a = NCBISTDAA.index("A")
    assert 100 < m[a, a] < 180          # 32 x BLAST's scale (4 bits / 2 at scale 1)


@needs_blast_libs
@pytest.mark.parametrize("mode", [1, 2, 3])
def test_adjust_scores_equals_blasts(blast, mode):
    info = C.matrix_info("BLOSUM62")
    rules = set()
    for q, s in _pairs(100 + mode, 60):
        status, expected, rule, ratio = blast.adjust_scores(info, q, s, mode)
        ours = _adjust(info, q, s, mode)
        assert ours.failed == (status == 1)
        if status == 1:
            continue
        assert status == 0
        assert ours.rule == rule
        assert ours.lambda_ratio == ratio
        assert (ours.matrix == expected).all()
        rules.add(rule)
    if mode == 2:
        assert rules == {C.COMPO_SCALE_OLD_MATRIX, C.USER_SPECIFIED_REL_ENTROPY}


@needs_blast_libs
@pytest.mark.parametrize("mode", [1, 2, 3])
@pytest.mark.parametrize("name", [n for n in MATRIX_NAMES if n != "BLOSUM62"])
def test_adjust_scores_equals_blasts_other_matrices(blast, name, mode):
    info = C.matrix_info(name)
    for q, s in _pairs(200 + mode, 8):
        status, expected, rule, ratio = blast.adjust_scores(info, q, s, mode)
        ours = _adjust(info, q, s, mode)
        assert ours.failed == (status == 1)
        if status == 0:
            assert ours.rule == rule and ours.lambda_ratio == ratio
            assert (ours.matrix == expected).all()


def test_compiled_lambda_equals_stats_karlin_lambda_nr():
    """The compiled Blast_KarlinLambdaNR of mode 1 gives stats.py's lambda, to the bit."""
    from gpu_search.blast.stats import ScoreFreq, karlin_lambda_nr

    info = C.matrix_info("BLOSUM62")
    checked = 0
    for q, s in _pairs(300, 40):
        pq, nq = C.read_composition(q)
        ps, ns = C.read_composition(s)
        if not (nq and ns):
            continue
        probs, lo, hi = C._matrix_score_probs(info.start_matrix, C._stdaa_probs(ps),
                                              C._stdaa_probs(pq), C.TRUE_CHAR_POSITIONS)
        avg = 0.0
        for i, p in enumerate(probs.tolist()):
            avg += (lo + i) * p
        expected = karlin_lambda_nr(ScoreFreq(lo, hi, lo, hi, probs.tolist(), avg),
                                    info.ungapped_lambda)
        assert C._calc_lambda(probs, lo, hi, info.ungapped_lambda) == expected
        checked += 1
    assert checked > 30
    # no positive score, or a non-negative mean: no lambda
    assert C._calc_lambda(np.array([0.5, 0.5]), -2, -1, 0.3) == -1.0
    assert C._calc_lambda(np.array([0.5, 0.0, 0.5]), -1, 1, 0.3) == -1.0


def test_optimization_failure_falls_back_to_rescaling():
    """Homopolymers of 1000: Newton's method fails; BLAST rescales the old matrix instead."""
    info = C.matrix_info("BLOSUM62")
    q, s = encode("W" * 1000), encode("C" * 1000)
    joint, rows, cols = C.joint_probs("BLOSUM62")
    pq, nq = C.read_composition(q)
    ps, ns = C.read_composition(s)
    gather = C._gather_letter_probs
    ok, _, its = C.optimize_target_frequencies(
        joint, C._apply_pseudocounts(gather(C._stdaa_probs(pq), C.ALPHA_CONVERT), nq, rows, 20),
        C._apply_pseudocounts(gather(C._stdaa_probs(ps), C.ALPHA_CONVERT), ns, cols, 20), 0.44)
    assert not ok
    for mode in (2, 3):
        result = _adjust(info, q, s, mode)
        assert result.rule == C.COMPO_SCALE_OLD_MATRIX and not result.failed
        assert 0.5 <= result.lambda_ratio <= 1.0
        rescaled, ratio = C.composition_based_stats(info, C._stdaa_probs(pq), C._stdaa_probs(ps))
        assert ratio == result.lambda_ratio and (rescaled == result.matrix).all()


@needs_blast_libs
def test_fallback_equals_blasts(blast, capfd):
    info = C.matrix_info("BLOSUM62")
    for a, b in [("W", "C"), ("A", "W"), ("P", "H")]:
        q, s = encode(a * 1000), encode(b * 1000)
        for mode in (2, 3):
            status, expected, rule, ratio = blast.adjust_scores(info, q, s, mode)
            ours = _adjust(info, q, s, mode)
            assert status == 0 and rule == C.COMPO_SCALE_OLD_MATRIX == ours.rule
            assert ours.lambda_ratio == ratio and (ours.matrix == expected).all()
    capfd.readouterr()      # the library's own diagnostics, if any


@needs_blast_libs
@pytest.mark.parametrize("rule", [C.UNCONSTRAINED_REL_ENTROPY, C.REL_ENTROPY_OLD_MATRIX_NEW_CONTEXT,
                                  C.REL_ENTROPY_OLD_MATRIX_OLD_CONTEXT,
                                  C.USER_SPECIFIED_REL_ENTROPY])
def test_composition_matrix_adj_rules_equal_blasts(blast, rule):
    """The rules blastp's tests never choose, Blast_CompositionMatrixAdj's other targets."""
    for name in ("BLOSUM62", "PAM70"):
        info = C.matrix_info(name)
        for q, s in _pairs(400 + rule, 6):
            pq, nq = C.read_composition(q)
            ps, ns = C.read_composition(s)
            if not (nq and ns):
                continue
            status, expected = blast.composition_matrix_adj(info, rule, q, s)
            ours_status, ours = C.composition_matrix_adj(info, rule, nq, ns, C._stdaa_probs(pq),
                                                         C._stdaa_probs(ps))
            assert ours_status == status
            if status == 0:
                assert (ours == expected).all()


SELF_TEST_PROTEINS = {
    # length 300, ordinary composition (the subject window is the whole sequence)
    "ordinary": "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDNLSGAEKAVQVKVKALPDAQFEVVHSLAKWKRQTLGQ"
                "HDFSAGEGLYTHMKALRPDEDRLSPLHSVYVDQWDWERVMGDGERQFSTLKSTVEAIWAGIKATEAAVSEEFGLAPFLPDQ"
                "IHFVHSQELLSRYPDLDAKGRERAIAKDLGAVFLVGIGGKLSDGHRHDVRAPDYDDWSTPSELGHAGLNGDILVWNPVLED"
                "AFELSSMGIRVDADTLKHQLALTGDEDRLELEWHQALLRGEMPQTIGGGIGQSRLTMLLLQLPHIGQVQAGVWPAACRE",
    # serine-rich, low complexity
    "biased": "MSSSSSSGSSGSSSRRRRSSSSSGGGGSSSSRRSSSSPPPSSSSGGSSRRSSSSSSGSSGSSSRRRRSSSSSGGGGSSSSRRSS"
              "WWCMHHY",
}


@pytest.mark.skipif(LIB_DIR is None, reason="BLAST+ 2.12 (blastp) not installed")
@pytest.mark.parametrize("name", ["BLOSUM62", "PAM30"])
def test_self_alignment_scores_equal_blastp(tmp_path, name):
    """blastp's score of a protein against itself (one full-length ungapped HSP, too alike
    for SEG) is the adjusted matrix's diagonal summed over the protein, divided by 32."""
    for label, text in SELF_TEST_PROTEINS.items():
        fasta = tmp_path / f"{label}.fa"
        fasta.write_text(f">{label}\n{text}\n")
        codes = encode(text)
        comp = C.read_composition(codes)
        info = C.matrix_info(name)
        for mode in (1, 2, 3):
            row = subprocess.run(
                ["blastp", "-query", str(fasta), "-subject", str(fasta), "-matrix", name,
                 "-comp_based_stats", str(mode), "-max_hsps", "1",
                 "-outfmt", "6 score qstart qend sstart send gaps"],
                capture_output=True, text=True, timeout=60, check=True).stdout.split()
            assert row[1:] == ["1", str(len(text)), "1", str(len(text)), "0"], (label, mode)
            adjusted = C.adjust_scores(info, comp, len(codes), comp, len(codes), mode,
                                       C.new_workspace(info) if mode > 1 else None)
            raw = sum(int(adjusted.matrix[c, c]) for c in codes)
            assert int(row[0]) == math.floor(raw / 32 + 0.5), (label, mode)   # BLAST_Nint
