"""BLAST+ 2.12 blastp's alphabet, matrices and statistics (gpu_search.blast.alphabet/matrix/stats).

Two references:

* the ``blastp`` binary: E-value, bit-score and pident text of -outfmt 6 for
  every row of real searches, the Karlin-Altschul parameters and effective
  search space it reports, -dbsize;
* the BLAST+ core library the binary runs on (libblast.so, found through
  ``ldd blastp``), called with ctypes: the internal score matrix, the
  built-in statistics tables, BLAST_SpougeStoE/EtoS,
  BLAST_ComputeLengthAdjustment, ErfC and Blast_ScoreBlkKbpUngappedCalc,
  compared bit for bit.

Everything that needs BLAST+ is skipped, with a clear message, when blastp is
not installed.
"""

from __future__ import annotations

import ctypes
import math
import os
import random
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from gpu_search.blast import stats
from gpu_search.blast.alphabet import (EASEL_TO_NCBISTDAA, NCBISTDAA, blast_query_codes, decode,
                                       encode)
from gpu_search.blast.matrix import BLAST_SCORE_MIN, MATRIX_NAMES, load_matrix, ncbi_table
from gpu_search.errors import OptionError, SequenceError
from gpu_search.seqdb import AMINO_SYMBOLS

BLASTP = shutil.which("blastp")
needs_blast = pytest.mark.skipif(BLASTP is None or shutil.which("makeblastdb") is None,
                                 reason="BLAST+ (blastp, makeblastdb) is not installed")

QUERY_IDS = {130: "938293.PRJEB85.HG003685_434", 499: "938293.PRJEB85.HG003685_287",
             1000: "938293.PRJEB85.HG003685_162"}
DB_RESIDUES, DB_SEQS = 682_583, 2_100
I = NCBISTDAA.index


# ---------------------------------------------------------------------------
# fixtures
# ---------------------------------------------------------------------------

def _proteome_path() -> Path:
    import pyhmmer
    return (Path(os.path.dirname(pyhmmer.__file__)) / "tests" / "data" / "seqs"
            / "938293.PRJEB85.HG003687.faa")


def _read_fasta(path: Path) -> dict[str, str]:
    seqs, name = {}, None
    for line in path.read_text().splitlines():
        if line.startswith(">"):
            name = line[1:].split()[0]
            seqs[name] = ""
        elif name:
            seqs[name] += line.strip()
    return seqs


@pytest.fixture(scope="module")
def proteome() -> dict[str, str]:
    return _read_fasta(_proteome_path())


@pytest.fixture(scope="module")
def blastdb(tmp_path_factory, proteome):
    """The 2,100-protein proteome as a BLAST database, plus the three queries (130/499/1000 aa)."""
    if BLASTP is None or shutil.which("makeblastdb") is None:
        pytest.skip("BLAST+ (blastp, makeblastdb) is not installed")
    d = tmp_path_factory.mktemp("blastdb")
    subprocess.run(["makeblastdb", "-in", str(_proteome_path()), "-dbtype", "prot",
                    "-out", str(d / "db")], check=True, capture_output=True)
    queries = {}
    for length, name in QUERY_IDS.items():
        assert len(proteome[name]) == length
        path = d / f"q{length}.fa"
        path.write_text(f">{name}\n{proteome[name]}\n")
        queries[length] = path
    allq = d / "q3.fa"
    allq.write_text("".join(p.read_text() for p in queries.values()))
    return {"db": str(d / "db"), "queries": queries, "all": allq, "dir": d}


def _blastp(*args) -> str:
    out = subprocess.run([BLASTP, *map(str, args)], check=True, capture_output=True, text=True)
    return out.stdout


def _tabular(db, query, columns, *extra) -> list[list[str]]:
    text = _blastp("-query", query, "-db", db, "-comp_based_stats", "0", "-outfmt",
                   "6 " + columns, *extra)
    return [line.split("\t") for line in text.splitlines()]


# --- ctypes view of BLAST+'s own library -----------------------------------

class _KBP(ctypes.Structure):       # Blast_KarlinBlk
    _fields_ = [("Lambda", ctypes.c_double), ("K", ctypes.c_double), ("logK", ctypes.c_double),
                ("H", ctypes.c_double), ("paramC", ctypes.c_double)]


class _GBP(ctypes.Structure):       # Blast_GumbelBlk
    _fields_ = ([(n, ctypes.c_double) for n in ("Lambda", "C", "G", "a", "Alpha", "Sigma",
                                                 "a_un", "Alpha_un", "b", "Beta", "Tau")]
                + [("db_length", ctypes.c_int64), ("filled", ctypes.c_uint8)])


class _Matrix(ctypes.Structure):    # SBlastScoreMatrix
    _fields_ = [("data", ctypes.POINTER(ctypes.POINTER(ctypes.c_int))), ("ncols", ctypes.c_size_t),
                ("nrows", ctypes.c_size_t)]


