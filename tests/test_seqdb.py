"""The sequence database: parsing like Easel, .gsdb round trips, shards, bad input."""

from __future__ import annotations

import gzip
import os

import numpy as np
import pytest

from gpu_search import errors, seqdb


def test_fasta_parse_equals_pyhmmer(proteome_path, proteome):
    from pyhmmer.easel import Alphabet, SequenceFile

    seqs = list(SequenceFile(str(proteome_path), digital=True, alphabet=Alphabet.amino()))
    assert proteome.n_seqs == len(seqs) == 2100
    assert proteome.n_residues == sum(len(s) for s in seqs)
    for i, s in enumerate(seqs):
        assert proteome.name(i) == s.name
        assert proteome.description(i) == s.description
        assert np.array_equal(proteome.sequence(i), np.asarray(s.sequence))


def test_odd_but_legal_fasta_equals_pyhmmer(tmp_path):
    """Lower case, '.'/'_' gaps, '*', '~', blank lines, CRLF, tabs, no final newline."""
    from pyhmmer.easel import Alphabet, SequenceFile

    text = (">a first one\r\nacdefGHIK\r\nLM.NP_Q*\r\n\r\n>b\tdesc with\ttabs  \n"
            "BJZOUX~W\n>  d \t spaced   desc  \nWW\n>e  \nW\n>c\nWWWW")
    path = tmp_path / "odd.faa"
    path.write_text(text)
    db = seqdb.open_database(path)
    seqs = list(SequenceFile(str(path), digital=True, alphabet=Alphabet.amino()))
    assert db.n_seqs == len(seqs)
    for i, s in enumerate(seqs):
        assert db.name(i) == s.name
        assert db.description(i) == s.description
        assert np.array_equal(db.sequence(i), np.asarray(s.sequence))
    # the header line is kept as written (BLAST's titles)
    headers = ["a first one", "b\tdesc with\ttabs  ", "  d \t spaced   desc  ", "e  ", "c"]
    assert [db.header(i) for i in range(db.n_seqs)] == headers
    seqdb.write_gsdb(db, tmp_path / "odd.gsdb")
    again = seqdb.open_database(tmp_path / "odd.gsdb")
    assert [again.header(i) for i in range(db.n_seqs)] == headers
    assert [again.description(i) for i in range(db.n_seqs)] == [s.description for s in seqs]


def test_gsdb_of_an_earlier_format_refused(tmp_path, proteome):
    """A .gsdb of format 1 (its descriptions without the header's spacing) is refused with
    one line that says to make it again."""
    path = tmp_path / "old.gsdb"
    seqdb.write_gsdb(proteome.subset(np.arange(3)), path)
    raw = bytearray(path.read_bytes())
    at = raw.index(b'"version": 2')
    raw[at:at + 12] = b'"version": 1'
    path.write_bytes(bytes(raw))
    with pytest.raises(errors.FormatError, match="format 1, this gpu-search reads format 2; rebuild it"):
        seqdb.open_database(path)


def test_gzip_and_gsdb_round_trip(tmp_path, proteome_path, proteome):
    gz = tmp_path / "p.faa.gz"
    gz.write_bytes(gzip.compress(proteome_path.read_bytes()))
    a = seqdb.open_database(gz)
    seqdb.write_gsdb(a, tmp_path / "p.gsdb")
    b = seqdb.open_database(tmp_path / "p.gsdb")
    for db in (a, b):
        assert np.array_equal(db.residues, proteome.residues)
        assert np.array_equal(db.offsets, proteome.offsets)
        assert [db.name(i) for i in range(0, 2100, 97)] == [proteome.name(i) for i in range(0, 2100, 97)]
    assert b.total_seqs == 2100 and b.total_residues == proteome.n_residues
    assert np.array_equal(b.length_order, np.argsort(-proteome.lengths, kind="stable"))
    # the blastp GPU engine takes it for its longest-first order of a whole database
    from gpu_search.blast.gpu import _longest_first
    assert np.array_equal(b.length_order, _longest_first(np.asarray(b.offsets)))


