"""blastp reads FASTA as BLAST+ 2.12 does (NCBI's CFastaReader), hmmsearch as Easel does.

BLAST+'s reader drops what is not a letter or '*' from a sequence, with a warning: '.',
'_', '~', digits, punctuation, control and non-ASCII bytes, and '-' in blastp's queries
(makeblastdb keeps '-' as a gap residue).  ';' starts a comment to the end of its line,
a line starting with '!', '#' or ';' is a comment; a sequence's first data line with too
few letters is refused; an empty query is searched and finds nothing; makeblastdb leaves
an empty sequence out.  gpu-search blastp must give BLAST+'s rows for such files, and say
once per file what it dropped.

The comparisons need BLAST+ 2.12's blastp and makeblastdb (Debian package ncbi-blast+);
they are skipped, saying so, where those are missing.  The reader's own tests run anyway.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from conftest import ROOT

from gpu_search import seqdb
from gpu_search.errors import EmptyInputError, FormatError, SequenceError

BLASTP = shutil.which("blastp")
MAKEBLASTDB = shutil.which("makeblastdb")
needs_blast = pytest.mark.skipif(not (BLASTP and MAKEBLASTDB),
                                 reason="BLAST+ (blastp, makeblastdb) not installed: apt-get install ncbi-blast+")
COLUMNS = "6 std qlen slen qseq sseq"
Q = b"MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDNLSGAEKAVQVKVKALPDAQFEVV"


def wrap(seq: bytes, width: int = 60) -> bytes:
    return b"\n".join(seq[i:i + width] for i in range(0, len(seq), width))


def spiked(seq: bytes, junk: list[bytes], start: int = 80) -> bytes:
    """``seq`` as FASTA lines of 60 with the pieces of ``junk`` spread over it after residue
    ``start``: the first line stays plain sequence."""
    out, at = bytearray(), 0
    step = (len(seq) - start) // (len(junk) + 1)
    for i, j in enumerate(junk):
        cut = start + i * step
        out += seq[at:cut] + j
        at = cut
    out += seq[at:]
    lines = [out[:60], out[60:]]
    return lines[0] + b"\n" + wrap(bytes(lines[1])) + b"\n"


# every kind of byte BLAST+ drops: gap codes, digits, punctuation, control and UTF-8 bytes
JUNK = [b".", b"_", b"~", b"7", b"(", b"@", b"\x01", "\u00e9".encode(), b">", b"\x7f", b"|", b"0"]
JUNK_BYTES = sum(len(j) for j in JUNK)      # 13: the UTF-8 letter is two bytes


@pytest.fixture(scope="module")
def proteins(proteome):
    """30 proteins of 150 to 600 residues, as bytes."""
    idx = [i for i in range(proteome.n_seqs) if 150 <= proteome.lengths[i] <= 600][:30]
    return [(proteome.name(i), proteome.text(i).encode()) for i in idx]


def write(path, records) -> str:
    with open(path, "wb") as fh:
        for header, body in records:
            fh.write(b">" + header + b"\n" + body + (b"" if body.endswith(b"\n") or not body else b"\n"))
    return str(path)


def run_blastp(query, db) -> subprocess.CompletedProcess:
    return subprocess.run([BLASTP, "-query", str(query), "-db", str(db), "-outfmt", COLUMNS],
                          capture_output=True, text=True)


def makeblastdb(fasta, out) -> str:
    subprocess.run([MAKEBLASTDB, "-in", str(fasta), "-dbtype", "prot", "-out", str(out)],
                   check=True, capture_output=True)
    return str(out)


def run_ours(*args) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "gpu_search", *map(str, args)],
                          capture_output=True, text=True, env=env)


def ours_blastp(query, db) -> subprocess.CompletedProcess:
    return run_ours("blastp", "-query", query, "-db", db, "-outfmt", COLUMNS, "--device", "cpu", "--quiet")


# --- the reader ----------------------------------------------------------------------------

# A sequence's first data line: is it refused?  (blastp's queries, makeblastdb), as BLAST+
# 2.12 answered for a query and a database of '>a', this line, then Q
FIRST_LINES = [
    (b"MKTA.", True, True), (b"MKTAY.", True, True), (b"MKTAYI.", False, False), (b"M.", False, False),
    (b"..", True, True), (b"-MK", False, False), (b"----MKTA", False, False), (b"--", True, False),
    (b"MKTA;.....", False, False), (b"MK~", False, False), (b"MKT~", True, True), (b"MKTAY~~", True, True),
    (b"MKTAYIAKQ...", True, True), (b"M...", True, True), (b"MKTAYI.  ", False, False),
    (b"  MKTA.", True, True), (b"MKT~\x0b\x0b", True, True),
    (Q + b"." * 40, False, None),      # only the first 70 bytes are looked at (makeblastdb: not FASTA to it)
    (b"MKT1234567890", False, None),
]


@pytest.mark.parametrize("line,query_refused,db_refused", FIRST_LINES)
def test_first_line(line, query_refused, db_refused, capsys):
    data = b">a\n" + line + b"\n" + Q + b"\n"
    for mode, refused in (("query", query_refused), ("db", db_refused)):
        if refused is None:
            continue
        if refused:
            with pytest.raises(FormatError, match="line 2 of sequence 'a' is not plausible sequence"):
                seqdb.parse_fasta(data, "t.faa", mode)
        else:
            db = seqdb.parse_fasta(data, "t.faa", mode)
            kept = bytes(c for c in line if chr(c).isalpha() or (c == ord("-") and mode == "db"))
            assert db.text(0).encode() == kept.upper() + Q


@needs_blast
def test_first_lines_are_blast_plus_verdicts(tmp_path):
    """The table above is what BLAST+ answers (blastp for a query, makeblastdb for a database)."""
    made = makeblastdb(write(tmp_path / "db.faa", [(b"s", Q)]), tmp_path / "db")
    for i, (line, query_refused, db_refused) in enumerate(FIRST_LINES):
        fasta = tmp_path / f"t{i}.faa"
        fasta.write_bytes(b">a\n" + line + b"\n" + Q + b"\n")
        assert (run_blastp(fasta, made).returncode != 0) == query_refused, line
        if db_refused is not None:
            r = subprocess.run([MAKEBLASTDB, "-in", str(fasta), "-dbtype", "prot", "-out", str(tmp_path / f"d{i}")],
                               capture_output=True, text=True)
            assert (r.returncode != 0) == db_refused, (line, r.stderr)


def test_dropped_letters_and_comments(capsys):
    data = (b">q one\n" + Q[:60] + b"\n" + b"MK.T_A~Y1I\xc3\xa9-K;comment .-~ 12\n#comment\n  !comment\n;comment\n"
            b"Q\x0bR\x0cQ\t*\n>e\n>f\n\n")
    query = seqdb.parse_fasta(data, "q.faa", "query")
    assert [query.text(i) for i in range(3)] == [Q[:60].decode() + "MKTAYIKQRQ*", "", ""]
    err = capsys.readouterr().err.splitlines()
    assert err == ["gpu-search: warning: q.faa: 7 letters BLAST+ does not take were dropped "
                   "(first: '.' in sequence 'q', line 3)",
                   "gpu-search: warning: q.faa: 2 sequences without a residue searched without hits, "
                   "as blastp does (first: 'e')"]
    db = seqdb.parse_fasta(data, "d.faa", "db")     # makeblastdb: '-' a gap, empty sequences left out
    assert db.n_seqs == 1 and db.text(0) == Q[:60].decode() + "MKTAYI-KQRQ*"
    assert db.total_seqs == 1 and db.total_residues == len(db.text(0))
    err = capsys.readouterr().err.splitlines()
    assert err == ["gpu-search: warning: d.faa: 6 letters BLAST+ does not take were dropped "
                   "(first: '.' in sequence 'q', line 3)",
                   "gpu-search: warning: d.faa: 2 sequences without a residue left out of the database, "
                   "as makeblastdb leaves them (first: 'e')"]


def test_easel_rules_unchanged(capsys):
    """hmmsearch's reading (and makedb's) is Easel's: '.', '_' gaps and '~' kept, the rest refused."""
    db = seqdb.parse_fasta(b">a\nMK.T_A~Y\n", "a.faa")
    assert db.text(0) == "MK-T-A~Y"
    for bad in (b"MK1T", b"MK-T", b"MK;T", "MK\u00e9T".encode(), b"MK\x0bT"):
        with pytest.raises(SequenceError, match="invalid residue"):
            seqdb.parse_fasta(b">a\n" + bad + b"\n", "a.faa")
    with pytest.raises(SequenceError, match="empty"):
        seqdb.parse_fasta(b">a\nMKT\n>b\n", "a.faa")
    assert capsys.readouterr().err == ""