class _ScoreBlk(ctypes.Structure):  # BlastScoreBlk (leading fields)
    _fields_ = [("protein_alphabet", ctypes.c_uint8), ("alphabet_code", ctypes.c_uint8),
                ("alphabet_size", ctypes.c_int16), ("alphabet_start", ctypes.c_int16),
                ("name", ctypes.c_void_p), ("comments", ctypes.c_void_p),
                ("matrix", ctypes.POINTER(_Matrix)), ("psi_matrix", ctypes.c_void_p),
                ("matrix_only_scoring", ctypes.c_uint8), ("complexity_adjusted_scoring", ctypes.c_uint8),
                ("loscore", ctypes.c_int32), ("hiscore", ctypes.c_int32), ("penalty", ctypes.c_int32),
                ("reward", ctypes.c_int32), ("scale_factor", ctypes.c_double),
                ("read_in_matrix", ctypes.c_uint8), ("sfp", ctypes.c_void_p),
                ("kbp", ctypes.c_void_p), ("kbp_gap", ctypes.c_void_p), ("gbp", ctypes.c_void_p),
                ("kbp_std", ctypes.POINTER(ctypes.POINTER(_KBP))), ("kbp_psi", ctypes.c_void_p),
                ("kbp_gap_std", ctypes.c_void_p), ("kbp_gap_psi", ctypes.c_void_p),
                ("kbp_ideal", ctypes.POINTER(_KBP))]


class _Context(ctypes.Structure):   # BlastContextInfo (leading fields)
    _fields_ = [("query_offset", ctypes.c_int32), ("query_length", ctypes.c_int32),
                ("eff_searchsp", ctypes.c_int64), ("length_adjustment", ctypes.c_int32),
                ("query_index", ctypes.c_int32), ("frame", ctypes.c_int8), ("is_valid", ctypes.c_uint8)]


class _QueryInfo(ctypes.Structure):  # BlastQueryInfo (leading fields)
    _fields_ = [("first_context", ctypes.c_int32), ("last_context", ctypes.c_int32),
                ("num_queries", ctypes.c_int), ("contexts", ctypes.POINTER(_Context))]


BLASTAA_SEQ_CODE, EBLASTTYPE_BLASTP = 11, 3


@pytest.fixture(scope="module")
def libblast():
    """BLAST+'s core library (the one blastp is linked with), with prototypes set."""
    if BLASTP is None:
        pytest.skip("BLAST+ (blastp) is not installed")
    ldd = subprocess.run(["ldd", BLASTP], capture_output=True, text=True).stdout
    m = re.search(r"libblast\.so\S* => (\S+)", ldd)
    assert m, "blastp is not linked with libblast.so"
    lib = ctypes.CDLL(m.group(1))
    P = ctypes.POINTER
    for name, res, args in [
        ("ErfC", ctypes.c_double, [ctypes.c_double]),
        ("Blast_KarlinBlkGappedLoadFromTables", ctypes.c_int16,
         [P(_KBP), ctypes.c_int32, ctypes.c_int32, ctypes.c_char_p]),
        ("Blast_GumbelBlkLoadFromTables", ctypes.c_int16,
         [P(_GBP), ctypes.c_int32, ctypes.c_int32, ctypes.c_char_p]),
        ("BLAST_SpougeStoE", ctypes.c_double,
         [ctypes.c_int32, P(_KBP), P(_GBP), ctypes.c_int32, ctypes.c_int32]),
        ("BLAST_SpougeEtoS", ctypes.c_int32,
         [ctypes.c_double, P(_KBP), P(_GBP), ctypes.c_int32, ctypes.c_int32]),
        ("BLAST_ComputeLengthAdjustment", ctypes.c_int32,
         [ctypes.c_double, ctypes.c_double, ctypes.c_double, ctypes.c_double, ctypes.c_int32,
          ctypes.c_int64, ctypes.c_int32, P(ctypes.c_int32)]),
        ("BlastScoreBlkNew", P(_ScoreBlk), [ctypes.c_uint8, ctypes.c_int32]),
        ("BlastScoreBlkFree", ctypes.c_void_p, [P(_ScoreBlk)]),
        ("Blast_ScoreBlkMatrixFill", ctypes.c_int16, [P(_ScoreBlk), ctypes.c_void_p]),
        ("BLAST_ScoreSetAmbigRes", ctypes.c_int16, [P(_ScoreBlk), ctypes.c_char]),
        ("BlastQueryInfoNew", P(_QueryInfo), [ctypes.c_int, ctypes.c_int]),
        ("BlastQueryInfoFree", ctypes.c_void_p, [P(_QueryInfo)]),
        ("Blast_ScoreBlkKbpUngappedCalc", ctypes.c_int16,
         [ctypes.c_int, P(_ScoreBlk), ctypes.c_char_p, P(_QueryInfo), ctypes.c_void_p]),
    ]:
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    return lib