def test_shards_balance_and_cover(tmp_path, proteome_path, proteome):
    paths = seqdb.makedb(proteome_path, tmp_path / "db.gsdb", shards=3)
    assert [p.name for p in paths] == [f"db.shard{i}of3.gsdb" for i in (1, 2, 3)]
    shards = [seqdb.open_database(p) for p in paths]
    assert sum(s.n_seqs for s in shards) == proteome.n_seqs
    assert np.array_equal(np.concatenate([s.residues for s in shards]), proteome.residues)
    for i, s in enumerate(shards, start=1):
        assert s.shard == (i, 3)
        assert (s.total_seqs, s.total_residues) == (proteome.n_seqs, proteome.n_residues)
        assert abs(s.n_residues - proteome.n_residues / 3) <= proteome.lengths.max()


@pytest.mark.parametrize("content, error, words", [
    (b"", errors.EmptyInputError, "empty"),
    (b"   \n\n", errors.EmptyInputError, "empty"),
    (b"this is not fasta\n", errors.FormatError, "not FASTA"),
    (b"HMMER3/f [3.1b2 | February 2015]\nNAME x\n", errors.FormatError, "HMM"),
    (b">s1\nACDE1FG\n", errors.SequenceError, "invalid residue '1'"),
    (b">s1\nACDE-FG\n", errors.SequenceError, "invalid residue '-'"),
    (b">s1\nACDEFG\n>s2 empty one\n>s3\nWW\n", errors.SequenceError, "'s2' is empty"),
    (b">\nACDEFG\n", errors.FormatError, "without a sequence name"),
    (b">dna\nACGTACGTACGGATCGATCGATCGTTAGCATGCANNACGT\n", errors.AlphabetError, "nucleotide"),
])
def test_bad_fasta(tmp_path, content, error, words):
    path = tmp_path / "bad.faa"
    path.write_bytes(content)
    with pytest.raises(error, match=words):
        seqdb.open_database(path)


def test_gather_packs_the_pieces_in_order():
    """_gather (subsets, shards, the GPU's upload) copies runs of adjacent pieces at once:
    the same bytes as the pieces one by one, for in-order, out-of-order, repeated and empty ones."""
    rng = np.random.default_rng(11)
    for _ in range(300):
        n = int(rng.integers(1, 30))
        lens = rng.integers(0, 8, n)
        offs = np.concatenate(([0], np.cumsum(lens)))
        residues = rng.integers(0, 255, int(offs[-1]) + 1, dtype=np.uint8)
        idx = np.sort(rng.integers(0, n, 12)) if rng.random() < 0.3 else rng.integers(0, n, int(rng.integers(0, 12)))
        if rng.random() < 0.3:
            idx = np.arange(n)                                  # a whole database in order: one run
        want = b"".join(residues[offs[i]:offs[i] + lens[i]].tobytes() for i in idx)
        got = seqdb._gather(residues, offs[idx], lens[idx])
        assert got.dtype == np.uint8 and got.tobytes() == want


def test_missing_and_directory(tmp_path):
    with pytest.raises(errors.InputFileError, match="no such file"):
        seqdb.open_database(tmp_path / "nope.faa")
    with pytest.raises(errors.InputFileError, match="directory"):
        seqdb.open_database(tmp_path)