def test_every_split_reads_the_same(capsys):
    """A file read in two pieces, cut anywhere, reads as in one (comments, first-line test,
    dropped letters carried over the cut)."""
    data = (b">q one\n  MKTAY.IAKQRQ;x.y\n!c\nMK~T\n>r\n;c\n" + Q[:20] + b"_9\n>s\n..MKTAYIAKQRQISF\n")
    for mode in ("query", "db"):
        whole = seqdb._collect(iter([data]), "s.faa", mode)
        want = capsys.readouterr().err
        for cut in range(1, len(data)):
            part = seqdb._collect(iter([data[:cut], data[cut:]]), "s.faa", mode)
            assert np.array_equal(part.residues, whole.residues) and np.array_equal(part.offsets, whole.offsets)
            assert bytes(part.name_blob) == bytes(whole.name_blob)
            assert capsys.readouterr().err == want, cut


def test_gsdb_for_blastp(tmp_path, capsys):
    """A .gsdb keeps Easel's '.', '_', '~' (hmmsearch searches them); blastp leaves them out."""
    fasta = tmp_path / "d.faa"
    fasta.write_bytes(b">a x\n" + Q + b"\n" + b"MK.T_A~Y\n>b\n" + Q[:30] + b"\n")
    seqdb.makedb(fasta, tmp_path / "d.gsdb", quiet=True)
    easel = seqdb.open_database(tmp_path / "d.gsdb")
    assert easel.n_residues == len(Q) + 8 + 30
    blast = seqdb.open_database(tmp_path / "d.gsdb", blast=True)
    from_fasta = seqdb.open_database(fasta, blast=True)
    for db in (blast, from_fasta):
        assert [db.text(i) for i in range(2)] == [(Q + b"MKTAY").decode(), Q[:30].decode()]
        assert db.total_residues == len(Q) + 5 + 30
    err = capsys.readouterr().err.splitlines()
    assert err[0].endswith("d.gsdb: 3 letters BLAST+ does not take were dropped (first in sequence 'a')")