def _score_blk(lib, name: str):
    """A protein BlastScoreBlk with matrix ``name`` filled (Blast_ScoreBlkMatrixInit's steps)."""
    sbp = lib.BlastScoreBlkNew(BLASTAA_SEQ_CODE, 1)
    h = sbp.contents
    assert (h.protein_alphabet, h.alphabet_code, h.alphabet_size, h.alphabet_start) == (1, 11, 28, 0)
    libc = ctypes.CDLL(None)
    libc.strdup.restype, libc.strdup.argtypes = ctypes.c_void_p, [ctypes.c_char_p]
    h.name = libc.strdup(name.encode())
    assert lib.BLAST_ScoreSetAmbigRes(sbp, b"X") == 0
    assert lib.Blast_ScoreBlkMatrixFill(sbp, None) == 0
    return sbp


def _blast_tables(lib, name, gap_open, gap_extend):
    kbp, gbp = _KBP(), _GBP()
    assert lib.Blast_KarlinBlkGappedLoadFromTables(ctypes.byref(kbp), gap_open, gap_extend,
                                                   name.encode()) == 0
    assert lib.Blast_GumbelBlkLoadFromTables(ctypes.byref(gbp), gap_open, gap_extend,
                                             name.encode()) == 0
    return kbp, gbp


# ---------------------------------------------------------------------------
# alphabet
# ---------------------------------------------------------------------------

def test_alphabet_codes():
    assert NCBISTDAA == "-ABCDEFGHIKLMNPQRSTVWXYZU*OJ" and len(NCBISTDAA) == 28
    assert EASEL_TO_NCBISTDAA.dtype == np.uint8 and len(EASEL_TO_NCBISTDAA) == 29
    for code, sym in enumerate(AMINO_SYMBOLS):
        assert NCBISTDAA[EASEL_TO_NCBISTDAA[code]] == ("X" if sym == "~" else sym)
    codes = encode("acdX*uoJ-")
    assert codes.dtype == np.uint8 and decode(codes) == "ACDX*UOJ-"
    with pytest.raises(SequenceError):
        encode("AC1")


def test_query_o_becomes_x():
    assert decode(blast_query_codes(encode("MOKOU"))) == "MXKXU"
    assert decode(blast_query_codes(encode("MKU"))) == "MKU"


# ---------------------------------------------------------------------------
# matrices
# ---------------------------------------------------------------------------

def test_matrix_core_equals_biopython():
    """NCBI's tables share the 20 x 20 core with Biopython's, except BLOSUM80 (another scaling)."""
    from Bio.Align import substitution_matrices
    aa = "ARNDCQEGHILKMFPSTWYV"
    for name in MATRIX_NAMES:
        bio = substitution_matrices.load(name)
        m = load_matrix(name).scores
        same = all(m[I(a), I(b)] == bio[a][b] for a in aa for b in aa)
        assert same == (name != "BLOSUM80"), name
        table = ncbi_table(name)
        assert all(m[I(a), I(b)] == table[a, b] for a in aa + "BJZX*" for b in aa + "BJZX*")


def test_matrix_blast_conventions():
    m = load_matrix("blosum62")                 # case-insensitive, like -matrix
    s = m.scores
    assert m.name == "BLOSUM62" and s.shape == (28, 28) and s.dtype == np.int32
    assert not s.flags.writeable
    assert (s[0, :] == BLAST_SCORE_MIN).all() and (s[:, 0] == BLAST_SCORE_MIN).all()
    assert (s == s.T).all()
    assert (s[I("U"), 1:] == s[I("C"), 1:]).all() and s[I("U"), I("U")] == 9      # U scores as C
    assert (s[I("O"), 1:] == s[I("X"), 1:]).all()                               # O scores as X
    assert s[I("X"), I("X")] == -1 and s[I("X"), I("A")] == -1 and s[I("X"), I("*")] == -4
    assert s[I("*"), I("*")] == 1 and s[I("*"), I("A")] == -4
    assert s[I("J"), I("I")] == 3 and s[I("J"), I("L")] == 3 and s[I("J"), I("J")] == 3
    assert s[I("B"), I("N")] == 4 and s[I("Z"), I("E")] == 4
    assert (m.loscore, m.hiscore) == (-4, 11)
    assert m.default_gap == (11, 1) and m.word_threshold == 11
    assert (11, 1) in m.allowed_gaps and (11, 2) in m.allowed_gaps and (5, 1) not in m.allowed_gaps
    expected = {"BLOSUM45": (14, 2), "BLOSUM50": (13, 2), "BLOSUM62": (11, 1), "BLOSUM80": (10, 1),
                "BLOSUM90": (10, 1), "PAM30": (9, 1), "PAM70": (10, 1), "PAM250": (14, 2)}
    for name, gap in expected.items():
        assert load_matrix(name).default_gap == gap == stats.default_gap_costs(name)
    with pytest.raises(OptionError, match="FOO is not a supported matrix"):
        load_matrix("FOO")


def test_matrix_equals_blast_internal_matrix(libblast):
    """Bit for bit sbp->matrix->data after Blast_ScoreBlkMatrixFill, loscore and hiscore too."""
    for name in MATRIX_NAMES:
        sbp = _score_blk(libblast, name)
        h = sbp.contents
        data = h.matrix.contents.data
        internal = np.array([[data[i][j] for j in range(28)] for i in range(28)])
        m = load_matrix(name)
        assert (internal == m.scores).all(), name
        assert (h.loscore, h.hiscore) == (m.loscore, m.hiscore)
        libblast.BlastScoreBlkFree(sbp)


