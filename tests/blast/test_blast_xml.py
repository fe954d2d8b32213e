"""blastp -outfmt 5 (gpu_search/blast/xml.py) against BLAST+ 2.12's own XML, byte for byte.

The writer is fed the rows BLAST+ itself found (its tabular output of the same
search), so these tests check the XML, not the search.  Tabular output rounds
bit scores and E-values further than the XML does, so each row's bit score and
E-value are recomputed from its raw score as blastp does without composition
statistics (-comp_based_stats 0), by gpu-search's statistics (stats.py: the
gapped Karlin block's bit score, Spouge's E-value).  Each query's statistics
come from stats.py too, as the engine will pass them: the length adjustment and
effective search space of effective_lengths, the gapped block's K, lambda, H.
Needs blastp and makeblastdb of BLAST+ 2.12 (Debian package ncbi-blast+).
"""

from __future__ import annotations

import io
import shutil
import subprocess

import pytest
from conftest import TEST_DATA

from gpu_search.blast.output import Hsp
from gpu_search.blast.stats import bit_score, effective_lengths, gapped_params, spouge_evalue
from gpu_search.blast.xml import (XmlWriter, escape, fasta_hit_fields, format_evalue, format_score,
                                  parse_seqids_hit_fields)

BLASTP = shutil.which("blastp")
MAKEBLASTDB = shutil.which("makeblastdb")
needs_blast = pytest.mark.skipif(
    not (BLASTP and MAKEBLASTDB), reason="BLAST+ (blastp, makeblastdb) not installed: apt-get install ncbi-blast+")

# subject titles changed in the database: XML's special characters, UTF-8 letters, tabs, control characters
SPECIAL_TITLES = {
    3: 'AT&T <kinase> "quoted" \'apos\' caf\u00e9 \u03b1-helix',
    10: "only_an_id",
    20: "a&b&&c <<x>> >",
    30: "ctl a\tb\x01c\x02d\x7fe x\ty\t\tz caf\u00e9\tend",
}
# columns BLAST+'s tabular output gives for each row (qseqid for the query, stitle for the subject)
COLUMNS = "qseqid sseqid stitle slen score qstart qend sstart send qseq sseq nident positive gaps gapopen qlen"



def read_fasta(path):
    records, title, seq = [], None, []
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if line.startswith(">"):
            if title is not None:
                records.append((title, "".join(seq)))
            title, seq = line[1:], []
        else:
            seq.append(line)
    records.append((title, "".join(seq)))
    return records


def write_fasta(path, records):
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("".join(f">{t}\n{s}\n" for t, s in records))


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    """A BLAST db of the test proteome with three titles changed, and queries: the three
    test queries, copies of the special-title subjects (titles with special characters too,
    or an id only), and a proline run that finds nothing."""
    d = tmp_path_factory.mktemp("xml")
    subjects = read_fasta(TEST_DATA / "proteome.faa")
    for oid, title in SPECIAL_TITLES.items():
        subjects[oid] = (title, subjects[oid][1])
    write_fasta(d / "db.faa", subjects)
    subprocess.run([MAKEBLASTDB, "-in", "db.faa", "-dbtype", "prot", "-out", "db"], cwd=d,
                   check=True, capture_output=True)
    queries = read_fasta(TEST_DATA / "blastp-queries.faa")
    queries += [("q_special x & y <z> \"q\" 'a' na\u00efve\x01 cut here", subjects[3][1]),
                ("q_id_only", subjects[10][1][:120]),
                ("q_third <&> part", subjects[20][1][:150]),
                ("q_ctl del\x7fhere cut\there", subjects[30][1][:150]),
                ("q_nohit no hits expected", "P" * 15)]
    write_fasta(d / "q.faa", queries)
    return {"dir": d, "subjects": subjects, "queries": queries}


def blast(case, *args, db="db", query="q.faa"):
    r = subprocess.run([BLASTP, "-query", query, "-db", db, "-comp_based_stats", "0", *args],
                       cwd=case["dir"], capture_output=True, check=True)
    return r.stdout