def test_gsdb_records_the_letters_blastp_drops(tmp_path, monkeypatch):
    """makedb records how many of a .gsdb's letters blastp drops, in one file and in each
    shard; where it records none, blastp takes the database as it is, without scanning its
    residues; a .gsdb that does not say (an older one) is scanned."""
    import json

    fasta = tmp_path / "d.faa"
    fasta.write_bytes(b">a\n" + Q + b"\n>b\nMK.T_A~Y\n>c\n" + Q[:30] + b"\n>d\n~" + Q[:9] + b"\n")
    seqdb.makedb(fasta, tmp_path / "d.gsdb", quiet=True)
    seqdb.makedb(fasta, tmp_path / "s.gsdb", quiet=True, shards=2)
    clean = tmp_path / "c.faa"
    clean.write_bytes(b">a\n" + Q + b"\n")
    seqdb.makedb(clean, tmp_path / "c.gsdb", quiet=True)

    def header(path):
        raw = path.read_bytes()
        return json.loads(raw[12:12 + int.from_bytes(raw[8:12], "little")])

    assert header(tmp_path / "d.gsdb")["blast_dropped"] == 4
    assert [header(p)["blast_dropped"] for p in sorted(tmp_path.glob("s.shard*.gsdb"))] == [0, 4]
    assert header(tmp_path / "c.gsdb")["blast_dropped"] == 0
    whole = seqdb.open_database(tmp_path / "c.gsdb")
    assert seqdb.blast_view(whole) is whole
    monkeypatch.setattr(seqdb, "BLAST_DROPPED", None)          # a scan would fail now
    assert seqdb.blast_view(whole) is whole
    monkeypatch.undo()
    unknown = seqdb.open_database(tmp_path / "d.gsdb")
    unknown.blast_dropped = None                                 # as read from an older .gsdb
    for db in (seqdb.open_database(tmp_path / "d.gsdb"), unknown):
        view = seqdb.blast_view(db)
        assert view.total_residues == len(Q) + 5 + 30 + 9 and view.text(1) == "MKTAY"