def test_matrix_defaults_equal_blast_suggestions(libblast):
    """Default gap costs, word threshold and two-hit window of each matrix as libblast suggests them.

    blastp takes -threshold and -window_size, when not given, from
    BLAST_GetSuggestedThreshold / BLAST_GetSuggestedWindowSize (blast_options.c),
    and the gap costs from BLAST_GetProteinGapExistenceExtendParams.  The window
    is not 40 for every matrix (BLOSUM45 60, BLOSUM80 25, PAM30 15, PAM70 20):
    with 40 everywhere, blastp -matrix BLOSUM45 / PAM30 rows differ.
    """
    e_blast_type_blastp = 3          # PROTEIN_QUERY_MASK | PROTEIN_SUBJECT_MASK (blast_program.h)
    P = ctypes.POINTER
    libblast.BLAST_GetSuggestedThreshold.restype = ctypes.c_int16
    libblast.BLAST_GetSuggestedThreshold.argtypes = [ctypes.c_int, ctypes.c_char_p, P(ctypes.c_double)]
    libblast.BLAST_GetSuggestedWindowSize.restype = ctypes.c_int16
    libblast.BLAST_GetSuggestedWindowSize.argtypes = [ctypes.c_int, ctypes.c_char_p, P(ctypes.c_int32)]
    libblast.BLAST_GetProteinGapExistenceExtendParams.restype = ctypes.c_int16
    libblast.BLAST_GetProteinGapExistenceExtendParams.argtypes = [ctypes.c_char_p, P(ctypes.c_int32),
                                                                  P(ctypes.c_int32)]
    windows = {}
    for name in MATRIX_NAMES:
        m = load_matrix(name)
        thr, win, go, ge = ctypes.c_double(), ctypes.c_int32(-1), ctypes.c_int32(), ctypes.c_int32()
        assert libblast.BLAST_GetSuggestedThreshold(e_blast_type_blastp, name.encode(), ctypes.byref(thr)) == 0
        assert libblast.BLAST_GetSuggestedWindowSize(e_blast_type_blastp, name.encode(), ctypes.byref(win)) == 0
        assert libblast.BLAST_GetProteinGapExistenceExtendParams(name.encode(), ctypes.byref(go),
                                                                 ctypes.byref(ge)) == 0
        assert thr.value == m.word_threshold, name
        assert win.value == m.window_size, name
        assert (go.value, ge.value) == m.default_gap, name
        windows[name] = m.window_size
    assert windows == {"BLOSUM45": 60, "BLOSUM50": 40, "BLOSUM62": 40, "BLOSUM80": 25, "BLOSUM90": 40,
                       "PAM30": 15, "PAM70": 20, "PAM250": 40}


@needs_blast
def test_matrix_defaults_reported_by_blastp(blastdb):
    """blastp's own report of each matrix's default gap costs and word threshold."""
    for name in MATRIX_NAMES:
        text = _blastp("-query", blastdb["queries"][130], "-db", blastdb["db"], "-matrix", name,
                       "-comp_based_stats", "0", "-evalue", "1e-5")
        gap = re.search(r"Existence: (\d+), Extension: (\d+)", text)
        thr = re.search(r"Neighboring words threshold: (\d+)", text)
        m = load_matrix(name)
        assert (int(gap[1]), int(gap[2])) == m.default_gap
        assert int(thr[1]) == m.word_threshold


@needs_blast
def test_special_letters_score_as_blast(tmp_path):
    """U scores as C, O and X as X, B/Z/J/* as NCBI's tables, on both sides of an alignment."""
    base = "MKVLAAGIVGLLLAACSSEKPQTDNRWFYHIVDEGKSTLLQRNAPWEQFIDLKKGSVQEAHHWWCCMM"
    pos = 30
    mutants = {f"s{i}": base[:pos] + letter + base[pos + 1:] for i, letter in enumerate("UOJBZX*ACW")}
    (tmp_path / "s.fa").write_text(">ref\n" + base + "\n"
                                   + "".join(f">{k}\n{v}\n" for k, v in mutants.items()))
    subprocess.run(["makeblastdb", "-in", str(tmp_path / "s.fa"), "-dbtype", "prot",
                    "-out", str(tmp_path / "sdb")], check=True, capture_output=True)
    s = load_matrix("BLOSUM62").scores
    ref_letter = base[pos]
    for qletter in "UOJBZX*":
        query = base[:pos] + qletter + base[pos + 1:]
        (tmp_path / "q.fa").write_text(">q\n" + query + "\n")
        rows = _tabular(str(tmp_path / "sdb"), tmp_path / "q.fa", "sseqid score", "-evalue", "1e5",
                        "-max_hsps", "1")
        got = {r[0]: int(r[1]) for r in rows}
        ours = {k: int(sum(s[I(a), I(b)] for a, b in zip(query, v))) for k, v in mutants.items()}
        ours["ref"] = int(sum(s[I(a), I(b)] for a, b in zip(query, base)))
        assert got == ours, (qletter, ref_letter)