def rows_from_tabular(case, tabular: str, gapped, db_length: int, parse_seqids=False) -> list[list[Hsp]]:
    """BLAST+'s tabular rows as output.Hsp, grouped by query (input order)."""
    query_index = {t.split()[0]: i for i, (t, _) in enumerate(case["queries"])}
    if parse_seqids:
        # subjects of different lengths: the length tells the database position
        oid = {str(len(seq)): i for i, (_, seq) in enumerate(case["subjects"])}
        assert len(oid) == len(case["subjects"])
    else:
        # BLAST+ prints the titles as makeblastdb stored them (non-ASCII bytes and control
        # characters '#', tabs expanded): the titles' first words tell them apart
        oid = {t.split()[0]: i for i, (t, _) in enumerate(case["subjects"])}
    by_query = [[] for _ in case["queries"]]
    for line in tabular.splitlines():
        (qid, sseqid, stitle, slen, score, qs, qe, ss, se, qseq, sseq, nident, positive, gaps, gapopen,
         qlen) = line.split("\t")
        qi = query_index[qid]
        score = int(score)
        if parse_seqids:        # rows as a -parse_seqids database gives them: sseqid, stitle
            s_oid, subject_id, subject_title = oid[slen], sseqid, stitle
        else:                   # a FASTA database: the header's first word, the whole header
            s_oid = oid[stitle.split()[0]]
            subject_title = case["subjects"][s_oid][0]
            subject_id = subject_title.split()[0]
        by_query[qi].append(Hsp(
            query_id=qid, query_title=case["queries"][qi][0], query_length=int(qlen),
            subject_id=subject_id, subject_title=subject_title, subject_length=int(slen),
            score=score, bit_score=bit_score(score, gapped.kbp),
            evalue=spouge_evalue(score, gapped.kbp, gapped.gbp, int(qlen), int(slen), db_length),
            q_start=int(qs), q_end=int(qe), s_start=int(ss), s_end=int(se), qseq=qseq, sseq=sseq,
            nident=int(nident), positive=int(positive), gaps=int(gaps), gapopen=int(gapopen),
            oid=s_oid))
    return by_query


def ours(case, by_query, *, matrix, evalue, gap_open, gap_extend, gapped, db_name="db",
         hit_fields=fasta_hit_fields) -> str:
    """The writer's XML, with each query's statistics as gpu-search computes them."""
    db_num_seqs, db_length = len(case["subjects"]), sum(len(seq) for _, seq in case["subjects"])
    fh = io.StringIO()
    first_title, first_seq = case["queries"][0]
    w = XmlWriter(fh, db_name=db_name, matrix=matrix, evalue=evalue, gap_open=gap_open, gap_extend=gap_extend,
                  first_query_title=first_title, first_query_len=len(first_seq), hit_fields=hit_fields)
    kbp = gapped.kbp
    for i, (title, seq) in enumerate(case["queries"]):
        eff = effective_lengths(len(seq), db_length, db_num_seqs, gapped)
        w.query(i, title, len(seq), by_query[i], db_num_seqs=db_num_seqs, db_length=db_length,
                length_adjustment=eff.length_adjustment, eff_space=eff.eff_searchsp,
                kappa=kbp.K, lambda_=kbp.Lambda, entropy=kbp.H)
    w.close()
    return fh.getvalue()