def test_truncated_gsdb_and_gzip(tmp_path, proteome):
    seqdb.write_gsdb(proteome, tmp_path / "p.gsdb")
    data = (tmp_path / "p.gsdb").read_bytes()
    (tmp_path / "t.gsdb").write_bytes(data[: len(data) // 2])
    with pytest.raises(errors.FormatError, match="truncated"):
        seqdb.open_database(tmp_path / "t.gsdb")
    gz = gzip.compress(b">a\nACDEFGHIKLMNPQ\n" * 100)
    (tmp_path / "t.faa.gz").write_bytes(gz[: len(gz) // 2])
    with pytest.raises(errors.FormatError, match="gzip"):
        seqdb.open_database(tmp_path / "t.faa.gz")


def test_long_sequences_refused_or_skipped(tmp_path):
    path = tmp_path / "long.faa"
    path.write_text(">ok\nACDEFGHIKL\n>huge\n" + "ACDEFGHIKLMNPQRSTVWY" * 5001 + "\n")
    db = seqdb.open_database(path)
    with pytest.raises(errors.SequenceError, match="'huge' .* over HMMER's limit of 100,000 for hmmsearch"):
        db.check_for_hmmsearch()
    with pytest.raises(errors.SequenceError, match="over HMMER's limit of 100,000 for phmmer"):
        db.check_for_hmmsearch(program="phmmer")
    assert list(db.check_for_hmmsearch(skip_long=True)) == [1]


# --- the scanner compiled and as plain Python --------------------------------------------------

PLAIN_SCAN_CASES = [
    b">a first one\r\nacdefGHIK\r\nLM.NP_Q*\r\n\r\n>b\tdesc with\ttabs  \nBJZOUX~W\n>  d \t spaced \nWW\n>c\nWWWW",
    b">old mac\rMKTA\rYIAK\r>next\rWW\r",
    b";comment\n!also\n>a\nMK.T_A~Y\n# not a comment here\nMKT-A\n>b\n>c\nMKTAYIAKQRQISFVK\n",
    b">a\nMKTAYI.\nMKT\n>b\nMKT~\x0b\x0b\nQQ\n>c\n  MKTA.\nW\n>d\nMKT1234\n",
    b">s1\nACDE1FG\n", b">s1\nACDE-FG\n", b">s1\nACDEFG\n>s2 empty one\n>s3\nWW\n", b">\nACDEFG\n",
    b"this is not fasta\n", b"   \n\n", b"", b">dna\nACGTACGTACGGATCGATCGATCGTTAGCATGCANNACGT\n",
]


def _read_or_error(pieces, mode, plain_scan):
    try:
        db = seqdb._collect(iter(pieces), "t.faa", mode, plain_scan)
    except errors.GpuSearchError as exc:
        return type(exc).__name__, str(exc)
    return (db.residues.tobytes(), db.lengths.tolist(), [db.header(i) for i in range(db.n_seqs)],
            [db.name(i) for i in range(db.n_seqs)])


@pytest.mark.parametrize("mode", [None, "query", "db"])
def test_plain_scan_reads_as_the_compiled_scanner(proteome_path, mode, capsys):
    """A query file is scanned as plain Python (no numba to load): the same sequences, names,
    header lines, warnings and errors as the compiled scanner, whole or in pieces (a piece may
    end inside a header or a first data line)."""
    part = proteome_path.read_bytes()[:60000]
    inputs = [[case] for case in PLAIN_SCAN_CASES]
    inputs += [[part[i:i + 997] for i in range(0, len(part), 997)], [part]]
    inputs += [[case[:k], case[k:]] for case in PLAIN_SCAN_CASES[:4] for k in (3, 17, len(case) - 2)]
    for pieces in inputs:
        compiled = _read_or_error(pieces, mode, plain_scan=False)
        compiled_warnings = capsys.readouterr().err
        plain = _read_or_error(pieces, mode, plain_scan=True)
        assert plain == compiled, pieces
        assert capsys.readouterr().err == compiled_warnings


def test_a_small_query_file_is_read_without_numba(tmp_path, proteome_path):
    """phmmer's and jackhmmer's queries: numba is not imported for them (its import and first
    load are about 0.5 s, more than the scan); a database file is scanned compiled."""
    import subprocess
    import sys

    from conftest import ROOT

    (tmp_path / "q.faa").write_bytes(proteome_path.read_bytes()[:40000].rsplit(b">", 1)[0])
    code = ("import sys; from gpu_search.hmmer.queries import read_queries; q = read_queries(sys.argv[1], ''); "
            "print(q.n_seqs, 'numba' in sys.modules); from gpu_search.seqdb import open_database; "
            "open_database(sys.argv[1]); print('numba' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "q.faa")], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    n, before, after = r.stdout.split()
    assert int(n) > 50 and (before, after) == ("False", "True")