# ---------------------------------------------------------------------------
# statistical tables
# ---------------------------------------------------------------------------

def test_gapped_params_tables():
    g = stats.gapped_params("BLOSUM62", 11, 1)
    assert (g.kbp.Lambda, g.kbp.K, g.kbp.H, g.alpha, g.beta) == (0.267, 0.041, 0.14, 1.9, -30)
    assert (g.gbp.C, g.gbp.Alpha, g.gbp.Sigma, g.gbp.G) == (0.669720, 42.6028, 43.6362, 12.0)
    assert g.kbp.logK == math.log(0.041)
    with pytest.raises(OptionError, match="5 and 1 are not supported for BLOSUM62"):
        stats.gapped_params("BLOSUM62", 5, 1)
    with pytest.raises(OptionError):
        stats.gapped_params("NOPE", 11, 1)


def test_gapped_params_equal_blast_tables(libblast):
    """Every (matrix, gap costs) row: Karlin and Gumbel blocks bit for bit."""
    for name in MATRIX_NAMES:
        for go, ge in stats.allowed_gap_costs(name):
            kbp, gbp = _blast_tables(libblast, name, go, ge)
            g = stats.gapped_params(name, go, ge)
            for f in ("Lambda", "K", "logK", "H"):
                assert getattr(kbp, f) == getattr(g.kbp, f), (name, go, ge, f)
            for f in ("Lambda", "C", "G", "a", "Alpha", "Sigma", "a_un", "Alpha_un", "b", "Beta",
                      "Tau"):
                assert getattr(gbp, f) == getattr(g.gbp, f), (name, go, ge, f)


# ---------------------------------------------------------------------------
# Spouge E-values, scores, length adjustment: BLAST's functions bit for bit
# ---------------------------------------------------------------------------

def test_erfc_equals_blast(libblast):
    rng = random.Random(1)
    xs = ([rng.uniform(-30, 30) for _ in range(20000)] + [rng.uniform(-6, 6) for _ in range(20000)]
          + [0.0, 1e-11, -1e-11, 0.5, -0.5, 1.5, 2.5, 4.5, 5.8, 28.0, -28.0, 40.0])
    for x in xs:
        assert stats.blast_erfc(x) == libblast.ErfC(x), x


def test_spouge_and_length_adjustment_equal_blast(libblast):
    rng = random.Random(7)
    for name in MATRIX_NAMES:
        for go, ge in stats.allowed_gap_costs(name):
            kbp, gbp = _blast_tables(libblast, name, go, ge)
            g = stats.gapped_params(name, go, ge)
            for _ in range(40):
                y, m, n = rng.randint(1, 3000), rng.randint(1, 5000), rng.randint(1, 40000)
                db = rng.choice([0, DB_RESIDUES, 10**9, 123_456])
                gbp.db_length = db
                assert stats.spouge_evalue(y, g.kbp, g.gbp, m, n, db) == \
                    libblast.BLAST_SpougeStoE(y, ctypes.byref(kbp), ctypes.byref(gbp), m, n)
                e = rng.choice([10.0, 1e-3, 1000.0, 1e-50, 0.5, 5e7])
                assert stats.spouge_score(e, g.kbp, g.gbp, m, n, db) == \
                    libblast.BLAST_SpougeEtoS(e, ctypes.byref(kbp), ctypes.byref(gbp), m, n)
                N, dbl = rng.randint(1, 100_000), rng.randint(1000, 10**10)
                out = ctypes.c_int32()
                status = libblast.BLAST_ComputeLengthAdjustment(
                    kbp.K, kbp.logK, g.alpha / kbp.Lambda, g.beta, m, dbl, N, ctypes.byref(out))
                assert stats.length_adjustment(g.kbp.K, g.kbp.logK, g.alpha_d_lambda, g.beta,
                                               m, dbl, N) == (out.value, status == 0)


def test_spouge_evalue_uses_gbp_db_length():
    g = stats.gapped_params("BLOSUM62", 11, 1)
    gbp = stats.GumbelBlk(**{**g.gbp.__dict__, "db_length": DB_RESIDUES})
    assert stats.spouge_evalue(60, g.kbp, gbp, 130, 300) == \
        stats.spouge_evalue(60, g.kbp, g.gbp, 130, 300, DB_RESIDUES)
    # no database length: the pairwise E-value
    assert stats.spouge_evalue(60, g.kbp, g.gbp, 130, 300, 0) * DB_RESIDUES / 300 == \
        pytest.approx(stats.spouge_evalue(60, g.kbp, g.gbp, 130, 300, DB_RESIDUES), rel=1e-12)
    s = stats.spouge_score(10.0, g.kbp, g.gbp, 130, 300, DB_RESIDUES)
    assert stats.spouge_evalue(s, g.kbp, g.gbp, 130, 300, DB_RESIDUES) > 10.0
    assert stats.spouge_evalue(s + 1, g.kbp, g.gbp, 130, 300, DB_RESIDUES) <= 10.0


