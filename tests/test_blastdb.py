"""BLAST protein databases made by makeblastdb 2.12, read by gpu_search.blastdb: residues
against the FASTA they were made from, sizes and lengths against blastdbcmd, subject ids
and titles against blastp's own table, and damaged databases refused with one line."""

from __future__ import annotations

import random
import shutil
import subprocess

import numpy as np
import pytest

from gpu_search import blastdb, errors, seqdb

pytestmark = pytest.mark.skipif(
    not all(shutil.which(t) for t in ("makeblastdb", "blastdbcmd", "blastp", "blastdb_aliastool")),
    reason="BLAST+ (makeblastdb, blastdbcmd, blastp, blastdb_aliastool) not installed: "
           "apt-get install ncbi-blast+")

BASE = "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDNLSGAEKAVQVKVKALPDAQ"

# (FASTA header, sequence): the id forms BLAST users have; every sequence is close to BASE
# so that blastp reports every subject
ENTRIES = [
    ("sp|P12345|NAME_HUMAN Some protein OS=Homo sapiens OX=9606", BASE),
    ("plainword a plain description", BASE[:-1] + "W"),
    ("lcl|x local one", BASE[:-1] + "Y"),
    ("nodesc", BASE + "CC"),
    ("gi|123|ref|NP_000001.2| refseq thing", BASE[:-2] + "AA"),
    ("tr|A0A000|A0A000_MOUSE Uncharacterized protein", BASE.lower()),
    ("gnl|mydb|tag7 general id", BASE + "BZUOJX*"),
    ("emb|CAA12345.1| european one", "MM" + BASE),
    ("pdb|1ABC|A chain A of 1ABC", BASE[5:]),
    ("sp|P11111|AAA_HUMAN first title\x01sp|P22222|BBB_MOUSE second title\x01lcl|third third",
     BASE[:30] + "W" + BASE[31:]),
    ("gi|55|emb|CAA1.1|xx\x01pdb|2XYZ|B chain b", BASE[:20] + "G" + BASE[21:]),
    ("ref|XP_1.1| with, comma \"and quotes\"", BASE[:40] + "Y" + BASE[41:]),
    ("sp|Q9|Z_HUMAN Protéine α (UTF-8)", BASE[:50] + "H" + BASE[51:]),
]


def _fasta(entries) -> bytes:
    return b"".join(f">{h}\n{s}\n".encode() for h, s in entries)


def _run(*args, cwd=None) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True, cwd=cwd).stdout


def _makeblastdb(fasta, out, *extra):
    _run("makeblastdb", "-in", str(fasta), "-dbtype", "prot", "-out", str(out), *extra)
    return str(out)


@pytest.fixture(scope="module")
def dbs(tmp_path_factory):
    """The test entries as databases of format 4 and 5, with and without -parse_seqids."""
    d = tmp_path_factory.mktemp("blastdb")
    fasta = d / "t.fa"
    fasta.write_bytes(_fasta(ENTRIES))
    (d / "q.fa").write_text(f">q\n{BASE}\n")
    made = {}
    for version in ("4", "5"):
        for parse in (False, True):
            name = f"v{version}{'p' if parse else ''}"
            made[name] = _makeblastdb(fasta, d / name, "-blastdb_version", version,
                                      *(["-parse_seqids"] if parse else []))
    return d, made


ALL_DBS = ["v4", "v4p", "v5", "v5p"]
COLUMNS = ("sseqid", "sallseqid", "stitle", "salltitles", "sacc", "saccver", "sallacc")


@pytest.mark.parametrize("name", ALL_DBS)
def test_residues_equal_the_fasta(dbs, name):
    d, made = dbs
    db = blastdb.read_blast_database(made[name])
    want = seqdb.parse_fasta(_fasta(ENTRIES))
    assert db.n_seqs == len(ENTRIES)
    assert np.array_equal(db.offsets, want.offsets)
    assert np.array_equal(db.residues, want.residues)
    assert db.residues.dtype == np.uint8