def compare(expected: bytes, got: str, case, latin1_titles=1):
    """Byte for byte, but for the documented differences: BlastOutput_version, and the
    definition of a non-ASCII query title, which BLAST+ writes in Latin-1, ours in UTF-8."""
    exp_lines, got_lines = expected.split(b"\n"), got.encode("utf-8").split(b"\n")
    version = [i for i, line in enumerate(exp_lines) if b"<BlastOutput_version>" in line]
    assert version == [4] and exp_lines[4] == b"  <BlastOutput_version>BLASTP 2.12.0+</BlastOutput_version>"
    assert got_lines[4].startswith(b"  <BlastOutput_version>BLASTP 2.12.0+ (computed by gpu-search ")
    exp_lines[4] = got_lines[4] = b"VERSION"
    latin1 = 0
    for i, (e, g) in enumerate(zip(exp_lines, got_lines)):
        if e != g and b"query-def>" in e and not g.decode("utf-8").isascii():
            assert e == g.decode("utf-8").encode("latin-1"), (e, g)
            exp_lines[i] = g
            latin1 += 1
    assert latin1 == latin1_titles, "the non-ASCII query titles' Iteration_query-def in Latin-1"
    diffs = [(i + 1, e, g) for i, (e, g) in enumerate(zip(exp_lines, got_lines)) if e != g]
    report = "\n".join(f"line {n}:\n  BLAST+: {e!r}\n  ours:   {g!r}" for n, e, g in diffs[:20])
    assert not diffs, f"{len(diffs)} lines differ\n{report}"
    assert len(exp_lines) == len(got_lines)


@needs_blast
@pytest.mark.parametrize("matrix, gaps, evalue", [("BLOSUM62", (11, 1), "10"), ("PAM30", (9, 1), "1e-05")])
def test_xml_equals_blast(case, matrix, gaps, evalue):
    args = ["-matrix", matrix, "-evalue", evalue]
    expected = blast(case, "-outfmt", "5", *args)
    tabular = blast(case, "-outfmt", "6 " + COLUMNS, *args).decode("utf-8")
    gapped = gapped_params(matrix, *gaps)
    db_length = sum(len(seq) for _, seq in case["subjects"])
    by_query = rows_from_tabular(case, tabular, gapped, db_length)
    # the case covers what it claims to: a query without hits, hits on the special titles,
    # subjects with several HSPs
    assert [len(r) for r in by_query][-1] == 0 and all(by_query[:-1])
    if matrix == "BLOSUM62":
        hit_oids = {h.oid for rows in by_query for h in rows}
        assert set(SPECIAL_TITLES) <= hit_oids
        assert any(a.oid == b.oid for rows in by_query for a, b in zip(rows, rows[1:]))
    assert b"<Iteration_message>No hits found</Iteration_message>" in expected
    compare(expected, ours(case, by_query, matrix=matrix, evalue=float(evalue),
                           gap_open=gaps[0], gap_extend=gaps[1], gapped=gapped), case)


# -parse_seqids ids of the kinds BLAST+ reads from FASTA headers, and their titles
SEQIDS = ["sp|P12345|NAME_HUMAN", "tr|Q9XYZ1|Q9XYZ1_ECOLI desc & more", "ref|NP_000001.2| desc <2>",
          "myprot_1", "gi|12345|gb|AAA12345.1| desc 4", "gb|AAB99999.3| desc 5", "lcl|loc7",
          "pdb|1ABC|A desc 7", "emb|CAA00001.1| desc 8", "P99999.2", "XP_123456.1 desc 10",
          "gnl|xx|33 general", "pir||ABC123", "prf||2209341A desc", "pat|US|123|1 patent",
          "dbj|BAA00001.1| desc"]


