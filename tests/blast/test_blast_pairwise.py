"""blastp -outfmt 0 (gpu_search/blast/pairwise.py): the whole pairwise report against BLAST+ 2.12's.

`gpu-search blastp -outfmt 0` and BLAST+'s blastp run the same search (BLAST+ on a
makeblastdb database of the same FASTA) and the reports are compared line by line.
The differences allowed, and required, are the module docstring's:

- line 1: ``BLASTP 2.12.0+ (computed by gpu-search <version>)`` for ``BLASTP 2.12.0+``;
- BLAST+'s ``    Posted date:  <date>`` line of the footer, which gpu-search leaves out.

The ``Database:`` lines are equal here: makeblastdb is given the FASTA's name as
gpu-search is (its title is that name).  Needs blastp and makeblastdb of BLAST+ 2.12
(Debian package ncbi-blast+).
"""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT, TEST_DATA
from test_blast_xml import read_fasta, write_fasta

from gpu_search import __version__

BLASTP = shutil.which("blastp")
MAKEBLASTDB = shutil.which("makeblastdb")
needs_blast = pytest.mark.skipif(
    not (BLASTP and MAKEBLASTDB), reason="BLAST+ (blastp, makeblastdb) not installed: apt-get install ncbi-blast+")

# subject titles changed in the database: wrapped '>' lines, the descriptions' cut at 68
LONG_TITLES = {
    5: "longtitle " + " ".join(f"w{i} alpha beta gamma" for i in range(20)),
    7: "short",
    9: "exact68 " + "x" * 60,
    11: "exact69 " + "y" * 61,
    13: "nospaces_" + "z" * 130 + " then space " + "q" * 70 + " end",
}


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    """The test proteome with five titles changed, its BLAST database, and queries: the three
    test queries, titles wrapped at spaces and after commas, a query of two copies of a
    subject's piece (several HSPs a subject), queries of the retitled subjects, a 240-letter
    piece (an E-value like 1e-175), a proline run that finds nothing, and two queries BLAST+
    does not search (no letters; only X: no Karlin block)."""
    d = tmp_path_factory.mktemp("pairwise")
    subjects = read_fasta(TEST_DATA / "proteome.faa")
    for oid, title in LONG_TITLES.items():
        subjects[oid] = (title, subjects[oid][1])
    write_fasta(d / "db.faa", subjects)
    subprocess.run([MAKEBLASTDB, "-in", "db.faa", "-dbtype", "prot", "-out", "db"], cwd=d,
                   check=True, capture_output=True)
    long_one = next(seq for _, seq in subjects if len(seq) > 300)
    queries = read_fasta(TEST_DATA / "blastp-queries.faa")
    queries += [("qlong " + " ".join(f"word{i} lorem-ipsum,dolor" for i in range(30)), subjects[6][1][:200]),
                ("qcomma " + ",".join(f"item-{i}" for i in range(40)), subjects[10][1][:100]),
                ("qrep two copies", subjects[8][1][:120] + "GGGGSGGGGS" + subjects[8][1][:120])]
    queries += [(f"hit{oid} x", subjects[oid][1][:150]) for oid in LONG_TITLES]
    queries += [("q240 piece", long_one[:240]), ("q_nohit no hits expected", "P" * 15),
                ("q_empty no letters", ""), ("q_allx no Karlin block", "X" * 20)]
    write_fasta(d / "q.faa", queries)
    return d


def family(d):
    """A family of 520 variants of one sequence and the sequence as query: more subjects
    than the 500 descriptions and 250 alignments BLAST+ shows by default."""
    rng = random.Random(1)
    letters = "ACDEFGHIKLMNPQRSTVWY"
    base = "".join(rng.choice(letters) for _ in range(80))
    records = []
    for i in range(520):
        s = list(base)
        for _ in range(rng.randint(0, 40)):
            s[rng.randrange(80)] = rng.choice(letters)
        records.append((f"fam{i} member {i}", "".join(s)))
    write_fasta(d / "fam.faa", records)
    write_fasta(d / "famq.faa", [("famq base", base)])
    subprocess.run([MAKEBLASTDB, "-in", "fam.faa", "-dbtype", "prot", "-out", "fam"], cwd=d,
                   check=True, capture_output=True)


def gpu_search(d, *args):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "gpu_search", "blastp", *args, "--device", "cpu", "-q"],
                          cwd=d, capture_output=True, text=True, env=env)


def compare(d, query, db, *args):
    """BLAST+'s report and ours, line by line, but for the allowed differences; BLAST+'s lines."""
    theirs = subprocess.run([BLASTP, "-query", query, "-db", db, "-outfmt", "0", *args], cwd=d,
                            capture_output=True, text=True, check=True).stdout.split("\n")
    r = gpu_search(d, "-query", query, "-db", f"{db}.faa", "-outfmt", "0", *args)
    assert r.returncode == 0, r.stderr
    ours = r.stdout.split("\n")
    assert theirs[0] == "BLASTP 2.12.0+"
    assert ours[0] == f"BLASTP 2.12.0+ (computed by gpu-search {__version__})"
    posted = [i for i, line in enumerate(theirs) if line.startswith("    Posted date:  ")]
    assert len(posted) == 1 and theirs[posted[0] - 1] == f"  Database: {db}.faa"
    expected = theirs[1:posted[0]] + theirs[posted[0] + 1:]
    got = ours[1:]
    diffs = [(i + 2, e, g) for i, (e, g) in enumerate(zip(expected, got)) if e != g]
    report = "\n".join(f"line {n}:\n  BLAST+: {e!r}\n  ours:   {g!r}" for n, e, g in diffs[:20])
    assert not diffs, f"{len(diffs)} lines differ\n{report}"
    assert len(expected) == len(got)
    return theirs