@pytest.mark.parametrize("name", ALL_DBS)
def test_sizes_equal_blastdbcmd(dbs, name):
    d, made = dbs
    db = blastdb.read_blast_database(made[name])
    lengths = [int(x) for x in _run("blastdbcmd", "-db", made[name], "-dbtype", "prot",
                                    "-entry", "all", "-outfmt", "%l").split()]
    assert db.lengths.tolist() == lengths
    info = _run("blastdbcmd", "-db", made[name], "-dbtype", "prot", "-info")
    seqs, residues = info.split("\n")[1].split(" sequences; ")
    assert db.total_seqs == int(seqs.replace(",", "")) == len(ENTRIES)
    assert db.total_residues == int(residues.split()[0].replace(",", "")) == sum(len(s) for _, s in ENTRIES)


def _blastp_columns(d, prefix):
    """blastp's subject columns, one row per subject, sorted."""
    out = _run("blastp", "-query", str(d / "q.fa"), "-db", prefix, "-evalue", "1000", "-max_hsps", "1",
               "-max_target_seqs", "500", "-outfmt", "6 sseqid sallseqid stitle salltitles sacc saccver sallacc")
    rows = sorted(tuple(line.split("\t")) for line in out.splitlines())
    assert len(rows) == len(ENTRIES)
    return rows


@pytest.mark.parametrize("name", ALL_DBS)
def test_subject_columns_equal_blastp(dbs, name):
    d, made = dbs
    got = sorted(tuple(c[k] for k in COLUMNS)
                 for c in blastdb.subject_columns(made[name]))
    assert got == _blastp_columns(d, made[name])


@pytest.mark.parametrize("name", ALL_DBS)
def test_name_and_description_give_blastp_sseqid(dbs, name):
    """gpu-search's sseqid is the name; its stitle name + " " + description, which is
    BLAST+'s stitle without -parse_seqids (with it, BLAST+ shows the title alone)."""
    d, made = dbs
    db = blastdb.read_blast_database(made[name])
    rows = _blastp_columns(d, made[name])
    assert sorted(db.name(i) for i in range(db.n_seqs)) == sorted(r[0] for r in rows)
    if not name.endswith("p"):
        titles = sorted(f"{db.name(i)} {db.description(i)}".rstrip(" ") for i in range(db.n_seqs))
        assert titles == sorted(r[2] for r in rows)
    else:
        assert sorted(db.description(i) or "N/A" for i in range(db.n_seqs)) == sorted(r[2] for r in rows)


def test_known_columns(dbs):
    """A few columns written out by hand from blastp 2.12's output."""
    d, made = dbs
    plain = {c["sseqid"]: c for c in blastdb.subject_columns(made["v5"])}
    assert plain["lcl|x"]["stitle"] == "lcl|x local one"
    assert plain["nodesc"]["stitle"] == "nodesc"
    assert plain["sp|P11111|AAA_HUMAN"]["salltitles"] == (
        "sp|P11111|AAA_HUMAN first title sp|P22222|BBB_MOUSE second title lcl|third third")
    parsed = {c["sseqid"]: c for c in blastdb.subject_columns(made["v5p"])}
    assert parsed["x"]["stitle"] == "local one"
    assert parsed["nodesc"]["stitle"] == "N/A"
    assert parsed["gi|123|ref|NP_000001.2|"]["stitle"] == "refseq thing"
    assert parsed["sp|P11111|AAA_HUMAN"]["sallseqid"] == "sp|P11111|AAA_HUMAN;sp|P22222|BBB_MOUSE;third"
    assert parsed["sp|P11111|AAA_HUMAN"]["salltitles"] == "first title<>second title<>third"
    assert parsed["gi|55|emb|CAA1.1|xx"]["sallseqid"] == "gi|55|emb|CAA1.1|xx;pdb|2XYZ|B"
    assert parsed["gi|55|emb|CAA1.1|xx"]["salltitles"] == "N/A<>chain b"