# --- against BLAST+ --------------------------------------------------------------------------


def query_records(proteins):
    """Queries holding each case: letters dropped, hyphens, comments, an empty query."""
    (n0, s0), s1, s2, s3 = proteins[0], proteins[3][1], proteins[7][1], proteins[12][1]
    return [
        (b"qjunk " + n0.encode(), spiked(s0, JUNK)),
        (b"qhyphen", spiked(s1, [b"-", b"--", b"-"])),
        (b"qempty a header alone", b""),
        (b"qcomments", s2[:60] + b";a comment 123 ...\n#a comment line\n  !another\n;and another\n"
         + wrap(s2[60:]) + b"\n"),
        (b"qspaces", spiked(s3, [b"\x0b", b"\x0c", b" \t "])),
    ]


@needs_blast
def test_queries_against_blast_plus(tmp_path, proteins):
    db_fasta = write(tmp_path / "db.faa", [(n.encode(), wrap(s)) for n, s in proteins])
    db = makeblastdb(db_fasta, tmp_path / "db")
    query = write(tmp_path / "q.faa", query_records(proteins))
    with open(query, "rb") as fh:              # comment lines before the first header too
        data = fh.read()
    with open(query, "wb") as fh:
        fh.write(b"# queries\n  ;with every kind of letter\n!\n" + data)
    theirs, ours = run_blastp(query, db), ours_blastp(query, db_fasta)
    assert theirs.returncode == 0 and ours.returncode == 0, ours.stderr
    rows = theirs.stdout.splitlines()
    assert {r.split("\t")[0] for r in rows} == {"qjunk", "qhyphen", "qcomments", "qspaces"}
    assert ours.stdout.splitlines() == rows
    assert ours.stderr.splitlines() == [
        f"gpu-search: warning: {query}: {JUNK_BYTES + 4} letters BLAST+ does not take were dropped "
        "(first: '.' in sequence 'qjunk', line 6)",
        f"gpu-search: warning: {query}: 1 sequence without a residue searched without hits, as blastp does "
        "(first: 'qempty')"]


@needs_blast
def test_database_against_makeblastdb(tmp_path, proteins):
    """Subjects with letters makeblastdb drops and an empty one: its database's rows; a .gsdb of
    the FASTA (Easel's letters only) gives them too."""
    records = [(n.encode(), wrap(s)) for n, s in proteins]
    records[2] = (records[2][0], spiked(proteins[2][1], JUNK))
    records[5] = (b"empty_subject", b"")
    records[9] = (records[9][0], proteins[9][1][:60] + b";comment\n#comment\n" + wrap(proteins[9][1][60:]))
    records[14] = (records[14][0], spiked(proteins[14][1], [b".", b"_", b"~", b"..", b"~"]))
    db_fasta = write(tmp_path / "db.faa", records)
    db = makeblastdb(db_fasta, tmp_path / "db")
    query = write(tmp_path / "q.faa", [(n.encode(), s) for n, s in (proteins[2], proteins[9], proteins[14])])
    theirs, ours = run_blastp(query, db), ours_blastp(query, db_fasta)
    assert theirs.returncode == 0 and ours.returncode == 0, ours.stderr
    rows = theirs.stdout.splitlines()
    assert {r.split("\t")[1] for r in rows} >= {proteins[i][0] for i in (2, 9, 14)}
    assert ours.stdout.splitlines() == rows
    data = open(db_fasta, "rb").read()
    body = records[2][1]
    line = data[:data.index(b"\n" + body) + 1 + body.index(b".")].count(b"\n") + 1
    assert ours.stderr.splitlines() == [
        f"gpu-search: warning: {db_fasta}: {JUNK_BYTES + 6} letters BLAST+ does not take were dropped "
        f"(first: '.' in sequence '{proteins[2][0]}', line {line})",
        f"gpu-search: warning: {db_fasta}: 1 sequence without a residue left out of the database, "
        "as makeblastdb leaves them (first: 'empty_subject')"]
    # Easel's letters only: makedb keeps them, blastp leaves them out of the .gsdb
    easel = [r for i, r in enumerate(records) if i not in (2, 5, 9)]
    easel_fasta = write(tmp_path / "easel.faa", easel)
    gsdb = tmp_path / "easel.gsdb"
    seqdb.makedb(easel_fasta, gsdb, quiet=True)
    theirs = run_blastp(query, makeblastdb(easel_fasta, tmp_path / "easel"))
    assert theirs.returncode == 0 and theirs.stdout
    assert ours_blastp(query, gsdb).stdout == theirs.stdout