@needs_blast
@pytest.mark.parametrize("args", [["-comp_based_stats", "0"], ["-comp_based_stats", "2"],
                                  ["-max_target_seqs", "3"]])
def test_pairwise_equals_blast(case, args):
    theirs = compare(case, "q.faa", "db", *args)
    text = "\n".join(theirs)
    # the case covers what it claims to
    assert "***** No hits found *****" in text
    assert "\n\n\n\n\n\nEffective search space used: 0\n" in text           # the queries not searched
    assert re.search(r"Expect = \de-1\d\d\b", text) and "  0.0  " in text     # E-value formats
    assert any(line.startswith(">longtitle w0") and len(line) < 80 for line in theirs)   # wrapped '>' line
    assert "exact69 " + "y" * 57 + "..." in text                   # cut in the descriptions
    # the query titles broken at a space, after a comma (rather than a hyphen), after a hyphen
    assert "Query= qlong word0 lorem-ipsum,dolor word1 lorem-ipsum,dolor word2" in theirs
    assert "Query= qcomma" in theirs and "item-9,item-10,item-11,item-12,item-13,item-14,item-15,item-16," in theirs
    assert any(line.startswith("ID=7_139;") and line.endswith("rbs_spacer=5-") for line in theirs)
    assert any("-" in line for line in theirs if line.startswith("Query  "))   # gaps
    assert any(subject.count("\n Score = ") > 1 for subject in text.split("\n>"))   # several HSPs
    if args == ["-comp_based_stats", "0"]:
        assert "Method:" not in text
    else:
        assert "Method: Composition-based stats." in text and "Method: Compositional matrix adjust." in text
    if args == ["-max_target_seqs", "3"]:
        assert max(sum(1 for line in block.split("\n") if line.startswith(">"))
                   for block in text.split("Query= ")) == 3


@needs_blast
def test_pairwise_default_limits(case):
    """Without -max_target_seqs BLAST+ lists 500 subjects and aligns 250; with it, that many of
    each, also when it is given as 500 (the default's value)."""
    family(case)
    for args, (descriptions, alignments) in [([], (500, 250)), (["-max_target_seqs", "300"], (300, 300)),
                                             (["-max_target_seqs", "500"], (500, 500))]:
        theirs = compare(case, "famq.faa", "fam", "-comp_based_stats", "0", *args)
        assert sum(1 for line in theirs if line.startswith("fam")) == descriptions
        assert sum(1 for line in theirs if line.startswith(">")) == alignments


@needs_blast
def test_pairwise_description_titles(tmp_path):
    """The descriptions table shows titles cleaned as BLAST+'s CDeflineGenerator cleans them
    (trailing punctuation, character references, spaces around separators and parentheses):
    490 subjects of one sequence with titles of random letters, spaces and punctuation."""
    rng = random.Random(23)
    pieces = ["a", "b", " ", " ", " ", ",", ",", ";", ";", "(", ")", ".", "~", "[", "]", "-", '"', ":",
              "&amp;", "{"]
    seq = "MKVLAAGIVGLLLAPQRSTWYDEHKFNMCAGLVKRESTDWYPQHNMFKLAEGRSVTDLKQWERTYIPASDFGHKLCVNMQWERTYIPASDFG"
    titles = set()
    while len(titles) < 490:
        title = (f"id{len(titles)}" + rng.choice(["", " ", "a", "  "])
                 + "".join(rng.choice(pieces) for _ in range(rng.randint(1, 16)))
                 + rng.choice(["", "z", " z", ".", " ."]))
        # one space after the first word: gpu-search's subject titles join the first word and
        # the rest with one (the '>' line would differ)
        titles.add(re.sub(" +", " ", title, count=1))
    write_fasta(tmp_path / "titles.faa", [(t, seq) for t in sorted(titles)])
    write_fasta(tmp_path / "one.faa", [("one", seq)])
    subprocess.run([MAKEBLASTDB, "-in", "titles.faa", "-dbtype", "prot", "-out", "titles"], cwd=tmp_path,
                   check=True, capture_output=True)
    theirs = compare(tmp_path, "one.faa", "titles", "-comp_based_stats", "0")
    # the case covers what it claims to: titles the table shows otherwise than the '>' lines
    shown = {line[:68].rstrip() for line in theirs if line.startswith("id")}
    assert len(shown) == 490 and len(shown - titles) > 200


def test_outfmt_refused(tmp_path):
    """Formats not written are refused with one line and exit code 2, by blastp and by merge."""
    fasta = tmp_path / "x.faa"
    write_fasta(fasta, [("a", "MKVLAAGIVGLLLA")])
    r = gpu_search(tmp_path, "-query", str(fasta), "-db", str(fasta), "-outfmt", "1")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "gpu-search: error: -outfmt 1: only the pairwise report (0), BLAST XML (5) and the tabular formats 6, 7 "
        "and 10 are supported"]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    saved = tmp_path / "x.gsblast"
    r = gpu_search(tmp_path, "-query", str(fasta), "-db", str(fasta), "--hits-out", str(saved))
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, "-m", "gpu_search", "merge", str(saved), "-outfmt", "0"],
                       cwd=tmp_path, capture_output=True, text=True, env=env)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [
        "gpu-search: error: -outfmt 0: merge writes the tabular formats (6, 7, 10); the pairwise report of merged "
        "shards is not implemented"]