# --- volumes and alias files -----------------------------------------------------------

@pytest.fixture(scope="module")
def volumes(tmp_path_factory):
    """About 2.5 MB of residues split by -max_file_sz 1MB into volumes."""
    d = tmp_path_factory.mktemp("volumes")
    rng = random.Random(7)
    entries = [(f"s{i} random protein {i}", "".join(rng.choices("ACDEFGHIKLMNPQRSTVWY", k=rng.randint(50, 900))))
               for i in range(5000)]
    fasta = d / "v.fa"
    fasta.write_bytes(_fasta(entries))
    out = {}
    for version in ("4", "5"):
        out[version] = _makeblastdb(fasta, d / f"vol{version}", "-max_file_sz", "1MB",
                                    "-blastdb_version", version)
    return d, entries, out


@pytest.mark.parametrize("version", ["4", "5"])
def test_volumes_in_order(volumes, version):
    d, entries, out = volumes
    prefix = out[version]
    assert (d / f"vol{version}.pal").exists() and (d / f"vol{version}.01.pin").exists()
    db = blastdb.read_blast_database(prefix)
    want = seqdb.parse_fasta(_fasta(entries))
    assert np.array_equal(db.offsets, want.offsets)
    assert np.array_equal(db.residues, want.residues)
    assert [db.name(i) for i in range(db.n_seqs)] == [want.name(i) for i in range(want.n_seqs)]
    assert db.total_seqs == 5000 and db.total_residues == want.n_residues


def _info_sizes(prefix):
    info = _run("blastdbcmd", "-db", str(prefix), "-dbtype", "prot", "-info")
    seqs, residues = info.split("\n")[1].split(" sequences; ")
    return int(seqs.replace(",", "")), int(residues.split()[0].replace(",", ""))


def test_aliastool_and_nested_alias(dbs, volumes, tmp_path):
    d, made = dbs
    vd, entries, out = volumes
    shutil.copytree(d, tmp_path / "a")
    for f in vd.glob("vol5*"):
        shutil.copy(f, tmp_path / "a")
    a = tmp_path / "a"
    _run("blastdb_aliastool", "-dblist", "v5 vol5", "-dbtype", "prot", "-out", "both", "-title", "both",
         cwd=a)
    # by hand, nested, a relative and a quoted name
    (a / "outer.pal").write_text('# nested\nTITLE outer\nDBLIST "v5p" both\n')
    db = blastdb.read_blast_database(a / "outer")
    parts = [blastdb.read_blast_database(a / n) for n in ("v5p", "v5", "vol5")]
    assert db.n_seqs == sum(p.n_seqs for p in parts)
    assert np.array_equal(db.residues, np.concatenate([p.residues for p in parts]))
    assert [db.name(i) for i in range(db.n_seqs)] == [p.name(i) for p in parts for i in range(p.n_seqs)]
    assert (db.total_seqs, db.total_residues) == _info_sizes(a / "outer")
    assert (db.n_seqs, db.n_residues) == _info_sizes(a / "outer")