# ---------------------------------------------------------------------------
# ungapped (query) Karlin-Altschul parameters
# ---------------------------------------------------------------------------

def test_ideal_params():
    k = stats.ideal_params(load_matrix("BLOSUM62"))
    assert round(k.Lambda, 4) == 0.3176 and round(k.K, 3) == 0.134 and round(k.H, 4) == 0.4012


def test_ungapped_params_equal_blast(libblast, proteome):
    """Blast_ScoreBlkKbpUngappedCalc's kbp_std and kbp_ideal, bit for bit."""
    seqs = list(proteome.values())
    special = ["MKVLAAGIVGLLLAACSSEKPQTDNRWFYHIVDEGKSTLLQRNAPWEQFIDLKKGSVQEAUOJBZX*",
               "MKVLAAUUUUCUUUGIVGLL", "MOOOOKOOWEQF", "xxxxMKVLxxxx", "WWWWWWWWWWCCCCC"]
    for name in MATRIX_NAMES:
        m = load_matrix(name)
        sample = seqs[::10] if name == "BLOSUM62" else seqs[::150]
        for seq in sample + special:
            codes = encode(seq)
            sbp = _score_blk(libblast, name)
            qi = libblast.BlastQueryInfoNew(EBLASTTYPE_BLASTP, 1)
            ctx = qi.contents.contexts[0]
            ctx.query_offset, ctx.query_length, ctx.is_valid = 0, len(codes), 1
            status = libblast.Blast_ScoreBlkKbpUngappedCalc(
                EBLASTTYPE_BLASTP, sbp, bytes(blast_query_codes(codes)), qi, None)
            ours = stats.ungapped_params(codes, m)
            assert status == 0 and ours is not None
            k = sbp.contents.kbp_std[0].contents
            assert (k.Lambda, k.K, k.logK, k.H) == (ours.Lambda, ours.K, ours.logK, ours.H), \
                (name, seq[:20])
            ki, ideal = sbp.contents.kbp_ideal.contents, stats.ideal_params(m)
            assert (ki.Lambda, ki.K, ki.H) == (ideal.Lambda, ideal.K, ideal.H)
            libblast.BlastQueryInfoFree(qi)
            libblast.BlastScoreBlkFree(sbp)


def test_ungapped_params_invalid_query():
    m = load_matrix("BLOSUM62")
    assert stats.ungapped_params(encode("XXXXXXXXXX"), m) is None
    assert stats.ungapped_params(encode("OOOO"), m) is None          # O counts as X


# ---------------------------------------------------------------------------
# against blastp's output
# ---------------------------------------------------------------------------

@needs_blast
def test_reported_parameters_and_search_space(blastdb, proteome):
    """Lambda/K/H lines and 'Effective search space used' of blastp's report, per query."""
    m = load_matrix("BLOSUM62")
    g = stats.gapped_params("BLOSUM62", 11, 1)
    expected_adjustment = {130: 70, 499: 83, 1000: 89}
    for length, path in blastdb["queries"].items():
        text = _blastp("-query", path, "-db", blastdb["db"], "-comp_based_stats", "0")
        nums = re.findall(r"Lambda +K +H +a +alpha(?: +sigma)?\n +([^\n]+)", text)
        ungapped_line, gapped_line = nums[0].split(), nums[1].split()
        k = stats.ungapped_params(encode(proteome[QUERY_IDS[length]]), m)
        assert ungapped_line[:3] == [f"{k.Lambda:.3f}", f"{k.K:.3g}", f"{k.H:.3f}"]
        assert gapped_line[:3] == ["0.267", "0.0410", "0.140"]
        eff = stats.effective_lengths(length, DB_RESIDUES, DB_SEQS, g)
        assert eff.length_adjustment == expected_adjustment[length] and eff.converged
        space = int(re.search(r"Effective search space used: (\d+)", text)[1])
        assert eff.eff_searchsp == space == \
            (length - eff.length_adjustment) * (DB_RESIDUES - DB_SEQS * eff.length_adjustment)


@needs_blast
def test_tabular_evalue_bitscore_pident(blastdb):
    """Every row of three searches (-evalue 1000): E-value, bit score and pident text."""
    g = stats.gapped_params("BLOSUM62", 11, 1)
    rows = _tabular(blastdb["db"], blastdb["all"],
                    "qseqid sseqid score evalue bitscore qlen slen pident length nident",
                    "-evalue", "1000")
    assert len(rows) > 2000
    kinds = set()
    for q, s, score, ev, bits, qlen, slen, pident, length, nident in rows:
        e = stats.spouge_evalue(int(score), g.kbp, g.gbp, int(qlen), int(slen), DB_RESIDUES)
        assert stats.format_evalue(e) == ev, (q, s, score)
        assert stats.format_bitscore(stats.bit_score(int(score), g.kbp)) == bits, (q, s, score)
        assert stats.format_pident(int(nident), int(length)) == pident
        kinds.add("0.0" if ev == "0.0" else "e" if "e" in ev else
                  len(ev.split(".")[1]) if "." in ev else "int")
    assert kinds == {"0.0", "e", 1, 2, 3, "int"}      # every format branch was exercised