@needs_blast
def test_gsdb_shards_against_makeblastdb(tmp_path, proteins, capsys):
    """Shards of a .gsdb whose '.', '_' and '~' fall in both: each shard's search counts the
    whole database's size as blastp does (the shards record it), so together they give the
    rows of BLAST+ on the whole database."""
    records = [(n.encode(), wrap(s)) for n, s in proteins]
    for i in (4, 11, 20, 27):
        records[i] = (records[i][0], spiked(proteins[i][1], [b".", b"_", b"~", b"."]))
    fasta = write(tmp_path / "db.faa", records)
    letters = sum(len(s) for _, s in proteins)
    shards = seqdb.makedb(fasta, tmp_path / "db.gsdb", shards=2, quiet=True)
    for path in shards:
        db = seqdb.open_database(path, blast=True)
        assert db.shard and db.total_residues == letters
    capsys.readouterr()
    query = write(tmp_path / "q.faa", [(n.encode(), s) for n, s in (proteins[4], proteins[20], proteins[27])])
    theirs = run_blastp(query, makeblastdb(fasta, tmp_path / "db"))
    assert theirs.returncode == 0
    ours = [ours_blastp(query, path) for path in shards]
    assert all(r.returncode == 0 for r in ours)
    rows = theirs.stdout.splitlines()
    assert {r.split("\t")[1] for r in rows} >= {proteins[i][0] for i in (4, 20, 27)}
    assert sorted(row for r in ours for row in r.stdout.splitlines()) == sorted(rows)


@needs_blast
def test_refused_as_blast_plus_refuses(tmp_path, proteins):
    """Files BLAST+ refuses (one empty query, first lines it finds implausible), refused here
    too; through the command: one line, the exit code of the error (FormatError: 5)."""
    db_fasta = write(tmp_path / "db.faa", [(n.encode(), wrap(s)) for n, s in proteins[:3]])
    db = makeblastdb(db_fasta, tmp_path / "db")
    for i, (body, error) in enumerate([(b"", EmptyInputError), (b"MKTA.\n", FormatError), (b"..\n", FormatError),
                                       (b"1234\n", FormatError)]):
        query = write(tmp_path / f"q{i}.faa", [(b"a", body)])
        assert run_blastp(query, db).returncode != 0, body
        with pytest.raises(error):
            seqdb.read_fasta(query, "query")
    ours = ours_blastp(query, db_fasta)
    assert ours.returncode == FormatError.exit_code and ours.stdout == ""
    assert ours.stderr.splitlines() == [f"gpu-search: error: {query}: line 2 of sequence 'a' is not plausible "
                                        "sequence (its first 70 bytes hold a third as many non-letters as "
                                        "letters, or more); BLAST+ refuses such a first line of a sequence"]


@needs_blast
def test_hyphen_in_subject(tmp_path, proteins):
    """A subject's '-' (kept by makeblastdb) facing a gap in the query: BLAST+ counts the column
    an identity and a positive (its aligned strings agree), and so does gpu-search."""
    name, seq = proteins[4]
    db_fasta = write(tmp_path / "db.faa", [(name.encode(), spiked(seq, [b"-", b"--"]))])
    query = write(tmp_path / "q.faa", [(b"q", wrap(seq))])
    theirs = run_blastp(query, makeblastdb(db_fasta, tmp_path / "db"))
    assert theirs.stdout and ours_blastp(query, db_fasta).stdout == theirs.stdout