def test_alias_counts_used_by_blast(dbs, tmp_path):
    """NSEQ/LENGTH are BLAST+'s sizes (blastdbcmd -info and blastp's statistics show them);
    STATS_NSEQ/STATS_TOTLEN only its statistics' (blastp: 'Number of letters in database: 944'
    yet 'Effective search space used: 24897500' with STATS_TOTLEN 1000000)."""
    d, made = dbs
    a = tmp_path / "a"
    shutil.copytree(d, a)
    (a / "n.pal").write_text("TITLE n\nDBLIST v4 v4p\nNSEQ 100\nLENGTH 1000000\n")
    db = blastdb.read_blast_database(a / "n")
    assert (db.total_seqs, db.total_residues) == _info_sizes(a / "n") == (100, 1_000_000)
    (a / "s.pal").write_text("TITLE s\nDBLIST v4 v4p\nSTATS_NSEQ 90\nSTATS_TOTLEN 900000\nLENGTH 5\n")
    db = blastdb.read_blast_database(a / "s")
    assert (db.total_seqs, db.total_residues) == (90, 900_000)
    assert db.n_seqs == 2 * len(ENTRIES)
    # an alias file without STATS_ counts adds nothing to them: blastp's effective search
    # space is 24897500 for this pair as for one alias file of STATS_NSEQ 100 and
    # STATS_TOTLEN 1000000 (24902125 with the outer volume's 7 and 472 added)
    (a / "inner.pal").write_text("DBLIST v4p\nSTATS_NSEQ 100\nSTATS_TOTLEN 1000000\n")
    (a / "outer.pal").write_text("DBLIST v4 inner\nLENGTH 7\n")
    db = blastdb.read_blast_database(a / "outer")
    assert (db.total_seqs, db.total_residues) == (100, 1_000_000)
    (a / "outer.pal").write_text("DBLIST v4 inner\nSTATS_NSEQ 0\n")
    db = blastdb.read_blast_database(a / "outer")
    assert (db.total_seqs, db.total_residues) == (2 * len(ENTRIES), 1_000_000)


def test_prefix_forms(dbs, volumes, tmp_path):
    d, made = dbs
    vd, _, out = volumes
    assert blastdb.blast_database_prefix(made["v4"]) == made["v4"]
    assert blastdb.blast_database_prefix(made["v4"] + ".pin") == made["v4"]
    assert blastdb.blast_database_prefix(out["5"]) == out["5"]
    assert blastdb.blast_database_prefix(out["5"] + ".pal") == out["5"]
    assert blastdb.blast_database_prefix(out["5"] + ".00") == out["5"] + ".00"
    assert blastdb.blast_database_prefix(d / "t.fa") is None          # the FASTA file itself
    assert blastdb.blast_database_prefix(d / "nothing") is None
    assert blastdb.blast_database_prefix(d) is None                    # four databases
    assert blastdb.blast_database_prefix(vd) is None                   # two .pal files
    one = tmp_path / "one"
    one.mkdir()
    for f in d.glob("v5p.*"):
        shutil.copy(f, one)
    assert blastdb.blast_database_prefix(one) == str(one / "v5p")


# --- refused databases --------------------------------------------------------------

def _copy(dbs, tmp_path, name="v5p"):
    d, made = dbs
    for f in d.glob(f"{name}.*"):
        shutil.copy(f, tmp_path)
    return tmp_path / name


def _refused(prefix, kind, words):
    with pytest.raises(kind) as info:
        blastdb.read_blast_database(prefix)
    message = str(info.value)
    assert "\n" not in message and words in message, message
    return message


def _cut(path, n):
    data = path.read_bytes()
    path.write_bytes(data[:-n])


@pytest.mark.parametrize("suffix,n", [(".psq", 1), (".psq", 40), (".phr", 1), (".phr", 30),
                                      (".pin", 4), (".pin", 60)])
def test_truncated_file(dbs, tmp_path, suffix, n):
    prefix = _copy(dbs, tmp_path)
    _cut(prefix.with_name(prefix.name + suffix), n)
    message = _refused(prefix, errors.FormatError, prefix.name)
    assert suffix in message


def _patch(path, pos, data):
    buf = bytearray(path.read_bytes())
    buf[pos:pos + len(data)] = data
    path.write_bytes(bytes(buf))


def test_wrong_version_and_type(dbs, tmp_path):
    prefix = _copy(dbs, tmp_path)
    pin = prefix.with_name(prefix.name + ".pin")
    original = pin.read_bytes()
    _patch(pin, 0, (7).to_bytes(4, "big"))
    _refused(prefix, errors.FormatError, "format number 7")
    pin.write_bytes(original)
    _patch(pin, 4, (0).to_bytes(4, "big"))
    _refused(prefix, errors.FormatError, "not a protein database")
    pin.write_bytes(b"\x00" * 3)
    _refused(prefix, errors.FormatError, "truncated")


