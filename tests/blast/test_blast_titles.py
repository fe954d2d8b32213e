"""Query and subject titles and ids as BLAST+ 2.12 prints them, against blastp itself.

Titles whose spacing BLAST+ keeps (runs of spaces, a tab as three spaces, a space after
'>', trailing spaces) and query titles it cuts (at a tab) or cleans (BLAST XML's query
definition: runs of spaces made one, trailing periods dropped); subjects from FASTA, from a
.gsdb, from a BLAST database made with and without -parse_seqids (several deflines, a gi
in a later one, a defline without a title), and from the shards of a .gsdb made of one,
merged.  Every id and title column of -outfmt 6, and -outfmt 7, 5 and 0, compared line by
line with BLAST+'s but for the lines that name the program or the database.  Needs blastp
and makeblastdb of BLAST+ 2.12 (Debian package ncbi-blast+).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT, TEST_DATA
from test_blast_xml import read_fasta

pytestmark = pytest.mark.skipif(
    not (shutil.which("blastp") and shutil.which("makeblastdb")),
    reason="BLAST+ (blastp, makeblastdb) not installed: apt-get install ncbi-blast+")

ID_COLUMNS = "6 qseqid sseqid stitle salltitles sallseqid sacc saccver sallacc"

# subject headers (after '>') of the FASTA database, spacing as written
FASTA_TITLES = ["s1   three  spaces  ", "s2\tafter\ttab   x\t", "s3 \t mixed \t\t end", " s4 lead  x",
                "s5 ends with dots...", "s6 a ,b  ;c .", "s7"]
# query headers: a tab cuts blastp's title, XML cleans it
QUERY_TITLES = ["q1  two\tspaces\ttab  ", "q2\tx  y", "q3  a b  ", " q4 lead", "q5 dots and,commas ...",
                "q6 a  ( b )  c", "q7", "q8 last"]
# headers of the -parse_seqids database: several deflines (\x01), a gi in a later one, no titles
ID_TITLES = ["sp|P69905|HBA_HUMAN Hemoglobin  alpha", "ref|NP_000549.1| some   protein", "lcl|x1",
             "tr|Q9XYZ1|Q9XYZ1_9X desc\x01sp|P11111|AB_C second title\x01lcl|zz",
             "lcl|a1 first\x01gi|4504347|ref|NP_000549.2| gi two\x01pdb|1ABC|B chain\x01ref|XP_1.3|\x01emb|CAA1.1| e",
             "lcl|a2\x01sp|P22222|X_Y t2", "gnl|db|abc g1\x01lcl|q q2", "pdb|1ABC|A chain a"]


def _write(path, titles, sequences):
    with open(path, "wb") as fh:
        for t, s in zip(titles, sequences):
            fh.write(b">" + t.encode() + b"\n" + s.encode() + b"\n")


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    """The FASTA databases (each subject a different proteome protein, so that every query
    finds its own subject and weak hits of the others), their BLAST databases, and .gsdb files."""
    d = tmp_path_factory.mktemp("titles")
    proteins = [s for _, s in read_fasta(TEST_DATA / "proteome.faa")[:len(ID_TITLES)]]
    _write(d / "db.faa", FASTA_TITLES, proteins)
    _write(d / "ids.faa", ID_TITLES, proteins)
    _write(d / "q.faa", QUERY_TITLES, [p[:150] for p in proteins])
    for fasta, out, extra in (("db.faa", "db", []), ("ids.faa", "ids", ["-parse_seqids"])):
        subprocess.run(["makeblastdb", "-in", fasta, "-dbtype", "prot", "-out", out, *extra], cwd=d, check=True,
                       capture_output=True)
    for source, out in (("db.faa", "db.gsdb"), ("ids", "ids.gsdb")):
        r = gpu_search(d, "makedb", source, "-o", out, "-q")
        assert r.returncode == 0, r.stderr
    r = gpu_search(d, "makedb", "ids", "-o", "shard", "--shards", "2", "-q")
    assert r.returncode == 0, r.stderr
    return d


def gpu_search(d, *args):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "gpu_search", *args], cwd=d, capture_output=True, text=True,
                          env=env)


def _kept(text: str) -> list[str]:
    """The lines of a report but for those naming the program, the database or its date."""
    skip = ("BLASTP 2.12.0+", "# BLASTP 2.12.0+", "Database: ", "  Database: ", "# Database: ", "    Posted date:",
            "  <BlastOutput_version>", "  <BlastOutput_db>")
    return [line for line in text.split("\n") if not line.startswith(skip)]


def _blastp(d, db, fmt):
    return subprocess.run(["blastp", "-query", "q.faa", "-db", db, "-outfmt", fmt], cwd=d, check=True,
                          capture_output=True, text=True).stdout


@pytest.mark.parametrize("ours, theirs, fmt", [
    ("db.faa", "db", ID_COLUMNS), ("db.faa", "db", "7"), ("db.faa", "db", "5"), ("db.faa", "db", "0"),
    ("db.gsdb", "db", ID_COLUMNS), ("db", "db", "0"),
    ("ids", "ids", ID_COLUMNS), ("ids", "ids", "7"), ("ids", "ids", "5"), ("ids", "ids", "0"),
    ("ids.gsdb", "ids", ID_COLUMNS), ("ids.gsdb", "ids", "5"), ("ids.gsdb", "ids", "0"),
])
def test_titles_and_ids_equal_blastp(case, ours, theirs, fmt):
    want = _blastp(case, theirs, fmt)
    r = gpu_search(case, "blastp", "-query", "q.faa", "-db", ours, "-outfmt", fmt, "--device", "cpu", "-q")
    assert r.returncode == 0, r.stderr
    expected, got = _kept(want), _kept(r.stdout)
    diffs = [(e, g) for e, g in zip(expected, got) if e != g]
    assert not diffs and len(expected) == len(got), diffs[:5]
    # the case holds what it is meant to
    if fmt == ID_COLUMNS:
        rows = [line.split("\t") for line in want.splitlines()]
        assert len({r[1] for r in rows}) >= len(FASTA_TITLES) - 1
        if theirs == "db":
            assert {"s1   three  spaces  ", "s2   after   tab   x   ", " s4 lead  x"} <= {r[2] for r in rows}
        else:
            assert "gi|4504347|ref|NP_000549.2|" in {r[1] for r in rows}        # the gi's defline
            assert "desc<>second title<>N/A" in {r[3] for r in rows}
    if fmt == "7":
        assert "# Query: q1  two" in want and "# Query: q2" in want.split("\n") and "# Query: q3  a b" in want
    if fmt == "5":
        assert "<Iteration_query-def>q1 two</Iteration_query-def>" in want
        if theirs == "ids":
            assert "<Hit_def>first &gt;gi|4504347|ref|NP_000549.2| gi two &gt;pdb|1ABC|B chain &gt;ref|XP_1.3|  " \
                   "&gt;emb|CAA1.1| e</Hit_def>" in want
    if fmt == "0" and theirs == "ids":
        assert ">a1 first\n NP_000549.2 gi two\n 1ABC_B chain\n XP_1.3 gi two\n CAA1.1 e\n" in want
        assert "\na2 unnamed protein product  " in want


def test_merged_shards_of_a_parse_seqids_database_equal_blastp(case):
    for i in (1, 2):
        r = gpu_search(case, "blastp", "-query", "q.faa", "-db", f"shard.shard{i}of2.gsdb", "--hits-out",
                       f"h{i}.gsblast", "-outfmt", ID_COLUMNS, "-out", os.devnull, "--device", "cpu", "-q")
        assert r.returncode == 0, r.stderr
    r = gpu_search(case, "merge", "h1.gsblast", "h2.gsblast", "-outfmt", ID_COLUMNS)
    assert r.returncode == 0, r.stderr
    assert r.stdout == _blastp(case, "ids", ID_COLUMNS)


@pytest.mark.gpu
@pytest.mark.parametrize("db", ["db.faa", "ids"])
def test_titles_on_the_gpu_equal_the_cpu(case, db):
    """The GPU pipeline writes the same titles and ids as the CPU path (checked above against
    blastp), in every format that shows them."""
    from gpu_search.device import gpu_status

    usable, why, _ = gpu_status()
    if not usable:
        pytest.skip(f"no usable GPU: {why}")
    for fmt in (ID_COLUMNS, "7", "5", "0"):
        outs = [gpu_search(case, "blastp", "-query", "q.faa", "-db", db, "-outfmt", fmt, "--device", device, "-q")
                for device in ("cpu", "gpu")]
        assert all(r.returncode == 0 for r in outs), [r.stderr for r in outs]
        assert outs[0].stdout == outs[1].stdout and outs[0].stdout.count("\n") > 20, fmt