@needs_blast
def test_small_bitscores_and_large_evalues(blastdb):
    """Bit scores below 10 keep printf's width ("%4.1f" -> ' 8.8'); E-values above 1e5."""
    g = stats.gapped_params("BLOSUM62", 11, 1)
    text = _blastp("-query", blastdb["queries"][130], "-db", blastdb["db"], "-comp_based_stats",
                   "0", "-evalue", "1e9", "-max_target_seqs", "5000", "-outfmt",
                   "6 score evalue bitscore slen")
    rows = [line.split("\t") for line in text.splitlines()]
    assert any(b.startswith(" ") for _, _, b, _ in rows)
    for score, ev, bits, slen in rows:
        assert stats.format_bitscore(stats.bit_score(int(score), g.kbp)) == bits
        assert stats.format_evalue(stats.spouge_evalue(int(score), g.kbp, g.gbp, 130, int(slen),
                                                       DB_RESIDUES)) == ev


@needs_blast
def test_dbsize_scales_evalues(blastdb):
    """-dbsize replaces the database length in E-values and in the search space (not N)."""
    g = stats.gapped_params("BLOSUM62", 11, 1)
    dbsize = 50_000_000
    rows = _tabular(blastdb["db"], blastdb["all"], "score evalue qlen slen", "-dbsize", dbsize)
    plain = _tabular(blastdb["db"], blastdb["all"], "score evalue qlen slen")
    assert len(rows) != len(plain)
    for score, ev, qlen, slen in rows:
        assert stats.format_evalue(stats.spouge_evalue(int(score), g.kbp, g.gbp, int(qlen),
                                                       int(slen), dbsize)) == ev
    text = _blastp("-query", blastdb["queries"][130], "-db", blastdb["db"], "-comp_based_stats",
                   "0", "-dbsize", dbsize)
    space = int(re.search(r"Effective search space used: (\d+)", text)[1])
    assert stats.effective_lengths(130, DB_RESIDUES, DB_SEQS, g, dbsize=dbsize).eff_searchsp == space


@needs_blast
def test_unsupported_gap_costs_rejected_by_both(blastdb):
    out = subprocess.run([BLASTP, "-query", str(blastdb["queries"][130]), "-db", blastdb["db"],
                          "-gapopen", "5", "-gapextend", "1"], capture_output=True, text=True)
    assert out.returncode != 0 and "not supported for BLOSUM62" in out.stderr
    with pytest.raises(OptionError):
        stats.gapped_params("BLOSUM62", 5, 1)


# ---------------------------------------------------------------------------
# cutoffs
# ---------------------------------------------------------------------------

def test_search_cutoffs(proteome):
    m = load_matrix("BLOSUM62")
    g = stats.gapped_params("BLOSUM62", 11, 1)
    expected = {130: (16, 41), 499: (16, 41), 1000: (16, 42)}
    for length, name in QUERY_IDS.items():
        k = stats.ungapped_params(encode(proteome[name]), m)
        c = stats.search_cutoffs(k, g, length, stats.BLAST_SEQSRC_MINLENGTH, DB_RESIDUES)
        assert (c.x_drop_ungapped, c.gap_trigger) == expected[length]
        assert c.x_drop_ungapped == math.ceil(7 * stats.LN2 / k.Lambda)
        assert c.gap_trigger == int((22 * stats.LN2 + k.logK) / k.Lambda)
        assert (c.x_drop_gapped, c.x_drop_final) == (38, 64)
        assert c.cutoff_score == stats.spouge_score(10.0, g.kbp, g.gbp, length, 10, DB_RESIDUES)
        assert c.ungapped_cutoff == min(c.gap_trigger, c.cutoff_score)
        assert c.prelim_evalue == 10.0
    k1000 = stats.ungapped_params(encode(proteome[QUERY_IDS[1000]]), m)
    assert round(k1000.Lambda, 3) == 0.313
    assert stats.prelim_evalue(10.0, comp_based_stats=2) == 50.0