def test_offsets_outside_the_files(dbs, tmp_path):
    prefix = _copy(dbs, tmp_path, "v4")
    pin = prefix.with_name(prefix.name + ".pin")
    n = len(ENTRIES)
    arrays = len(pin.read_bytes()) - 8 * (n + 1)
    original = pin.read_bytes()
    _patch(pin, arrays + 4 * n, (10 ** 8).to_bytes(4, "big"))           # last header offset
    _refused(prefix, errors.FormatError, "past the end of the .phr")
    pin.write_bytes(original)
    _patch(pin, arrays + 4 * (2 * n + 1), (10 ** 8).to_bytes(4, "big"))  # last sequence offset
    _refused(prefix, errors.FormatError, "past the end of the .psq")
    pin.write_bytes(original)
    _patch(pin, arrays + 4 * (n + 2), (3).to_bytes(4, "big"))           # second sequence offset
    _refused(prefix, errors.FormatError, ".p")
    pin.write_bytes(original)
    _patch(pin, arrays + 4 * (n + 1) - 8, (0xFFFFFFF0).to_bytes(4, "big"))  # count's neighbour offset
    _refused(prefix, errors.FormatError, "v4.pin")


def test_damaged_contents(dbs, tmp_path):
    prefix = _copy(dbs, tmp_path)
    psq = prefix.with_name(prefix.name + ".psq")
    _patch(psq, 10, b"\x40")
    _refused(prefix, errors.FormatError, "NCBIstdaa")
    _patch(psq, 10, b"\x01")
    _patch(psq, len(BASE) + 1, b"\x01")                                   # the first 0 separator
    _refused(prefix, errors.FormatError, "does not end")
    _patch(psq, len(BASE) + 1, b"\x00")
    phr = prefix.with_name(prefix.name + ".phr")
    original = phr.read_bytes()
    for pos, byte in ((0, b"\x31"), (2, b"\x1f"), (7, b"\xff"), (6, b"\x02"), (4, b"\xbf")):
        phr.write_bytes(original)
        _patch(phr, pos, byte)
        _refused(prefix, errors.FormatError, "Blast-def-line-set")
    phr.write_bytes(b"\x00" * len(original))
    _refused(prefix, errors.FormatError, "Blast-def-line-set")
    phr.write_bytes(b"\x30\x80" * (len(original) // 2) + b"\x00" * (len(original) % 2))
    _refused(prefix, errors.FormatError, "nested too deep")     # not Python's recursion limit


def test_counts_disagreeing_with_the_sequences(dbs, tmp_path):
    prefix = _copy(dbs, tmp_path, "v4")
    pin = prefix.with_name(prefix.name + ".pin")
    data = pin.read_bytes()
    n = len(ENTRIES)
    at = len(data) - 8 * (n + 1) - 12                       # total residues, then longest
    _patch(pin, at, (7).to_bytes(8, "little"))
    _refused(prefix, errors.FormatError, "disagrees")
    pin.write_bytes(data)
    _patch(pin, at + 8, (7).to_bytes(4, "big"))
    _refused(prefix, errors.FormatError, "disagrees")


def test_alias_errors(dbs, tmp_path):
    d, made = dbs
    a = tmp_path
    for f in d.glob("v*"):
        shutil.copy(f, a)
    (a / "missing.pal").write_text("DBLIST v4 gone\n")
    _refused(a / "missing", errors.InputFileError, "missing.pal")
    (a / "loop.pal").write_text("DBLIST v4 loop2\n")
    (a / "loop2.pal").write_text("DBLIST loop\n")
    _refused(a / "loop", errors.FormatError, "loop")
    for key in ("GILIST", "SEQIDLIST", "OIDLIST", "TAXIDLIST", "MEMB_BIT", "FIRST_OID"):
        (a / "sub.pal").write_text(f"DBLIST v4\n{key} x\n")
        _refused(a / "sub", errors.FormatError, key)
    (a / "mixed.pal").write_text("DBLIST v4 v5\n")
    _refused(a / "mixed", errors.FormatError, "format 4 and format 5")
    (a / "empty.pal").write_text("TITLE nothing\n")
    _refused(a / "empty", errors.FormatError, "DBLIST")
    (a / "quote.pal").write_text('DBLIST "v4\n')
    _refused(a / "quote", errors.FormatError, "quotes")
    (a / "count.pal").write_text("DBLIST v4\nNSEQ many\n")
    _refused(a / "count", errors.FormatError, "NSEQ")
    _refused(a / "none", errors.InputFileError, "no BLAST protein database")


# --- the header reader's two ways, and ids BLAST+ chooses among ---------------------------

def test_fast_header_path_equals_the_ber_reader(tmp_path, monkeypatch):
    """makeblastdb's usual header layout (no -parse_seqids; with a taxid, ord ids past 127)
    is read by a whole-header match; the strict BER reader must give the same names."""
    entries = [(f"{('sp|P1|X_HUMAN', 'w')[i % 2]} #{i}", BASE) for i in range(300)]
    fasta = tmp_path / "f.fa"
    fasta.write_bytes(_fasta(entries))
    prefix = _makeblastdb(fasta, tmp_path / "f", "-taxid", "9606")
    fast_titles = []
    reader = blastdb._ord_id_title

    def counted(*args):
        title = reader(*args)
        fast_titles.append(title)
        return title

    monkeypatch.setattr(blastdb, "_ord_id_title", counted)
    fast = blastdb.read_blast_database(prefix)
    assert len(fast_titles) == 300 and None not in fast_titles
    monkeypatch.setattr(blastdb, "_ord_id_title", lambda *args: None)
    slow = blastdb.read_blast_database(prefix)
    for db in (fast, slow):
        assert [f"{db.name(i)} {db.description(i)}" for i in range(db.n_seqs)] == [h for h, _ in entries]


# FASTA ids of several Seq-ids each: BLAST+ shows a gi first, then the best other id
# (CSeq_id's score: local before general; text ids before local, RefSeq after other
# text ids, a text id without version after one with it; the first of equals)
SEVERAL_IDS = ["sp|P1|N1|gnl|db|t1 a", "gnl|db|t2|sp|P2|N2 b", "lcl|l3|gnl|db|t3 c", "gnl|db|t4|lcl|l4 d",
               "ref|NP_5.1||sp|P5|N5 e", "gb|AB6|N6|emb|CC6.2| f", "pdb|1XY7|C|sp|P7.3|N7 g", "gnl|db|99 h",
               "pir||PQ9 i", "prf||1234A j", "gi|10 k", "gi|11|gnl|db|t11 l", "dbj|BA12.1| m",
               "tpg|DAA13.1| n", "pat|US|RE33188|1 o", "pdb|1ABC|AA q", "lcl|77 r", "sp|P8.4|N8 s"]


def test_several_ids_equal_blastp(dbs, tmp_path):
    d, _ = dbs
    fasta = tmp_path / "ids.fa"
    fasta.write_bytes(_fasta([(h, BASE[:i] + "W" + BASE[i + 1:]) for i, h in enumerate(SEVERAL_IDS)]))
    # (makeblastdb 2.12 stops on some of these ids in format 5: its accession index)
    prefix = _makeblastdb(fasta, tmp_path / "ids", "-parse_seqids", "-blastdb_version", "4")
    out = _run("blastp", "-query", str(d / "q.fa"), "-db", prefix, "-evalue", "1000", "-max_hsps", "1",
               "-outfmt", "6 sseqid sallseqid stitle salltitles sacc saccver sallacc")
    want = sorted(tuple(line.split("\t")) for line in out.splitlines())
    got = sorted(tuple(c[k] for k in COLUMNS)
                 for c in blastdb.subject_columns(prefix))
    assert len(want) == len(SEVERAL_IDS)
    assert got == want