@needs_blast
def test_xml_parse_seqids(case):
    """A database made with -parse_seqids: Hit_id is BLAST+'s sseqid, Hit_def the title or
    "No definition line", Hit_accession the best id's accession without version."""
    d = case["dir"]
    subjects = [(t, s) for t, (_, s) in zip(SEQIDS, case["subjects"])]
    write_fasta(d / "ids.faa", subjects)
    subprocess.run([MAKEBLASTDB, "-in", "ids.faa", "-dbtype", "prot", "-parse_seqids", "-out", "ids"], cwd=d,
                   check=True, capture_output=True)
    # a query file of their own: each subject's sequence
    queries = [(f"q{i} subject {i}", seq) for i, (_, seq) in enumerate(subjects)]
    write_fasta(d / "q_ids.faa", queries)
    ids_case = {"dir": d, "subjects": subjects, "queries": queries}
    expected = blast(ids_case, "-outfmt", "5", db="ids", query="q_ids.faa")
    tabular = blast(ids_case, "-outfmt", "6 " + COLUMNS, db="ids", query="q_ids.faa").decode("utf-8")
    gapped = gapped_params("BLOSUM62", 11, 1)
    db_length = sum(len(seq) for _, seq in subjects)
    by_query = rows_from_tabular(ids_case, tabular, gapped, db_length, parse_seqids=True)
    assert len({h.oid for rows in by_query for h in rows}) == len(SEQIDS), "every kind of id among the hits"
    got = ours(ids_case, by_query, matrix="BLOSUM62", evalue=10.0, gap_open=11,
               gap_extend=1, gapped=gapped, db_name="ids", hit_fields=parse_seqids_hit_fields)
    compare(expected, got, ids_case, latin1_titles=0)


def test_escape_and_numbers():
    """CObjectOStreamXml's escapes and the serial library's number formats, by hand."""
    assert escape("a&b<c>d'e\"f\tg\x01h caf\u00e9") == "a&amp;b&lt;c&gt;d&apos;e&quot;f&#x9;g&#x1;h caf\u00e9"
    # E-values and bit scores: 6 significant digits, then %.15g (no trailing zeros)
    assert format_score(5.917834e-93) == "5.91783e-93"
    assert format_score(2.684577) == "2.68458"
    assert format_score(258.8400001) == "258.84"
    assert format_score(0.0) == "0"
    # "%.6g" gives 1.23457e+06; read back and written with 15 digits: the plain number
    assert format_score(1234567.0) == "1234570"
    assert format_score(1e-5) == "1e-05"
    assert format_score(1e-200) == "1e-200"
    # below 1e-180 an E-value is 0 (the self-hits of the -parse_seqids test meet it in BLAST+'s output)
    assert format_evalue(1.00001e-180) == "1.00001e-180" and format_evalue(9.9e-181) == "0"


@needs_blast
@pytest.mark.parametrize("args", [[], ["-comp_based_stats", "0", "-evalue", "1e-5", "-max_target_seqs", "5"]])
def test_blastp_outfmt_5_through_the_command_line(tmp_path, args):
    """`gpu-search blastp -outfmt 5` end to end (the search, its statistics, the writer): BLAST+
    2.12's XML of the same search, every line but BlastOutput_version and BlastOutput_db (the
    database's name without its folder, as in -outfmt 7's comment line)."""
    import os
    import sys

    from conftest import ROOT

    from gpu_search import __version__

    subprocess.run(["makeblastdb", "-in", str(TEST_DATA / "proteome.faa"), "-dbtype", "prot", "-out",
                    str(tmp_path / "db")], check=True, capture_output=True)
    query = TEST_DATA / "blastp-queries.faa"
    theirs = subprocess.run([BLASTP, "-query", str(query), "-db", str(tmp_path / "db"), "-outfmt", "5", *args],
                            capture_output=True, text=True, check=True).stdout.splitlines()
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "gpu_search", "blastp", "-query", str(query), "-db", str(tmp_path / "db"),
                        "-outfmt", "5", "--device", "cpu", "-q", *args], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    ours = r.stdout.splitlines()
    assert len(ours) == len(theirs) > 50
    differ = [(a.strip(), b.strip()) for a, b in zip(theirs, ours) if a != b]
    assert differ == [("<BlastOutput_version>BLASTP 2.12.0+</BlastOutput_version>",
                       "<BlastOutput_version>BLASTP 2.12.0+ (computed by gpu-search "
                       f"{__version__})</BlastOutput_version>"),
                      (f"<BlastOutput_db>{tmp_path / 'db'}</BlastOutput_db>", "<BlastOutput_db>db</BlastOutput_db>")], differ[:5]