@needs_blast
def test_ungapped_cutoff_uses_blast_minimum_subject_length(tmp_path):
    """BLAST's cutoff uses BlastSeqSrcGetMinSeqLen, which is 10 for a BLAST database.

    Subjects T_i each hold two exact copies of query blocks separated by one
    inserted residue: the best ungapped segment (measured with blastp
    -ungapped) scores less than the gapped alignment.  A T_i is found only if b1 reaches the ungapped
    cutoff min(gap trigger, cutoff score); with the database's real shortest
    length (200) that cutoff would be the gap trigger.
    """
    rng = random.Random(21)
    aa, weights = "ACDEFGHIKLMNPQRSTVWY", [78, 19, 54, 63, 39, 74, 22, 51, 57, 90, 22, 45, 52,
                                          43, 51, 71, 58, 64, 13, 32]
    rnd = lambda n: "".join(rng.choices(aa, weights=weights, k=n))   # noqa: E731
    s = load_matrix("BLOSUM62").scores
    diag = lambda text: int(sum(s[I(c), I(c)] for c in text))        # noqa: E731
    query = rnd(300)
    filler = [rnd(rng.randint(200, 400)) for _ in range(300)]
    subjects = []
    for start in range(0, 260, 3):
        for k1 in range(4, 25):
            b1 = diag(query[start:start + k1])
            if not 28 <= b1 <= 41:
                continue
            for k2 in range(3, 25):
                b2 = diag(query[start + k1:start + k1 + k2])
                if 26 <= b2 < b1 - 2:
                    # X flanks stop ungapped extensions; the inserted G costs a gap
                    subjects.append((b1, "X" * 100 + query[start:start + k1] + "G"
                                     + query[start + k1:start + k1 + k2] + "X" * 100))
                    break
            break
    fasta = tmp_path / "db.fa"
    fasta.write_text("".join(f">f{i}\n{t}\n" for i, t in enumerate(filler))
                     + "".join(f">T{i}\n{t}\n" for i, (_, t) in enumerate(subjects)))
    subprocess.run(["makeblastdb", "-in", str(fasta), "-dbtype", "prot", "-out",
                    str(tmp_path / "db")], check=True, capture_output=True)
    (tmp_path / "q.fa").write_text(">q\n" + query + "\n")
    found = {r[0] for r in _tabular(str(tmp_path / "db"), tmp_path / "q.fa", "sseqid")}
    # the gapped score and E-value of each T_i on its own
    g = stats.gapped_params("BLOSUM62", 11, 1)
    db_length = sum(map(len, filler)) + sum(len(t) for _, t in subjects)
    k = stats.ungapped_params(encode(query), load_matrix("BLOSUM62"))
    blast_cut = stats.search_cutoffs(k, g, 300, stats.BLAST_SEQSRC_MINLENGTH, db_length)
    real_min = min(map(len, filler + [t for _, t in subjects]))
    naive_cut = stats.search_cutoffs(k, g, 300, real_min, db_length)
    assert blast_cut.ungapped_cutoff < naive_cut.ungapped_cutoff
    decisive = 0
    for i, (_, t) in enumerate(subjects):
        (tmp_path / "t.fa").write_text(f">T{i}\n{t}\n")
        scores = {}
        for mode in ("-ungapped", "-gapped"):
            args = [BLASTP, "-query", str(tmp_path / "q.fa"), "-subject", str(tmp_path / "t.fa"),
                    "-comp_based_stats", "0", "-outfmt", "6 score", "-evalue", "1e9"]
            if mode == "-ungapped":
                args.append(mode)
            out = subprocess.run(args, capture_output=True, text=True).stdout.split()
            scores[mode] = max(map(int, out))
        ungapped, gapped = scores["-ungapped"], scores["-gapped"]
        if stats.spouge_evalue(gapped, g.kbp, g.gbp, 300, len(t), db_length) > 10:
            continue
        assert (f"T{i}" in found) == (ungapped >= blast_cut.ungapped_cutoff), (ungapped, gapped)
        decisive += blast_cut.ungapped_cutoff <= ungapped < naive_cut.ungapped_cutoff
    assert decisive > 0


# ---------------------------------------------------------------------------
# number formats
# ---------------------------------------------------------------------------

def test_formats():
    f = stats.format_evalue
    assert [f(x) for x in (1e-181, 1.5e-180, 8.857e-91, 3.45e-16, 0.00089, 0.0009, 0.0694,
                           0.1, 0.995, 1.0, 9.96, 10.0, 201731.4)] == \
        ["0.0", "1.50e-180", "8.86e-91", "3.45e-16", "8.90e-04", "0.001", "0.069",
         "0.10", "0.99", "1.0", "10.0", "10", "201731"]
    b = stats.format_bitscore
    assert [b(x) for x in (8.8, 16.16, 99.9, 99.95, 100.99, 255.9, 99999.5, 123456.0)] == \
        [" 8.8", "16.2", "99.9", " 99", "100", "255", "1.000e+05", "1.235e+05"]
    assert stats.format_pident(38, 124) == "30.645" and stats.format_pident(0, 0) == "0.000"
    assert stats.format_percent(1, 3, 2) == "33.33"


def test_pident_in_rows_as_blast_rounds_it():
    """The rows' pident and ppos are BLAST+'s (count / length x 100, then rounded): percentages
    whose exact value ends in 5 at the fourth decimal, 87 of 320 and 201 of 320, which BLAST+
    2.12 printed as 27.187 and 62.813 (100 x count / length rounds them the other way)."""
    from gpu_search.blast.output import Hsp, format_row

    def row(nident, positive, length):
        h = Hsp("q", "", 400, "s", "", 400, 100, 50.0, 1e-10, 1, length, 1, length, "A" * length, "A" * length,
                nident, positive, 0, 0)
        return format_row(h, ["pident", "ppos"]).split("\t")

    assert row(87, 87, 320)[0] == "27.187" and row(201, 201, 320)[0] == "62.813"
    assert row(87, 87, 320)[0] == stats.format_pident(87, 320)
    assert row(87, 201, 320)[1] == stats.format_percent(201, 320, 2)
